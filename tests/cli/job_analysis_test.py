#!/usr/bin/env python3
"""The job's analyses (share/pasta/job_store.py through `pasta report`) on a synthetic job
(bench/job_ranks.py) against the answers computed by hand from the generator's parameters
(job_ranks.answers): each rank's compute, communication, memory and idle time, the overlap,
idle by cause, launch delays, the waits in collectives, the collectives matched across ranks
with the last to arrive, the outliers; bad input (a rank directory missing, one half
written, one of another job, one of another pasta) named, nothing else lost; and without
DuckDB one line, no traceback.

    job_analysis_test.py BUILD_DIR
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "bench"))
import checks  # noqa: E402
import job_ranks  # noqa: E402
from checks import expect, near  # noqa: E402

BUILD = os.path.abspath(sys.argv[1])
PASTA = [sys.executable, os.path.join(BUILD, "bin", "pasta")]
# Two hosts of 8 ranks, 3 steps of 40 kernels, the all-reduce over the last 8.
PARAMS = job_ranks.params(ranks=16, steps=3, kernels=40, overlapped=8, allreduce_us=400.0,
                          damage=True)


def report(job, *more, env=None):
    e = {k: v for k, v in os.environ.items() if not k.startswith("PASTA_")}
    e["PASTA_BUILD_DIR"] = BUILD
    e.update(env or {})
    return subprocess.run(PASTA + ["report", job, *more], capture_output=True, text=True, env=e,
                          timeout=300, check=False)


def analyses(doc, want):
    bad = want["bad"]
    ranks = {r["rank"]: r for r in doc["analysis"]["ranks"]}
    intact = [r for r in range(PARAMS["ranks"]) if r not in (bad["missing"], bad["half"])]
    expect("every rank but the missing one analysed (the half-written one too)",
           sorted(ranks), [r for r in range(PARAMS["ranks"]) if r != bad["missing"]])
    for r in intact:
        w, got = want["ranks"][r], ranks[r]
        for key in ("compute", "communication", "memory", "idle", "span"):
            near(f"rank {r}: {key} (ms)", got[f"{key}_ms"], w[f"{key}_us"] / 1e3)
        near(f"rank {r}: communication overlapped by compute (%)", got["overlap_pct"],
             100 * w["overlap_us"] / w["comm_total_us"])
        near(f"rank {r}: waits for the last rank (ms)", got["wait_ms"], w["wait_us"] / 1e3)
        expect(f"rank {r}: idle by cause (ms)", {k: round(v, 6) for k, v in
                                                 got["idle_by_cause_ms"].items()},
               {k: round(v / 1e3, 6) for k, v in w["idle_by_cause"].items()})
        expect(f"rank {r}: launch delays (us: launches, median, max)",
               (got["launch_delay_us"]["launches"], round(got["launch_delay_us"]["median"], 6),
                round(got["launch_delay_us"]["max"], 6)),
               (w["launches_timed"], w["launch_delay_us"], w["launch_delay_us"]))
    outliers = {v: [o["process"] for o in named]
                for v, named in doc["analysis"]["outliers"].items()}
    expect("outliers", outliers, {"slow in compute": [f"rank {want['slow_in_compute']}"],
                                  "waits in collectives": [
                                      f"rank {want['waits_in_collectives']}"]})
    expect("their verdicts in the ranks' table",
           {r: ranks[r]["verdict"] for r in ranks if ranks[r]["verdict"]},
           {want["slow_in_compute"]: "slow in compute",
            want["waits_in_collectives"]: "waits in collectives"})
    c = doc["analysis"]["collectives"]
    expect("collectives matched across ranks", c["matched"], want["collectives"])
    expect("each one's last rank", [k["last"] for k in c["by_skew"]],
           [f"rank {want['last_to_arrive']}"] * want["collectives"])
    for k in c["by_skew"]:
        near(f"collective {k['grp']}#{k['seq']}: skew (us)", k["skew_us"], want["skew_us"])
    # The half-written rank's timeline ends in its second step: its first collective is
    # matched with every analysed rank, the later ones without it.
    expect("ranks in each collective", sorted(k["processes"] for k in c["by_skew"]),
           [PARAMS["ranks"] - 2] * (want["collectives"] - 1) + [PARAMS["ranks"] - 1])
    expect("straggler (most compute)", doc["straggler"]["process"],
           f"rank {want['slow_in_compute']}")


def swept_per_process(doc, job):
    """A job too long for the sweep's keys is swept a process at a time: the same answers."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "share", "pasta"))
    import job_store
    job_store.KEY_BITS = 0
    store = job_store.Store(job)
    parts, causes = store.breakdown(), store.idle_by_cause()
    ranks = {r["rank"]: r for r in doc["analysis"]["ranks"]}
    rank_of = {r["rid"]: r["rank"] for r in store.query(
        f"SELECT rid, rank FROM {store.table('processes')}")}
    got = {rank_of[rid]: (round(p["compute_us"] / 1e3, 6), round(p["idle_us"] / 1e3, 6),
                          {k: round(v / 1e3, 6) for k, v in causes.get(rid, {}).items()})
           for rid, p in parts.items()}
    expect("swept a process at a time: compute, idle and idle by cause (ms), the same",
           got, {r: (round(x["compute_ms"], 6), round(x["idle_ms"], 6),
                     {k: round(v, 6) for k, v in x["idle_by_cause_ms"].items()})
                 for r, x in ranks.items()})


