"""Train a small MLP on the Tiny backend's lazy device and on the CPU; print both losses.

    python train.py [--steps N]

Exits non-zero when the losses differ (beyond float rounding) or a traced op never ran
lazily. Run it where the ``tiny-lazy-backend`` wheel is installed: lazygen finds the
backend through its ``lazygen.backends`` entry point.
"""

from __future__ import annotations

import argparse
import sys

import torch

import lazygen.runtime as lr


def model() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Linear(8, 16),
        torch.nn.SiLU(),
        torch.nn.Linear(16, 16),
        torch.nn.ReLU(),
        torch.nn.Linear(16, 1),
    )


def train(device: str, steps: int) -> list[float]:
    torch.manual_seed(1)
    data, target = torch.randn(32, 8), torch.randn(32, 1)
    net = model().to(device)
    optimizer = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    x, y = data.to(device), target.to(device)
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(net(x), y)
        loss.backward()
        optimizer.step()
        if device != "cpu":
            lr.mark_step()
        losses.append(loss.item())
    return losses


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=5)
    args = parser.parse_args()
    lr.init(backend="tiny")  # its device name, "tiny", comes from the backend
    eager = train("cpu", args.steps)
    lazy = train(lr.device_name(), args.steps)
    print(f"backend: {lr.backend().name}, device: {lr.device()}")
    for step, (e, z) in enumerate(zip(eager, lazy, strict=True)):
        print(f"step {step}: eager {e:.6f}  lazy {z:.6f}")
    traced = {n: lr.metrics.counter_value(n) for n in lr.metrics.counter_names()}
    print("lazy ops:", sorted(n for n in traced if n.startswith("lazy::")))
    same = all(abs(e - z) <= 1e-5 * max(1.0, abs(e)) for e, z in zip(eager, lazy, strict=True))
    silu_lazy = bool(traced.get("lazy::silu"))
    return 0 if same and silu_lazy else 1


if __name__ == "__main__":
    sys.exit(main())
