"""A training step in a flopwatt window: PyTorch's when it is installed, else a NumPy matmul.

python3 train_step.py [--power-log F] [--sysfs-root D] [--steps N]
"""
import argparse
import time

import flopwatt

ap = argparse.ArgumentParser()
ap.add_argument("--power-log", default="")
ap.add_argument("--sysfs-root", default="")
ap.add_argument("--steps", type=int, default=3)
ap.add_argument("--numpy", action="store_true", help="use NumPy even if PyTorch is installed")
args = ap.parse_args()

meter = flopwatt.Meter(power_log=args.power_log, sysfs_root=args.sysfs_root)

try:
    if args.numpy:
        raise ImportError
    import torch

    model = torch.nn.Sequential(torch.nn.Linear(512, 2048), torch.nn.GELU(), torch.nn.Linear(2048, 512))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x, y = torch.randn(256, 512), torch.randn(256, 512)
    # forward + backward of two linear layers: 3 x 2 x batch x (512 x 2048 x 2)
    flop = 3 * 2 * 256 * 512 * 2048 * 2

    def step():
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
except ImportError:
    import numpy as np

    a, b = np.random.rand(512, 512), np.random.rand(512, 512)
    flop = 2 * 512**3 * 20

    def step():
        for _ in range(20):
            a @ b
        time.sleep(0.1)

# Leaving a window only reads the clock; its figures are judged when first
# read, here after the loop, so the loop never waits for the sampler.
windows = []
for i in range(args.steps):
    with meter.window(f"step {i}", flop=flop) as w:
        step()
    windows.append(w)
for w in windows:
    if w.energy_j is not None:
        print(f"{w.name}: {w.duration_s:.3f} s {w.energy_j:.4f} J {w.avg_power_w:.3f} W "
              f"headline {w.headline} {w.flop_per_j / 1e9:.3f} GFLOP/J")
    else:
        print(f"{w.name}: {w.duration_s:.3f} s no headline: {w.headline_why}")
