#!/usr/bin/env python3
"""Per-operator hardware counters for every operator of one training step of a model (--model:
gpt_block, the project's GPT-style transformer, examples/pytorch/gpt_block.py, 12 identical
blocks of torch.nn; gpt2, transformers' GPT2LMHeadModel at its default sizes, --layers blocks;
resnet18, torchvision's ResNet-18; random weights, the last two from bench/gpu/counters_models.py),
with pasta and with Nsight Compute, over the same script on the same GPU, in one run:

  native   python SCRIPT                               (the script alone)
  pasta    pasta run --torch --counters -- python ...  (Range Profiler, pasta's own
           replay, the first launch of each signature measured)
  ncu      ncu --metrics <the same metrics> python ...  (every launch replayed)

Prints wall times and the ncu / pasta ratio, then compares the metrics per
kernel (mangled name, grid, block; per-launch means): the share of values
within 5% (bench/gpu/ncu_metrics.py's rule: a percentage also within 0.5
points, DRAM bytes also within 64 KiB; kernels under 1 MiB of DRAM traffic
leave their DRAM metrics out, kernels under 16 MiB of L2 traffic of their own
their L2 hit rate, ncu_metrics.L2_OWN), per metric, and the worst ones.

    op_counters.py BUILD_DIR OUT_DIR [--model gpt_block|gpt2|resnet18] [--layers 12]
                   [--ncu-timeout 420] [--pasta-timeout 300] [--ncu-cache all|none]
                   [--replay pasta|cupti]
    op_counters.py --compare BUILD_DIR PROFILE_JSON NCU_CSV[.gz] [NCU_APP_CSV[.gz]]
                   [--ncu-dram-alone NCU_DRAM_ALONE_CSV[.gz]] [--pasta-log PASTA_STDERR[.gz]]
                   (again, from a run's files; with pasta's stderr, which a run keeps in
                   OUT_DIR/pasta_stderr.txt, also SM and DRAM throughput by the launch's place
                   in its replay batch: first after a pass's profiler start, or later)
    op_counters.py BUILD_DIR OUT_DIR --against NCU_CSV[.gz] [--ncu-dram-alone CSV[.gz]]
                   [--against-app CSV[.gz]] [--model ...]
                   (native and pasta only, compared with the ncu files of an earlier run of the
                   same script: a variant of pasta, its PASTA_* variables from the environment,
                   against ncu without ncu's minutes; launch indices must name the same kernels,
                   and those that do not are counted and left out)
    op_counters.py --ncu-app BUILD_DIR OUT_DIR [--model ...] [--layers 12] [--ncu-timeout 420]
                   [--app-metrics all]
                   (ncu's application replay of the script, the metrics in APP_METRICS or
                   with --app-metrics all every metric, into OUT_DIR/ncu_app.csv)
    op_counters.py --drift OLD_PROFILE_JSON NEW_PROFILE_JSON
                   (pasta against pasta: two runs' profiles of the same script, the launches
                   both measured, per metric how many values differ by the rule below and an
                   additive metric's totals: what a change of pasta moved, beside two runs of
                   one build)
    op_counters.py --ncu-twice BUILD_DIR OUT_DIR [--model ...] [--layers 12] [--ncu-cache ...]
    op_counters.py --ncu-twice BUILD_DIR NCU_A_CSV[.gz] NCU_B_CSV[.gz]
                   (ncu against itself: its kernel replay of the script twice, into
                   OUT_DIR/ncu_a.csv and ncu_b.csv, or two such files given; the second run
                   judged against the first by ncu_spread(), with the rule and the floors pasta
                   is judged by: how far the goal is reachable at all)

Each kernel's metrics are compared three times: against ncu's mean over all launches of the
same (kernel, grid, block), what pasta's propagation to unmeasured launches claims; against
ncu's first such launch; and, per signature (kernel, grid, block, operator path), against
ncu's measurement of the very launches pasta measured, found by launch index (the profile's
measured_launches; an index that names another kernel in ncu's run is counted and left out):
how well pasta measures. One kernel shape can serve operators of different work, so the first
launch of a (kernel, grid, block) may not be the launch pasta measured for a signature.

Given ncu's application replay as well (--ncu-app: ncu runs the whole script once per pass
and saves and restores no memory), --compare sets three measurements of the launches pasta
measured (of each kernel's first launch, for a profile without launch indices) side by
side, for the metrics that depend on what memory and caches hold when a kernel starts (or
every metric the application replay measured): pasta, ncu's kernel replay, ncu's application
replay, how often each pair agrees, and how often pasta agrees with either replay; and beside
the verdict, judged by the same rule and floors, pasta against any of ncu's measurements of
each launch and ncu's application replay against its kernel replay (the two disagree on short
kernels' throughputs by more than the floors allow: docs/op-profile.md).

ncu also measures DRAM_ALONE's metrics (DRAM bytes read and written, DRAM throughput) alone, in
its kernel replay (OUT_DIR/ncu_dram_alone.csv): with every metric, its passes after the first
start from memory it restored, and the restore's dirty lines, evicted by the kernel's reads, add
to the bytes written (docs/internals-counters.md). Those metrics are set three ways (pasta, ncu
with every metric, ncu with them alone), and the same launches are judged again with a DRAM
value agreeing when it is within 5% of either of ncu's measurements.

Exits 1 when no comparison was made (ncu killed at its timeout, or nothing compared), when
fewer than AGREE_FLOOR (97%) of the compared values agree within 5% with ncu's measurement of
the same launches (of each kernel's first launch, for a profile without launch indices; DRAM
values with either of ncu's, given its DRAM metrics alone), or when fewer than METRIC_FLOOR
(95%) of one metric's do, for a metric with METRIC_MIN_VALUES (20) values or more; the last line
says which.

--ncu-cache none runs ncu without flushing caches before each replay pass (its
default, all, flushes and invalidates them), and pasta with PASTA_COUNTER_CACHE=none
(its default, all, flushes L2 before each replay pass). pasta replays each
measured kernel itself, restoring the program's memory and flushing L2 before every pass, as ncu
does; --replay cupti runs it with PASTA_COUNTER_REPLAY=cupti (CUPTI's kernel replay) and shows
the cache-sensitive metrics of kernels measured under replay only apart.
"""
import argparse
import gzip
import json
import math
import os
import signal
import subprocess
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import ncu_metrics  # noqa: E402

