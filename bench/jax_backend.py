"""Eager vs the torchscript backend vs the jax backend: first step and steady step.

    python bench/jax_backend.py [--workloads mlp encoder gpt2] [--backends eager torchscript jax]
                                [--steps 30] [--repeats 1]

Each (backend, workload) pair runs in a fresh process (the first step pays every compile:
TorchScript's, or XLA's through ``jax.jit``), pairs interleaved across repeats, medians
printed as one Markdown table. A step is forward, cross-entropy, backward and the
optimizer's step, then ``mark_step()`` on the lazy device, and the loss read on the host
(as training loops print it). Workloads: ``mlp`` (784-256-10, batch 64, SGD with
momentum), ``encoder`` (a 2-layer ``nn.TransformerEncoder``, d_model 64, 4 heads,
batch 8 x 16, AdamW), ``gpt2`` (transformers' GPT-2 from a small config: 2 layers,
n_embd 64, vocab 128, batch 4 x 16, AdamW, dropout off).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

from _step_workloads import WORKLOADS, make_workload

BACKENDS = ("eager", "torchscript", "jax")


def run_one(backend: str, workload: str, steps: int) -> dict:
    """Train ``steps`` steps in this process; first step and median of the steady ones."""
    import lazygen.runtime as lr

    device = "cpu"
    if backend != "eager":
        lr.init(backend=backend)
        device = "lazygen"
    model, (x, y), make_optimizer, _, loss_of = make_workload(workload)
    model = model.to(device)
    model.train()
    optimizer = make_optimizer(model.parameters())
    x, y = x.to(device), y.to(device)
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        optimizer.zero_grad()
        loss = loss_of(model, x, y)
        loss.backward()
        optimizer.step()
        if device != "cpu":
            lr.mark_step()
        loss.item()
        times.append(time.perf_counter() - start)
    steady = times[min(10, steps - 1) :] if steps > 1 else times
    result = {"first": times[0], "steady": statistics.median(steady)}
    if device != "cpu":
        report = lr.metrics.fallback_report()
        result["fallbacks"] = len(report.fallbacks) + len(report.refused)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", nargs="+", choices=WORKLOADS, default=list(WORKLOADS))
    parser.add_argument("--backends", nargs="+", choices=BACKENDS, default=list(BACKENDS))
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--one", nargs=2, metavar=("BACKEND", "WORKLOAD"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(run_one(*args.one, args.steps)))
        return 0
    runs: dict = {}
    for _ in range(args.repeats):
        for workload in args.workloads:
            for backend in args.backends:
                done = subprocess.run(
                    [sys.executable, __file__, "--one", backend, workload, "--steps", str(args.steps)],
                    capture_output=True, text=True,
                )  # fmt: skip
                if done.returncode != 0:
                    raise SystemExit(f"{backend} {workload} failed:\n{done.stderr[-3000:]}")
                runs.setdefault((workload, backend), []).append(
                    json.loads(done.stdout.splitlines()[-1])
                )
    print("| workload | backend | first step | steady step | ops run eagerly |")
    print("|---|---|---:|---:|---:|")
    for (workload, backend), results in runs.items():
        first = statistics.median(r["first"] for r in results)
        steady = statistics.median(r["steady"] for r in results)
        eager_ops = results[0].get("fallbacks", "-")
        print(
            f"| {workload} | {backend} | {first * 1e3:.0f} ms | {steady * 1e3:.2f} ms | {eager_ops} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
