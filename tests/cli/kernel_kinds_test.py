#!/usr/bin/env python3
"""The report's kernel kinds and short names (share/pasta/kernel_kinds.py) on real
kernel names: each line of tests/data/kernel_kinds_h100.tsv is a name recorded on the
H100 with the kind and short name a person gives it. Copies, memsets and idle gaps are
kinds of their own; a name no rule knows is "other kernels".
"""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "share", "pasta"))
sys.path.insert(0, os.path.join(ROOT, "tests"))
import kernel_kinds  # noqa: E402
from checks import expect  # noqa: E402
import checks  # noqa: E402


def main():
    with open(os.path.join(ROOT, "tests", "data", "kernel_kinds_h100.tsv")) as f:
        rows = [line.rstrip("\n").split("\t") for line in f if not line.startswith("#")]
    expect("real kernel names in the table", len(rows), 25)
    for kind, short, name in rows:
        expect(f"kind of {short}", kernel_kinds.kind(name), kind)
        expect(f"short name of {name[:60]}...", kernel_kinds.short_name(name), short)
    # The kernel_freq `kernel` column drops the return type and parameters: same answers.
    expect("short name without the return type",
           kernel_kinds.short_name("at::native::vectorized_elementwise_kernel<4, "
                                   "at::native::FillFunctor<float>, std::array<char*, 1ul> >"),
           "vectorized_elementwise_kernel")
    expect("a short name classifies as its full name",
           [kernel_kinds.kind(short) for kind, short, _ in rows], [kind for kind, _, _ in rows])
    expect("an NCCL kernel", kernel_kinds.kind(
        "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"),
        kernel_kinds.COMMUNICATION)
    expect("flash attention", kernel_kinds.kind(
        "void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 64, 4, false, false, "
        "cutlass::half_t>, false, false, false, false, true, true, false>(flash::Flash_fwd_params)"),
        kernel_kinds.ATTENTION)
    expect("timeline records", [kernel_kinds.record_kind(c) for c in ("memcpy", "memset", "kernel")],
           [kernel_kinds.COPY, kernel_kinds.MEMSET, None])
    expect("the kinds, in the page's order", kernel_kinds.KINDS,
           ["GEMM and convolution", "attention", "reduction and normalisation", "elementwise",
            "communication", "other kernels", "copies", "memsets", "idle gaps"])
    print("kernel kinds: every check exact" if checks.failures == 0 else
          f"{checks.failures} checks failed")
    return 1 if checks.failures else 0


if __name__ == "__main__":
    sys.exit(main())
