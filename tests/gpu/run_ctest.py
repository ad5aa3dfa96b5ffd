#!/usr/bin/env python3
"""ctest on the GPU machine, where a skipped test is a hole, not a pass: ctest counts a test
that exits with its SKIP_RETURN_CODE (77 for the GPU cases: no GPU, fewer GPUs than the case
needs, no ncu, an example not built) as passed, and a regex that matches no test as a run
with nothing failed.

    run_ctest.py BUILD_DIR MAY_SKIP CTEST_ARGS...

Runs `ctest --no-tests=error CTEST_ARGS` in BUILD_DIR (its output as it comes), then reads
the run's JUnit file and fails when a test was skipped that this machine may not skip.
MAY_SKIP: a regex of GPU case names this machine may skip ("multi_gpu" where it has one GPU;
empty: none); a test named "gpu: CASE" whose CASE it matches whole may be skipped, no other.
Exits with ctest's status when ctest failed, else 1 when a test was skipped that may not be
or none ran, else 0.
"""
import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET


def skipped_tests(junit):
    """(tests run or skipped, [(name, why) of each skipped one]) from a ctest JUnit file."""
    tests, skipped = 0, []
    for case in ET.parse(junit).getroot().iter("testcase"):
        tests += 1
        skip = case.find("skipped")
        if skip is not None:
            skipped.append((case.get("name"), skip.get("message", "")))
    return tests, skipped


def unexpected(skipped, may_skip):
    """The names of the skipped tests that may_skip (a regex of GPU case names) leaves out."""
    allowed = re.compile(rf"gpu: (?:{may_skip})") if may_skip else None
    return [name for name, _ in skipped if not (allowed and allowed.fullmatch(name))]


def check_skips(junit, may_skip):
    """0 when every skipped test in the JUnit file may be skipped and some test ran, else 1;
    each skipped test printed with the verdict."""
    try:
        tests, skipped = skipped_tests(junit)
    except (OSError, ET.ParseError) as e:
        print(f"FAILED: no test results to read in {junit}: {e}")
        return 1
    if tests == 0:
        print(f"FAILED: {junit} holds no test")
        return 1
    wrong = unexpected(skipped, may_skip)
    for name, why in skipped:
        verdict = "FAILED: skipped on the GPU machine" if name in wrong else \
            f"skipped, as this machine may ({may_skip})"
        print(f"{verdict}: {name} ({why})")
    if wrong:
        print(f"{len(wrong)} of {tests} tests skipped that must run here: a skip is not a pass")
        return 1
    return 0


def main(argv):
    if len(argv) < 3:
        print(__doc__)
        return 2
    build, may_skip, args = argv[1], argv[2], argv[3:]
    with tempfile.TemporaryDirectory(prefix="pasta-ctest-") as tmp:
        junit = os.path.join(tmp, "junit.xml")
        code = subprocess.run(["ctest", "--no-tests=error", "--output-junit", junit, *args],
                              cwd=build, check=False).returncode
        sys.stdout.flush()
        skips = check_skips(junit, may_skip)
    return code or skips


if __name__ == "__main__":
    sys.exit(main(sys.argv))
