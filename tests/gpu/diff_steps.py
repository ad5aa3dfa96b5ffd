#!/usr/bin/env python3
"""Training steps of a transformers GPT-2 (built from a config, random weights), eager or
torch.compile'd (default mode), timed by the program itself: for the GPU test diff_compile,
which checks that `pasta diff` of the two runs adds up to the difference measured here.

After --warmup steps (compilation, autotuning), --rounds rounds of --steps steps each run
back to back, the GPU synchronised only around a round, so its queue stays full and a step's
time is its device work (the model is large enough to keep the GPU busy). Prints one JSON
line: the mode, each round's time per step (ms), their mean and standard deviation, the loss.
--kernel-ms: then one more round under torch.profiler (CUDA activity), whose kernels' device
time per step is "kernel_ms" (what `pasta diff` compares as device time).
"""
import argparse
import json
import statistics
import time

from torch_setup import deterministic, torch  # first: sets what cuBLAS reads
from torch_trace import kernel_events  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--compile", action="store_true")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--steps", type=int, default=4, help="steps per round")
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--seq", type=int, default=512)
    p.add_argument("--layers", type=int, default=6)
    p.add_argument("--kernel-ms", action="store_true")
    args = p.parse_args()

    deterministic()
    torch.backends.cuda.matmul.allow_tf32 = True
    from transformers import GPT2Config, GPT2LMHeadModel
    config = GPT2Config(n_layer=args.layers, n_embd=768, n_head=12, vocab_size=8192,
                        n_positions=args.seq, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    model = GPT2LMHeadModel(config).cuda()
    forward = torch.compile(model) if args.compile else model
    ids = torch.randint(0, config.vocab_size, (args.batch, args.seq), device="cuda")
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss = None

    def step():
        nonlocal loss
        opt.zero_grad(set_to_none=True)
        loss = forward(input_ids=ids, labels=ids).loss
        loss.backward()
        opt.step()

    for _ in range(args.warmup):
        step()
    rounds = []
    for _ in range(args.rounds):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(args.steps):
            step()
        torch.cuda.synchronize()
        rounds.append((time.perf_counter() - t0) * 1e3 / args.steps)
    kernel_ms = None
    if args.kernel_ms:
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(args.steps):
                step()
            torch.cuda.synchronize()
        kernel_ms = sum(e["dur"] for e in kernel_events(prof)) / 1e3 / args.steps
    print(json.dumps({"mode": "compiled" if args.compile else "eager", "round_ms": rounds,
                      "mean_ms": statistics.mean(rounds), "stdev_ms": statistics.stdev(rounds),
                      "steps": args.warmup + args.rounds * args.steps, "loss": loss.item(),
                      "kernel_ms": kernel_ms}),
          flush=True)


if __name__ == "__main__":
    main()
