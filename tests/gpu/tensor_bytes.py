#!/usr/bin/env python3
"""CUDA tensors with known bytes read and written, for TensorHotness under
`pasta run --torch --memory`: a fill writes every byte of `a` once, a
multiplication reads `a` once and writes `b` once, a second fill writes `c`,
and the sums read `b` and `c` once. (A plain `b.copy_(a)` would be a
cudaMemcpy, which no kernel patch sees.) Prints the expectations per tensor
(by address) and a checksum as one JSON line."""
import json

import torch

n = 1 << 16  # floats: 256 KiB, a multiple of the allocator's 512 B
torch.cuda.init()
a = torch.empty(n, device="cuda")
b = torch.empty(n, device="cuda")
c = torch.empty(n // 4, device="cuda")
a.fill_(1.5)
torch.mul(a, 2.0, out=b)
c.fill_(2.0)
checksum = b.sum().item() + c.sum().item()  # reads b and c once more
nb = 4 * n
print(json.dumps({"checksum": checksum, "tensors": {
    "a": {"address": a.data_ptr(), "bytes": nb, "read_bytes": nb, "write_bytes": nb},  # fill, mul
    "b": {"address": b.data_ptr(), "bytes": nb, "read_bytes": nb, "write_bytes": nb},  # mul, sum
    "c": {"address": c.data_ptr(), "bytes": nb // 4, "read_bytes": nb // 4,
          "write_bytes": nb // 4}}}), flush=True)
