#!/usr/bin/env bash
# The main job. On a machine with an NVIDIA GPU: builds the CUDA example and
# profiles it, unmodified, with `pasta run`. Without one: replays a PyTorch
# ResNet-18 training step recorded on an H100 under `pasta run --torch`
# (tests/data/) through the same analysis, and says so. Either way it ends
# with one HTML page, or one line saying why there is none.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${PASTA_BUILD_DIR:-$root/build}
out=${PASTA_OUTPUT_DIR:-$root/pasta-out}
"$root/scripts/install-deps.sh"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null

if nvidia-smi -L >/dev/null 2>&1 && command -v nvcc >/dev/null; then
  cmake --build "$build" --parallel "$(nproc)" --target pasta-trace pasta_inject launches
  echo "demo: GPU found: profiling examples/cuda/launches.cu with pasta run" >&2
  PASTA_PRINT=stdout "$build/bin/pasta" run -f -o "$out" -- "$build/examples/launches" --threads 4
else
  cmake --build "$build" --parallel "$(nproc)" --target pasta-trace
  trace=$root/tests/data/resnet18_torch_h100.pasta
  echo "demo: no GPU here: replaying $trace," >&2
  echo "demo: a PyTorch ResNet-18 training step recorded on an NVIDIA H100 under pasta run --torch (tests/data/README.md)" >&2
  rm -rf "$out"
  PASTA_PRINT=stdout "$build/cli/pasta-trace" replay "$trace" -o "$out"
fi
# One page for all of it (pasta run already wrote it on a GPU). Without Jinja2 or
# matplotlib, `pasta report` says what is missing in one line.
[ -f "$out/report.html" ] || python3 "$root/bin/pasta" report "$out" || true
if [ -f "$out/report.html" ]; then
  echo "demo: open $out/report.html" >&2
else
  echo "demo: no page written (see the line above); the reports are in $out/" >&2
fi
exit 0
