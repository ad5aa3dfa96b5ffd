#!/usr/bin/env python3
"""The verdicts of `pasta run --torch --counters` on two operators whose bound
is known from their arithmetic: a large bf16 matrix product (2*N^3 FLOPs over
3*N^2*2 bytes: hundreds of FLOPs a byte, tensor cores) must be compute-bound
(tensor), and a large fp32 add (one FLOP per 12 bytes) memory-bound; the
roofline places the product far right of the add.

    verdict_check.py --pasta BUILD/bin/pasta --out DIR [--python python3]
    verdict_check.py --workload      (the program itself)
Exits 1 on a wrong verdict, 77 without a GPU (skipped).
"""
import argparse
import json
import os
import subprocess
import sys


def workload():
    import torch
    torch.cuda.init()
    n = 8192
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    x = torch.randn(64 * 1024 * 1024, device="cuda")
    y = torch.randn(64 * 1024 * 1024, device="cuda")
    c = torch.mm(a, b)
    z = torch.add(x, y)
    torch.cuda.synchronize()
    print(json.dumps({"mm": float(c[0, 0]), "add": float(z[0])}))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--workload", action="store_true")
    p.add_argument("--pasta")
    p.add_argument("--python", default=sys.executable)
    p.add_argument("--out")
    args = p.parse_args()
    if args.workload:
        return workload()
    gpu = subprocess.run([args.python, "-c", "import torch; print(torch.cuda.is_available())"],
                         capture_output=True, text=True)
    if gpu.stdout.strip() != "True":
        print("skipped: no GPU (torch.cuda.is_available() is not True)")
        return 77
    r = subprocess.run([args.python, args.pasta, "run", "--torch", "--counters", "-f", "-o",
                        args.out, "--", args.python, os.path.abspath(__file__), "--workload"],
                       capture_output=True, text=True, env=dict(os.environ, PASTA_PRINT="none"))
    if r.returncode != 0:
        print(r.stdout, r.stderr)
        return 1
    with open(os.path.join(args.out, "op_counters.json")) as f:
        report = json.load(f)
    rows = {r["operator"].rsplit("/", 1)[-1]: r for r in report["tables"]["verdicts"]}
    print("ceilings:", report["summary"].get("ceilings"))
    ok = True
    for op, want in (("aten::mm", "compute-bound (tensor)"), ("aten::add", "memory-bound")):
        row = rows.get(op)
        got = row["bound"] if row else None
        print(f"{op}: {got} (expected {want}); " + (
            f"DRAM {row['dram_throughput_pct']:.1f}%, SM {row['sm_throughput_pct']:.1f}%, tensor "
            f"{row['tensor_active_pct']:.1f}%, {row['arithmetic_intensity']:.3g} FLOP/B, "
            f"{row['achieved_tflops']:.3g} TFLOP/s, saving {row['saving_ms']} ms" if row else ""))
        ok &= got == want
    if ok and rows["aten::mm"]["arithmetic_intensity"] <= 10 * rows["aten::add"][
            "arithmetic_intensity"]:
        print("the product is not far right of the add on the roofline")
        ok = False
    print("verdicts exact" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
