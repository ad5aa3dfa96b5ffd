#!/usr/bin/env bash
# The one script for the GPU machine: builds from a clean tree, runs the GPU
# tests (ctest -L gpu), the overhead benchmark, records the traces that
# tests/data keeps, and prints a short table. Logs go to $OUT (or ./gpu-out).
#   tests/gpu/run.sh [tests|bench|record|all|multi|memory|annotations|counters|stalls|torch|reliability|jobs|checks|examples|handlers|compiled|record-gpt|modules]
#   (default all)
# `jobs`: a user's CUDA program built through FetchContent once per documented composition
# (gpu: consumer), `pasta run -- torchrun` over a 2-rank DDP job (gpu: ddp), and the GPU tests
# of the paths those changed (JOBS_TESTS, a regex of case names, replaces that list).
# `handlers`: everything built, then the GPU tests of the CUPTI, Sanitizer and PyTorch handlers
# (tracing, counters, PC sampling and stall blame, memory accesses, operators) and of in-binary
# compositions (HANDLERS_TESTS, a regex of case names, replaces that list).
# `compiled`: capture ranges, torch.compile attribution, CUDA graphs and `pasta diff` of eager
# against compiled (COMPILED_TESTS, a regex of case names, replaces that list).
# `examples`: the CUDA and cuDNN examples that make their own profiler (<example>_profiler.cpp),
# their plain builds and pasta run's libraries, then the GPU tests that run them
# (EXAMPLES_TESTS, a regex of case names, replaces that list).
# `checks`: the GPU cases whose checks are exact (CHECKS_TESTS, a regex, replaces the list;
# MATRIX_SKIP and DDP_PIPELINES shorten the results matrix and the DDP job).
# `multi` builds only the CUDA example and runs the tests that need it (the
# several-GPU test among them), for a machine with two GPUs. `reliability`
# takes RELIABILITY_TESTS (a ctest regex of case names) and MATRIX_SKIP
# (examples the results matrix leaves out, comma-separated). `annotations` is
# the device-annotation part of `memory` alone: its GPU tests and benchmark.
# `counters`: hardware counters (Range Profiler) against known values and ncu (a change to user
# replay runs `COMPILED_TESTS=torch_window ... compiled` too: PyTorch over several steps, where a
# replay that changes the program's view of the driver shows in the next step),
# then bench/gpu/op_counters.py (COUNTERS_BENCH=0 leaves it out, COUNTERS_TESTS=0 the tests;
# COUNTERS_BENCH_ARGS its options, e.g. "--model gpt2 --layers 1" for transformers' GPT-2 or
# "--model resnet18" for torchvision's ResNet-18 instead of the project's gpt_block);
# COUNTERS_AGAINST=DIR runs native and pasta only, against the MODEL_ncu.csv.gz (and
# MODEL_ncu_dram_alone.csv.gz, MODEL_ncu_app.csv.gz) an earlier run left in DIR: a variant of
# pasta (its PASTA_* variables set on the command line) without ncu's minutes;
# COUNTERS_NCU_APP=1 then runs ncu's application replay of the same script and compares three
# ways, on this run's files or, with COUNTERS_FROM=DIR, on the MODEL_op_counters.profile.json
# and MODEL_ncu.csv.gz an earlier run left in DIR (inside the tree, so they travel; MODEL is
# gpt for gpt_block, else --model's name; with COUNTERS_AGAINST, ncu's files from there); with
# COUNTERS_BENCH_ARGS="--layers 2 --app-metrics all" on every metric (twelve blocks take ncu's
# application replay past ten minutes). COUNTERS_NCU_TWICE=1 runs ncu's kernel replay of the
# script twice and judges the second run against the first by pasta's rule and floors
# (op_counters.py --ncu-twice): how far the agreement goal is reachable at all. `stalls`:
# the stall-blame GPU tests (PC sampling joined with sanitizer accesses; STALLS_TESTS, a regex
# of case names, replaces the list), then bench/gpu/stall_access.py (STALL_BENCH=0 leaves it
# out; STALL_BENCH_ARGS, e.g. "--layers 2 --rounds 2").
# Benchmark options: BENCH_ARGS (bench/gpu/overhead.py, e.g. "--quick", "--models gpt2 --together"
# (both batch sizes in each process, half the processes) or "--models gpt2
# --rounds 5"), TORCH_BENCH_ARGS (torch_overhead.py), MEMORY_BENCH_ARGS (memory.py),
# ANNOTATIONS_BENCH_ARGS (annotations.py); each takes --quick for a first check, and --budget
# SECONDS to start no round that would end past SECONDS (a machine call's limit). `bench` first
# times a read of each host clock (bench/host_clock.cpp) and the operator callbacks on CPU tensors
# (bench/aten_ops.py; ATEN_OPS_ARGS, ATEN_OPS_BENCH=0 leaves it out); BENCH_TESTS, a regex of
# GPU case names whose programs the bench targets build (e.g. torch_detach), runs them before the
# overhead benchmark.
# A failed step (a GPU test, a benchmark, a recording) makes the exit status 1, and the
# summary names it. A GPU test skipped here fails its step, as does a step whose regex matches
# no test, unless this machine may skip the case: multi_gpu on one GPU, results_matrix with
# MATRIX_SKIP set, ddp with DDP_PIPELINES set, and what GPU_MAY_SKIP (a regex of case names) adds.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-$root/gpu-out}
what=${1:-all}
mkdir -p "$out"
build=/tmp/pasta-gpu-build
work=/tmp/pasta-gpu-work  # scratch: only a few files may come back from $OUT
rm -rf "$work" && mkdir -p "$work"
cd "$root"

