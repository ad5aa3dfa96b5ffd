#!/usr/bin/env python3
"""Runs every row of the table in docs/errors.md and checks that the command
gives the message and the exit code the table says, so the page cannot drift
from what pasta does.

  bad_inputs_test.py BUILD_DIR SOURCE_DIR

A row is `| case | `command` | `message` | exit |`. Commands run from the
source tree, with `pasta` and `pasta-trace` taken from BUILD_DIR, and a path
the page writes as build/... (a build folder in the source tree, as
scripts/test.sh makes) read as BUILD_DIR/..., wherever that is. In a message,
<n> stands for a number and <text> for anything up to the end of the line.
/tmp/pasta-errors is a fresh scratch directory; /mnt/full is a 64 KiB tmpfs
with no space left and /mnt/small an empty 128 KiB one (mounted in a user and
mount namespace, so no root is needed; rows that need them are skipped,
visibly, where that is refused). Rows
whose exit column says GPU are checked by tests/gpu/check.py instead.
"""
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile


def rows(page):
    """(case, command, message, exit) for each row of the tables in `page`."""
    cell = r"\s*`(?P<{}>(?:[^`]|``)+)`\s*"
    pattern = re.compile(r"^\|(?P<case>[^|]+)\|" + cell.format("cmd") + r"\|" + cell.format("msg") +
                         r"\|\s*(?P<exit>[^|]+?)\s*\|\s*$")
    with open(page) as f:
        for line in f:
            m = pattern.match(line)
            if m:
                yield (m["case"].strip(), m["cmd"].replace("\\|", "|"),
                       m["msg"].replace("\\|", "|"), m["exit"])


def message_regex(message):
    out = ""
    for part in re.split(r"(<n>|<text>)", message):
        out += {"<n>": r"\d+", "<text>": r".*"}.get(part, re.escape(part))
    return re.compile(r"^" + out + r"$", re.M)


def in_build(command, build):
    """`command` with each path that starts with the page's build/ in `build` instead."""
    return re.sub(r"(?<![\w./-])build/", lambda _: shlex.quote(build) + "/", command)


def tmpfs_works():
    probe = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "sh", "-c",
                            "mount -t tmpfs -o size=64k tmpfs /tmp && echo ok"],
                           capture_output=True, text=True, check=False)
    return probe.stdout.strip() == "ok"


def check_row(case, cmd, message, code, returncode, out):
    """Whether the command's exit code and output are the row's; prints the verdict."""
    ok_code = str(returncode) == code.split()[0]
    ok_msg = message_regex(message).search(out) is not None
    print(f"[{'ok' if ok_code and ok_msg else 'FAIL':4}] {case}")
    if not (ok_code and ok_msg):
        print(f"  command:  {cmd}\n  exit:     {returncode} (table: {code})\n"
              f"  expected: {message}\n  output:\n    " + out.replace("\n", "\n    "))
    return ok_code and ok_msg


def main(build, source):
    page = os.path.join(source, "docs", "errors.md")
    table = list(rows(page))
    if len(table) < 15:
        print(f"only {len(table)} rows parsed from {page}")
        return 1
    bindir = tempfile.mkdtemp(prefix="pasta-errors-bin-")
    with open(os.path.join(bindir, "pasta"), "w") as f:
        f.write(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} '
                f'{shlex.quote(os.path.join(build, "bin", "pasta"))} "$@"\n')
    os.chmod(os.path.join(bindir, "pasta"), 0o755)
    os.symlink(os.path.join(build, "cli", "pasta-trace"), os.path.join(bindir, "pasta-trace"))
    env = dict(os.environ, PATH=bindir + os.pathsep + os.environ["PATH"], PASTA_BUILD_DIR=build)
    for k in [k for k in env if k.startswith("PASTA_") and k != "PASTA_BUILD_DIR"]:
        del env[k]
    tmpfs = tmpfs_works()
    if not tmpfs:
        print("note: cannot mount a tmpfs in a user namespace here; full-disk rows skipped")
    failures = skipped = 0
    # Rows that show different lines of one command's output (the job merge's damaged ranks)
    # run it once: its commands are deterministic, and each run starts from a fresh scratch
    # directory anyway.
    ran = {}
    for case, cmd, message, code in table:
        if code == "GPU":
            print(f"[gpu ] {case}: checked on the GPU by tests/gpu/check.py")
            continue
        if cmd in ran:
            failures += not check_row(case, cmd, message, code, *ran[cmd])
            continue
        scratch = tempfile.mkdtemp(prefix="pasta-errors-")
        command = in_build(cmd.replace("/tmp/pasta-errors", scratch), build)
        if "/mnt/" in command:
            if not tmpfs:
                print(f"[skip] {case}")
                skipped += 1
                continue
            # In a private mount namespace: /mnt/full, a 64 KiB tmpfs with no
            # space left, and /mnt/small, an empty 128 KiB one.
            command = ("mkdir -p /mnt/full /mnt/small && "
                       "mount -t tmpfs -o size=64k tmpfs /mnt/full && "
                       "mount -t tmpfs -o size=128k tmpfs /mnt/small && "
                       "(cat /dev/zero > /mnt/full/filler) 2>/dev/null; " + command)
            argv = ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", command]
        else:
            argv = ["sh", "-c", command]
        p = subprocess.run(argv, cwd=source, env=env, capture_output=True, text=True,
                           timeout=120, check=False)
        out = (p.stdout + p.stderr).replace(scratch, "/tmp/pasta-errors")
        ran[cmd] = (p.returncode, out)
        failures += not check_row(case, cmd, message, code, p.returncode, out)
        shutil.rmtree(scratch, ignore_errors=True)
    shutil.rmtree(bindir, ignore_errors=True)
    print(f"{len(table)} rows: {failures} failed, {skipped} skipped")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])))
