"""``state.reset()`` puts every piece of the runtime's mutable state back as ``init()`` left
it, and each module that keeps state has declared it."""

import torch

import lazygen.runtime as lr
from lazygen.runtime import metrics, state
from lazygen.runtime.execution import executor
from lazygen.runtime.tracing import dispatch

aten = torch.ops.aten


def _kernel(*args, **kwargs):  # never called: only registered
    raise AssertionError


def test_every_stateful_module_declares_its_reset():
    assert {"dispatch", "shape_inference", "kernel_support", "metrics", "devices"} <= set(
        state.owners()
    )
    assert "executor" in state.owners()


def test_reset_restores_kernels_settings_and_empties_counters():
    lr.mark_step()
    installed = dict(dispatch.KERNELS)
    name = lr.device_name()
    dispatch.register_kernels({aten.neg.default: _kernel})
    lr.config.set_force_fallback("add.Tensor")
    lr.config.set_reuse_ir(True)
    lr.add_step_closure(_kernel)
    metrics.count("TestCounter")
    assert state.active_kernels.get(aten.neg.default) is _kernel
    assert aten.add.Tensor not in state.active_kernels

    state.reset()

    assert installed == dispatch.KERNELS
    assert state.active_kernels[aten.add.Tensor] is installed[aten.add.Tensor]
    assert state.active_kernels.get(aten.neg.default) is installed.get(aten.neg.default)
    assert lr.config.get_force_fallback() == frozenset()
    assert not lr.config.get_reuse_ir()
    assert "TestCounter" not in lr.metrics.counter_names()
    assert executor.compile_cache_size() == 0
    lr.mark_step()  # the closure was dropped: running it would raise
    assert lr.device_name() == name  # fixed for the process


def test_tensors_trace_after_reset():
    x = torch.ones(3, device=lr.device())
    state.reset()
    assert (x + 1).sum().item() == 6.0
