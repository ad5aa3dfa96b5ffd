#!/usr/bin/env python3
"""The launcher's table of pipelines (launcher.pipelines.table()) against the
tools each built injection library really has (its pasta_tool_names()).

  pipelines_test.py BUILD_DIR [--all]

Libraries that cannot be loaded here (the memory ones need libcuda, the torch
ones libtorch's CUDA libraries) are named and skipped; --all (on the GPU
machine) makes that a failure.
"""
import ctypes
import os
import sys


def main(build, need_all):
    sys.path.insert(0, os.path.join(build, "share", "pasta"))  # the launcher the build copied
    from launcher import pipelines as launcher_pipelines
    pipelines = launcher_pipelines.table()
    checked = failed = missing = 0
    for library, _, tools in pipelines:
        path = os.path.join(build, "inject", library)
        if not os.path.exists(path):
            print(f"[skip] {library}: not built")
            missing += 1
            continue
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            print(f"[skip] {library}: cannot be loaded here ({e})")
            missing += 1
            continue
        names = lib.pasta_tool_names
        names.restype = ctypes.c_char_p
        have = names().decode().split(",")
        checked += 1
        if have == tools:
            print(f"[ok  ] {library}: {', '.join(have)}")
        else:
            failed += 1
            print(f"[FAIL] {library}: has {have}, the launcher says {tools}")
    print(f"{checked} libraries checked, {failed} differ, {missing} skipped")
    if failed or checked == 0 or (need_all and missing):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], "--all" in sys.argv[2:]))