# DRAM bytes closer than this agree whatever their ratio: ncu's own runs of one kernel
# differ by kilobytes (3328 and 5376 bytes read by a kernel that reads nothing).
DRAM_FLOOR = 64 << 10

# The metrics pasta measures again in one pass, L2 flushed (those that fit on an H100).
CACHE_SENSITIVE = ("dram_bytes_read", "dram_bytes_write", "dram_throughput_pct", "l1_hit_rate_pct")

# What --ncu-app measures: the metrics a replay's save and restore of memory can change.
APP_METRICS = ("dram_bytes_read", "dram_bytes_write", "l2_hit_rate_pct")

# What ncu measures a second time with nothing else: with every metric (many passes, the memory
# restored before each but the first), its DRAM bytes written include dirty lines of its own
# restore that the kernel's reads evict: 0.2-2.6 MB on kernels reading 5-33 MB, where these
# metrics alone and its application replay say 5-500 KB (H200, docs/internals-counters.md, "DRAM
# bytes written"). A DRAM value agrees when it is within 5% of either of ncu's measurements of
# the same launch.
DRAM_ALONE = ("dram_bytes_read", "dram_bytes_write", "dram_throughput_pct")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# The agreement goal (issue 56): at least AGREE_FLOOR of all the values compared within 5% of
# ncu's (the same launches), and at least METRIC_FLOOR of each metric's. Before the goal: 94.3%
# and 94.7% of all on a 12-block gpt_block step (H100, docs/op-profile.md), 96.5% on one block
# (H200, docs/internals-counters.md).
AGREE_FLOOR = 0.97
METRIC_FLOOR = 0.95
# A metric with fewer values is judged only with the others (in AGREE_FLOOR): under 20 values
# METRIC_FLOOR would allow no value off at all.
METRIC_MIN_VALUES = 20


def timed(cmd, env=None, timeout=None):
    """(CompletedProcess, seconds), or (None, seconds) when killed at the timeout: the whole
    process group, so a program the launcher started does not hold the GPU's counters."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **(env or {})}, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        print(f"{' '.join(cmd[:4])}... killed at {timeout:.0f} s; its stderr ended with:\n"
              f"{err.strip()[-600:]}", flush=True)
        return None, time.perf_counter() - t0
    if proc.returncode != 0:
        sys.exit(f"{' '.join(cmd[:4])}... failed ({proc.returncode}): {err.strip()[-800:]}")
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err), time.perf_counter() - t0


def dims(text):
    return tuple(int(v) for v in text.strip("()").split(","))


def ncu_launches(keys, text):
    """[(kernel, grid, block, {key: value})] from ncu's CSV, one per launch; `keys` is
    ncu_metrics.metric_map()'s."""
    return [(kernel, dims(grid), dims(block), ncu_metrics.launch_values(keys, values))
            for (_, kernel, grid, block), values in sorted(ncu_metrics.launches(text).items())]


def per_launch(entries, additive=()):
    """{(kernel, grid, block): {key: per-launch mean}} from profile entries (pasta, whose
    `additive` keys cover all their launches) or launches (ncu, given as entries of one launch
    each)."""
    sums, counts = {}, {}
    for kernel, grid, block, launches, metrics in entries:
        k = (kernel, tuple(grid), tuple(block))
        s = sums.setdefault(k, {})
        counts[k] = counts.get(k, 0) + launches
        for key, v in metrics.items():
            # Additive values of a profile entry cover all its launches; rates are means.
            s[key] = s.get(key, 0.0) + (v if key in additive else v * launches)
    return {k: {key: v / counts[k] for key, v in s.items()} for k, s in sums.items()}


def profile_entries(profile):
    """Every kernel entry of an op_counters.profile.json, operators' and unattributed."""
    return list(profile["unattributed"]) + [k for op in profile["operators"] for k in op["kernels"]]


def entry_launches(e):
    """A profile kernel entry as per_launch() takes it: (kernel, grid, block, launches, the
    metrics it has)."""
    return (e["kernel"], e["grid"], e["block"], e["launches"],
            {k: v for k, v in e["metrics"].items() if v is not None})


def compared(key, *measurements):
    """Whether metric `key` of a kernel is compared: not a DRAM metric of a kernel under 1 MiB
    of DRAM traffic (read and written) in every measurement of it, nor the L2 hit rate of one
    with too little L2 traffic of its own (ncu_metrics.l2_compared(), where ncu measured it)."""
    if key == "l2_hit_rate_pct":
        return all(ncu_metrics.l2_compared(m.get(ncu_metrics.L2_OWN[0])) for m in measurements)
    return not key.startswith("dram_") or max(
        m.get("dram_bytes_read", 0) + m.get("dram_bytes_write", 0) for m in measurements
    ) >= (1 << 20)


def within(key, a, b):
    """Whether two values of metric `key` agree: within 5% of the larger, a percentage also
    within 0.5 points, DRAM bytes also within DRAM_FLOOR."""
    diff = abs(a - b)
    return (diff <= 0.05 * max(abs(a), abs(b)) or (key.endswith("_pct") and diff <= 0.5)
            or (key.startswith("dram_bytes") and diff <= DRAM_FLOOR))


