#!/usr/bin/env python3
"""One training step of a model nobody in the project wrote, for bench/gpu/op_counters.py
--model: transformers' GPT2LMHeadModel built from a GPT2Config (--layers blocks, the library's
default sizes otherwise, random weights; forward with labels, loss.backward(), an AdamW step),
or torchvision's ResNet-18 (weights=None; cross-entropy on a fixed random batch, an SGD step).

Eager only: no CUDA graph, no torch.compile, so that ncu can replay every kernel. The model and
its inputs are made on the CPU from one seed, then moved to --device. Deterministic algorithms,
so that two runs (the script alone and under pasta) can be seen to agree.

    counters_models.py --model gpt2 [--layers 12] [--batch 4] [--seq 128] [--device cuda]
    counters_models.py --model resnet18 [--batch 16] [--device cuda]

Prints one JSON line last: model, steps, loss, a checksum of the parameters (summed on the
CPU), and on CUDA torch.cuda.max_memory_allocated().
"""
import argparse
import json
import os

# Read by cuBLAS at its start: reproducible GEMMs under deterministic algorithms. torch is
# imported where it is used, so that the arguments can be checked where there is no torch
# (tests/cli/op_counters_compare_test.py).
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

MODELS = ("gpt2", "resnet18")


def gpt2(args):
    """(model, inputs, loss of the model's output): GPT2LMHeadModel at the library's default
    sizes but for n_layer, on random tokens; its loss is the language-model loss of labels."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel
    config = GPT2Config(n_layer=args.layers)
    model = GPT2LMHeadModel(config)
    tokens = torch.randint(0, config.vocab_size, (args.batch, args.seq))
    return model, {"input_ids": tokens, "labels": tokens}, lambda out: out.loss


def resnet18(args):
    """(model, inputs, loss of the model's output): torchvision's ResNet-18, untrained, on a
    random batch of 224x224 images and random labels of its 1000 classes."""
    import torch
    import torchvision
    model = torchvision.models.resnet18(weights=None)
    images = torch.randn(args.batch, 3, 224, 224)
    labels = torch.randint(0, 1000, (args.batch,))
    return (model, {"x": images},
            lambda out: torch.nn.functional.cross_entropy(out, labels.to(out.device)))


def arguments(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", choices=MODELS, required=True)
    p.add_argument("--layers", type=int, help="gpt2: transformer blocks, n_layer (12)")
    p.add_argument("--batch", type=int, help="sequences (gpt2: 4) or images (resnet18: 16)")
    p.add_argument("--seq", type=int, default=128, help="gpt2: tokens a sequence (128)")
    p.add_argument("--steps", type=int, default=1)
    p.add_argument("--device", default="cuda", help="cuda, or cpu for a smoke test")
    args = p.parse_args(argv)
    if args.model == "resnet18" and args.layers is not None:
        p.error("--layers does not apply to resnet18")
    if args.model == "gpt2" and args.layers is None:
        args.layers = 12
    if args.batch is None:
        args.batch = 4 if args.model == "gpt2" else 16
    return args


def main():
    args = arguments()
    import torch
    torch.manual_seed(0)
    torch.backends.cudnn.benchmark = False  # cuDNN's heuristics, not timings: one choice per run
    torch.backends.cudnn.deterministic = True
    torch.use_deterministic_algorithms(True, warn_only=True)
    model, inputs, loss_of = {"gpt2": gpt2, "resnet18": resnet18}[args.model](args)
    model = model.to(args.device).train()
    inputs = {k: v.to(args.device) for k, v in inputs.items()}
    if args.model == "gpt2":
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    else:
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss = None
    for _ in range(args.steps):
        opt.zero_grad(set_to_none=True)
        loss = loss_of(model(**inputs))
        loss.backward()
        opt.step()
    # Summed on the CPU: on the device, two kernels a parameter (62 in ResNet-18) would be
    # measured and compared with the step's own.
    result = {"model": args.model, "steps": args.steps, "loss": loss.item(),
              "checksum": sum(p.detach().cpu().double().sum().item() for p in model.parameters())}
    if args.device.startswith("cuda"):
        torch.cuda.synchronize()
        result["max_memory_allocated"] = torch.cuda.max_memory_allocated()
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
