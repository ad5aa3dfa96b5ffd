#!/usr/bin/env bash
# The main job. On a machine with an NVIDIA GPU: builds the CUDA example and
# profiles it. Without one: replays a trace recorded on a real GPU
# (tests/data/), through the same tools, and says so.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${PASTA_BUILD_DIR:-$root/build}
out=${PASTA_OUTPUT_DIR:-$root/pasta-out}
"$root/scripts/install-deps.sh"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" --parallel "$(nproc)" --target pasta-trace

trace=$(ls "$root"/tests/data/*.pasta 2>/dev/null | head -1 || true)
if [ -z "$trace" ]; then
  echo "demo: no recorded trace in tests/data; writing a small synthetic one instead" >&2
  cmake --build "$build" --target pasta_make_test_traces >/dev/null
  "$build/tests/pasta_make_test_traces" "$build/demo-traces" >/dev/null
  trace=$build/demo-traces/small.pasta
  echo "demo: replaying $trace (SYNTHETIC: not recorded on a GPU)" >&2
else
  echo "demo: no GPU profiling in this build; replaying $trace, recorded on a real GPU" >&2
  echo "demo: (how it was recorded: $(dirname "$trace")/README.md)" >&2
fi
PASTA_PRINT=stdout "$build/cli/pasta-trace" replay "$trace" -o "$out"