def three_way(ours, kernel, app, what, other="app",
              how="application replay: it reruns the script per pass"):
    """pasta, ncu's kernel replay and another measurement of ncu's (`other`, by default its
    application replay; `how` says what it is) on the same launches (`what` says which): per
    metric the other measured, how many values each pair agrees on and how many of pasta's
    agree with either of ncu's, and the kernels where pasta agrees with neither. Returns
    {metric: (values, pasta~kernel, pasta~other, kernel~other, pasta~either)}."""
    common = sorted(set(ours) & set(kernel) & set(app))
    print(f"{what} of {len(common)} kernels, three ways (kernel replay: ncu saves and "
          f"restores memory per pass; {how})")
    print(f"  {'metric':<22} {'values':>6} {'pasta~kernel':>13} {f'pasta~{other}':>14} "
          f"{f'kernel~{other}':>15} {'pasta~either':>13}")
    odd, rows = [], {}
    measured = {key for k in common for key in app[k]} - {ncu_metrics.L2_OWN[0]}
    for key in sorted(measured):
        n, pk, pa, ka, either = 0, 0, 0, 0, 0
        for k in common:
            p, kk, a = ours[k].get(key), kernel[k].get(key), app[k].get(key)
            if p is None or kk is None or a is None or not compared(key, ours[k], kernel[k]):
                continue
            ok_kernel, ok_app = within(key, p, kk), within(key, p, a)
            n += 1
            pk += ok_kernel
            pa += ok_app
            ka += within(key, kk, a)
            either += ok_kernel or ok_app
            if not ok_kernel and not ok_app:
                odd.append((k[0][:60], key, p, kk, a))
        rows[key] = (n, pk, pa, ka, either)
    rows["all"] = tuple(map(sum, zip(*rows.values()))) if rows else (0,) * 5
    for key, (n, pk, pa, ka, either) in rows.items():
        print(f"  {key:<22} {n:>6} {pk:>13} {pa:>14} {ka:>15} {either:>13}")
    for kernel_name, key, p, kk, a in odd[:12]:
        print(f"  neither: {kernel_name} {key}: pasta {p:.4g}, kernel replay {kk:.4g}, "
              f"{other} {a:.4g}")
    return rows


def first_launches(launches):
    """{(kernel, grid, block): metrics} of the first launch of each, from ncu_launches()."""
    first = {}
    for k, g, b, m in launches:  # in launch order
        first.setdefault((k, tuple(g), tuple(b)), m)
    return first


def same_launches(entries, launches):
    """pasta's measured signatures and ncu's measurements of the very launches pasta measured,
    by launch index (profile version 1.1's measured_launches; ncu's CSV in launch order):
    ({key: per-launch metrics}, {key: ncu's mean over those launches}, keys measured more than
    once, launch indices naming another kernel or past ncu's last launch). A key is
    (kernel, grid, block, first launch index). None when the profile has no launch indices."""
    if not any("measured_launches" in e for e in entries):
        return None
    ours, theirs, again, astray = {}, {}, set(), 0
    for e in entries:
        indices = e.get("measured_launches") or []
        if not e["metrics"] or not indices:
            continue
        sig = (e["kernel"], tuple(e["grid"]), tuple(e["block"]))
        matched = [launches[i][3] for i in indices
                   if i < len(launches) and launches[i][:3] == sig]
        astray += len(indices) - len(matched)
        if not matched:
            continue
        key = (*sig, indices[0])
        ours[key] = measured_values(e)
        theirs[key] = per_launch([(*sig, 1, m) for m in matched])[sig]
        if len(indices) > 1:
            again.add(key)
    return ours, theirs, again, astray


def measured_values(e):
    """A profile kernel entry's metrics per launch (additive ones over its launches)."""
    return per_launch([entry_launches(e)], ncu_metrics.ADDITIVE)[
        (e["kernel"], tuple(e["grid"]), tuple(e["block"]))]


def profile_drift(old, new):
    """pasta against pasta: two profiles' entries of the same script, the signatures each
    measured keyed by their first launch index (so the very launches), per metric: values in
    both, how many differ by within()'s rule, and an additive metric's totals. Lines to print:
    how much a change of pasta moved its own measurements, beside two runs of one build."""
    def keyed(entries):
        return {(e["kernel"], tuple(e["grid"]), tuple(e["block"]), e["measured_launches"][0]):
                measured_values(e) for e in entries
                if e["metrics"] and e.get("measured_launches")}
    a, b = keyed(old), keyed(new)
    keys = [k for k in a if k in b]
    lines = [f"launches measured in both: {len(keys)} (old {len(a)}, new {len(b)})",
             f"  {'metric':<26} {'values':>6} {'differ':>6} {'old total':>12} {'new - old':>12}"]
    for m in sorted({m for k in keys for m in a[k]} | {m for k in keys for m in b[k]}):
        pairs = [(a[k][m], b[k][m]) for k in keys
                 if a[k].get(m) is not None and b[k].get(m) is not None]
        differ = sum(not within(m, x, y) for x, y in pairs)
        totals = (f" {sum(x for x, _ in pairs):12.4g} {sum(y - x for x, y in pairs):+12.4g}"
                  if m in ncu_metrics.ADDITIVE else "")
        lines.append(f"  {m:<26} {len(pairs):>6} {differ:>6}{totals}")
    return lines


# pasta's launch-by-launch line (PASTA_VERBOSE; range_counters.hpp's note()): a character for
# each launch its counters saw, in order (R measured, kept for replay; . and p not measured; w
# outside the capture window; F and C measured under CUPTI's replay), | a pass's profiler start,
# and others that are no launch (/ a metric set's setup, x y an interrupt). g is both a launch
# captured into a graph and an interrupt: counted as neither, so a program with captures is
# not mapped.
LAUNCH_NOTES = "R.pwFC"


