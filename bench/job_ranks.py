#!/usr/bin/env python3
"""job_ranks.py: synthetic rank directories of a data-parallel training job, as pasta writes
them (each rank's entry in processes/, kernel_freq.json, op_summary.json and
timeline.trace.json), with answers known from the parameters alone (answers()): for the
job merge's benchmark (bench/job_merge.py) and its CPU tests (tests/cli/job_analysis_test.py).

    job_ranks.py DIR --ranks N [--steps S] [--kernels K] [--damage]

Every step of every rank starts at step * period (a host clock per host, lined up through
the wall clocks): a copy of copy_us on stream 8, then K compute kernels on stream 7, each
kernel_us long (slower on the slow rank, faster on the waiting rank) with gap_us between
them, and an all-reduce on stream 9 launched with the compute kernel number K - overlapped
(it overlaps the last `overlapped` kernels); every rank's all-reduce ends allreduce_us after
the last rank arrives. Each device record's host launch is launch_us before it starts, and
each compute kernel runs inside one operator. --no-launches leaves the host launches out (as
a run without --launch-callbacks has none). --damage adds one rank of each kind of bad
input (missing, half written, from another job, from another pasta version).
"""
import argparse
import json
import os
import shutil

NCCL = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
PASTA_VERSION = "0.1.0"  # include/pasta/core/version.hpp
DEFAULTS = {
    "ranks": 64, "per_host": 8, "steps": 10, "kernels": 499, "names": 40, "operators": 20,
    "kernel_us": 20.0, "gap_us": 4.0, "copy_us": 30.0, "overlapped": 100, "allreduce_us": 3000.0,
    "host_gap_us": 200.0, "launch_us": 6.0, "slow_rank": None, "slow": 0.25,
    "waiting_rank": 0, "fast": 0.1, "run_id": "synthetic", "damage": False, "launches": True,
}
LAUNCH = '{"name":"launch","cat":"launch","ph":"i","pid":0,"tid":11,"ts":'
CLOCK0 = 5_000_000_000  # every host's clock at the job's time 0, before its own offset
WALL0 = 1_800_000_000_000_000_000


def params(**overrides):
    p = dict(DEFAULTS, **overrides)
    if p["slow_rank"] is None:
        p["slow_rank"] = p["ranks"] - 1
    unknown = set(overrides) - set(DEFAULTS)
    if unknown:
        raise ValueError(f"unknown parameters {sorted(unknown)}")
    # answers() holds only where the all-reduce outlasts every rank's compute.
    for r in range(p["ranks"]):
        end = p["copy_us"] + p["kernels"] * (kernel_us(p, r) + p["gap_us"]) - p["gap_us"]
        if end > step_us(p):
            raise ValueError(f"rank {r}'s compute outlasts the all-reduce: raise allreduce_us")
    return p


def kernel_us(p, rank):
    """A compute kernel's duration on `rank`."""
    if rank == p["slow_rank"]:
        return p["kernel_us"] * (1 + p["slow"])
    if rank == p["waiting_rank"]:
        return p["kernel_us"] * (1 - p["fast"])
    return p["kernel_us"]


def arrival_us(p, rank):
    """When `rank`'s all-reduce starts, from its step's start."""
    return p["copy_us"] + (p["kernels"] - p["overlapped"]) * (kernel_us(p, rank) + p["gap_us"])


def step_us(p):
    """A step's device span, the same on every rank: to the end of the all-reduce."""
    last = max(arrival_us(p, r) for r in range(p["ranks"]))
    return last + p["allreduce_us"]


def period_us(p):
    return step_us(p) + p["host_gap_us"]


def kernel_names(p):
    return [f"void gemm_{i}<float, 128>(float const*, float*, int)" for i in range(p["names"])]


def host_of(p, rank):
    return f"node{rank // p['per_host']}"


