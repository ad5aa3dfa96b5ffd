#!/usr/bin/env python3
"""scripts/slowest-units.py on a made-up Ninja log whose answers are known: four steps
(one built twice, one command with two outputs), their order, the sum and the wall time."""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import checks  # noqa: E402

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts",
                      "slowest-units.py")
LOG = """# ninja log v5
0\t4000\t0\ta.o\t1
0\t9000\t0\tb.o\t2
9000\t10500\t0\tlib.so\t3
9000\t10500\t0\tlib.so.d\t3
100\t2000\t0\ta.o\t4
"""


def run(*args):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True)


def main():
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, ".ninja_log"), "w") as f:
            f.write(LOG)
        lines = run(d, "--top", "2").stdout.splitlines()
        # a.o's latest build took 1.9 s; lib.so and its .d are one step of 1.5 s.
        checks.expect("the heading: 3 steps, 9 + 1.5 + 1.9 s, 10.5 s wall", lines[0],
                      "the 2 slowest of 3 build steps (12.4 s over all steps, 10.5 s from first "
                      "start to last end):")
        checks.expect("slowest first", [l.split()[-1] for l in lines[1:]], ["b.o", "a.o"])
        checks.expect("their seconds", [l.split()[0] for l in lines[1:]], ["9.0", "1.9"])
        empty = run(os.path.join(d, "none"))
        checks.expect("no log: exit 2, one line", (empty.returncode, len(empty.stderr.splitlines())),
                      (2, 1))
    return checks.summary("slowest-units: every check exact")


if __name__ == "__main__":
    sys.exit(main())