def launch_sequence(stderr):
    """The launch-by-launch line in pasta's stderr, or None."""
    for line in stderr.splitlines():
        _, found, rest = line.partition("hardware counters, launch by launch: ")
        if found:
            return rest.strip()
    return None


def batch_places(sequence):
    """{launch index: (place, batch size)} for each launch replayed in a batch: the R's before a
    run of | (each a pass's start), place 0 the first replayed after each start."""
    places, index, batch = {}, 0, []
    for c in sequence:
        if c == "|":
            for k, i in enumerate(batch):
                places[i] = (k, len(batch))
            batch = []
        elif c in LAUNCH_NOTES:
            if c == "R":
                batch.append(index)
            index += 1
    return places


def by_batch_place(mine, theirs, places, metrics=("sm_throughput_pct", "dram_throughput_pct")):
    """For `metrics`, pasta's values against ncu's on the same launches (same_launches()' keys,
    whose last item is the launch index), the first launch replayed after a pass's start against
    the later ones: how many, the median of pasta over ncu, how many are off (within()'s rule)
    and read low. Whether the throughputs that read low belong to a place in the batch."""
    print("pasta / ncu on the same launches by place in the replay batch (first after a pass's "
          "start, or later)")
    print(f"  {'metric':<22} {'place':<6} {'launches':>8} {'median':>7} {'off low':>7}")
    for metric in metrics:
        for name, first in (("first", True), ("later", False)):
            pairs = [(mine[k][metric], theirs[k][metric]) for k in mine
                     if k[3] in places and (places[k[3]][0] == 0) == first
                     and mine[k].get(metric) is not None and theirs.get(k, {}).get(metric)]
            if not pairs:
                continue
            low = sum(a < b and not within(metric, a, b) for a, b in pairs)
            print(f"  {metric:<22} {name:<6} {len(pairs):>8} "
                  f"{statistics.median(a / b for a, b in pairs):>7.3f} {low:>7}")


def agreement(ours, theirs, replay, again, title, dram_alone=None, names=("pasta", "ncu"),
              app=None):
    """Prints how many values of `ours` lie within 5% of `theirs`, per metric, how many of the
    values off read lower and how many higher (a metric whose values off lean to one side by a
    two-sided sign test, p < 0.05, gets a line of its own: a bias, not spread), and the worst;
    returns {metric: (values within 5%, values compared)}. Given `dram_alone` (ncu's
    measurement of DRAM_ALONE's metrics alone, on the same launches), a value of those metrics
    also agrees when it is within 5% of that one; given `app` (ncu's application replay of the
    same launches), a value of any metric it measured also agrees when within 5% of it.
    `names`: what the worst values' lines call the two measurements."""
    common = sorted(set(ours) & set(theirs))
    agree, total, worst, per_key, own_l2, per_metric = 0, 0, [], {}, [], {}
    for k in common:
        for key, v in theirs[k].items():
            if key not in ours[k]:
                continue
            if not compared(key, ours[k], theirs[k]):
                if key == "l2_hit_rate_pct":
                    own_l2.append(within(key, ours[k][key], v))
                continue
            mine = ours[k][key]
            diff = abs(mine - v)
            others = [o for o in ((dram_alone or {}).get(k, {}).get(key) if key in DRAM_ALONE
                                  else None, (app or {}).get(k, {}).get(key)) if o is not None]
            ok = within(key, mine, v) or any(within(key, mine, o) for o in others)
            total += 1
            agree += ok
            n_ok, n = per_metric.get(key, (0, 0))
            per_metric[key] = (n_ok + ok, n + 1)
            rel = diff / max(abs(mine), abs(v), 1e-30)
            for o in others:  # the nearest of ncu's measurements
                rel = min(rel, abs(mine - o) / max(abs(mine), abs(o), 1e-30))
            replay_only = replay == "cupti" and key in CACHE_SENSITIVE and k not in again
            per_key.setdefault(key + (" (replay only)" if replay_only else ""), []).append(
                (ok, rel, mine < v))
            if not ok:
                worst.append((rel, k[0][:60], key, mine, v))
    print(f"{title}: kernels compared: {len(common)} of {len(theirs)} ncu saw; metric values "
          f"within 5%: {agree} of {total} ({100.0 * agree / max(total, 1):.1f}%)")
    print(f"  {'metric':<38} {'within 5%':>12} {'median diff':>12} {f'off: {names[0]} low/high':>20}")
    biased = []
    for key, rows in sorted(per_key.items()):
        rels = sorted(r for _, r, _ in rows)
        low = sum(1 for o, _, lower in rows if not o and lower)
        high = sum(1 for o, _, lower in rows if not o and not lower)
        print(f"  {key:<38} {sum(o for o, _, _ in rows):>5} of {len(rows):<4} "
              f"{100 * rels[len(rels) // 2]:>11.1f}% {f'{low}/{high}':>20}")
        p = sign_test(low, high)
        if p < 0.05:
            biased.append((key, low, high, p))
    for key, low, high, p in biased:
        print(f"  {key}: {names[0]} reads {'lower' if low > high else 'higher'} than {names[1]} in "
              f"{max(low, high)} of its {low + high} values off (sign test p = {p:.2g}): a bias "
              f"of one side, not spread")
    if own_l2:
        print(f"  not compared: l2_hit_rate_pct of {len(own_l2)} kernels with under "
              f"{ncu_metrics.L2_OWN_FLOOR >> 15} MiB of L2 traffic of their own "
              f"({ncu_metrics.L2_OWN[1]}; the profiler's own L2 traffic decides their rate): "
              f"{sum(own_l2)} of them within 5%")
    for rel, kernel, key, mine, v in sorted(worst, reverse=True)[:10]:
        print(f"  off by {rel:.0%}: {kernel} {key}: {names[0]} {mine:.4g}, {names[1]} {v:.4g}")
    return per_metric


