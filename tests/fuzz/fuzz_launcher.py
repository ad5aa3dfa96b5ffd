#!/usr/bin/env python3
"""libFuzzer (through atheris) on the `pasta` launcher's command line.

Each input becomes an argv (NUL-separated words, some of them one-byte codes
for the launcher's own subcommands, options and tool names), given to the
launcher's parse() (launcher/cli.py) and, for `run`, plan_run() (launcher/run.py):
neither has a side effect. What must hold:

* the launcher exits with status 2 (a bad command line, one line on stderr)
  or 0 (--help), or returns; no other exception and no other status;
* a rejected command line says why in one `pasta: ...` line or argparse's
  usage + error;
* a planned run injects one of the libraries of the launcher's table, whose
  tools include every tool that PASTA_TOOLS names, and writes its reports to
  an absolute directory.

    fuzz_launcher.py [libFuzzer options] [CORPUS_DIR]   (an empty CORPUS_DIR gets seeds)
"""
import contextlib
import io
import os
import sys
import tempfile

import atheris

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

sys.path.insert(0, os.path.join(ROOT, "share", "pasta"))
with atheris.instrument_imports():
    from launcher import cli, pipelines, run

TOOLS = sorted({t for _, _, tools in pipelines.table() for t in tools})
LIBRARIES = {library: tools for library, _, tools in pipelines.table()}
WORDS = (["run", "tools", "report", "replay", "info", "dump", "--", "-o", "--output", "-t",
          "--tools", "--record", "--kernel-filter", "--launch-callbacks", "--memory",
          "--host-reduction", "--torch", "--counters", "--op-inputs", "--limit", "-h", "true", "/bin/true",
          "python3", ",", "", "-1"] + TOOLS + [",".join(TOOLS[:2])])


def argv_of(data):
    """NUL-separated words (seeds are plain command lines); a word of one byte
    below len(WORDS) + 1 stands for WORDS[byte - 1], so mutations reach the
    launcher's own vocabulary."""
    argv = []
    for word in data.split(b"\0")[:16]:
        if len(word) == 1 and 0 < word[0] <= len(WORDS):
            argv.append(WORDS[word[0] - 1])
        else:
            argv.append(word.decode("utf-8", "replace"))
    return argv


def check(argv):
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            args = cli.parse(argv)
            if args.cmd != "run":
                return
            out, env = run.plan_run(args)
        except SystemExit as e:
            if e.code not in (0, 2):
                raise AssertionError(f"{argv!r}: exit status {e.code!r}") from None
            if e.code == 2 and not (err.getvalue().startswith("pasta: ") or
                                    "error:" in err.getvalue()):
                raise AssertionError(f"{argv!r}: status 2 without a message") from None
            return
    library = os.path.basename(env["CUDA_INJECTION64_PATH"])
    assert library in LIBRARIES, (argv, library)
    wanted = [t for t in env.get("PASTA_TOOLS", "").split(",") if t]
    assert all(t in LIBRARIES[library] for t in wanted), (argv, library, wanted)
    assert os.path.isabs(out) and env["PASTA_OUTPUT_DIR"] == out, (argv, out)


# Written into an empty corpus directory before the run: real command lines.
SEEDS = [["run", "--", "true"], ["run", "-t", "kernel_freq,timeline", "-o", "out", "--", "true"],
         ["run", "--memory", "--host-reduction", "--kernel-filter", "^sgemm", "--", "true"],
         ["run", "--torch", "--memory", "-t", "tensor_hotness", "--", "python3", "s.py"],
         ["run", "--record", "--", "true"], ["run", "-t", "record", "--memory", "--", "true"],
         ["run", "-t", "timelin", "--", "true"], ["tools"], ["dump", "t.pasta", "--limit", "3"],
         ["report", "dir", "-o", "x.html"], ["run", "--torch", "--counters", "--", "true"],
         # Once made -o an empty list (argparse's reading of "-o--"): now a clear exit 2.
         ["run", "--memory", "--kernel-filter", "^sgemm", "-o--", "true"]]


def seed(corpus):
    if os.path.isdir(corpus) and not os.listdir(corpus):
        for i, argv in enumerate(SEEDS):
            with open(os.path.join(corpus, f"seed-{i}"), "wb") as f:
                f.write(b"\0".join(w.encode() for w in argv))


def test_one_input(data):
    check(argv_of(data))


def main():
    # Empty stand-ins for the libraries, so plan_run finds them without a build.
    stand_ins = tempfile.mkdtemp(prefix="pasta-fuzz-launcher-")
    os.makedirs(os.path.join(stand_ins, "inject"))
    for library in LIBRARIES:
        open(os.path.join(stand_ins, "inject", library), "w").close()
    os.environ["PASTA_BUILD_DIR"] = stand_ins
    for name in ("PASTA_INJECT_LIB", "PASTA_TRACE"):
        os.environ.pop(name, None)
    dirs = [a for a in sys.argv[1:] if not a.startswith("-")]
    if dirs:
        seed(dirs[0])
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
