"""Overlap on the jax backend: the host records step N+1 while XLA runs step N.

    python bench/jax_overlap.py [--batches 8 64 256] [--steps 20] [--repeats 3]

An encoder + AdamW (``bench/jax_backend.py``'s, batch ``B`` x 16 tokens) on the lazy
device, in a fresh process per batch size. The host's work per step does not grow with
the batch (the same graph is recorded); the device's does. Measured in one process,
medians of ``--steps`` steps:

* ``host``: recording a step (forward, backward, AdamW) plus ``mark_step()``, which
  dispatches XLA's program and returns (JAX's async dispatch);
* ``device``: the step's program alone: ``mark_step()`` then waiting for the parameters,
  with the step recorded beforehand (its host part is then only ``mark_step``'s);
* ``steady``: a loop of steps with no host read (the loss read once at the end), per
  step. Without overlap it would be ``host + device``; with it, ``max(host, device)``.

The goal (issue #51, item 4): ``steady / max(host, device)`` close to 1 at every batch.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time


def worker(batch: int, steps: int) -> dict:
    import torch
    from _step_workloads import make_workload

    import lazygen.runtime as lr

    lr.init(backend="jax")
    model, _, make_optimizer, _, _ = make_workload("encoder")
    torch.manual_seed(0)
    x, y = torch.randn(batch, 16, 64), torch.randint(0, 10, (batch,))
    model = model.to("lazygen")
    optimizer = make_optimizer(model.parameters())
    x, y = x.to("lazygen"), y.to("lazygen")
    parameters = list(model.parameters())

    def record():
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        return loss

    def wait():
        lr.to_cpu(parameters[:1])
        lr.wait_device_ops()

    loss = None
    for _ in range(4):  # compiles: every step below has this step's structure
        loss = record()
        lr.mark_step()
    wait()
    host, device = [], []
    for _ in range(steps):
        start = time.perf_counter()
        loss = record()
        recorded = time.perf_counter()
        lr.mark_step()
        dispatched = time.perf_counter()
        wait()
        done = time.perf_counter()
        host.append(dispatched - start)
        device.append(done - recorded)  # mark_step's host part included: a small bias up
    compiles = lr.metrics.counter_value("UncachedCompile")
    start = time.perf_counter()
    for _ in range(steps):
        loss = record()
        lr.mark_step()
    loss.item()
    wait()
    steady = (time.perf_counter() - start) / steps
    if lr.metrics.counter_value("UncachedCompile") != compiles:
        raise SystemExit("a step compiled a new graph: the loops differ in structure")
    return {
        "host": statistics.median(host),
        "device": statistics.median(device),
        "steady": steady,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", nargs="+", type=int, default=[8, 64, 256])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(args.worker, args.steps)))
        return 0
    runs: dict[int, list[dict]] = {}
    for _ in range(args.repeats):
        for batch in args.batches:
            done = subprocess.run(
                [sys.executable, __file__, "--worker", str(batch), "--steps", str(args.steps)],
                capture_output=True,
                text=True,
                timeout=900,
            )
            if done.returncode != 0:
                raise SystemExit(f"batch {batch} failed:\n{done.stderr[-3000:]}")
            runs.setdefault(batch, []).append(json.loads(done.stdout.strip().splitlines()[-1]))
    print("\n### overlap on jax: encoder + AdamW, no host read per step (medians)\n")
    print("| batch | host (record + mark_step) | device (program) | host + device | steady step "
          "| steady / max(host, device) |")  # fmt: skip
    print("|---:|---:|---:|---:|---:|---|")
    for batch, results in runs.items():
        host, device, steady = (
            statistics.median(r[k] for r in results) for k in ("host", "device", "steady")
        )
        print(
            f"| {batch} | {host * 1e3:.2f} ms | {device * 1e3:.2f} ms | "
            f"{(host + device) * 1e3:.2f} ms | {steady * 1e3:.2f} ms | "
            f"{steady / max(host, device):.2f} (goal ~1; no overlap: "
            f"{(host + device) / max(host, device):.2f}) |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