def sign_test(low, high):
    """Two-sided exact sign test: the chance of a split at least as uneven as `low` against
    `high` if each value off were as likely to read low as high (1.0 for none off)."""
    n = low + high
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(low, high) + 1)) / 2 ** n
    return min(1.0, 2 * tail)


def below(agree, total, floor):
    """Whether `agree` of `total` is under `floor` (a share), 97 of 100 being 0.97 exactly."""
    return agree < floor * total - 1e-9


def shortfall(per_metric, what):
    """None when the values of `per_metric` ({metric: (within 5%, compared)}, agreement()'s)
    reach AGREE_FLOOR all together and METRIC_FLOOR metric by metric (for a metric with
    METRIC_MIN_VALUES values or more), else the FAILED line, naming the metrics that fell
    short."""
    agree, total = (sum(v) for v in zip(*per_metric.values())) if per_metric else (0, 0)
    if total == 0:
        return f"FAILED: no value compared ({what})"
    short = [f"{key} {a} of {n} ({100.0 * a / n:.1f}%)"
             for key, (a, n) in sorted(per_metric.items())
             if n >= METRIC_MIN_VALUES and below(a, n, METRIC_FLOOR)]
    if not short and not below(agree, total, AGREE_FLOOR):
        return None
    line = (f"FAILED: {agree} of {total} values within 5% of ncu's ({what}, "
            f"{100.0 * agree / total:.1f}%)")
    if below(agree, total, AGREE_FLOOR):
        line += f", fewer than {100 * AGREE_FLOOR:.0f}%"
    if short:
        line += f"; metrics under {100 * METRIC_FLOOR:.0f}% on their own: " + ", ".join(short)
    return line


def beside(line):
    """shortfall()'s `line` for a judgement shown beside the verdict, which it does not decide."""
    return line.replace("FAILED: ", "under the goal: ", 1) if line else "at the goal: " + passed()


def passed():
    """The verdict line of a run that reached the goal."""
    return (f"agreement with ncu: at least {100 * AGREE_FLOOR:.0f}% of all values within 5%, "
            f"at least {100 * METRIC_FLOOR:.0f}% of each metric's (of those with "
            f"{METRIC_MIN_VALUES} values or more)")


def above_100(measured):
    """How many of the L2 hit rates in `measured` ({kernel: metrics}) exceed 100%, as text."""
    rates = [m["l2_hit_rate_pct"] for m in measured.values() if "l2_hit_rate_pct" in m]
    high = sorted(r for r in rates if r > 100)
    return f"{len(high)} of {len(rates)}" + (f" (up to {high[-1]:.1f}%)" if high else "")


def compare(build, entries, ncu_csv, replay, app_csv=None, dram_alone_csv=None, sequence=None):
    """pasta's profile entries against ncu's CSV of the same script, three times: against
    ncu's mean over all launches of a (kernel, grid, block), which is what pasta's
    propagation claims; against ncu's first launch of it; and, per signature, against ncu's
    measurement of the very launches pasta measured (by launch index, profiles of version 1.1
    on). Given ncu's application replay too, three ways (three_way()), on the same launches
    where the profile has launch indices; given ncu's measurement of DRAM_ALONE's metrics
    alone, three ways with it, and the same launches judged again with a DRAM value agreeing
    when it is within 5% of either of ncu's. Given pasta's launch-by-launch line (`sequence`),
    its throughputs by place in the replay batch. Returns shortfall()'s verdict on the same
    launches (on the first launches for a profile without launch indices), all metrics together
    and each alone."""
    ours = per_launch([entry_launches(e) for e in entries if e["metrics"]], ncu_metrics.ADDITIVE)
    keys = ncu_metrics.metric_map(build)
    launches = ncu_launches(keys, ncu_csv)
    theirs = per_launch([(k, g, b, 1, m) for k, g, b, m in launches])
    first = first_launches(launches)
    # Kernels measured more than once: their cache-sensitive metrics come from a one-pass
    # measurement with L2 flushed; the others' from kernel replay only.
    again = {(e["kernel"], tuple(e["grid"]), tuple(e["block"])) for e in entries if e["measured"] > 1}
    agreement(ours, theirs, replay, again, "against ncu's mean over the launches")
    judged = agreement(ours, first, replay, again,
                       "against ncu's first launch of each (kernel, grid, block)")
    what = "each kernel's first launch"
    same = same_launches(entries, launches)
    if same is not None:
        mine, ncu_same, again_same, astray = same
        judged = agreement(mine, ncu_same, replay, again_same, "against ncu's measurement of the "
                           "same launches (by launch index), per signature")
        what = "the same launches"
        if astray:
            print(f"  launch indices naming another kernel in ncu's run (not compared): {astray}")
        if sequence:
            by_batch_place(mine, ncu_same, batch_places(sequence))
    print(f"L2 hit rates above 100%: pasta {above_100(ours)}; ncu's first launches "
          f"{above_100(first)}")
    app_same = one = None
    if app_csv is not None:
        app = ncu_launches(keys, app_csv)
        if same is not None:
            app_same = same_launches(entries, app)[1]
            three_way(same[0], same[1], app_same, "the launches pasta measured (by launch index)")
        else:
            three_way(ours, first, first_launches(app), "first launches")
    if dram_alone_csv is not None and same is not None:
        one = same_launches(entries, ncu_launches(keys, dram_alone_csv))[1]
        three_way(same[0], same[1], one, "the launches pasta measured (by launch index)",
                  "dram-alone", "dram-alone: ncu's kernel replay of the DRAM metrics alone")
        judged = agreement(same[0], same[1], replay, same[2], "against ncu's measurement of "
                           "the same launches, a DRAM value also agreeing with ncu's DRAM metrics alone",
                           one)
        what = "the same launches, DRAM also against ncu's DRAM metrics alone"
    verdict = shortfall(judged, what)
    if app_same is not None:
        # ncu's two replay modes differ by more than the rule allows on some metrics: shown
        # beside the verdict (which stays the one above), judged by the same rule and floors.
        print("\nBy the same rule, against any of ncu's measurements and ncu against itself:")
        either = agreement(same[0], same[1], replay, same[2], "pasta against any of ncu's "
                           "measurements of the same launches (kernel replay, application replay"
                           + (", DRAM metrics alone)" if one else ")"), one, app=app_same)
        print(f"  {beside(shortfall(either, 'any of ncu'))}")
        itself = agreement(app_same, same[1], "pasta", set(), "ncu's application replay against "
                           "its kernel replay, the same launches", names=("app", "kernel"))
        print(f"  {beside(shortfall(itself, 'ncu against itself'))}")
    return verdict


