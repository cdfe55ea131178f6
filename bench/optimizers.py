"""Tracing cost of one optimizer step on the lazy device: fused vs foreach vs for-loop.

    python bench/optimizers.py [--steps 200] [--optimizers adam,adamw,sgd,adagrad]

A 6-layer MLP (64x64 linears, 12 parameters) on the lazy device, one optimizer per
implementation, their steps interleaved in one process (each step traced, then one
``mark_step(wait=True)`` runs all of them, so tracing is timed alone). Per optimizer class
the ``foreach`` step is the anchor; the table gives each implementation's fastest and
median step against it. The fastest step is the steadier figure on a shared machine.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

import lazygen.runtime as lr

CLASSES = {
    "adam": (torch.optim.Adam, dict(lr=1e-3)),
    "adamw": (torch.optim.AdamW, dict(lr=1e-3, weight_decay=0.01)),
    "sgd": (torch.optim.SGD, dict(lr=0.1, momentum=0.9)),
    "adagrad": (torch.optim.Adagrad, dict(lr=0.1)),
}
IMPLS = {"foreach": dict(foreach=True), "fused": dict(fused=True), "for-loop": dict(foreach=False)}
WARMUP = 20


def _optimizer(cls, kwargs):
    torch.manual_seed(0)
    layers = []
    for _ in range(6):
        layers += [torch.nn.Linear(64, 64), torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers).to("lazygen")
    model(torch.randn(32, 64).to("lazygen")).square().mean().backward()
    return cls(model.parameters(), **kwargs)


def measure(name: str, steps: int) -> list[tuple[str, str, str]]:
    cls, kwargs = CLASSES[name]
    optimizers = {impl: _optimizer(cls, {**kwargs, **extra}) for impl, extra in IMPLS.items()}
    lr.mark_step(wait=True)
    times: dict[str, list[float]] = {impl: [] for impl in IMPLS}
    for _ in range(WARMUP + steps):
        for impl, opt in optimizers.items():
            start = time.perf_counter()
            opt.step()
            times[impl].append(time.perf_counter() - start)
        lr.mark_step(wait=True)
    fastest = {impl: min(ts[WARMUP:]) for impl, ts in times.items()}
    median = {impl: statistics.median(ts[WARMUP:]) for impl, ts in times.items()}
    rows = []
    for impl in IMPLS:
        ratio = "anchor" if impl == "foreach" else (
            f"{fastest[impl] / fastest['foreach']:.2f}x foreach (median "
            f"{median[impl] / median['foreach']:.2f}x)"
        )  # fmt: skip
        rows.append(
            (f"{cls.__name__} {impl}", f"{fastest[impl] * 1e3:.2f} ms", ratio)
        )  # fmt: skip
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--optimizers", default=",".join(CLASSES))
    args = parser.parse_args()
    names = [n for n in args.optimizers.split(",") if n]
    unknown = sorted(set(names) - set(CLASSES))
    if unknown or args.steps < 1:
        parser.error(
            f"unknown optimizers {unknown}: choose from {','.join(CLASSES)}"
            if unknown
            else "--steps must be at least 1"
        )
    lr.init()
    rows = [row for name in names for row in measure(name, args.steps)]
    print(
        "\n### optimizers: tracing one step of a 12-parameter MLP on the lazy device\n\n"
        "| optimizer | fastest step | ratio |\n|---|---:|---|"
    )
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