echo "== machine"; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "== build"
start=$SECONDS
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPASTA_BUILD_BENCH=ON \
  -DCMAKE_CUDA_ARCHITECTURES=90 >"$work/configure.log" 2>&1 || { tail -30 "$work/configure.log"; exit 1; }
targets=()
[ "$what" = multi ] && targets=(--target launches_pasta)
[ "$what" = bench ] && targets=(--target empty_kernels pasta_inject pasta_bench_kernel_freq
  pasta_bench_kernel_freq_timeline pasta_bench_aten pasta_bench_op_floor inject_torch
  inject_torch_bench pasta_bench_host_clock pasta_bench_ring_ops)
# The operator callback benchmark's program links libtorch (half a minute to build): only when it runs.
[ "$what" = bench ] && [ "${ATEN_OPS_BENCH:-1}" != 0 ] && targets+=(pasta_bench_aten_ops)
[ "$what" = torch ] && targets=(--target pasta_inject inject_torch inject_torch_memory
  inject_torch_record inject_torch_counters inject_torch_bench libtorch_train tensor_access
  tensor_access_pasta pasta-trace pasta_torch_tests)
[ "$what" = reliability ] && targets=(--target launches launches_pasta uvm_advice uvm_advice_pasta
  access_pattern access_pattern_cpu conv pasta_inject pasta_record pasta_counters pasta_memory pasta_memory_cpu
  pasta_memory_record inject_torch inject_torch_memory inject_torch_record tensor_access pasta-trace)
[ "$what" = counters ] && targets=(--target counters counters_pasta device_variables uploads pasta-trace pasta_counters
  inject_torch_counters)
[ "$what" = stalls ] && targets=(--target stalls async_copy pasta_stall_sample pasta_stall_access
  pasta_stall_access_cpu inject_torch_stall_sample inject_torch_stall_access
  inject_torch_stall_access_cpu pasta_nv_tests)
[ "$what" = annotations ] && targets=(--target access_pattern annotated annotated_pasta pasta_memory)
[ "$what" = jobs ] && targets=(--target launches launches_pasta conv conv_pasta pasta_inject
  pasta_record pasta_memory pasta_counters inject_torch pasta-trace access_pattern
  access_pattern_pasta access_pattern_cpu docs_in_binary_cupti docs_in_binary_sanitizer)
[ "$what" = checks ] && targets=(--target launches launches_pasta conv conv_pasta counters
  counters_pasta pasta_counters pasta_inject pasta_record inject_torch libtorch_train pasta-trace
  stalls pasta_stall_sample pasta_stall_access pasta_stall_access_cpu inject_torch_stall_sample
  inject_torch_stall_access inject_torch_stall_access_cpu pasta_nv_tests access_pattern annotated
  annotated_pasta pasta_memory pasta_memory_cpu uvm_advice tensor_access)