def ncu_spread(build, text_a, text_b):
    """ncu's kernel replay against itself: run B's values judged against run A's with the rule
    (within()) and the floors (shortfall()) pasta's are judged by, on each (kernel, grid,
    block)'s first launch (the one launch a signature of pasta's is judged on, in most cases)
    and on every launch by its index. Two runs of a deterministic script launch the same
    kernels in the same order; launches that differ are counted and left out. Returns
    shortfall()'s line on the first launches (None: at the goal)."""
    keys = ncu_metrics.metric_map(build)
    a, b = ncu_launches(keys, text_a), ncu_launches(keys, text_b)
    same = [i for i in range(min(len(a), len(b))) if a[i][:3] == b[i][:3]]
    print(f"ncu against itself: {len(a)} and {len(b)} launches; {len(same)} the same kernel, "
          f"grid and block at the same index")
    every_a = {(*a[i][:3], i): a[i][3] for i in same}
    every_b = {(*b[i][:3], i): b[i][3] for i in same}
    first_a = first_launches([a[i] for i in same])
    first_b = first_launches([b[i] for i in same])
    runs = ("second", "first")
    agreement(every_b, every_a, "pasta", set(), "ncu's second run against its first, every launch",
              names=runs)
    judged = agreement(first_b, first_a, "pasta", set(),
                       "ncu's second run against its first, each (kernel, grid, block)'s first "
                       "launch", names=runs)
    return shortfall(judged, "ncu against itself, first launches")


def ncu_twice(build, out, args):
    """ncu's kernel replay of the script twice (ncu_command(), every metric, as the main
    mode runs it), into OUT/ncu_a.csv and OUT/ncu_b.csv: the two CSV texts, or None when ncu
    was killed at its timeout."""
    os.makedirs(out, exist_ok=True)
    keys = ncu_metrics.metric_map(build)
    texts = []
    for name in ("ncu_a", "ncu_b"):
        ncu, t = kernel_replay(keys, args)
        print(f"{model_title(args.model, args.layers)}: ncu ({name}): {t:.1f} s"
              f"{' (killed at the timeout)' if ncu is None else ''}", flush=True)
        if ncu is None:
            return None
        with open(os.path.join(out, f"{name}.csv"), "w") as f:
            f.write(ncu.stdout)
        texts.append(ncu.stdout)
    return texts


