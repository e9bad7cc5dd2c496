#!/usr/bin/env python3
"""Writes the GPT-2 correctness fixture that tests/workloads/gpt2/model_test.cpp checks against.

The model is llm.c's GPT-2 written directly in PyTorch over the 16 parameter
tensors in llm.c's order (no nn.Module, so parameter order and the tied lm head
are explicit). It runs in float64 on fp32-representable parameters, so the
reference carries no rounding of its own worth speaking of.

Outputs (in --out, default tests/fixtures/gpt2/):
  tiny_model.bin      llm.c checkpoint (magic 20240326, version 3, fp32)
  tiny_tokens.bin     llm.c token file (magic 20240520, version 1, uint16)
  tiny_reference.bin  float32: logits of batch 0 (B,T,V), then the gradient of
                      every parameter (llm.c order, padded rows included)
  tiny_reference.json config, batch, AdamW settings, loss, 10-step losses,
                      byte offsets into tiny_reference.bin

Needs PyTorch (Debian: apt-get install python3-torch; run it with the system
python3). It never runs in CI; its output is committed.
"""
import argparse
import json
import math
import os
import struct
import sys

try:
    import numpy as np
    import torch
    import torch.nn.functional as F
except ImportError as e:  # pragma: no cover
    sys.exit(f"make_gpt2_reference.py needs PyTorch and NumPy ({e}); "
             "install python3-torch and run it with the system python3")

PARAM_NAMES = ["wte", "wpe", "ln1w", "ln1b", "qkvw", "qkvb", "attprojw", "attprojb",
               "ln2w", "ln2b", "fcw", "fcb", "fcprojw", "fcprojb", "lnfw", "lnfb"]


def param_shapes(maxT, Vp, L, C):
    return [(Vp, C), (maxT, C), (L, C), (L, C), (L, 3 * C, C), (L, 3 * C), (L, C, C), (L, C),
            (L, C), (L, C), (L, 4 * C, C), (L, 4 * C), (L, C, 4 * C), (L, C), (C,), (C,)]


def make_params(cfg, gen):
    """Random parameters, rounded to fp32. Deliberately larger than GPT-2's init
    (std 0.02) so attention is far from uniform and every term of every gradient
    is exercised; LayerNorm weights and all biases are random too."""
    maxT, V, Vp, L, C = cfg["maxT"], cfg["V"], cfg["Vp"], cfg["L"], cfg["C"]
    out = []
    for name, shape in zip(PARAM_NAMES, param_shapes(maxT, Vp, L, C)):
        if name in ("ln1w", "ln2w", "lnfw"):
            t = 1.0 + 0.2 * torch.randn(shape, generator=gen, dtype=torch.float64)
        elif name.endswith("b"):
            t = 0.1 * torch.randn(shape, generator=gen, dtype=torch.float64)
        elif name in ("attprojw", "fcprojw"):
            t = (0.3 / math.sqrt(2 * L)) * torch.randn(shape, generator=gen, dtype=torch.float64)
        else:
            t = 0.3 * torch.randn(shape, generator=gen, dtype=torch.float64)
        if name == "wte":
            t[V:] = 0.0  # llm.c exports zero padding rows
        out.append(t.float().double())  # exactly representable in the fp32 checkpoint
    return out


def forward(params, idx, targets, cfg):
    wte, wpe, ln1w, ln1b, qkvw, qkvb, attprojw, attprojb, ln2w, ln2b, fcw, fcb, fcprojw, fcprojb, lnfw, lnfb = params
    L, NH, C, V = cfg["L"], cfg["NH"], cfg["C"], cfg["V"]
    B, T = idx.shape
    hs = C // NH
    x = wte[idx] + wpe[:T]
    mask = torch.ones(T, T, dtype=torch.bool).tril()
    for l in range(L):
        h = F.layer_norm(x, (C,), ln1w[l], ln1b[l], eps=1e-5)
        qkv = h @ qkvw[l].T + qkvb[l]
        q, k, v = qkv.split(C, dim=-1)
        q, k, v = (z.view(B, T, NH, hs).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(hs)
        att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, C)
        x = x + y @ attprojw[l].T + attprojb[l]
        h = F.layer_norm(x, (C,), ln2w[l], ln2b[l], eps=1e-5)
        h = F.gelu(h @ fcw[l].T + fcb[l], approximate="tanh")
        x = x + h @ fcprojw[l].T + fcprojb[l]
    x = F.layer_norm(x, (C,), lnfw, lnfb, eps=1e-5)
    logits = x @ wte.T  # (B, T, Vp): the lm head is tied to wte
    loss = F.cross_entropy(logits[..., :V].reshape(-1, V), targets.reshape(-1))
    return logits, loss


