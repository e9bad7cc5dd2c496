#!/usr/bin/env python3
"""PyTorch baseline for `flopwatt run gpt2`: the same GPT-2 (llm.c's architecture,
padded vocabulary, tied lm head), the same AdamW step, random tokens, written the
way a PyTorch user would (nn.Linear, nn.LayerNorm, F.gelu(approximate="tanh"),
F.cross_entropy, torch.optim.AdamW). Prints one JSON object with the median step
time of every configuration it ran.

  /usr/bin/python3 scripts/bench_pytorch_gpt2.py --model d12 --batch 4 --seq 64 --threads 2

A step is forward + zero_grad + backward + optimizer.step(), timed with
time.perf_counter after --warmup untimed steps. "fp32" runs everything in
float32; "bf16" runs the forward pass under torch.autocast("cpu",
dtype=torch.bfloat16) (bf16 matmuls, fp32 master weights and optimizer), the
usual CPU mixed-precision recipe. AdamW runs with foreach=False and True; both
are reported and the faster one is the configuration's headline.

OpenBLAS (which Debian's PyTorch uses for fp32 matmuls) picks its kernels by CPU
model, and Debian 12's release falls back to its SSE3 "Prescott" kernels on CPUs
newer than itself; flopwatt's cpu:openblas backend corrects that, so by default
this script does too, by setting OPENBLAS_CORETYPE to the best kernel set the CPU
supports before PyTorch loads (--openblas-coretype none keeps PyTorch as it comes;
the JSON records which).

--flopwatt BIN also runs `BIN run gpt2` on the same model, batch, steps and
threads for each precision, alternating with PyTorch over --rounds rounds, and
reports flopwatt's speedup over PyTorch per round: ratios of runs made minutes
apart on a shared machine move by tens of percent, ratios of one round less.

  /usr/bin/python3 scripts/bench_pytorch_gpt2.py --flopwatt build/flopwatt --rounds 3

Needs PyTorch (Debian: apt-get install python3-torch; run with the system python3).
"""
import argparse
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time


