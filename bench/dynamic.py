"""Compiles and step time of a small transformer trained over N distinct sequence lengths:
lazygen with static sizes, with its recompile budget, with dynamic dimensions, next to
eager and ``torch.compile(dynamic=True)``.

    python bench/dynamic.py [--lengths 24] [--passes 2] [--impls eager,lazy-static,...]

Workload: one ``nn.TransformerEncoderLayer`` (d=16, 2 heads, ff 32, batch 4), mean-pooled
and classified, Adam; lengths 3..3+N-1 in a shuffled order, the loss read every step. Each
pass visits every length once. Reported per implementation (each in a fresh process, one
thread): graphs compiled, the first pass's wall time (compiles included), the median step
of the later passes, and that median against eager's, measured in the same run.

Implementations:
* ``eager``: the CPU;
* ``lazy-static``: lazygen (TorchScript), sizes compiled in, no recompile limit (the
  behaviour before dynamic dimensions: one compile per length and graph);
* ``lazy-budget``: the same with the default recompile budget (8 per step structure);
* ``lazy-dynamic``: ``LAZYGEN_DYNAMIC_SHAPES=1``;
* ``lazy-dynamic-fx``: the same on the ``fx`` backend;
* ``lazy-dynamic-inductor``: the same on the ``inductor`` backend (its graphs' variants,
  compiled when their size guards fail, counted as graphs);
* ``lazy-static-jax``, ``lazy-budget-jax``, ``lazy-dynamic-jax``: the same three on the
  ``jax`` backend (a graph for all sizes is one lazygen graph, but XLA compiles each new
  length: printed as "+N XLA per size"; not run unless named in ``--impls``);
* ``compile-dynamic``: ``torch.compile(step, dynamic=True)`` (Inductor).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import torch

IMPLS = {
    "eager": {},
    "lazy-static": {"LAZYGEN_DYNAMIC_SHAPES": "0", "LAZYGEN_RECOMPILE_LIMIT": "0"},
    "lazy-budget": {"LAZYGEN_DYNAMIC_SHAPES": "0"},
    "lazy-dynamic": {"LAZYGEN_DYNAMIC_SHAPES": "1"},
    "lazy-dynamic-fx": {"LAZYGEN_DYNAMIC_SHAPES": "1", "LAZYGEN_BACKEND": "fx"},
    "lazy-dynamic-inductor": {"LAZYGEN_DYNAMIC_SHAPES": "1", "LAZYGEN_BACKEND": "inductor"},
    "lazy-static-jax": {
        "LAZYGEN_DYNAMIC_SHAPES": "0",
        "LAZYGEN_RECOMPILE_LIMIT": "0",
        "LAZYGEN_BACKEND": "jax",
    },
    "lazy-budget-jax": {"LAZYGEN_DYNAMIC_SHAPES": "0", "LAZYGEN_BACKEND": "jax"},
    "lazy-dynamic-jax": {"LAZYGEN_DYNAMIC_SHAPES": "1", "LAZYGEN_BACKEND": "jax"},
    "compile-dynamic": {},
}


class Encoder(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layer = torch.nn.TransformerEncoderLayer(
            16, nhead=2, dim_feedforward=32, dropout=0.0, batch_first=True
        )
        self.head = torch.nn.Linear(16, 4)

    def forward(self, x):
        return self.head(self.layer(x).mean(dim=1))


def lengths(n: int) -> list[int]:
    """``n`` distinct lengths from 3, in a fixed shuffled order."""
    stride = next(s for s in range(7, 7 + n) if _coprime(s, n))
    return [3 + (i * stride) % n for i in range(n)]


def _coprime(a: int, b: int) -> bool:
    while b:
        a, b = b, a % b
    return a == 1


def run_one(impl: str, n: int, passes: int) -> dict:
    torch.set_num_threads(1)
    torch.manual_seed(0)
    device = "cpu"
    lr = None
    if impl.startswith("lazy"):
        import lazygen.runtime as lr

        lr.init()
        device = "lazygen"
    model = Encoder().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    generator = torch.Generator().manual_seed(1)
    data = [
        (torch.randn(4, length, 16, generator=generator), torch.randint(0, 4, (4,)))
        for length in lengths(n)
    ]

    def step(x, y):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    if impl == "compile-dynamic":
        step = torch.compile(step, dynamic=True)
    times = []
    for _ in range(passes):
        for x, y in data:
            start = time.perf_counter()
            loss = step(x.to(device), y.to(device))
            if lr is not None:
                lr.mark_step()
            loss.item()
            times.append(time.perf_counter() - start)
    result = {
        "first_pass_s": sum(times[:n]),
        "step_ms": statistics.median(times[n:]) * 1e3 if passes > 1 else float("nan"),
        "loss": float(loss),
    }
    if lr is not None:
        result["compiles"] = (lr.metrics.counter_value("UncachedCompile") or 0) + (
            lr.metrics.counter_value("InductorRecompile") or 0
        )
        result["uncompiled_runs"] = lr.metrics.counter_value("UncompiledGraphRun") or 0
        result["size_compiles"] = lr.metrics.counter_value("JaxSizeCompile") or 0
        per_size = lr.metrics.metric_data("JaxSizeCompileTime")
        result["size_compile_s"] = per_size[1] / per_size[0] if per_size else 0.0
    elif impl == "compile-dynamic":
        from torch._dynamo.utils import counters

        result["compiles"] = counters["stats"]["unique_graphs"]
    else:
        result["compiles"] = 0
    return result


def _child(impl: str, n: int, passes: int) -> dict | None:
    cmd = [sys.executable, __file__, "--child", impl, "--lengths", str(n), "--passes", str(passes)]
    env = dict(os.environ, **IMPLS[impl])
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["?"])[-1]
        print(f"  {impl}: failed ({tail})", file=sys.stderr)
        return None
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", type=int, default=24)
    parser.add_argument("--passes", type=int, default=2)
    default = [i for i in IMPLS if not i.endswith("-jax")]  # jax: XLA compiles take minutes
    parser.add_argument("--impls", default=",".join(default))
    parser.add_argument("--child", metavar="IMPL")
    args = parser.parse_args(argv)
    if args.lengths < 1 or args.passes < 1:
        parser.error("--lengths and --passes must be at least 1")
    unknown = [
        i for i in (args.impls.split(",") if not args.child else [args.child]) if i not in IMPLS
    ]
    if unknown:
        parser.error(f"unknown implementation(s) {', '.join(unknown)}; known: {', '.join(IMPLS)}")
    if args.child:
        print(json.dumps(run_one(args.child, args.lengths, args.passes)))
        return
    print(
        f"dynamic: transformer over {args.lengths} lengths, {args.passes} passes, 1 thread; "
        "step = median of the passes after the first"
    )
    print("| implementation | graphs compiled | first pass | step (later passes) | vs eager |")
    print("|---|---:|---:|---:|---:|")
    results = {impl: _child(impl, args.lengths, args.passes) for impl in args.impls.split(",")}
    eager = (results.get("eager") or {}).get("step_ms")
    for impl, r in results.items():
        if r is None:
            continue
        ratio = f"{r['step_ms'] / eager:.2f}x" if eager else "-"
        compiles = str(r["compiles"])
        if r.get("uncompiled_runs"):
            compiles += f" (+{r['uncompiled_runs']} run uncompiled)"
        if r.get("size_compiles"):
            compiles += f" (+{r['size_compiles']} XLA per size, {r['size_compile_s']:.1f} s each)"
        print(
            f"| {impl} | {compiles} | {r['first_pass_s']:.2f} s | {r['step_ms']:.2f} ms "
            f"| {ratio} |"
        )


if __name__ == "__main__":
    main()