def batch(tokens, k, B, T):
    """llm.c's sequential loader: batch k starts at k*B*T and wraps when the window runs out."""
    per_epoch = (len(tokens) - 1) // (B * T)
    s = (k % per_epoch) * B * T
    w = tokens[s:s + B * T + 1]
    return w[:-1].view(B, T), w[1:].view(B, T)


def write_checkpoint(path, cfg, params):
    header = np.zeros(256, dtype=np.int32)
    header[:8] = [20240326, 3, cfg["maxT"], cfg["V"], cfg["L"], cfg["NH"], cfg["C"], cfg["Vp"]]
    with open(path, "wb") as f:
        f.write(header.tobytes())
        for p in params:
            f.write(p.float().numpy().astype("<f4").tobytes())


def write_tokens(path, tokens):
    header = np.zeros(256, dtype=np.int32)
    header[:3] = [20240520, 1, len(tokens)]
    with open(path, "wb") as f:
        f.write(header.tobytes())
        f.write(tokens.numpy().astype("<u2").tobytes())


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(here, "..", "tests", "fixtures", "gpt2"))
    ap.add_argument("--seed", type=int, default=20240326)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)

    # The "tiny" preset of workloads/gpt2/config.cpp.
    cfg = {"maxT": 64, "V": 61, "Vp": 128, "L": 2, "NH": 2, "C": 32}
    B, T, ntok, steps = 2, 16, 100, 10
    adamw = {"lr": 1e-2, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8, "weight_decay": 0.1}

    gen = torch.Generator().manual_seed(args.seed)
    params = make_params(cfg, gen)
    tokens = torch.randint(0, cfg["V"], (ntok,), generator=gen)
    write_checkpoint(os.path.join(args.out, "tiny_model.bin"), cfg, params)
    write_tokens(os.path.join(args.out, "tiny_tokens.bin"), tokens)

    torch.set_default_dtype(torch.float64)
    ps = [p.clone().requires_grad_(True) for p in params]
    inp, tgt = batch(tokens, 0, B, T)
    logits, loss = forward(ps, inp, tgt, cfg)
    loss.backward()
    ref_logits = logits[..., :cfg["V"]].detach().float().numpy().astype("<f4")
    grads = np.concatenate([p.grad.detach().float().numpy().astype("<f4").ravel() for p in ps])

    # The 10-step trajectory: llm.c's order (forward, zero_grad, backward, update).
    ps = [p.clone().requires_grad_(True) for p in params]
    opt = torch.optim.AdamW(ps, lr=adamw["lr"], betas=(adamw["beta1"], adamw["beta2"]), eps=adamw["eps"],
                            weight_decay=adamw["weight_decay"], foreach=False)
    losses = []
    for k in range(steps):
        inp, tgt = batch(tokens, k, B, T)
        _, l = forward(ps, inp, tgt, cfg)
        losses.append(l.item())
        opt.zero_grad()
        l.backward()
        opt.step()

    with open(os.path.join(args.out, "tiny_reference.bin"), "wb") as f:
        f.write(ref_logits.tobytes())
        f.write(grads.tobytes())
    meta = {
        "generator": "scripts/make_gpt2_reference.py",
        "torch_version": torch.__version__,
        "seed": args.seed,
        "precision": "float64 computation on fp32 parameters; stored as float32",
        "config": cfg,
        "batch": {"B": B, "T": T},
        "adamw": adamw,
        "loss": loss.item(),
        "step_losses": losses,
        "num_parameters": int(grads.size),
        "param_names": PARAM_NAMES,
        "reference_bin": {"logits": {"offset": 0, "shape": [B, T, cfg["V"]]},
                          "grads": {"offset": int(ref_logits.nbytes), "count": int(grads.size)}},
    }
    with open(os.path.join(args.out, "tiny_reference.json"), "w") as f:
        json.dump(meta, f, indent=1)
        f.write("\n")
    print(json.dumps({"loss": meta["loss"], "step_losses": losses}))


if __name__ == "__main__":
    main()
