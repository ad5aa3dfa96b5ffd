#!/usr/bin/env python3
"""A DistributedDataParallel job for torchrun, for the multi-process GPU test:
a transformers GPT-2 built from a config (random weights, nothing
downloaded) or torchvision's ResNet-18, trained a few steps with AdamW.

    torchrun --standalone --nproc_per_node=2 ddp_train.py [--model gpt2|resnet18]
             [--steps N] [--count-kernels] [--backend gloo|nccl] [--results DIR]
             [--trace DIR] [--slow-rank R --slow-ms MS]

With the gloo backend every rank shares GPU 0 (one GPU is enough); with nccl
each rank takes the GPU of its LOCAL_RANK. Each rank prints one JSON line:
its rank, a checksum of its parameters after training, the loss, and with
--count-kernels the kernels it launched as torch.profiler counts them (the
raw trace's "kernel" events, from right after CUDA is initialised to the
end; "kernel_names": how many of each name), the independent count the test
compares pasta's per-rank report with.
torch.profiler and pasta's CUPTI cannot share a process: count in a run of
its own. --trace DIR also writes each rank's torch.profiler trace (Chrome JSON) to
DIR/rank<R>.trace.json; --slow-rank R makes rank R spin its GPU about MS ms after each forward (every rank then waits
for its GPU), so that it arrives last at the backward's first all-reduce, MS ms late.
"""
import argparse
import contextlib
import json
import os

from torch_setup import deterministic, torch  # first: sets what cuBLAS reads
from torch_trace import kernel_names  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402


def gpt2(device, rank):
    import transformers
    config = transformers.GPT2Config(n_layer=2, n_head=4, n_embd=256, vocab_size=2048,
                                     n_positions=128)
    model = transformers.GPT2LMHeadModel(config).to(device)
    g = torch.Generator(device="cpu").manual_seed(100 + rank)
    tokens = torch.randint(0, 2048, (8, 64), generator=g).to(device)

    def loss(m):
        return m(input_ids=tokens, labels=tokens).loss
    return model, loss


def resnet18(device, rank):
    import torchvision
    model = torchvision.models.resnet18(num_classes=100).to(device)
    g = torch.Generator(device="cpu").manual_seed(100 + rank)
    x = torch.randn(16, 3, 64, 64, generator=g).to(device)
    y = torch.randint(0, 100, (16,), generator=g).to(device)
    loss_fn = torch.nn.CrossEntropyLoss()

    def loss(m):
        return loss_fn(m(x), y)
    return model, loss


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--model", choices=["gpt2", "resnet18"], default="gpt2")
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--backend", choices=["gloo", "nccl"], default="gloo")
    p.add_argument("--count-kernels", action="store_true")
    p.add_argument("--results", help="also write each rank's line to RESULTS/rank<R>.json "
                                     "(the ranks' stdout lines may interleave)")
    p.add_argument("--trace", help="write each rank's torch.profiler trace to DIR/rank<R>.trace.json")
    p.add_argument("--slow-rank", type=int, default=-1)
    p.add_argument("--slow-ms", type=float, default=0.0)
    args = p.parse_args()

    dist.init_process_group(args.backend)
    rank = dist.get_rank()
    local = int(os.environ.get("LOCAL_RANK", "0"))
    device = torch.device("cuda", local if args.backend == "nccl" else 0)
    torch.cuda.set_device(device)
    deterministic()
    prof = None
    if args.count_kernels or args.trace:
        from torch.profiler import ProfilerActivity, profile
        prof = profile(activities=[ProfilerActivity.CUDA])
    with prof or contextlib.nullcontext():
        model, loss_of = (gpt2 if args.model == "gpt2" else resnet18)(device, rank)
        ddp = DDP(model, device_ids=[device.index] if args.backend == "nccl" else None)
        opt = torch.optim.AdamW(ddp.parameters(), lr=1e-3)
        for _ in range(args.steps):
            opt.zero_grad(set_to_none=True)
            loss = loss_of(ddp)
            if rank == args.slow_rank:  # about 2e6 cycles a ms at an H200's clock
                torch.cuda._sleep(int(args.slow_ms * 2e6))
            if args.slow_rank >= 0:  # the spin delays the backward's launches too: how late the
                torch.cuda.synchronize()  # rank comes then does not hang on a profiler's cost
            loss.backward()
            opt.step()
        torch.cuda.synchronize()
        checksum = sum(q.double().sum().item() for q in model.parameters())
    out = {"rank": rank, "world_size": dist.get_world_size(), "pid": os.getpid(),
           "checksum": checksum, "loss": loss.item(), "model": args.model}
    if prof is not None:
        keep = None
        if args.trace:  # the whole export: its ts count from its baseTimeNanoseconds
            os.makedirs(args.trace, exist_ok=True)
            keep = os.path.join(args.trace, f"rank{rank}.trace.json")
        names = kernel_names(prof, keep)
        out["kernels"] = sum(names.values())
        out["kernel_names"] = dict(names)
    print(json.dumps(out), flush=True)
    if args.results:
        os.makedirs(args.results, exist_ok=True)
        with open(os.path.join(args.results, f"rank{rank}.json"), "w") as f:
            json.dump(out, f)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