def rank_events(p, rank):
    """The rank's timeline events on the job's clock (us): (ts, text before ts, text after).
    Host launches only with p["launches"] (pasta run --launch-callbacks writes them)."""
    d, g, k = kernel_us(p, rank), p["gap_us"], p["kernels"]
    names = [json.dumps(n) for n in kernel_names(p)]
    ops = [json.dumps(f"aten::op{i}") for i in range(p["operators"])]
    lead = p["launch_us"]
    launch = LAUNCH
    host = '"pid":0,"tid":11,"ts":'

    def device(name, cat, stream, dur, corr, extra=""):
        return (f'{{"name":{name},"cat":"{cat}","ph":"X","pid":1,"tid":{stream},"ts":',
                f',"dur":{dur:.3f},"args":{{"correlation":{corr}{extra}}}}}')

    kernel_args = (',"device":0,"stream":{},"grid":"(64,1,1)","block":"(128,1,1)",'
                   '"shared_mem_bytes":0')
    corr = 0
    for s in range(p["steps"]):
        t0 = s * period_us(p)
        corr += 1
        yield (t0 - lead, launch, f',"args":{{"correlation":{corr}}}}}')
        yield (t0, *device('"memcpy h2d 4.0 MB"', "memcpy", 8, p["copy_us"], corr,
                           ',"bytes":4194304'))
        a = t0 + arrival_us(p, rank)
        for i in range(k):
            start = t0 + p["copy_us"] + i * (d + g)
            if i == k - p["overlapped"]:
                corr += 1
                yield (a - lead, launch, f',"args":{{"correlation":{corr}}}}}')
                yield (a, *device(json.dumps(NCCL), "kernel", 9, t0 + step_us(p) - a, corr,
                                  kernel_args.format(9)))
            corr += 1
            op = ops[i % p["operators"]]
            yield (start - lead - 1, f'{{"name":{op},"cat":"op","ph":"B",{host}', "}")
            yield (start - lead, launch, f',"args":{{"correlation":{corr}}}}}')
            yield (start - lead + 1, f'{{"name":{op},"cat":"op","ph":"E",{host}', "}")
            yield (start, *device(names[i % p["names"]], "kernel", 7, d, corr,
                                  kernel_args.format(7)))


def write_rank(p, job, rank, dir_name=None, entry_extra=None, cut=None):
    """One rank's directory and entry; cut: keep that share of the timeline's bytes."""
    host = host_of(p, rank)
    pid = 1000 + rank
    dir_name = dir_name or f"rank{rank}"
    d = os.path.join(job, dir_name)
    os.makedirs(d, exist_ok=True)
    os.makedirs(os.path.join(job, "processes"), exist_ok=True)
    n_kernels = p["steps"] * (p["kernels"] + 1)
    entry = {"pasta_process": 1, "pasta_version": PASTA_VERSION, "pid": pid, "host": host,
             "rank": rank, "rank_variable": "RANK", "world_size": p["ranks"],
             "run_id": p["run_id"], "dir": dir_name, "status": "finished",
             "launches": n_kernels,
             "reports": ["kernel_freq.json", "op_summary.json", "timeline.json"]}
    entry.update(entry_extra or {})
    with open(os.path.join(job, "processes", f"{host}-{pid}-{dir_name}.json"), "w") as f:
        json.dump(entry, f)
    d_us, names = kernel_us(p, rank), kernel_names(p)
    per_name = {n: 0 for n in names}
    for i in range(p["kernels"]):
        per_name[names[i % p["names"]]] += p["steps"]
    rows = [{"kernel": n.split("(")[0].replace("void ", ""), "signature": n, "launches": c,
             "total_ms": c * d_us / 1e3} for n, c in per_name.items()]
    comm = p["steps"] * (step_us(p) - arrival_us(p, rank)) / 1e3
    rows.append({"kernel": "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "signature": NCCL,
                 "launches": p["steps"], "total_ms": comm})
    total = sum(r["total_ms"] for r in rows)
    kf = {"tool": "kernel_freq", "summary": {"device time (ms)": total, "kernels": len(rows),
                                             "launches": n_kernels},
          "tables": {"kernels": rows}}
    with open(os.path.join(d, "kernel_freq.json"), "w") as f:
        json.dump(kf, f)
    per_op = {}
    for i in range(p["kernels"]):
        per_op[f"aten::op{i % p['operators']}"] = per_op.get(f"aten::op{i % p['operators']}", 0) + 1
    ops = [{"operator": o, "calls": c * p["steps"], "kernels": c * p["steps"],
            "device_self_ms": c * p["steps"] * d_us / 1e3} for o, c in per_op.items()]
    with open(os.path.join(d, "op_summary.json"), "w") as f:
        json.dump({"tool": "op_summary", "tables": {"operators": ops}}, f)
    # Each host its own clock, offset from the job's; the header maps it to the wall clock.
    h = rank // p["per_host"]
    clock_offset_ns = h * 1_000_000_007
    events = sorted((e for e in rank_events(p, rank) if e[1] != LAUNCH or p["launches"]),
                    key=lambda e: e[0])
    first = events[0][0]
    origin_ns = CLOCK0 + clock_offset_ns + round(first * 1e3)
    header = {"clock_ns": CLOCK0 + clock_offset_ns, "wall_ns": WALL0, "pid": pid, "host": host,
              "rank": rank}
    lines = [f'{{"schemaVersion":1,"displayTimeUnit":"ms","distributedInfo":{{"backend":"nccl",'
             f'"rank":{rank},"world_size":{p["ranks"]}}},"pasta":{json.dumps(header)},'
             f'"traceEvents":[',
             '{"name":"process_name","ph":"M","pid":0,"tid":0,"args":{"name":"Host"}},',
             '{"name":"process_name","ph":"M","pid":1,"tid":0,"args":{"name":"GPU 0: '
             'Synthetic GPU"}},',
             '{"name":"pasta_origin","ph":"M","pid":0,"tid":0,"args":{"clock_ns":'
             f'{origin_ns}}}}},']
    lines += [f"{before}{ts - first:.3f}{after}," for ts, before, after in events]
    text = "\n".join(lines) + "\n{}]}\n"
    if cut is not None:
        text = text[:int(len(text) * cut)]
    with open(os.path.join(d, "timeline.trace.json"), "w") as f:
        f.write(text)


