#!/usr/bin/env python3
"""merge_rounds.py: one table from the rounds of several runs of the same GPU benchmark, for a
benchmark whose rounds do not fit one call of the GPU machine (overhead.py and the others write
every sample beside their CSV: overhead.samples.json).

    bench/gpu/merge_rounds.py RUN1.samples.json RUN2.samples.json ...

Each run's rounds keep their pairing: a variant's round is divided by the baseline's round of
the same run, and the rounds of later runs are numbered after the earlier ones'. Only workloads
and variants every run has are merged; each was checked in its own run (its reports against
the independent counts) or it has no samples there. Prints the tables as the benchmark does,
with the ratios' median and bootstrap 95% interval over all the rounds."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402


def merge(runs):
    """{workload: (unit, baseline, [Variant], {label: [Sample]})} over the runs' common ones."""
    names = [w for w in runs[0]["workloads"] if all(w in r["workloads"] for r in runs)]
    out = {}
    for name in names:
        parts = [r["workloads"][name] for r in runs]
        labels = [label for label in parts[0]["samples"]
                  if all(label in p["samples"] and p["samples"][label] for p in parts)]
        results = {label: [] for label in labels}
        offset = 0
        for p in parts:
            last = -1
            for label in labels:
                for rnd, value, seconds in p["samples"][label]:
                    results[label].append(harness.Sample(value, seconds, {}, "", "", offset + rnd))
                    last = max(last, rnd)
            offset += last + 1
        variants = []
        for label in labels:
            v = harness.Variant(label, [])
            v.check = all(p["checked"].get(label) for p in parts) or None
            variants.append(v)
        out[name] = (parts[0]["unit"], parts[0]["baseline"], variants, results)
    return out


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    runs = []
    for path in sys.argv[1:]:
        try:
            with open(path) as f:
                runs.append(json.load(f))
        except (OSError, ValueError) as e:
            sys.exit(f"merge_rounds: cannot read {path}: {e}")
    gpus = sorted({r["gpu"] for r in runs})
    merged = merge(runs)
    if not merged:
        sys.exit("merge_rounds: no workload is in every run")
    for name, (unit, baseline, variants, results) in merged.items():
        harness.print_table(" and ".join(gpus), f"{name} ({len(runs)} runs)", variants, results,
                            unit, baseline)
    return 0


if __name__ == "__main__":
    sys.exit(main())