[ "$what" = examples ] && targets=(--target launches launches_pasta conv conv_pasta counters
  counters_pasta access_pattern access_pattern_pasta access_pattern_cpu uvm_advice uvm_advice_pasta
  pasta_inject pasta_counters)
[ "$what" = compiled ] && targets=(--target pasta_inject pasta_counters pasta_memory inject_torch
  inject_torch_counters inject_torch_memory launches launches_pasta)
[ "$what" = record-gpt ] && targets=(--target pasta_inject inject_torch_record pasta-trace)
[ "$what" = modules ] && targets=(--target pasta_inject inject_torch inject_torch_record
  inject_torch_counters pasta-trace)
[ "$what" = memory ] && targets=(--target access_pattern access_pattern_pasta access_pattern_cpu
  annotated annotated_pasta
  pasta_memory pasta_memory_cpu pasta_memory_record memory_workloads uvm_advice uvm_advice_pasta)
# Everything (`all`) leaves out the benchmarks' own libraries: all and bench build them.
[ "$what" = all ] && targets=(--target all pasta_bench_kernel_freq pasta_bench_kernel_freq_timeline
  pasta_bench_aten pasta_bench_op_floor inject_torch_bench pasta_bench_ring_ops)
cmake --build "$build" --parallel "$(nproc)" "${targets[@]}" >"$work/build.log" 2>&1 ||
  { grep -E "error|Error" "$work/build.log" | head -60 | tee "$out/build-errors.log"; exit 1; }

echo "built in $((SECONDS - start)) s"
status=0
failed_steps=()
# failed STEP: remembers a step that failed; the summary names it and the exit status is 1.
failed() {
  failed_steps+=("$1")
  status=1
  echo "FAILED step: $1"
}
# step NAME LOG COMMAND...: runs COMMAND, its output also into $out/LOG; its exit status counts.
step() {
  local name=$1 log=$2
  shift 2
  "$@" 2>&1 | tee "$out/$log"
  [ "${PIPESTATUS[0]}" -eq 0 ] || failed "$name"
}
# record NAME LOG TRACE COPY COMMAND...: records a trace (output appended to LOG) and copies
# TRACE to COPY; a failure of either counts.
record() {
  local name=$1 log=$2 trace=$3 copy=$4
  shift 4
  "$@" >>"$log" 2>&1 && cp "$trace" "$copy" || failed "$name (log: $log)"
}
# A GPU case exits 77 (skipped) without a GPU, with fewer GPUs than it needs, without ncu or
# with an example not built, and ctest counts a skip as a pass. Here a skip fails its step
# (tests/gpu/run_ctest.py), and so does a regex that matches no test, but for the cases this
# machine may skip: those that need two GPUs on a machine with one, those GPU_MAY_SKIP names
# (a regex of case names), and those a variable below shortens on purpose.
gpu_count=$(nvidia-smi -L 2>/dev/null | grep -c "^GPU ")
may_skip=${GPU_MAY_SKIP:-}
add_may_skip() { may_skip="${may_skip:+$may_skip|}$1"; echo "may be skipped here: $1 ($2)"; }
[ "$gpu_count" -ge 2 ] || add_may_skip multi_gpu "$gpu_count GPU"
[ -z "${MATRIX_SKIP:-}" ] || add_may_skip results_matrix "MATRIX_SKIP=$MATRIX_SKIP"
[ -z "${DDP_PIPELINES:-}" ] || add_may_skip ddp "DDP_PIPELINES=$DDP_PIPELINES"
# ctest_step NAME LOG CTEST_ARGS...: ctest in the build as a step; skips judged as above.
ctest_step() {
  local name=$1 log=$2
  shift 2
  step "$name" "$log" python3 "$root/tests/gpu/run_ctest.py" "$build" "$may_skip" "$@"
}
# gpu_tests NAME REGEX: the GPU tests whose names match, verbose, into $out/gpu-tests-NAME.log.
gpu_tests() {
  ctest_step "GPU tests $1" "gpu-tests-$1.log" -R "$2" -V
}
if [ "$what" = multi ]; then
  echo "== GPU tests on $(nvidia-smi -L | wc -l) GPUs"
  gpu_tests multi "gpu: (multi_gpu|in_binary|threads)"