def generate(job, p):
    """Every rank of the job, then with p["damage"] one of each kind of bad input (answers()
    says which)."""
    for r in range(p["ranks"]):
        write_rank(p, job, r)
    if p["damage"]:
        damage(job, p)


def damage(job, p):
    bad = answers(p)["bad"]
    # A rank whose directory is gone (a node's directory not gathered, a wrong path).
    r = bad["missing"]
    shutil.rmtree(os.path.join(job, f"rank{r}"))
    # A rank half written: its timeline cut mid-line, its kernel_freq.json cut short.
    r = bad["half"]
    write_rank(p, job, r, cut=0.5)
    path = os.path.join(job, f"rank{r}", "kernel_freq.json")
    with open(path) as f:
        text = f.read()
    with open(path, "w") as f:
        f.write(text[:len(text) // 2])
    # A rank of another job in the same directory: another world size, another run.
    write_rank(dict(p, ranks=2, slow_rank=1, run_id="another-job"), job, bad["foreign"], dir_name=
               f"rank{bad['foreign']}-another-job")
    # A rank written by another pasta: an entry format this pasta does not read.
    write_rank(p, job, bad["version"], dir_name=f"rank{bad['version']}-next-pasta",
               entry_extra={"pasta_process": 2, "pasta_version": "9.0.0"})


def answers(p):
    """What the job's analyses must find, from the parameters alone (us, per rank)."""
    n, steps, k, kb = p["ranks"], p["steps"], p["kernels"], p["overlapped"]
    b = k - kb
    ranks = {}
    last = max(arrival_us(p, r) for r in range(n))
    for r in range(n):
        d = kernel_us(p, r)
        comm = step_us(p) - arrival_us(p, r)  # the all-reduce's length on this rank
        compute = k * d
        ranks[r] = {
            "compute_us": steps * compute,
            # The all-reduce overlaps the last kb kernels whole (it ends after them).
            "overlap_us": steps * kb * d,
            "communication_us": steps * (comm - kb * d),  # not overlapped with compute
            "memory_us": steps * p["copy_us"],
            # Inside a step: the b gaps before the all-reduce; between steps: host_gap_us.
            "idle_us": steps * b * p["gap_us"] + (steps - 1) * p["host_gap_us"],
            "span_us": (steps - 1) * period_us(p) + step_us(p),
            "comm_total_us": steps * comm,
            "wait_us": steps * (last - arrival_us(p, r)),
            "launch_delay_us": p["launch_us"],
            "launches_timed": steps * (k + 2),  # copies, kernels and the all-reduce
            "idle_by_cause": {"launch overhead": steps * b * p["gap_us"],
                              "host": (steps - 1) * p["host_gap_us"]},
        }
    return {
        "ranks": ranks,
        "slow_in_compute": p["slow_rank"],
        "waits_in_collectives": p["waiting_rank"],
        "collectives": steps,
        "last_to_arrive": p["slow_rank"],
        # Every collective: the slow rank arrives last, the waiting rank first.
        "skew_us": arrival_us(p, p["slow_rank"]) - arrival_us(p, p["waiting_rank"]),
        "bad": {"missing": 1, "half": 2, "foreign": 3, "version": 4},
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir")
    ap.add_argument("--ranks", type=int, default=DEFAULTS["ranks"])
    ap.add_argument("--steps", type=int, default=DEFAULTS["steps"])
    ap.add_argument("--kernels", type=int, default=DEFAULTS["kernels"])
    ap.add_argument("--damage", action="store_true")
    ap.add_argument("--no-launches", action="store_true")
    args = ap.parse_args()
    p = params(ranks=args.ranks, steps=args.steps, kernels=args.kernels, damage=args.damage,
               launches=not args.no_launches)
    generate(args.dir, p)
    print(f"{args.ranks} ranks x {p['steps'] * (p['kernels'] + 1)} kernels in {args.dir}")


if __name__ == "__main__":
    main()