def best_openblas_coretype():
    """The kernel set flopwatt's cpu:openblas backend would pick for this CPU."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((l.split(":", 1)[1].split() for l in f if l.startswith("flags")), [])
    except OSError:
        return None
    if "avx512f" in flags and "avx512_bf16" in flags:
        return "Cooperlake"
    if all(x in flags for x in ("avx512f", "avx512bw", "avx512dq", "avx512vl")):
        return "SkylakeX"
    if "avx2" in flags and "fma" in flags:
        return "Haswell"
    return None


def _early_args():
    """--openblas-coretype must act before `import torch` loads OpenBLAS."""
    v = "auto"
    for i, a in enumerate(sys.argv):
        if a == "--openblas-coretype" and i + 1 < len(sys.argv):
            v = sys.argv[i + 1]
        elif a.startswith("--openblas-coretype="):
            v = a.split("=", 1)[1]
    if v == "auto" and "OPENBLAS_CORETYPE" not in os.environ:
        v = best_openblas_coretype() or "none"
    if v not in ("auto", "none"):
        os.environ["OPENBLAS_CORETYPE"] = v


_early_args()

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError as e:  # pragma: no cover
    sys.exit(f"bench_pytorch_gpt2.py needs PyTorch ({e}); install python3-torch and run it with the system python3")

PRESETS = {  # L, NH, C as in workloads/gpt2/config.cpp
    "tiny": (2, 2, 32, 61, 64),
    "d12": (12, 12, 768, 50257, 1024),
    "d24": (24, 16, 1024, 50257, 1024),
    "d36": (36, 20, 1280, 50257, 1024),
    "d48": (48, 25, 1600, 50257, 1024),
}


class Block(nn.Module):
    def __init__(self, C, NH):
        super().__init__()
        self.NH = NH
        self.ln1 = nn.LayerNorm(C, eps=1e-5)
        self.qkv = nn.Linear(C, 3 * C)
        self.attproj = nn.Linear(C, C)
        self.ln2 = nn.LayerNorm(C, eps=1e-5)
        self.fc = nn.Linear(C, 4 * C)
        self.fcproj = nn.Linear(4 * C, C)

    def forward(self, x, mask):
        B, T, C = x.shape
        hs = C // self.NH
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=-1)
        q, k, v = (z.view(B, T, self.NH, hs).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))
        att = att.masked_fill(mask[:T, :T], float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, C)
        x = x + self.attproj(y)
        return x + self.fcproj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GPT2(nn.Module):
    def __init__(self, L, NH, C, V, maxT):
        super().__init__()
        self.V = V
        Vp = (V + 127) // 128 * 128  # llm.c's padded vocabulary: the lm head GEMM has Vp columns
        self.wte = nn.Embedding(Vp, C)
        self.wpe = nn.Embedding(maxT, C)
        self.blocks = nn.ModuleList(Block(C, NH) for _ in range(L))
        self.lnf = nn.LayerNorm(C, eps=1e-5)
        self.register_buffer("mask", torch.ones(maxT, maxT, dtype=torch.bool).triu(1), persistent=False)
        for name, p in self.named_parameters():  # GPT-2 init as llm.c's trainer
            if name.endswith("bias"):
                nn.init.zeros_(p)
            elif p.dim() == 2:
                std = 0.02 / math.sqrt(2 * L) if ("attproj" in name or "fcproj" in name) else 0.02
                nn.init.normal_(p, 0.0, std)
        with torch.no_grad():
            self.wte.weight[V:] = 0

    def forward(self, idx, targets):
        T = idx.shape[1]
        x = self.wte(idx) + self.wpe.weight[:T]
        for b in self.blocks:
            x = b(x, self.mask)
        logits = self.lnf(x) @ self.wte.weight.T  # tied lm head over Vp
        return F.cross_entropy(logits[..., : self.V].float().reshape(-1, self.V), targets.reshape(-1))


def run(cfg, args, dtype, foreach):
    torch.manual_seed(args.seed)
    model = GPT2(*cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
                            foreach=foreach)
    g = torch.Generator().manual_seed(args.seed)
    times, losses = [], []
    for step in range(args.warmup + args.steps):
        w = torch.randint(0, cfg[3], (args.batch * args.seq + 1,), generator=g)
        x, y = w[:-1].view(args.batch, args.seq), w[1:].view(args.batch, args.seq)
        t0 = time.perf_counter()
        if dtype == "bf16":
            with torch.autocast("cpu", dtype=torch.bfloat16):
                loss = model(x, y)
        else:
            loss = model(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        t1 = time.perf_counter()
        if step >= args.warmup:
            times.append(t1 - t0)
            losses.append(loss.item())
    return {"median_s": statistics.median(times), "min_s": min(times), "steps_s": times,
            "last_loss": losses[-1], "adamw_foreach": foreach}


def run_flopwatt(binary, args, dtype):
    """Median step of `flopwatt run gpt2` over the same timed steps, from its run.json."""
    with tempfile.TemporaryDirectory(prefix="bench_pytorch_gpt2.") as out:
        cmd = [binary, "run", "gpt2", "--model", args.model, "--batch", str(args.batch), "--seq", str(args.seq),
               "--steps", str(args.warmup + args.steps), "--warmup", str(args.warmup),
               "--threads", str(args.threads), "--dtype", dtype, "--counters", "none", "--power", "none",
               "--idle", "0", "--no-store", "--out", out, "--overwrite"]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(f"{' '.join(cmd)} exited {done.returncode}:\n{done.stderr}")
        with open(os.path.join(out, "run.json")) as f:
            run = json.load(f)
    # The step row over the measured steps is the one with the most repetitions.
    step = max((m for m in run["measurements"] if m["op"] == "step"), key=lambda m: m["reps"])
    return {"median_s": step["time"]["median_s"], "min_s": step["time"]["min_s"], "last_loss": step.get("loss"),
            "backend": step["backend"], "command": " ".join(cmd[:-3])}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="d12", choices=sorted(PRESETS))
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--steps", type=int, default=10, help="timed steps")
    ap.add_argument("--warmup", type=int, default=2, help="untimed steps first")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--lr", type=float, default=1e-4)
    ap.add_argument("--seed", type=int, default=1337)
    ap.add_argument("--dtype", default="both", choices=["fp32", "bf16", "both"])
    ap.add_argument("--foreach", default="both", choices=["on", "off", "both"],
                    help="AdamW implementation(s) to time")
    ap.add_argument("--flopwatt", metavar="BIN", help="also time `BIN run gpt2` and report its speedup over PyTorch")
    ap.add_argument("--rounds", type=int, default=1, help="with --flopwatt: alternating rounds of both")
    ap.add_argument("--openblas-coretype", default="auto",
                    help="auto (the CPU's best kernel set unless OPENBLAS_CORETYPE is set), none, or a name")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    cfg = PRESETS[args.model]
    out = {"tool": "scripts/bench_pytorch_gpt2.py", "torch_version": torch.__version__,
           "mkldnn": torch.backends.mkldnn.is_available(), "threads": torch.get_num_threads(),
           "openblas_coretype": os.environ.get("OPENBLAS_CORETYPE"),
           "model": args.model, "batch": args.batch, "seq": args.seq, "steps": args.steps, "warmup": args.warmup}
    dtypes = ["fp32", "bf16"] if args.dtype == "both" else [args.dtype]
    foreach = {"on": [True], "off": [False], "both": [False, True]}[args.foreach]
    rounds = max(1, args.rounds) if args.flopwatt else 1
    for dt in dtypes:
        key = "fp32" if dt == "fp32" else "bf16_autocast"
        per_round = []
        for _ in range(rounds):
            runs = [run(cfg, args, dt, fe) for fe in foreach]
            best = min(runs, key=lambda r: r["median_s"])
            entry = {"median_s": best["median_s"], "adamw_foreach": best["adamw_foreach"], "runs": runs}
            if args.flopwatt:
                fw = run_flopwatt(args.flopwatt, args, dt)
                entry["flopwatt"] = fw
                entry["speedup"] = best["median_s"] / fw["median_s"]
            per_round.append(entry)
        out[key] = per_round[0] if rounds == 1 else {
            "median_s": statistics.median(r["median_s"] for r in per_round), "rounds": per_round}
        if args.flopwatt:
            ratios = [r["speedup"] for r in per_round]
            out[key]["flopwatt_median_s"] = statistics.median(r["flopwatt"]["median_s"] for r in per_round)
            out[key]["speedup_median"] = statistics.median(ratios)
            out[key]["speedup_range"] = [min(ratios), max(ratios)]
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