fi
if [ "$what" = memory ]; then
  echo "== memory-access GPU tests"
  gpu_tests memory "gpu: (access|uvm|annotations)"
  echo "== record memory-access traces for tests/data"
  : >"$work/record-memory.log"
  record "record access_pattern" "$work/record-memory.log" "$work/rec-access/trace.pasta" \
    "$out/access_pattern_h100.pasta" \
    "$build/bin/pasta" run --memory --record -o "$work/rec-access" -- "$build/examples/access_pattern"
  record "record uvm_advice" "$work/record-memory.log" "$work/rec-uvm/trace.pasta" \
    "$out/uvm_advice_h100.pasta" \
    "$build/bin/pasta" run --memory --record -o "$work/rec-uvm" -- "$build/examples/uvm_advice" --mb 64
  tail -3 "$work/record-memory.log"; ls -la "$out"/*_h100.pasta 2>/dev/null
  echo "== memory-access benchmark"
  step "memory benchmark" memory-bench.log python3 bench/gpu/memory.py "$build" "$work/memory" \
    ${MEMORY_BENCH_ONLY:+--only $MEMORY_BENCH_ONLY} ${MEMORY_BENCH_ARGS:-}
  cp "$work/memory/memory.csv" "$out/memory.csv" 2>/dev/null
fi
if [ "$what" = jobs ]; then
  echo "== jobs: a user's CUDA program per composition; torchrun DDP under pasta run"
  gpu_tests jobs "gpu: (${JOBS_TESTS:-consumer|ddp|docs_examples|in_binary|threads|outputs_unchanged|injection|graph|pytorch|record|access_exact|access_injection})"
  grep -E "^([0-9]+: )?\|" "$out/gpu-tests-jobs.log" | sed -E "s/^[0-9]+: //"
fi
if [ "$what" = handlers ]; then
  echo "== the handlers' GPU tests"
  gpu_tests handlers "gpu: (${HANDLERS_TESTS:-in_binary|threads|outputs_unchanged|injection|launch_callbacks|graph|cudnn|record|access_exact|access_cpu_equal|access_overflow|access_spaces|counters_exact|counters_cupti_replay|stall_blame|stall_blame_views|annotations_exact|torch_resnet|torch_gpt|torch_libtorch|torch_graph_capture|torch_graphs|torch_hotness|pipelines_table|consumer|docs_examples})$"
  grep -E "^ *[0-9]+/[0-9]+ Test" "$out/gpu-tests-handlers.log"
fi
if [ "$what" = examples ]; then
  echo "== the examples that make their own profiler"
  gpu_tests examples "gpu: (${EXAMPLES_TESTS:-in_binary|threads|outputs_unchanged|graph|cudnn|access_exact|access_cpu_equal|counters_exact|uvm_advice})$"
  grep -E "^ *[0-9]+/[0-9]+ Test" "$out/gpu-tests-examples.log"
fi
if [ "$what" = compiled ]; then
  echo "== windows of a run, compiled models and CUDA graphs (issue 35)"
  gpu_tests compiled "gpu: (${COMPILED_TESTS:-torch_window|torch_graph_capture|graph|torch_compile|torch_graphs|torch_resnet|diff_compile})$"
  grep -E "^([0-9]+: )?(ok  |FAIL|skip)" "$out/gpu-tests-compiled.log" | sed -E "s/^[0-9]+: //" | tail -60
  grep -E "^ *[0-9]+/[0-9]+ Test" "$out/gpu-tests-compiled.log"
fi
if [ "$what" = checks ]; then
  echo "== the GPU cases whose assertions are exact now (issue: tests that cannot pass wrongly)"
  ctest_step "sass tests" nv-sass.log -R sass
  gpu_tests checks "gpu: (${CHECKS_TESTS:-counters_cupti_replay|outputs_unchanged|cudnn|stall_blame|annotations_full_table|torch_resnet|torch_gpt|torch_libtorch|ddp|results_matrix})"
  grep -E "^([0-9]+: )?(\||ok  |FAIL|skip)" "$out/gpu-tests-checks.log" | sed -E "s/^[0-9]+: //" | tail -80
fi
if [ "$what" = record-gpt ]; then
  echo "== record a 12-block GPT training step (3 steps) under --torch, for the report page"
  : >"$work/record-gpt.log"
  record "record gpt_block 12 layers" "$work/record-gpt.log" "$work/rec-gpt/trace.pasta" \
    "$out/gpt12_torch_h100.pasta" "$build/bin/pasta" run --torch --record -o "$work/rec-gpt" -- \
    python3 examples/pytorch/gpt_block.py --layers 12 --steps 3
  tail -3 "$work/record-gpt.log"; ls -la "$out"/*.pasta
fi
if [ "$what" = modules ]; then
  echo "== nn.Modules, source lines and verdicts (issue 53)"
  gpu_tests modules "gpu: (${MODULES_TESTS:-modules_small|modules_gpt2|modules_resnet18|modules_compiled|verdicts})$"
  grep -E "^([0-9]+: )?(FAIL|modules and|compiled modules|verdicts|aten::|ceilings|[0-9]+ forward|GPT2|ResNet|Net|  triton_|  launches in)" \
    "$out/gpu-tests-modules.log" | sed -E "s/^[0-9]+: //" | head -80
  cp "$build/gpu-out/verdicts/op_counters.json" "$out/verdicts_op_counters.json" 2>/dev/null
  # What each check compared, to read again where no GPU is.
  for m in small gpt2; do
    cp "$build/gpu-out/modules_$m/truth.json" "$out/modules_${m}_truth.json" 2>/dev/null
    cp "$build/gpu-out/modules_$m/pasta/trace.pasta" "$out/modules_${m}_trace.pasta" 2>/dev/null
  done
  if [ "${MODULES_RECORD:-1}" = 1 ]; then
    echo "== record traces with modules and lines for tests/data (GPT-2 eager at 2 and 8, compiled at 2)"
    : >"$work/record-modules.log"
    for rec in "gpt2_b2 --batch 2" "gpt2_b8 --batch 8" "gpt2_compiled_b2 --batch 2 --compile"; do
      set -- $rec
      name=$1
      shift
      record "record $name" "$work/record-modules.log" "$work/rec-$name/trace.pasta" \
        "$out/${name}_h200.pasta" "$build/bin/pasta" run --torch --record -o "$work/rec-$name" -- \
        python3 tests/torch/modules_model.py --model gpt2 --device cuda --steps 3 "$@"
    done
    tail -3 "$work/record-modules.log"; ls -la "$out"/*.pasta
  fi
fi
if [ "$what" = annotations ]; then
  echo "== device-annotation GPU tests"
  gpu_tests annotations "gpu: annotations"
fi
if [ "$what" = counters ]; then
  # The model op_counters.py measures (--model in COUNTERS_BENCH_ARGS) names the files kept:
  # gpt_ for gpt_block (the names of earlier runs), gpt2_ or resnet18_ for the others.
  counters_model=gpt_block
  model_re='--model[= ]+([a-z0-9_]+)'
  [[ " ${COUNTERS_BENCH_ARGS:-} " =~ $model_re ]] && counters_model=${BASH_REMATCH[1]}
  kept=$counters_model
  [ "$kept" = gpt_block ] && kept=gpt
  if [ "${COUNTERS_TESTS:-1}" = 1 ]; then
    echo "== hardware-counter GPU tests"
    gpu_tests counters "gpu: counters"
  fi
  if [ "${COUNTERS_BENCH:-1}" = 1 ]; then
    against=()  # COUNTERS_AGAINST=DIR: an earlier run's ncu files instead of running ncu
    if [ -n "${COUNTERS_AGAINST:-}" ]; then
      against=(--against "$COUNTERS_AGAINST/${kept}_ncu.csv.gz")
      [ -f "$COUNTERS_AGAINST/${kept}_ncu_dram_alone.csv.gz" ] &&
        against+=(--ncu-dram-alone "$COUNTERS_AGAINST/${kept}_ncu_dram_alone.csv.gz")
      [ -f "$COUNTERS_AGAINST/${kept}_ncu_app.csv.gz" ] &&
        against+=(--against-app "$COUNTERS_AGAINST/${kept}_ncu_app.csv.gz")
    fi
    echo "== per-operator counters of a training step ($counters_model): pasta against ncu"
    step "op_counters benchmark ($counters_model)" op-counters-bench.log \
      python3 bench/gpu/op_counters.py "$build" "$work/op-counters" ${COUNTERS_BENCH_ARGS:-} \
      "${against[@]}"
    cp "$work/op-counters/pasta/op_counters.profile.json" "$out/${kept}_op_counters.profile.json" 2>/dev/null
    for f in ncu ncu_dram_alone; do  # not with COUNTERS_AGAINST: no ncu ran
      [ -f "$work/op-counters/$f.csv" ] && gzip -c "$work/op-counters/$f.csv" >"$out/${kept}_$f.csv.gz"
    done
    gzip -c "$work/op-counters/pasta_stderr.txt" >"$out/${kept}_pasta_stderr.txt.gz" 2>/dev/null
  fi
  if [ "${COUNTERS_NCU_APP:-0}" = 1 ]; then
    from=${COUNTERS_FROM:-$out}
    echo "== the same script under ncu's application replay: pasta, ncu's two replays, three ways"
    step "op_counters --ncu-app ($counters_model)" op-counters-three-way.log \
      python3 bench/gpu/op_counters.py --ncu-app "$build" "$work/op-counters-app" ${COUNTERS_BENCH_ARGS:-}
    gzip -c "$work/op-counters-app/ncu_app.csv" >"$out/${kept}_ncu_app.csv.gz" 2>/dev/null
    ncu_from=${COUNTERS_AGAINST:-$from}  # ncu's kernel replay: this run's or the earlier one's
    dram_alone=()  # ncu's DRAM metrics measured alone, where the run left one
    [ -f "$ncu_from/${kept}_ncu_dram_alone.csv.gz" ] &&
      dram_alone=(--ncu-dram-alone "$ncu_from/${kept}_ncu_dram_alone.csv.gz")
    python3 bench/gpu/op_counters.py --compare "$build" "$from/${kept}_op_counters.profile.json" \
      "$ncu_from/${kept}_ncu.csv.gz" "$out/${kept}_ncu_app.csv.gz" "${dram_alone[@]}" 2>&1 |
      sed -n '/three ways/,$p' | tee -a "$out/op-counters-three-way.log"
    [ "${PIPESTATUS[0]}" -eq 0 ] || failed "op_counters --compare (three ways)"
  fi
  if [ "${COUNTERS_NCU_TWICE:-0}" = 1 ]; then
    echo "== ncu against itself: its kernel replay of the same script twice"
    step "op_counters --ncu-twice ($counters_model)" op-counters-ncu-twice.log \
      python3 bench/gpu/op_counters.py --ncu-twice "$build" "$work/op-counters-twice" \
      ${COUNTERS_BENCH_ARGS:-}
    for run in a b; do
      gzip -c "$work/op-counters-twice/ncu_$run.csv" >"$out/${kept}_ncu_$run.csv.gz" 2>/dev/null
    done
  fi
fi
if [ "$what" = stalls ]; then
  echo "== stall blame: PC sampling joined with sanitizer accesses"
  ctest_step "sass tests" nv-sass.log -R sass
  gpu_tests stalls "gpu: (${STALLS_TESTS:-stall_blame|async_copies})"
  cp -r "$build/gpu-out/stall_blame" "$out/stall_blame" 2>/dev/null
  if [ "${STALL_BENCH:-1}" != 0 ]; then
    echo "== stall blame's access run on transformers GPT-2 steps: device counts, floor, raw trace"
    step "stall access benchmark" stall-access-bench.log \
      python3 bench/gpu/stall_access.py "$build" "$work/stall-access" ${STALL_BENCH_ARGS:-}
    cp "$work/stall-access/stall_access.csv" "$work/stall-access/stall_access.json" "$out/" 2>/dev/null
  fi
fi
if [ "$what" = memory ] || [ "$what" = annotations ]; then
  echo "== device annotations against the sanitizer path (same kernel)"
  step "annotations benchmark" annotations-bench.log \
    python3 bench/gpu/annotations.py "$build" "$work/annotations" ${ANNOTATIONS_BENCH_ARGS:-}
  cp "$work/annotations/annotations.csv" "$out/annotations.csv" 2>/dev/null
fi
if [ "$what" = reliability ]; then
  echo "== reliability GPU tests: results under every pipeline, contexts, overflow"
  gpu_tests reliability \
    "gpu: (${RELIABILITY_TESTS:-pipelines_table|contexts|access_overflow|graph|uvm_advice|results_matrix})"
  grep -E "^([0-9]+: )?\|" "$out/gpu-tests-reliability.log" | sed -E "s/^[0-9]+: //"
fi
if [ "$what" = torch ]; then
  echo "== PyTorch GPU tests"
  gpu_tests torch "gpu: torch"
  echo "== record a PyTorch trace for tests/data"
  : >"$work/record-torch.log"
  record "record torch_model" "$work/record-torch.log" "$work/rec-torch/trace.pasta" \
    "$out/resnet18_torch_h100.pasta" \
    "$build/bin/pasta" run --torch --record -o "$work/rec-torch" -- python3 tests/gpu/torch_model.py --steps 1
  tail -3 "$work/record-torch.log"; ls -la "$out"/*.pasta 2>/dev/null
  if [ "${TORCH_BENCH:-1}" = 1 ]; then
    echo "== PyTorch overhead benchmark"
    step "PyTorch overhead benchmark" torch-bench.log \
      python3 bench/gpu/torch_overhead.py "$build" "$work/torch-bench" ${TORCH_BENCH_ARGS:-}
    cp "$work/torch-bench/torch_overhead.csv" "$out/" 2>/dev/null
  fi
fi
if [ "$what" = all ] || [ "$what" = tests ]; then
  echo "== GPU tests"
  ctest_step "GPU tests" gpu-tests.log -L gpu -V
fi
if [ "$what" = all ] || [ "$what" = record ]; then
  echo "== record traces for tests/data"
  : >"$work/record.log"
  record "record launches" "$work/record.log" "$work/rec-launches/trace.pasta" "$out/launches.pasta" \
    "$build/bin/pasta" run --record -o "$work/rec-launches" -- "$build/examples/launches" \
    --threads 4 --per-thread 10
  record "record resnet18_step" "$work/record.log" "$work/rec-resnet/trace.pasta" \
    "$out/resnet18_step.pasta" \
    "$build/bin/pasta" run --record -o "$work/rec-resnet" -- python3 examples/pytorch/resnet18_step.py \
    --warmup 1 --steps 1
  tail -4 "$work/record.log"
  ls -la "$out"/*.pasta 2>/dev/null
fi
if [ "$what" = all ] || [ "$what" = bench ]; then
  echo "== host clocks and the operator callbacks on this machine's CPU"
  step "host clock benchmark" host-clock.log "$build/bench/pasta_bench_host_clock"
  [ "${ATEN_OPS_BENCH:-1}" = 0 ] ||
    step "operator callback benchmark" aten-ops.log python3 bench/aten_ops.py \
      "$build/bench/pasta_bench_aten_ops" ${ATEN_OPS_ARGS:---calls 200000}
  [ -z "${BENCH_TESTS:-}" ] || gpu_tests bench "gpu: (${BENCH_TESTS})$"
  echo "== overhead benchmark"
  step "overhead benchmark" bench.log python3 bench/gpu/overhead.py "$build" "$work/bench" ${BENCH_ARGS:-}
  cp "$work/bench/overhead.csv" "$work/bench/overhead.samples.json" "$out/" 2>/dev/null
fi
echo "== summary"
grep -hE "^ *[0-9]+/[0-9]+ Test|tests passed|tests failed" "$out"/gpu-tests*.log 2>/dev/null
for s in "${failed_steps[@]}"; do echo "FAILED step: $s"; done
[ "$status" -eq 0 ] && echo "every step passed"
exit $status