def read_text(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return f.read()


# --model: what each names, as the headline says it.
MODELS = {"gpt_block": "the project's gpt_block (examples/pytorch/gpt_block.py)",
          "gpt2": "transformers GPT-2 (GPT2LMHeadModel, default sizes)",
          "resnet18": "torchvision ResNet-18"}
# Models whose size --layers sets, and their number of blocks without it.
LAYERED = {"gpt_block": 12, "gpt2": 12}


def model_script(model, layers):
    """The command of one training step of `model` (MODELS), `layers` blocks where it has
    them (LAYERED; None for the others)."""
    if model == "gpt_block":
        return [sys.executable, os.path.join(ROOT, "examples", "pytorch", "gpt_block.py"),
                "--layers", str(layers), "--steps", "1"]
    script = [sys.executable, os.path.join(ROOT, "bench", "gpu", "counters_models.py"),
              "--model", model]
    return script + (["--layers", str(layers)] if model in LAYERED else [])


def model_title(model, layers):
    """What the headline calls the model measured: MODELS' name, and its blocks."""
    if model not in LAYERED:
        return MODELS[model]
    unit = "block" if model == "gpt_block" else "layer"
    return f"{MODELS[model]}, {layers} {unit}{'' if layers == 1 else 's'}"


def ncu_command(keys, extra, own_l2=True):
    """ncu measuring the ncu metrics that make up `keys` (metric_map()'s, or some of them),
    and with `own_l2` ncu_metrics.L2_OWN's, CSV on stdout; `extra` ends with the script."""
    return ["ncu", "--metrics", ",".join(ncu_metrics.names(keys, own_l2)), "--csv",
            "--print-units", "base", "--print-kernel-base", "mangled", "--clock-control", "none",
            *extra]


def kernel_replay(keys, args, own_l2=True):
    """ncu's kernel replay of the script (--model, --layers) under --ncu-cache, measuring
    `keys` (ncu_command()): timed()'s (CompletedProcess or None, seconds), at most
    --ncu-timeout."""
    return timed(ncu_command(keys, ["--cache-control", args.ncu_cache,
                                    *model_script(args.model, args.layers)], own_l2),
                 timeout=args.ncu_timeout)


def app_replay(build, out, args):
    """ncu's application replay of the script, APP_METRICS only (every metric with
    --app-metrics all), into OUT/ncu_app.csv."""
    os.makedirs(out, exist_ok=True)
    keys = ncu_metrics.metric_map(build)
    wanted = keys if args.app_metrics == "all" else APP_METRICS
    cmd = ncu_command({k: keys[k] for k in wanted},
                      ["--replay-mode", "application", "--cache-control", "all",
                       *model_script(args.model, args.layers)], own_l2=False)
    ncu, t = timed(cmd, timeout=args.ncu_timeout)
    print(f"{model_title(args.model, args.layers)}: ncu --replay-mode application "
          f"({', '.join(wanted)}): {t:.1f} s"
          f"{' (killed at the timeout)' if ncu is None else ''}", flush=True)
    if ncu is None:
        return 1
    with open(os.path.join(out, "ncu_app.csv"), "w") as f:
        f.write(ncu.stdout)
    return 0


def arguments(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--compare", action="store_true",
                      help="compare a run's files: BUILD_DIR PROFILE_JSON NCU_CSV [NCU_APP_CSV]")
    mode.add_argument("--ncu-app", action="store_true",
                      help="ncu's application replay only: BUILD_DIR OUT_DIR")
    mode.add_argument("--ncu-twice", action="store_true",
                      help="ncu against itself: BUILD_DIR OUT_DIR, or BUILD_DIR NCU_A NCU_B")
    mode.add_argument("--drift", action="store_true",
                      help="pasta against pasta: OLD_PROFILE_JSON NEW_PROFILE_JSON")
    p.add_argument("paths", nargs="+", metavar="PATH",
                   help="BUILD_DIR OUT_DIR (or as --compare and --ncu-app say)")
    p.add_argument("--model", choices=list(MODELS), default="gpt_block",
                   help="the training step measured (gpt_block): " +
                   "; ".join(f"{k}: {v}" for k, v in MODELS.items()))
    p.add_argument("--layers", type=int,
                   help="blocks of gpt_block or gpt2 (12); resnet18 has no such setting")
    p.add_argument("--ncu-timeout", type=float, default=420, help="seconds (420)")
    p.add_argument("--pasta-timeout", type=float, default=300, help="seconds (300)")
    p.add_argument("--ncu-cache", choices=["all", "none"], default="all")
    p.add_argument("--replay", choices=["pasta", "cupti"], default="pasta")
    p.add_argument("--no-dram-alone", action="store_true",
                   help="leave out ncu's second run of the DRAM metrics alone (a speed run whose "
                   "ncu takes most of the time left: values are judged against its first run)")
    p.add_argument("--ncu-dram-alone", metavar="CSV",
                   help="with --compare or --against: ncu's CSV of DRAM_ALONE's metrics "
                   "(ncu_dram_alone.csv)")
    p.add_argument("--against", metavar="NCU_CSV",
                   help="run native and pasta only, and compare with this ncu CSV of an earlier "
                   "run of the same script (ncu.csv)")
    p.add_argument("--against-app", metavar="CSV",
                   help="with --against: ncu's application replay of the same script "
                   "(ncu_app.csv), judged beside the verdict as --compare does")
    p.add_argument("--pasta-log", metavar="FILE",
                   help="with --compare: pasta's stderr of the run (pasta_stderr.txt), for the "
                   "throughputs by place in the replay batch")
    p.add_argument("--app-metrics", choices=["all"],
                   help="with --ncu-app: every metric, not only APP_METRICS")
    args = p.parse_args(argv)
    if args.model not in LAYERED and args.layers is not None:
        print(f"--layers {args.layers} does not apply to {args.model}: left out", flush=True)
        args.layers = None
    elif args.model in LAYERED and args.layers is None:
        args.layers = LAYERED[args.model]
    if args.against and (args.compare or args.ncu_app or args.ncu_twice):
        p.error("--against runs native and pasta: not with --compare, --ncu-app or --ncu-twice")
    if args.against_app and not args.against:
        p.error("--against-app goes with --against")
    counts = (3, 4) if args.compare else (2, 3) if args.ncu_twice else (2,)
    if len(args.paths) not in counts:
        p.error(f"{len(args.paths)} paths given, expected " +
                (" or ".join(map(str, counts))) + ": " +
                ("BUILD_DIR PROFILE_JSON NCU_CSV [NCU_APP_CSV]" if args.compare
                 else "BUILD_DIR OUT_DIR or BUILD_DIR NCU_A NCU_B" if args.ncu_twice
                 else "OLD_PROFILE_JSON NEW_PROFILE_JSON" if args.drift
                 else "BUILD_DIR OUT_DIR"))
    return args


def tool_cost(t_native, t_pasta, t_ncu, ncu_killed=False):
    """What each tool adds to the script's own wall time, and their ratio: the wall-time ratio
    is bounded by ncu's time over the native run's, which moves with the machine (13.7-29 s on
    the same step across sessions); the added time is the tools' own."""
    pasta_adds, ncu_adds = t_pasta - t_native, t_ncu - t_native
    at_least = "at least " if ncu_killed else ""
    than = (f"{at_least}{ncu_adds / pasta_adds:.1f}x less" if pasta_adds > 0
            else "no slower than the native run")
    return (f"over the native run: ncu adds {ncu_adds:.1f} s, pasta {pasta_adds:.1f} s ({than}); "
            f"with this native time ncu / pasta in wall time is at most {t_ncu / t_native:.1f}x")


def main(argv=None):
    args = arguments(argv)
    if args.drift:
        # A measurement, not a test: two runs of pasta (.gz too), nothing judged.
        old, new = (profile_entries(json.loads(read_text(x))) for x in args.paths)
        print("\n".join(profile_drift(old, new)))
        return 0
    if args.compare:
        # Offline: a run's files (.gz too).
        build, profile_path, ncu_csv, *app = args.paths
        with open(profile_path) as f:
            profile = json.load(f)
        failed = compare(os.path.abspath(build), profile_entries(profile), read_text(ncu_csv),
                         profile.get("replay", "pasta"), read_text(app[0]) if app else None,
                         read_text(args.ncu_dram_alone) if args.ncu_dram_alone else None,
                         launch_sequence(read_text(args.pasta_log)) if args.pasta_log else None)
        print(failed or passed())
        return 1 if failed else 0
    if args.ncu_twice:
        # A measurement, not a test of pasta: exits 1 only when ncu did not run.
        if len(args.paths) == 3:
            build, a, b = args.paths
            print(ncu_spread(os.path.abspath(build), read_text(a), read_text(b)) or passed())
            return 0
        texts = ncu_twice(*(os.path.abspath(x) for x in args.paths), args)
        if texts is None:
            return 1
        print(ncu_spread(os.path.abspath(args.paths[0]), *texts) or passed())
        return 0
    build, out = (os.path.abspath(x) for x in args.paths)
    if args.ncu_app:
        return app_replay(build, out, args)
    os.makedirs(out, exist_ok=True)
    cache, replay = args.ncu_cache, args.replay
    script = model_script(args.model, args.layers)
    gpu = harness.gpu_name()

    native, t_native = timed(script, timeout=300)
    print(f"native: {t_native:.1f} s", flush=True)
    pasta, t_pasta = timed([f"{build}/bin/pasta", "run", "-f", "--torch", "--counters", "-o",
                            f"{out}/pasta", "--", *script],
                           {"PASTA_PRINT": "none", "PASTA_VERBOSE": "1",
                            "PASTA_COUNTER_CACHE": "all" if cache == "all" else "none",
                            "PASTA_COUNTER_REPLAY": replay},
                           timeout=args.pasta_timeout)
    print(f"pasta: {t_pasta:.1f} s{' (killed at the timeout)' if pasta is None else ''}", flush=True)
    if native is None or pasta is None:
        return 1
    keys = ncu_metrics.metric_map(build)
    if args.against:
        ncu_text = read_text(args.against)
        dram_text = read_text(args.ncu_dram_alone) if args.ncu_dram_alone else None
        t_ncu = t_one = None
    else:
        ncu, t_ncu = kernel_replay(keys, args)
        # DRAM_ALONE's metrics alone (not part of ncu's time): DRAM bytes its restores do not
        # inflate.
        dram_alone, t_one = (None, 0.0) if ncu is None or args.no_dram_alone else kernel_replay(
            {k: keys[k] for k in DRAM_ALONE}, args, own_l2=False)
        ncu_text = ncu.stdout if ncu is not None else None
        dram_text = dram_alone.stdout if dram_alone is not None else None
    killed = ncu_text is None  # ncu killed at its timeout (an --against file is always read)

    with open(os.path.join(out, "pasta", "op_counters.profile.json")) as f:
        profile = json.load(f)
    entries = profile_entries(profile)
    launches = sum(e["launches"] for e in entries)
    measured = sum(e["measured"] for e in entries)
    print(f"{model_title(args.model, args.layers)}, one training step, {gpu}; "
          f"ncu --cache-control {cache}; pasta PASTA_COUNTER_REPLAY={replay}")
    print(f"{'run':<8} {'wall s':>8} {'x native':>9}")
    for name, t in [("native", t_native), ("pasta", t_pasta)] + (
            [] if args.against else [("ncu", t_ncu)]):
        more = " (killed at the timeout: a lower bound)" if name == "ncu" and killed else ""
        print(f"{name:<8} {t:>8.1f} {t / t_native:>9.1f}{more}")
    if args.against:
        print(f"ncu: not run; its files of an earlier run: {args.against}"
              f"{', ' + args.ncu_dram_alone if args.ncu_dram_alone else ''}"
              f"{', ' + args.against_app if args.against_app else ''}")
    elif args.no_dram_alone:
        print(f"ncu, {', '.join(DRAM_ALONE)} alone: not run (--no-dram-alone)")
    else:
        print(f"ncu, {', '.join(DRAM_ALONE)} alone (compared below, not timed against pasta): "
              f"{t_one:.1f} s")
    speed = "" if args.against else \
        f"ncu / pasta: {'>= ' if killed else ''}{t_ncu / t_pasta:.1f}x; "
    print(f"{speed}pasta measured {measured} of {launches} launches ({len(entries)} signatures), "
          f"operators: {len(profile['operators'])}")
    if not args.against:
        print(tool_cost(t_native, t_pasta, t_ncu, killed))
    print("results: native", native.stdout.strip().splitlines()[-1])
    print("results: pasta ", pasta.stdout.strip().splitlines()[-1])
    for line in pasta.stderr.splitlines():  # what pasta said: skipped or mismatched launches
        if line.startswith("pasta: ") and ("hardware counters" in line or "skipped" in line):
            # The launch-by-launch line whole: a character a launch, read against ncu's launch
            # indices offline (cut at 800 characters it held 515 of ResNet-18's 696 launches).
            print("  " + (line if "launch by launch" in line else line[:800]))
    print("warnings:", profile["warnings"])
    with open(os.path.join(out, "pasta_stderr.txt"), "w") as f:
        f.write(pasta.stderr)
    if killed:
        print(f"FAILED: ncu killed at its timeout ({args.ncu_timeout:.0f} s): nothing compared "
              "(--ncu-timeout, or fewer --layers where the model has them)")
        return 1
    if not args.against:
        with open(os.path.join(out, "ncu.csv"), "w") as f:
            f.write(ncu_text)
        if dram_text is not None:
            with open(os.path.join(out, "ncu_dram_alone.csv"), "w") as f:
                f.write(dram_text)
    app_text = read_text(args.against_app) if args.against_app else None
    failed = compare(build, entries, ncu_text, replay, app_csv=app_text, dram_alone_csv=dram_text,
                     sequence=launch_sequence(pasta.stderr))
    print(failed or passed())
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
