#!/usr/bin/env python3
"""A small GPT-style transformer (pre-norm blocks: causal self-attention and
an MLP, built from torch.nn, random weights) trained for a few steps on
random tokens. Profile it unmodified:

    pasta run --torch -- python gpt_block.py

Prints one JSON line: steps, loss, a checksum of the parameters, and
torch.cuda.max_memory_allocated().
"""
import argparse
import json

import torch
import torch.nn as nn


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.ln1 = nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.ln2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x, mask):
        h = self.ln1(x)
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, vocab, d, heads, layers, context):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(context, d)
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, idx):
        t = idx.shape[1]
        mask = torch.triu(torch.ones(t, t, dtype=torch.bool, device=idx.device), 1)
        x = self.tok(idx) + self.pos(torch.arange(t, device=idx.device))
        for b in self.blocks:
            x = b(x, mask)
        return self.head(self.ln(x))


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--d", type=int, default=256)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--context", type=int, default=128)
    p.add_argument("--vocab", type=int, default=4096)
    args = p.parse_args()

    torch.manual_seed(0)
    model = GPT(args.vocab, args.d, args.heads, args.layers, args.context).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    idx = torch.randint(0, args.vocab, (args.batch, args.context), device="cuda")
    target = torch.randint(0, args.vocab, (args.batch, args.context), device="cuda")
    loss = None
    for _ in range(args.steps):
        opt.zero_grad(set_to_none=True)
        logits = model(idx)
        loss = nn.functional.cross_entropy(logits.view(-1, args.vocab), target.view(-1))
        loss.backward()
        opt.step()
    torch.cuda.synchronize()
    checksum = sum(p.double().sum().item() for p in model.parameters())
    print(json.dumps({"steps": args.steps, "loss": loss.item(), "checksum": checksum,
                      "max_memory_allocated": torch.cuda.max_memory_allocated()}), flush=True)


if __name__ == "__main__":
    main()
