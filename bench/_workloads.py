"""Workloads the runtime benchmarks time, one implementation per fresh process.

    python bench/_workloads.py WORKLOAD IMPL [options]   -> prints one JSON object

IMPL is `lazygen` (this project's runtime), `ltc` (torch._lazy with its C++ TS backend)
or `eager` (plain CPU); `floor` is lazygen's device with add/mul kernels that only return
a new lazy tensor (no IR, no shapes): the cost of the Python entry point itself;
`node-floor` adds to it the least a tracer records, one IR node per op. Each benchmark script runs this in subprocesses, alternating the
implementations, so that one backend's global state never leaks into another's figures.
"""

from __future__ import annotations

import argparse
import gc
import json
import resource
import statistics
import time

import torch


class Impl:
    """The three ways of running the same PyTorch program."""

    def __init__(self, name: str):
        self.name = name
        if name in ("lazygen", "floor", "node-floor"):
            import lazygen.runtime as lr

            lr.init()
            self.lr = lr
            self.device = lr.device()
            if name == "floor":
                _install_floor_kernels()
            elif name == "node-floor":
                _install_node_floor_kernels()
        elif name == "ltc":
            from torch._lazy import ts_backend

            ts_backend.init()
            self.device = torch.device("lazy")
        else:
            self.device = torch.device("cpu")

    def mark_step(self) -> None:
        if self.name in ("lazygen", "floor", "node-floor"):
            self.lr.mark_step()
        elif self.name == "ltc":
            from torch import _lazy

            _lazy.mark_step()

    def uncached_compiles(self) -> int:
        if self.name == "lazygen":
            return self.lr.metrics.counter_value("UncachedCompile") or 0
        if self.name == "ltc":
            from torch._lazy import metrics

            return metrics.counter_value("UncachedCompile") or 0
        return 0

    def reset_metrics(self) -> None:
        if self.name == "lazygen":
            self.lr.metrics.reset()
        elif self.name == "ltc":
            from torch._lazy import metrics

            metrics.reset()


def _install_floor_kernels() -> None:
    """add/mul kernels that do no tracing work: one new inner lazy tensor per op (the same
    value as the input), which functionalization then wraps. What remains is what every
    Python lazy backend pays: ``__torch_dispatch__`` through functionalization and a new
    wrapper tensor per op."""
    from lazygen.runtime import dispatch
    from lazygen.runtime.tracing import tensor

    def kernel(self, other, *args, **kwargs):
        return tensor.new_lazy(self._value, self._device)

    dispatch.register_kernels(
        {op: kernel for op in (torch.ops.aten.add.Tensor, torch.ops.aten.mul.Tensor)}
    )


def _install_node_floor_kernels() -> None:
    """add/mul kernels that record the least any tracer records: the op's IR node (its
    operands as the generated kernel passes them, the first input's shape as the result's)
    and a new lazy tensor for it. No shape-cache lookup, counter, device check or graph
    budget: the ``floor`` plus the price of one node object in Python, against which the
    rest of lazygen's per-op work reads (``bench/trace.py``). Only for this benchmark's
    chain of equal-shaped float tensors, whose results these shapes describe exactly."""
    from lazygen.runtime.builtin.generated import ir

    from lazygen.runtime import dispatch
    from lazygen.runtime.ir import Value
    from lazygen.runtime.tracing import tensor

    new_node, new_value, new_lazy = object.__new__, tuple.__new__, tensor.new_lazy
    add_class, mul_class = ir.AddTensor, ir.MulTensor

    def add(self, other, alpha=1):  # alpha 1: no operand, as the generated kernel records it
        node = new_node(add_class)
        node.operands = (self._value, other._value, None)
        node.attrs = ()
        node.shapes = (self._shape,)
        node.source = None
        return new_lazy(new_value(Value, (node, 0)), self._device)

    def mul(self, other):
        node = new_node(mul_class)
        node.operands = (self._value, other._value)
        node.attrs = ()
        node.shapes = (self._shape,)
        node.source = None
        return new_lazy(new_value(Value, (node, 0)), self._device)

    dispatch.register_kernels({torch.ops.aten.add.Tensor: add, torch.ops.aten.mul.Tensor: mul})


