#!/usr/bin/env python3
"""pasta's overhead on the GPU, every variant measured in this one run, the
variants interleaved round by round so that drift hits them all alike:

* ResNet-18 training step (batch 32, 10 warm-up steps, median of 100): native,
  torch.profiler (CPU + CUDA activities), and pasta by injection with several
  pipelines and settings; also the whole-process time, and how long pasta
  took to stop and write its reports at exit.
* 100k empty kernels: native, `pasta run`, `pasta run --launch-callbacks`;
  cost per launch.

    overhead.py BUILD_DIR [OUT_DIR] [--rounds N]   prints a table, writes overhead.csv
"""
import json
import os
import re
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run(cmd, env=None):
    full = dict(os.environ)
    full.update(env or {})
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=full, check=False)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        print(f"FAILED ({proc.returncode}): {' '.join(cmd)}\n{proc.stdout}\n{proc.stderr}")
        sys.exit(1)
    return proc, wall


def last_json(text):
    return json.loads(text.strip().splitlines()[-1])


def stop_ms(stderr):
    m = re.search(r"stopping took ([0-9.]+) ms", stderr)
    return float(m.group(1)) if m else None


def main(argv):
    rounds = 3
    if "--rounds" in argv:
        i = argv.index("--rounds")
        rounds = int(argv[i + 1])
        del argv[i:i + 2]
    only = None  # --only "label|label": a subset of the ResNet variants (native always)
    if "--only" in argv:
        i = argv.index("--only")
        only = set(argv[i + 1].split("|"))
        del argv[i:i + 2]
    build = os.path.abspath(argv[1])
    out = os.path.abspath(argv[2] if len(argv) > 2 else "overhead-out")
    os.makedirs(out, exist_ok=True)
    lib = lambda name: f"{build}/inject/lib{name}.so"
    kt = lib("pasta_bench_kernel_freq_timeline")
    script = [sys.executable, os.path.join(ROOT, "examples", "pytorch", "resnet18_step.py"),
              "--warmup", "10", "--steps", "100"]
    pasta = lambda extra=(): [f"{build}/bin/pasta", "run", "-f", *extra, "-o", f"{out}/run", "--"]
    resnet = [
        ("native", script, {}),
        ("torch.profiler (CPU+CUDA)", script + ["--torch-profiler"], {}),
        ("pasta KernelFreq", pasta() + script, {"PASTA_INJECT_LIB": lib("pasta_bench_kernel_freq")}),
        ("pasta KernelFreq+Timeline", pasta() + script, {"PASTA_INJECT_LIB": kt}),
        ("  same, without sync records", pasta() + script,
         {"PASTA_INJECT_LIB": kt, "PASTA_CUPTI_SKIP": "sync"}),
        ("  same, kernel records only", pasta() + script,
         {"PASTA_INJECT_LIB": kt, "PASTA_CUPTI_SKIP": "memcpy,memset,sync,memory,nvtx,device"}),
        ("  same, reports on tmpfs", [f"{build}/bin/pasta", "run", "-f", "-o", "/dev/shm/pasta-bench",
                                      "--"] + script, {"PASTA_INJECT_LIB": kt}),
        ("pasta run (default pipeline)", pasta() + script, {}),
    ]
    if only is not None:
        resnet = [v for v in resnet if v[0] == "native" or v[0].strip() in only]
    results = {label: [] for label, _, _ in resnet}
    for r in range(rounds):
        for label, cmd, env in resnet:
            proc, wall = run(cmd, dict(env, PASTA_VERBOSE="1"))
            j = last_json(proc.stdout)
            extra = stop_ms(proc.stderr)
            if "profiler_events_seconds" in j:
                extra = j["profiler_events_seconds"] * 1e3
            results[label].append((j["step_ms_median"], wall, extra, j["device"]))
            if r == 0:
                for line in proc.stderr.splitlines():
                    if "cupti handler:" in line and "records in" in line:
                        print(f"{label}: {line}")
    rows = []
    base = statistics.median(x[0] for x in results["native"])
    gpu = results["native"][0][3]
    for label, _, _ in resnet:
        steps = [x[0] for x in results[label]]
        med = statistics.median(steps)
        extras = [x[2] for x in results[label] if x[2] is not None]
        rows.append(("resnet18 step", label, med, med / base, min(steps), max(steps),
                     statistics.median(x[1] for x in results[label]),
                     max(extras) if extras else None))

    if only is not None and "empty" not in only:
        rounds_empty = 0
    else:
        rounds_empty = rounds
    empty = [f"{build}/examples/empty_kernels", "100000"]
    launch = {"native": [], "pasta run": [], "pasta run --launch-callbacks": []}
    for _ in range(rounds_empty):
        launch["native"].append(last_json(run(empty)[0].stdout)["us_per_launch"])
        p, _ = run(pasta() + empty)
        launch["pasta run"].append(last_json(p.stdout)["us_per_launch"])
        p, _ = run(pasta(["--launch-callbacks"]) + empty)
        launch["pasta run --launch-callbacks"].append(last_json(p.stdout)["us_per_launch"])
    nb = statistics.median(launch["native"]) if rounds_empty else 1.0
    for label, values in (launch.items() if rounds_empty else []):
        med = statistics.median(values)
        rows.append(("100k empty kernels", label, med, med / nb, min(values), max(values),
                     None, None))

    print(f"\npasta overhead on {gpu}, {time.strftime('%Y-%m-%d')}: median of {rounds} interleaved "
          f"rounds (each a median of 100 steps, or a mean of 100k launches)")
    print(f"{'workload':<20} {'variant':<32} {'value':>9} {'unit':<9} {'vs native':>9} "
          f"{'min..max':>15} {'process s':>9} {'exit ms':>9}")
    for w, v, value, ratio, lo, hi, wall, extra in rows:
        unit = "ms/step" if "resnet" in w else "us/launch"
        print(f"{w:<20} {v:<32} {value:>9.3f} {unit:<9} {ratio:>8.3f}x {lo:>7.2f}..{hi:<7.2f}"
              f"{'' if wall is None else f'{wall:9.1f}':>9} {'' if extra is None else f'{extra:9.1f}':>9}")
    print("exit ms: pasta's stop (final flush, tools, reports) at exit; for torch.profiler, the "
          "time its events() took after the steps")
    with open(os.path.join(out, "overhead.csv"), "w") as f:
        f.write("workload,variant,value,unit,ratio_to_native,min,max,process_seconds,exit_ms,gpu\n")
        for w, v, value, ratio, lo, hi, wall, extra in rows:
            unit = "ms_per_step" if "resnet" in w else "us_per_launch"
            f.write(f"{w},{v.strip()},{value:.4f},{unit},{ratio:.4f},{lo:.4f},{hi:.4f},"
                    f"{'' if wall is None else f'{wall:.2f}'},"
                    f"{'' if extra is None else f'{extra:.1f}'},{gpu}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
