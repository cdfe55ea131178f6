"""Failures while lowering or running a graph: a clear error naming the op and the traced
line; the tensors keep their IR, no broken graph is cached, and a later step works.

``mark_step()`` launches graphs asynchronously: a run that fails raises on the first read
of its results or at the next ``mark_step``; ``mark_step(wait=True)`` raises at once."""

import pytest
import torch

import lazygen.runtime as lr
from lazygen.runtime import dispatch as registry
from lazygen.runtime import executor

from .handwritten_nodes import FaultyNeg, faulty_neg

aten = torch.ops.aten


@pytest.fixture
def faulty():
    lr.mark_step()
    saved = dict(registry.KERNELS)
    registry.register_kernels({aten.neg.default: faulty_neg})
    executor.clear_compile_cache()  # graphs lowered with another mode
    lr.config.set_debug(1)  # record the traced lines
    yield FaultyNeg
    FaultyNeg.mode = "ok"
    lr.config.set_debug(0)
    lr.mark_step()
    registry.KERNELS.clear()
    registry.register_kernels(saved)


def _traced(x):
    return (x * 2).neg() + 1  # the line the error names


def _check_recovery(x, y, cached_before):
    inner = lr.inner(y)
    assert not inner.is_materialized  # the tensor kept its IR
    assert executor.compile_cache_size() == cached_before  # nothing half-built was kept
    FaultyNeg.mode = "ok"
    lr.mark_step()
    assert inner.is_materialized
    assert y.cpu().tolist() == [1.0, -1.0, -3.0]


def _step_and_read(y):
    lr.mark_step()  # launches the graph; a failed run raises when its result is read
    y.cpu()


@pytest.mark.parametrize(
    "mode, step",
    [
        ("lowering", lr.mark_step),  # lowering happens before any launch: raised at once
        ("execution", lambda y: lr.mark_step(wait=True)),
        ("execution", _step_and_read),
        ("execution", lambda y: (lr.mark_step(), lr.mark_step())),  # the next step raises
        ("execution", lambda y: (lr.mark_step(), lr.wait_device_ops())),
    ],
    ids=["lowering", "wait", "async-read", "async-next-step", "async-wait-device-ops"],
)
def test_failure_names_op_and_line_and_recovers(faulty, mode, step):
    x = torch.arange(3.0, device="lazygen")  # device data
    y = _traced(x)
    cached = executor.compile_cache_size()
    faulty.mode = mode
    with pytest.raises(lr.LazyGraphError) as info:
        step() if step is lr.mark_step else step(y)
    error = info.value
    assert error.stage == mode and error.op_name == "neg"
    assert "test_faults.py:" in error.source and "neg" in str(error)
    assert error.source in str(error)
    if mode == "lowering":
        assert isinstance(error.__cause__, ValueError)
    else:
        assert "mat1" in str(error) or "2D" in str(error) or "matrix" in str(error)
    _check_recovery(x, y, cached)


def test_failure_without_recorded_line_says_how_to_get_it(faulty):
    lr.config.set_debug(0)
    y = torch.ones(2, device="lazygen").neg()
    faulty.mode = "lowering"
    with pytest.raises(lr.LazyGraphError, match="LAZYGEN_DEBUG=1"):
        y.cpu()
    faulty.mode = "ok"
    assert y.cpu().tolist() == [-1.0, -1.0]


def test_the_failing_node_is_found_past_nodes_with_constant_operands(faulty):
    """Locating the node of a failed run lowers the nodes one at a time; a view's sizes
    (``SizeConstant`` ints) were fed as tensors there, so the view was blamed instead
    (Mixtral's ``histc`` on int32 was reported as a failure of ``view_copy``)."""
    x = torch.arange(4.0, device="lazygen")
    y = (x * 2).view(1, 4).neg() + 1  # a 1x4 matrix: the faulty mm fails
    faulty.mode = "execution"
    with pytest.raises(lr.LazyGraphError) as info:
        lr.mark_step(wait=True)
    assert info.value.op_name == "neg", str(info.value)
    faulty.mode = "ok"
    lr.mark_step()
    assert y.cpu().tolist() == [[1.0, -1.0, -3.0, -5.0]]


@pytest.mark.parametrize("wait", [True, False])
def test_failed_sync_leaves_other_tensors_usable(faulty, wait):
    good = torch.ones(2, device="lazygen") * 3
    bad = torch.ones(2, device="lazygen").neg()
    faulty.mode = "execution"
    with pytest.raises(lr.LazyGraphError):
        lr.mark_step(wait=wait)  # both in one graph
        lr.wait_device_ops()
    assert good.cpu().tolist() == [3.0, 3.0]  # its own graph now
    with pytest.raises(lr.LazyGraphError):
        bad.cpu()  # still failing: the cause is still there
    del bad
    lr.mark_step(wait=True)  # the cause is gone


def test_failed_run_is_reported_once_per_read_and_leaves_nothing_in_flight(faulty):
    y = torch.ones(2, device="lazygen").neg()
    faulty.mode = "execution"
    lr.mark_step()
    device = lr.inner(y)._device
    with pytest.raises(lr.LazyGraphError):
        lr.wait_device_ops()
    assert device.in_flight == []
    lr.wait_device_ops()  # reported already: nothing left to raise
    faulty.mode = "ok"
    assert y.cpu().tolist() == [-1.0, -1.0]  # synced again from its IR
