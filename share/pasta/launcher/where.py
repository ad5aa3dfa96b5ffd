"""Where pasta's parts are (the injection libraries, pasta-trace, share/pasta), every
PASTA_* variable the launcher names, and what the library says (share/pasta/library.py)."""
import os
import sys

# share/pasta/launcher/ sits at <root>/share/pasta/launcher in the source tree, the build
# tree and an install alike; bin/pasta is <root>/bin/pasta.
SHARE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROOT = os.path.dirname(os.path.dirname(SHARE))
BIN = os.path.join(ROOT, "bin")


class Var:
    """Every PASTA_* variable the launcher names, once: those it sets for the programs
    it runs (variables of the library's Config, or what `pasta run` tells its
    processes) and those it reads itself. tests/cli/variables_test.py checks each
    against the library's own tables (pasta-trace variables)."""
    OUTPUT_DIR = "PASTA_OUTPUT_DIR"
    RUN_ID = "PASTA_RUN_ID"
    LAUNCHER_PID = "PASTA_LAUNCHER_PID"
    KERNEL_FILTER = "PASTA_KERNEL_FILTER"
    CAPTURE_RANGE = "PASTA_CAPTURE_RANGE"
    LAUNCH_CALLBACKS = "PASTA_LAUNCH_CALLBACKS"
    OP_INPUTS = "PASTA_OP_INPUTS"
    TOOLS = "PASTA_TOOLS"
    ACCESS_SPACES = "PASTA_ACCESS_SPACES"
    STALL_SAMPLES = "PASTA_STALL_SAMPLES"
    PRINT = "PASTA_PRINT"
    # read by the launcher itself: where pasta's parts are
    BUILD_DIR = "PASTA_BUILD_DIR"
    INJECT_LIB = "PASTA_INJECT_LIB"
    STALL_ACCESS_LIB = "PASTA_STALL_ACCESS_LIB"
    TRACE_TOOL = "PASTA_TRACE_TOOL"


def fail(message, code=2):
    print(f"pasta: {message}", file=sys.stderr)
    sys.exit(code)


def candidates(name):
    """Where a built or installed pasta artifact may be, most specific first."""
    build = os.environ.get(Var.BUILD_DIR, os.path.join(ROOT, "build"))
    return [
        os.path.join(BIN, name),                           # beside bin/pasta
        os.path.join(ROOT, "lib", "pasta", name),          # installed: <prefix>/lib/pasta
        os.path.join(ROOT, "inject", name),                # build tree, next to bin/
        os.path.join(build, "inject", name),               # source tree + build dir
        os.path.join(build, "cli", name),
        os.path.join(ROOT, "cli", name),
    ]


def find(name, env_var):
    override = os.environ.get(env_var)
    if override:
        if not os.path.exists(override):
            fail(f"{env_var}={override} does not exist")
        return override
    for path in candidates(name):
        if os.path.exists(path):
            return path
    fail(f"cannot find {name}; build pasta first (cmake --build BUILD builds every library; "
         f"bash scripts/test.sh leaves out those that record only GPU events where no GPU is) "
         f"or set {env_var}")


def ask_library(question, *args):
    """library.py's answer (pasta-trace's tables, this launcher's identity); one line and
    exit status 2 when pasta-trace cannot answer."""
    import library as lib  # share/pasta/library.py
    try:
        return getattr(lib, question)(find("pasta-trace", Var.TRACE_TOOL), *args)
    except lib.LibraryError as e:
        fail(str(e))
