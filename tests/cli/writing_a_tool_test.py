#!/usr/bin/env python3
"""docs/writing-a-tool.md followed: its tool, named in a pipeline as the page shows,
is one `pasta run -t` runs and the report page places, with nothing else edited.

  writing_a_tool_test.py SOURCE_DIR BUILD_DIR GPU_IDLE PASTA_TRACE TRACE OUT

* the page's line of share/pasta/pipelines.json is the default pipeline's tools and
  the tool's name; on a copy of the launcher with that line, `pasta tools` lists it
  and `pasta run -t gpu_idle` injects the default library with PASTA_TOOLS=gpu_idle;
* the tool is pasta::tools::GpuIdle, the class inject/CMakeLists.txt makes of the name;
* its report (GPU_IDLE, the page's program, on TRACE), beside the default tools' of the
  same trace, comes after kernel_freq and before timeline on the report page, and
  share/pasta/report.py does not name it.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from checks import expect, summary  # noqa: E402

SOURCE, BUILD, GPU_IDLE, PASTA_TRACE, TRACE, OUT = (os.path.abspath(a) for a in sys.argv[1:7])
PAGE = os.path.join(SOURCE, "docs", "writing-a-tool.md")
TOOL = os.path.join(SOURCE, "docs", "examples", "gpu_idle.hpp")


def page_line():
    """The tools line of the page's ```json block."""
    with open(PAGE) as f:
        block = re.search(r"```json\n(.*?)```", f.read(), re.S).group(1)
    return json.loads(re.search(r'"tools": (\[.*?\])', block).group(1))


def launcher_with(tools):
    """A copy of the launcher (bin/pasta and share/pasta) whose default pipeline has
    `tools`, and a build directory of empty stand-ins for its libraries."""
    root = tempfile.mkdtemp(prefix="pasta-writing-a-tool-")
    shutil.copytree(os.path.join(SOURCE, "share"), os.path.join(root, "share"))
    shutil.copytree(os.path.join(SOURCE, "bin"), os.path.join(root, "bin"))
    path = os.path.join(root, "share", "pasta", "pipelines.json")
    with open(path) as f:
        table = json.load(f)
    table["pipelines"][0]["tools"] = tools
    with open(path, "w") as f:
        json.dump(table, f, indent=1)
    os.makedirs(os.path.join(root, "build", "inject"))
    for row in table["pipelines"]:
        open(os.path.join(root, "build", "inject", row["library"]), "w").close()
    return root, table


def launcher_steps():
    with open(os.path.join(SOURCE, "share", "pasta", "pipelines.json")) as f:
        default = json.load(f)["pipelines"][0]
    tools = page_line()
    expect("the page's line: the default pipeline's tools and gpu_idle", tools,
           default["tools"] + ["gpu_idle"])
    root, _ = launcher_with(tools)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PASTA_")}
    env.update({"PASTA_BUILD_DIR": os.path.join(root, "build"), "PASTA_TRACE_TOOL": PASTA_TRACE})
    pasta = [sys.executable, os.path.join(root, "bin", "pasta")]
    listed = subprocess.run(pasta + ["tools"], env=env, capture_output=True, text=True)
    expect("pasta tools lists gpu_idle with the default library", any(
        "libpasta_inject.so" in line and "gpu_idle" in line
        for line in listed.stdout.splitlines()), True)
    ran = subprocess.run(pasta + ["run", "-t", "gpu_idle", "-o", os.path.join(root, "out"), "--",
                                  "sh", "-c", "echo $CUDA_INJECTION64_PATH $PASTA_TOOLS"],
                         env=env, capture_output=True, text=True)
    got = ran.stdout.split()
    expect("pasta run -t gpu_idle: the library it injects",
           os.path.basename(got[0]) if got else None, default["library"])
    expect("pasta run -t gpu_idle: PASTA_TOOLS", got[1:], ["gpu_idle"])
    shutil.rmtree(root)


def naming():
    with open(TOOL) as f:
        text = f.read()
    camel = "".join(w.capitalize() for w in "gpu_idle".split("_"))
    expect("the tool is pasta::tools::<CamelCase of its name>",
           bool(re.search(r"namespace pasta::tools \{.*class " + camel + r" \{", text, re.S)),
           True)
    expect("its name", re.search(r'name = "(\w+)"', text).group(1), "gpu_idle")


def placement():
    shutil.rmtree(OUT, ignore_errors=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PASTA_")}
    subprocess.run([PASTA_TRACE, "replay", TRACE, "-o", OUT], env={**env, "PASTA_PRINT": "none"},
                   check=True, capture_output=True)
    subprocess.run([GPU_IDLE, TRACE, OUT], env=env, check=True, capture_output=True)
    sys.path.insert(0, os.path.join(SOURCE, "share", "pasta"))
    import report
    names = [t["name"] for t in report.collect(OUT)["tools"]]
    expect("gpu_idle on the page after kernel_freq, before timeline",
           names.index("kernel_freq") < names.index("gpu_idle") < names.index("timeline"), True)
    with open(os.path.join(SOURCE, "share", "pasta", "report.py")) as f:
        expect("report.py does not name gpu_idle", "gpu_idle" in f.read(), False)


def main():
    launcher_steps()
    naming()
    placement()
    return summary("the page's steps hold")


if __name__ == "__main__":
    sys.exit(main())