def trace(impl: Impl, ops: int, repeats: int) -> dict:
    """Per-op tracing cost of an elementwise chain on 16x16 tensors (no sync inside)."""
    x = torch.randn(16, 16, device=impl.device)
    y = torch.randn(16, 16, device=impl.device)
    impl.mark_step()
    samples, cpu = [], []
    for _ in range(repeats):
        z = x
        start, start_cpu = time.perf_counter(), time.thread_time()
        for i in range(ops):
            z = z + y if i % 2 == 0 else z * y
        samples.append((time.perf_counter() - start) / ops * 1e6)
        cpu.append((time.thread_time() - start_cpu) / ops * 1e6)
        impl.mark_step()
        del z
    # The tracing thread's CPU time: on a loaded machine wall time counts other processes.
    return {"us_per_op": statistics.median(samples), "us_per_op_cpu": statistics.median(cpu)}


def _mlp(impl: Impl):
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(784, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10)
    ).to(impl.device)
    data = torch.randn(64, 784).to(impl.device)
    target = torch.randint(0, 10, (64,)).to(impl.device)
    return model, data, target


def train_step(impl: Impl, steps: int, optimizer: str) -> dict:
    """Median MLP 784-256-10 step time (batch 64) over steps 10..steps, and compile counts."""
    model, data, target = _mlp(impl)
    if optimizer == "adam":
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    else:
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    impl.mark_step()
    impl.reset_metrics()
    times = []
    loss = None
    for step in range(steps):
        start = time.perf_counter()
        opt.zero_grad()
        loss = loss_fn(model(data), target)
        loss.backward()
        opt.step()
        impl.mark_step()
        if step >= 10:
            times.append(time.perf_counter() - start)
    return {
        "ms_per_step": statistics.median(times) * 1e3,
        "uncached_compiles": impl.uncached_compiles(),
        "final_loss": float(loss.detach().cpu()),
    }


def scaling(impl: Impl, nodes: int, repeats: int) -> dict:
    """Trace + sync time of one graph of `nodes` elementwise ops, per node."""
    x = torch.randn(16, 16, device=impl.device)
    impl.mark_step()
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        z = x
        for i in range(nodes):
            z = z + 1.0 if i % 2 == 0 else z * 0.5
        z.cpu()
        samples.append((time.perf_counter() - start) / nodes * 1e6)
        impl.mark_step()
    return {"us_per_node": statistics.median(samples)}


def memory(impl: Impl, steps: int, warmup: int) -> dict:
    """RSS growth over `steps` MLP SGD steps after `warmup` steps."""
    model, data, target = _mlp(impl)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()

    def step() -> None:
        opt.zero_grad()
        loss_fn(model(data), target).backward()
        opt.step()
        impl.mark_step()

    for _ in range(warmup):
        step()
    gc.collect()
    before = _rss_mb()
    live_before = _live_nodes(impl)
    for _ in range(steps):
        step()
    gc.collect()
    return {
        "rss_growth_mb": _rss_mb() - before,
        "live_ir_nodes_before": live_before,
        "live_ir_nodes_after": _live_nodes(impl),
    }


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * resource.getpagesize() / 2**20


def _live_nodes(impl: Impl) -> int:
    if impl.name != "lazygen":
        return -1
    from lazygen.runtime.ir import Node

    return sum(1 for o in gc.get_objects() if isinstance(o, Node))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("workload", choices=["trace", "train_step", "scaling", "memory"])
    parser.add_argument("impl", choices=["lazygen", "ltc", "eager", "floor", "node-floor"])
    parser.add_argument("--ops", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--optimizer", default="sgd", choices=["sgd", "adam"])
    parser.add_argument("--nodes", type=int, default=1000)
    args = parser.parse_args()
    torch.set_num_threads(1)
    impl = Impl(args.impl)
    if args.workload == "trace":
        result = trace(impl, args.ops, args.repeats)
    elif args.workload == "train_step":
        result = train_step(impl, args.steps, args.optimizer)
    elif args.workload == "scaling":
        result = scaling(impl, args.nodes, args.repeats)
    else:
        result = memory(impl, args.steps, args.warmup)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
