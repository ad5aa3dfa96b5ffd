#!/usr/bin/env python3
"""run_ctest_test.py: tests/gpu/run_ctest.py, the ctest that tests/gpu/run.sh runs on the GPU
machine, fails a step where a test was skipped that the machine may not skip, or where no
test matched; on a project of four tests (two GPU cases that skip, one that passes, one
non-GPU test that skips) that real ctest runs.

    run_ctest_test.py CMAKE CTEST
"""
import contextlib
import io
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "gpu"))
sys.path.insert(0, os.path.dirname(HERE))
import checks  # noqa: E402
import run_ctest  # noqa: E402

PROJECT = '''cmake_minimum_required(VERSION 3.21)
project(skips NONE)
enable_testing()
add_test(NAME "gpu: in_binary" COMMAND sh -c "exit 77")
add_test(NAME "gpu: multi_gpu" COMMAND sh -c "exit 77")
add_test(NAME "gpu: threads" COMMAND sh -c "exit 0")
add_test(NAME "nv: sass" COMMAND sh -c "exit 77")
set_tests_properties("gpu: in_binary" "gpu: multi_gpu" "nv: sass" PROPERTIES SKIP_RETURN_CODE 77)
set_tests_properties("gpu: in_binary" "gpu: multi_gpu" "gpu: threads" PROPERTIES LABELS gpu)
'''


def run(build, ctest, may_skip, *args):
    """run_ctest.main with `ctest` first on PATH: (exit code, what it printed)."""
    text = io.StringIO()
    path = os.environ["PATH"]
    os.environ["PATH"] = os.path.dirname(ctest) + os.pathsep + path
    try:
        with contextlib.redirect_stdout(text):
            code = run_ctest.main(["run_ctest.py", build, may_skip, *args])
    finally:
        os.environ["PATH"] = path
    print(text.getvalue())
    return code, [l for l in text.getvalue().splitlines() if "skipped" in l or "FAILED" in l]


def main(cmake, ctest):
    tmp = tempfile.mkdtemp(prefix="pasta-run-ctest-")
    try:
        src, build = os.path.join(tmp, "src"), os.path.join(tmp, "build")
        os.makedirs(src)
        with open(os.path.join(src, "CMakeLists.txt"), "w") as f:
            f.write(PROJECT)
        subprocess.run([cmake, "-S", src, "-B", build], check=True, capture_output=True)
        # The hole: ctest itself passes a run whose GPU cases all skipped.
        plain = subprocess.run([ctest, "-L", "gpu"], cwd=build, capture_output=True, text=True)
        checks.expect("ctest alone: exit code with two GPU cases skipped", plain.returncode, 0)
        code, said = run(build, ctest, "multi_gpu", "-L", "gpu")
        checks.expect("one GPU: in_binary skipped, multi_gpu may be: exit code", code, 1)
        checks.expect("one GPU: the lines", said, [
            "FAILED: skipped on the GPU machine: gpu: in_binary (SKIP_RETURN_CODE=77)",
            "skipped, as this machine may (multi_gpu): gpu: multi_gpu (SKIP_RETURN_CODE=77)",
            "1 of 3 tests skipped that must run here: a skip is not a pass"])
        code, said = run(build, ctest, "multi_gpu|in_binary", "-L", "gpu")
        checks.expect("both GPU skips named as expected: exit code", code, 0)
        code, _ = run(build, ctest, "", "-R", "gpu: threads")
        checks.expect("nothing skipped, nothing allowed: exit code", code, 0)
        code, _ = run(build, ctest, "multi", "-R", "gpu: multi_gpu")
        checks.expect("a regex matching part of a case name allows no skip: exit code", code, 1)
        code, said = run(build, ctest, "sass|.*", "-R", "sass")
        checks.expect("a skipped test that is not a GPU case: exit code", code, 1)
        checks.expect("... named", said[0],
                      "FAILED: skipped on the GPU machine: nv: sass (SKIP_RETURN_CODE=77)")
        code, _ = run(build, ctest, "", "-R", "no_such_case")
        checks.expect("a regex that matches no test: exit code (ctest's, no tests)", code, 8)
        checks.expect("a JUnit file that cannot be read",
                      run_ctest.check_skips(os.path.join(tmp, "missing.xml"), ""), 1)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return checks.summary("run_ctest: every unexpected skip and empty selection fails the step")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
