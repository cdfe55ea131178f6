"""Fusion: execution time of compiled graphs, inductor vs TorchScript vs eager, in one run.

    python bench/fusion.py [--ops 2000] [--size 64] [--params 100] [--repeats 20]

Two workloads, each traced once per run and timed by ``ExecuteTime`` (the graph's run only:
no tracing, no compile; graphs run synchronously so every run is timed):

* ``chain``: ``--ops`` elementwise ops (``z = z + y`` / ``z = z * w`` alternately) on
  ``--size``x``--size`` float32 tensors. TorchScript runs one kernel per op (this build has
  no CPU fuser); Inductor fuses the chain into one loop.
* ``adam``: ``torch.optim.Adam.step`` over ``--params`` parameters of ``--size``x``--size``
  (~15 ops each; its bias corrections change every step, so the step must not recompile:
  the uncached-compile count is printed).

Eager is the same work run op by op on the CPU. The ratio column is time / eager time.
TorchScript runs on ``lazygen:0``, inductor on ``lazygen:1`` (``set_device_backend``).
Compile times are printed too (Inductor's on-disk cache makes a second run's small).
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

import lazygen.runtime as lr

BACKENDS = {"torchscript": "lazygen:0", "inductor": "lazygen:1"}


def _chain(z, y, w, ops: int):
    for i in range(ops):
        z = z + y if i % 2 == 0 else z * w
    return z


def _chain_inputs(size: int, device):
    torch.manual_seed(0)
    x = torch.randn(size, size)
    y = torch.randn(size, size) * 0.01
    w = torch.full((size, size), 0.999)
    return x.to(device), y.to(device), w.to(device)


def _adam_setup(params: int, size: int, device):
    torch.manual_seed(0)
    tensors = [torch.randn(size, size).to(device) for _ in range(params)]
    for t in tensors:
        t.grad = (torch.randn(size, size) * 0.1).to(device)
    return tensors, torch.optim.Adam(tensors, lr=1e-3)


def _lazy_run(device: str, build, repeats: int) -> dict:
    """Trace ``build()`` and sync it twice (the runs that compile: Adam's first step makes
    its state, the second uses it), then ``repeats`` times, timed."""
    lr.metrics.reset()
    start = time.perf_counter()
    for _ in range(2):
        build()
        lr.mark_step(device, wait=True)
    first = time.perf_counter() - start
    compile_time = lr.metrics.metric_data("CompileTime")
    lr.metrics.reset()
    for _ in range(repeats):
        build()
        lr.mark_step(device, wait=True)
    samples, total, _ = lr.metrics.metric_data("ExecuteTime")
    return {
        "execute_s": total / samples,
        "compile_s": compile_time[1] if compile_time else 0.0,
        "first_step_s": first,
        "uncached_after_first": (lr.metrics.counter_value("UncachedCompile") or 0)
        + (lr.metrics.counter_value("InductorRecompile") or 0),
    }


def _eager_time(fn, repeats: int) -> float:
    fn()
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def measure(ops: int, size: int, params: int, repeats: int) -> dict:
    lr.init()
    lr.config.set_async_execution(False)  # every run goes through execute(): timed
    lr.set_device_backend(1, "inductor")
    results: dict = {"chain": {}, "adam": {}}

    x, y, w = _chain_inputs(size, "cpu")
    results["chain"]["eager"] = {"execute_s": _eager_time(lambda: _chain(x, y, w, ops), repeats)}
    tensors, opt = _adam_setup(params, size, "cpu")
    results["adam"]["eager"] = {"execute_s": _eager_time(opt.step, repeats)}

    for name, device in BACKENDS.items():
        x, y, w = _chain_inputs(size, device)
        holder = {}

        def chain(x=x, y=y, w=w, holder=holder):
            holder["z"] = _chain(x, y, w, ops)

        results["chain"][name] = _lazy_run(device, chain, repeats)
        tensors, opt = _adam_setup(params, size, device)
        results["adam"][name] = _lazy_run(device, opt.step, repeats)
        del tensors, opt, holder
    return results


def print_results(results: dict, ops: int, size: int, params: int) -> None:
    titles = {
        "chain": f"{ops}-op elementwise chain, {size}x{size} float32",
        "adam": f"Adam step over {params} parameters of {size}x{size}",
    }
    for workload, rows in results.items():
        eager = rows["eager"]["execute_s"]
        print(f"\n### {titles[workload]}\n")
        print("| backend | execute | / eager | compile (2 first steps) | compiles after them |")
        print("|---|---:|---:|---:|---:|")
        for name, row in rows.items():
            compile_s = f"{row['compile_s']:.2f} s" if "compile_s" in row else "-"
            after = row.get("uncached_after_first", "-")
            print(
                f"| {name} | {row['execute_s'] * 1e3:.3f} ms | {row['execute_s'] / eager:.2f} "
                f"| {compile_s} | {after} |"
            )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=2000)
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--params", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args(argv)
    results = measure(args.ops, args.size, args.params, args.repeats)
    print_results(results, args.ops, args.size, args.params)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
