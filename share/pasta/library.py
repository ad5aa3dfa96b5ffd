"""What the launcher and the diff ask pasta's library instead of keeping copies of
its tables, through pasta-trace (cli/pasta_trace.cpp):

  pasta-trace variables   every PASTA_* variable a Config takes, what `pasta run`
                          sets for its processes, what the launcher and CMake read
                          themselves, the launchers' rank variables and the
                          output placeholders (include/pasta/core/process.hpp)
  pasta-trace expand      who a process is in its job, and a pattern's
                          placeholders expanded for it, as a profiled process does

Each function takes the pasta-trace to ask; the tables are read once per process.
"""
import functools
import json
import os
import re
import subprocess


class LibraryError(Exception):
    """pasta-trace did not answer: one line saying why."""


def _ask(tool, *args):
    try:
        r = subprocess.run([tool, *args], capture_output=True, text=True, check=False)
    except OSError as e:
        raise LibraryError(f"{tool} cannot run: {e.strerror}") from None
    if r.returncode != 0:
        raise LibraryError(f"{tool} {args[0]}: {r.stderr.strip() or f'exit code {r.returncode}'}")
    return json.loads(r.stdout)


@functools.cache
def tables(tool):
    """pasta-trace variables, as a dict: variables, run, read_outside, rank_variables,
    placeholders."""
    return _ask(tool, "variables")


def rank_variable_names(tool):
    """Every variable of the launchers' rank table (rank, local rank, world size)."""
    return {name for row in tables(tool)["rank_variables"]
            for name in (row["rank"], row["local_rank"], row["world_size"]) if name}


def settable(tool):
    """The names of the variables a Config takes."""
    return {v["name"] for v in tables(tool)["variables"]}


def identity(tool, pattern=""):
    """Who this process (the launcher) is in its job, from its environment (pid, host,
    rank, rank_variable, local_rank, world_size, dir_name), with `pattern` expanded for
    it (expanded) and what its placeholders got wrong (errors): what a profiled process
    with this environment works out (core/process.hpp)."""
    return _ask(tool, "expand", "--pid", str(os.getpid()), pattern)


def refusal(error):
    """A line of expand's errors for the launcher, which refuses such a pattern: without
    what a profiled process does about it instead (keeps it as written, expands to
    nothing)."""
    return re.sub(r"; (kept as written|it stands for nothing)$", "", error)