def bad_input(doc, want, job):
    bad = want["bad"]
    problems = "\n".join(doc["problems"])
    for what, text in (("missing", f"rank {bad['missing']} (node0, pid {1000 + bad['missing']}): "
                        f"its directory {os.path.join(job, 'rank%d' % bad['missing'])} is missing"),
                       ("half written: its timeline", f"rank {bad['half']}: timeline.trace.json "
                        "is cut short"),
                       ("half written: its kernel_freq.json", f"rank {bad['half']}: "
                        "kernel_freq.json is not whole JSON"),
                       ("another job", f"rank {bad['foreign']} (node0, pid "
                        f"{1000 + bad['foreign']}): from another job (world size 2, this job's "
                        f"{PARAMS['ranks']}; run another-job): left out"),
                       ("another pasta", f"rank {bad['version']} (node0, pid "
                        f"{1000 + bad['version']}): written by another pasta (9.0.0: its entry's "
                        "format is 2")):
        expect(f"bad input named: {what}", text in problems, True)
    expect("no other problem", len(doc["problems"]), 5)
    # Nothing else lost: every kernel name over the ranks whose kernel_freq.json is whole
    # (all but the missing and the half-written), the rank of another job and another
    # pasta's left out (their ranks' own directories merged).
    gemm = next(k for k in doc["kernels"] if k["name"].startswith("gemm_0"))
    expect("a compute kernel over the ranks", gemm["processes"], PARAMS["ranks"] - 2)
    expect("the processes listed: every entry", len(doc["processes"]), PARAMS["ranks"] + 2)


def page(job, doc):
    path = os.path.join(job, "report.html")
    if not expect("the job page", os.path.exists(path), True):
        return
    with open(path) as f:
        html = f.read()
    bad = job_ranks.answers(PARAMS)["bad"]
    expect("the page names the rank of another job",
           f"rank {bad['foreign']} (node0, pid {1000 + bad['foreign']}): from another job" in html,
           True)
    expect("the page names the slow rank's verdict", "slow in compute" in html, True)
    for t in doc["timeline_ranks"]:
        expect(f"the page links {t['process']}'s own timeline", f'href="{t["timeline"]}"' in html,
               True)


def no_duckdb(job):
    """Without DuckDB: the processes listed, one line saying what is missing, no traceback."""
    shim = tempfile.mkdtemp(prefix="pasta-no-duckdb-")
    with open(os.path.join(shim, "duckdb.py"), "w") as f:
        f.write("raise ImportError('No module named duckdb')\n")
    p = report(job, env={"PYTHONPATH": shim})
    shutil.rmtree(shim)
    expect("without DuckDB: exit code", p.returncode, 0)
    expect("without DuckDB: one line says so", p.stderr.count("pip install duckdb"), 1)
    expect("without DuckDB: no traceback", "Traceback" in p.stderr, False)
    with open(os.path.join(job, "job.json")) as f:
        doc = json.load(f)
    expect("without DuckDB: every process listed", len(doc["processes"]), PARAMS["ranks"] + 2)


def versions():
    """The version the merge compares entries with, and the generator writes, are pasta's."""
    root = os.path.dirname(os.path.dirname(HERE))
    with open(os.path.join(root, "include", "pasta", "core", "version.hpp")) as f:
        version = next(l.split('"')[1] for l in f if "PASTA_VERSION_STRING" in l)
    sys.path.insert(0, os.path.join(root, "share", "pasta"))
    import job
    expect("share/pasta/job.py's PASTA_VERSION is version.hpp's", job.PASTA_VERSION, version)
    expect("bench/job_ranks.py's PASTA_VERSION is version.hpp's", job_ranks.PASTA_VERSION,
           version)


def main():
    versions()
    tmp = tempfile.mkdtemp(prefix="pasta-job-analysis-")
    try:
        job = os.path.join(tmp, "job")
        job_ranks.generate(job, PARAMS)
        want = job_ranks.answers(PARAMS)
        p = report(job)
        print(p.stderr)
        expect("pasta report: exit code", p.returncode, 0)
        with open(os.path.join(job, "job.json")) as f:
            doc = json.load(f)
        analyses(doc, want)
        swept_per_process(doc, job)
        bad_input(doc, want, job)
        page(job, doc)
        no_duckdb(job)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return checks.summary("job analyses: every check exact")


if __name__ == "__main__":
    sys.exit(main())
