#!/usr/bin/env bash
# Builds pasta and runs every test that needs no GPU (ctest -LE gpu).
# Usage: scripts/test.sh [BUILD_DIR] [extra cmake arguments...]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh"
build=${1:-$root/build}
shift || true
# Line tables only (-g1): backtraces and sanitizer reports keep file and line, and the build
# takes a quarter to a third less time on two cores than with full debug information. -Og:
# the tests check results, not speed; a unit compiles in about a tenth less time than at -O1
# (and -O1 in a sixth less than -O2; g++ 12); the GPU machine's script builds Release for
# its benchmarks.
# Where no GPU is, the GPU tests skip and nothing runs the CUDA examples (the user guide's
# in-binary programs too), the benchmarks or the `pasta run` libraries that record only GPU
# events (memory accesses, hardware counters, PC samples): they stay out of the build (those
# libraries alone are 160 of its 580 CPU-s); with a GPU they are built and run.
programs=ON
nvidia-smi -L >/dev/null 2>&1 || programs=OFF
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-Og -g1 -DNDEBUG" \
  -DCMAKE_CUDA_FLAGS_RELWITHDEBINFO="-O1 -Xcompiler=-g1 -DNDEBUG" \
  -DPASTA_PROGRAMS_IN_ALL=$programs "$@"
cmake --build "$build" --parallel "$(nproc)"
# Where the build goes: its ten slowest steps (a step not built again keeps its last time).
python3 "$root/scripts/slowest-units.py" "$build" || true
cd "$build"
ctest --no-tests=error --output-on-failure --parallel "$(nproc)" -LE gpu
# The GPU tests run where a GPU is; where none is, each skips, and ctest (which counts a skip
# as passed) is followed by the count a reader needs.
gpu_log=$(mktemp)
trap 'rm -f "$gpu_log"' EXIT
ctest --output-on-failure -L gpu | tee "$gpu_log"
skipped=$(grep -c '\*\*\*Skipped' "$gpu_log" || true)
if [ "$skipped" -gt 0 ]; then
  if nvidia-smi -L >/dev/null 2>&1; then
    echo "test.sh: $skipped GPU tests skipped on a machine with a GPU (see the reasons above)"
  else
    echo "test.sh: $skipped GPU tests skipped: no GPU (tests/gpu/run.sh runs them on a GPU machine)"
  fi
fi
