#!/usr/bin/env python3
"""One definition of pasta's variables across C++ and Python: the launcher takes the
library's tables (pasta-trace variables) and its own directory's expansion
(pasta-trace expand), and each row of those tables goes through both sides here.

  variables_test.py BUILD_DIR JOB_CHILD SOURCE_DIR

* every output placeholder: the launcher's -o and a profiled process's
  PASTA_OUTPUT_DIR (tests/cli/job_child.cpp) give what the placeholder stands for;
* every launcher's rank variable: the launcher sees itself as that rank, and a
  profiled process writes into rank<R> with that variable, local rank and size;
* every PASTA_* name the launcher (share/pasta/: the launcher package and the modules
  beside it) writes is a variable of the library or one the library lists as read
  outside it, by the launcher; every name that list gives to the launcher or to CMake
  is read there.
"""
import json
import os
import re
import socket
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from checks import expect, summary  # noqa: E402

BUILD, CHILD, SOURCE = (os.path.abspath(a) for a in sys.argv[1:4])
TRACE_TOOL = os.path.join(BUILD, "cli", "pasta-trace")
sys.path.insert(0, os.path.join(SOURCE, "share", "pasta"))
import library  # noqa: E402


def launcher():
    """The launcher's modules (share/pasta/launcher/), asking this build's pasta-trace."""
    os.environ.update(WHERE)
    from launcher import run, where
    return run, where


WHERE = {"PASTA_TRACE_TOOL": TRACE_TOOL, "PASTA_BUILD_DIR": BUILD}  # this build's parts


def clean_env():
    """This environment without pasta's variables and any launcher's rank, but with where this
    build's parts are (a source tree's own build/ may be another, older one)."""
    ranks = library.rank_variable_names(TRACE_TOOL)
    return {**{k: v for k, v in os.environ.items() if not k.startswith("PASTA_") and
               k not in ranks}, **WHERE}


def child_dir(out_pattern, env):
    """The directory a profiled process writes its reports into, for PASTA_OUTPUT_DIR =
    out_pattern, and its pid (read from its trace's metadata)."""
    subprocess.run([CHILD, "1"], env={**clean_env(), **env, "PASTA_OUTPUT_DIR": out_pattern},
                   check=True, capture_output=True)
    found = [os.path.dirname(p) for p in walk(os.path.dirname(out_pattern.split("%")[0] + "x"))
             if p.endswith("kernel_freq.json")]
    return found


def walk(top):
    for d, _, files in os.walk(top):
        for f in files:
            yield os.path.join(d, f)


def placeholders(run, tables):
    """Each placeholder, expanded by the launcher for itself and by a profiled process for
    itself: both what the placeholder stands for, under one environment (rank 3)."""
    env = {"RANK": "3", "WORLD_SIZE": "4", "TEST_Q_VALUE": "q-value"}
    host = socket.gethostname()
    means = {"p": lambda pid: str(pid), "h": lambda pid: host, "q": lambda pid: "q-value",
             "r": lambda pid: "3", "n": lambda pid: "rank3", "%": lambda pid: "%"}
    letters = [p["letter"] for p in tables["placeholders"]]
    expect("the test knows every placeholder of the library's table", sorted(means),
           sorted(letters))
    for letter in letters:
        written = "%q{TEST_Q_VALUE}" if letter == "q" else "%" + letter
        saved = dict(os.environ)
        os.environ.clear()
        os.environ.update({**clean_env(), **env})
        try:
            mine = run.expand_output(f"/x/out-{written}")
        finally:
            os.environ.clear()
            os.environ.update(saved)
        expect(f"-o out-{written} in the launcher", mine, f"/x/out-{means[letter](os.getpid())}")
        with tempfile.TemporaryDirectory() as tmp:
            dirs = child_dir(os.path.join(tmp, f"out-{written}"), env)
            pid = None
            if dirs:
                meta = subprocess.run([TRACE_TOOL, "info", os.path.join(dirs[0], "trace.pasta")],
                                      capture_output=True, text=True, check=False).stdout
                m = re.search(r"^\s+pid: (\d+)$", meta, re.M)
                pid = int(m.group(1)) if m else None
            expect(f"PASTA_OUTPUT_DIR=out-{written} in a profiled process",
                   [os.path.basename(d) for d in dirs], [f"out-{means[letter](pid)}"])


def rank_variables(run, tables):
    """Each row of the rank table names the launcher and a profiled process alike."""
    for row in tables["rank_variables"]:
        env = {row["rank"]: "5"}
        if row["local_rank"]:
            env[row["local_rank"]] = "1"
        if row["world_size"]:
            env[row["world_size"]] = "8"
        saved = dict(os.environ)
        os.environ.clear()
        os.environ.update({**clean_env(), **env})
        try:
            mine = run.launcher_rank()
        finally:
            os.environ.clear()
            os.environ.update(saved)
        expect(f"{row['rank']}=5: the launcher is rank 5", mine, (5, row["rank"]))
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "job")
            dirs = child_dir(out, env)
            expect(f"{row['rank']}=5: a profiled process writes into rank5",
                   [os.path.relpath(d, out) for d in dirs], ["rank5"])
            entries = [json.load(open(p)) for p in walk(os.path.join(out, "processes"))]
            got = [(e["rank"], e["rank_variable"], e["world_size"]) for e in entries]
            expect(f"{row['rank']}=5: its entry in the job's list", got,
                   [(5, row["rank"], 8 if row["world_size"] else None)])


def names(where, tables):
    """The launcher's PASTA_* names against the library's tables, and the reverse."""
    settable = {v["name"] for v in tables["variables"]}
    ran = set(tables["run"].values())
    outside = {v["name"]: v["reader"] for v in tables["read_outside"]}
    written = {}
    launcher_files = [os.path.join(SOURCE, "bin", "pasta")] + [
        p for p in walk(os.path.join(SOURCE, "share", "pasta")) if p.endswith(".py")]
    for path in launcher_files:
        with open(path) as f:
            for name in re.findall(r"[\"'](PASTA_[A-Z0-9_]*[A-Z0-9])[\"']", f.read()):
                written.setdefault(name, os.path.relpath(path, SOURCE))
    unknown = sorted(f"{n} ({where})" for n, where in written.items()
                     if n not in settable | ran and outside.get(n) != "launcher")
    expect("PASTA_* names in the launcher that the library does not know", unknown, [])
    for name, value in vars(where.Var).items():
        if name.startswith("_"):
            continue
        expect(f"Var.{name} is a variable the library knows", value in settable | ran |
               set(outside), True)
    cmake = ""
    for path in [os.path.join(SOURCE, "CMakeLists.txt")] + [
            p for p in walk(os.path.join(SOURCE, "cmake"))]:
        with open(path) as f:
            cmake += f.read()
    for name, reader in outside.items():
        read = name in written if reader == "launcher" else name in cmake
        expect(f"{name}: read by the {reader}", read, True)


def main():
    run, where = launcher()
    tables = library.tables(TRACE_TOOL)
    placeholders(run, tables)
    rank_variables(run, tables)
    names(where, tables)
    return summary("every placeholder, rank variable and name agrees")


if __name__ == "__main__":
    sys.exit(main())
