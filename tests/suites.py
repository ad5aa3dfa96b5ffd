#!/usr/bin/env python3
"""Checks that every test suite CI expects is present, with at least as many tests as it
had when this table was last raised: a dependency found QUIET that went missing, a test
file that stopped being built, or a discovery that found nothing makes CI fail here
instead of passing with less.

    suites.py BUILD_DIR [--sanitizer]   prints the count per suite; exits 1 if one is short

--sanitizer: the AddressSanitizer build's table (no GPU tests, no libtorch, no launcher).
Raise a minimum when you add tests; lower one only with the reason in the commit.
"""
import collections
import json
import os
import subprocess
import sys

# suite: the fewest tests it may hold (counts of 2026-11-27). A doctest binary's cases are
# one suite, named by the binary; any other test's suite is its name up to the first ':'.
MAIN = {
    "pasta_tests": 212, "pasta_concurrency_tests": 6, "pasta_nv_tests": 38,
    "pasta_sanitizer_tests": 12, "pasta_torch_tests": 11, "cli": 16, "launcher": 6, "docs": 6,
    "compile error": 7, "report": 3, "exit paths": 1, "bench": 2, "gpu": 42, "hip": 1,
    "PASTA_DISABLE leaves no pasta symbol in the object file": 1, "compiled": 3,
    "gpu scripts": 2,
}
# The AddressSanitizer build: the library's and the trace tools' tests; no GPU tests, no
# libtorch (not instrumented), no launcher (its injection libraries are not built there).
SANITIZER = {
    "pasta_tests": 212, "pasta_concurrency_tests": 6, "pasta_nv_tests": 38,
    "pasta_sanitizer_tests": 12, "cli": 13, "docs": 6, "exit paths": 1, "bench": 2, "report": 3,
    "compiled": 3, "gpu scripts": 2,
}
DOCTEST = ("pasta_tests", "pasta_concurrency_tests", "pasta_nv_tests", "pasta_sanitizer_tests",
           "pasta_torch_tests", "pasta_amd_tests")


def suites(build):
    listing = subprocess.run(["ctest", "--show-only=json-v1"], cwd=build, capture_output=True,
                             text=True, check=True).stdout
    counts = collections.Counter()
    for test in json.loads(listing)["tests"]:
        exe = os.path.basename((test.get("command") or [""])[0])
        counts[exe if exe in DOCTEST else test["name"].split(":", 1)[0]] += 1
    return counts


def main(argv):
    if len(argv) < 2:
        print(__doc__)
        return 2
    want = SANITIZER if "--sanitizer" in argv else MAIN
    got = suites(argv[1])
    short = 0
    for suite in sorted(set(want) | set(got)):
        n, floor = got.get(suite, 0), want.get(suite)
        # doctest_discover_tests lists BINARY_NOT_BUILT when its binary was never run.
        bad = (floor is not None and n < floor) or "_NOT_BUILT" in suite
        short += bad
        print(f"{'SHORT' if bad else 'ok   '} {suite}: {n} tests"
              + (f" (at least {floor})" if floor is not None else " (not in the table)"))
    print(f"{sum(got.values())} tests in {len(got)} suites; "
          + (f"{short} suites short" if short else "every expected suite present"))
    return 1 if short else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
