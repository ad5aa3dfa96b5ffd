#!/usr/bin/env python3
"""Training steps of a torch.compile'd transformers GPT-2 (built from a small config, random
weights; default compile mode), for the GPU test torch_compile.

Run with TORCHINDUCTOR_CACHE_DIR set to an empty folder: Inductor then compiles every graph
and leaves each compiled graph's module (its wrapper code) there, which the test reads.
--nvtx: an NVTX range "step N" around each step, which its kernels end inside. --torch-profiler:
torch.profiler (CUDA activity) over the last step, long after the first compiled everything
and tuned what it tunes: "last_step_kernels", the kernels it ran by name.
Prints one JSON line: a checksum of the final parameters, the steps, the cache folder.
"""
import argparse
import json
import os

from torch_setup import deterministic, torch  # first: sets what cuBLAS reads
from torch_trace import kernel_names  # noqa: E402


def gpt2(layers, width, heads, vocab, positions):
    from transformers import GPT2Config, GPT2LMHeadModel
    config = GPT2Config(n_layer=layers, n_embd=width, n_head=heads, vocab_size=vocab,
                        n_positions=positions, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    return GPT2LMHeadModel(config).cuda()


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--seq", type=int, default=64)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--nvtx", action="store_true")
    p.add_argument("--torch-profiler", action="store_true")
    args = p.parse_args()

    deterministic()
    import torch._inductor.config as inductor_config
    # Reductions tuned by timing may pick another configuration under a profiler and round
    # differently; where this PyTorch can, keep the choice fixed.
    if hasattr(inductor_config, "deterministic"):
        inductor_config.deterministic = True
    model = gpt2(args.layers, 128, 4, 1000, 128)
    compiled = torch.compile(model)
    ids = torch.randint(0, 1000, (args.batch, args.seq), device="cuda")
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    prof, last = None, {}
    for step in range(args.steps):
        if args.torch_profiler and step == args.steps - 1:
            from torch.profiler import ProfilerActivity, profile
            prof = profile(activities=[ProfilerActivity.CUDA])
            prof.start()
        if args.nvtx:
            torch.cuda.nvtx.range_push(f"step {step}")
        opt.zero_grad(set_to_none=True)
        loss = compiled(input_ids=ids, labels=ids).loss
        loss.backward()
        opt.step()
        if args.nvtx or prof:
            torch.cuda.synchronize()  # the step's kernels end inside its range
        if args.nvtx:
            torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()
    if prof:
        prof.stop()
        last = {"last_step_kernels": dict(kernel_names(prof))}
    checksum = sum(p.double().sum().item() for p in model.parameters())
    print(json.dumps({"steps": args.steps, "checksum": checksum, "loss": loss.item(),
                      "cache": os.environ.get("TORCHINDUCTOR_CACHE_DIR", ""), **last}), flush=True)


if __name__ == "__main__":
    main()
