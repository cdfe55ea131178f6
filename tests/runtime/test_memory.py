"""Long runs do not grow: live IR nodes, compile and shape caches, tracked tensors."""

import gc
import sys
import weakref

import torch

import lazygen.runtime as lr
from lazygen.runtime import devices
from lazygen.runtime.execution import executor
from lazygen.runtime.ir import Node
from lazygen.runtime.tracing import output_shapes


def _snapshot() -> dict:
    gc.collect()
    return {
        "nodes": sum(1 for o in gc.get_objects() if issubclass(type(o), Node)),
        "compiled": executor.compile_cache_size(),
        "shapes": output_shapes.cache_size(),
        "tracked": len(devices.get_device(0).live),
        "blocks": sys.getallocatedblocks(),
    }


def test_thousand_steps_stay_flat():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2)).to(
        "lazygen"
    )
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    data, target = torch.randn(4, 8).to("lazygen"), torch.randint(0, 2, (4,)).to("lazygen")

    def step():
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(model(data), target).backward()
        optimizer.step()
        lr.mark_step()

    for _ in range(50):
        step()
    before = _snapshot()
    for _ in range(1000):
        step()
    after = _snapshot()
    for key in ("nodes", "compiled", "shapes", "tracked"):
        assert after[key] <= before[key], (key, before, after)
    assert after["blocks"] - before["blocks"] < 20_000, (before, after)


def test_cache_bounds_are_configurable():
    compile_size, shape_size = lr.config.get_compile_cache_size(), lr.config.get_shape_cache_size()
    try:
        x = torch.ones(3, device="lazygen")
        for n in range(1, 8):
            (x.sum(dim=0, keepdim=True).expand(n) * float(n)).cpu()  # a new graph and shapes
        lr.config.set_compile_cache_size(2)
        lr.config.set_shape_cache_size(5)
        # The bound is per backend (each has its own cache; other tests made more backends).
        assert max(len(cache) for cache in devices.caches()) <= 2
        assert output_shapes.cache_size() <= 5
        for n in range(8, 12):
            (x.sum(dim=0, keepdim=True).expand(n) * float(n)).cpu()
        assert max(len(cache) for cache in devices.caches()) <= 2
        assert output_shapes.cache_size() <= 5
    finally:
        lr.config.set_compile_cache_size(compile_size)
        lr.config.set_shape_cache_size(shape_size)


def test_reusable_ir_is_kept_one_step_only():
    """With reuse on, a step's nodes are kept for the next step, and no longer."""
    lr.config.set_reuse_ir(True)
    try:
        x = torch.ones(4, device="lazygen")
        y = (x + 1) * 2
        node = weakref.ref(lr.inner(y)._value.node)
        lr.mark_step(wait=True)
        del y
        gc.collect()
        assert node() is not None  # the next step may reuse it
        lr.mark_step(wait=True)  # a step that traced nothing
        gc.collect()
        assert node() is None
    finally:
        lr.config.set_reuse_ir(False)


def test_the_fast_path_keeps_hitting_the_shape_cache_after_it_is_emptied(monkeypatch):
    """Generated kernels read the shape cache as this run's part
    (``state.runtime.parts[output_shapes.ShapeCache]``): clearing, trimming, the two
    generations' swap and a reset (a new part) must leave the fast path reading the cache
    that misses fill. Reading a stale one, every op would compute its shapes anew for the
    rest of the process."""
    computed = []
    real = output_shapes.compute_shapes

    def counting(*args, **kwargs):
        computed.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(output_shapes, "compute_shapes", counting)
    size = lr.config.get_shape_cache_size()
    x = torch.ones(3, device="lazygen")

    def traced_twice_computes_once() -> None:
        computed.clear()
        x * x
        x * x
        assert computed.count(torch.ops.aten.mul.Tensor) <= 1, computed

    try:
        lr.config.set_shape_cache_size(4)  # trims
        traced_twice_computes_once()
        for n in range(1, 9):  # several generation swaps
            torch.ones(n, device="lazygen") * float(n)
        traced_twice_computes_once()
        output_shapes.clear_cache()
        traced_twice_computes_once()
        lr.state.reset()
        traced_twice_computes_once()
        assert lr.state.runtime.parts[output_shapes.ShapeCache] is output_shapes.shape_cache()
    finally:
        lr.config.set_shape_cache_size(size)
    lr.mark_step()
