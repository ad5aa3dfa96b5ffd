#!/usr/bin/env python3
"""Views of one tensor read by two operators: qkv (rows x 3*cols floats) split
into q, k and v, each a strided view; aten::mul reads q and aten::add reads k.
The stall_blame GPU test checks that the stalls of each operator's loads land
on its view, under qkv. Prints one JSON line with a checksum of the results."""
import argparse
import json

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--rows", type=int, default=1 << 16)
parser.add_argument("--cols", type=int, default=64)
parser.add_argument("--steps", type=int, default=4)
args = parser.parse_args()

torch.manual_seed(0)
qkv = torch.randn(args.rows, 3 * args.cols, device="cuda")
q, k, v = qkv.split(args.cols, dim=1)
checksum = 0.0
for _ in range(args.steps):
    y = q * 2.0
    z = k + 1.0
    checksum += float(y.double().sum()) + float(z.double().sum())
torch.cuda.synchronize()
print(json.dumps({"rows": args.rows, "cols": args.cols, "steps": args.steps,
                  "checksum": checksum}))
