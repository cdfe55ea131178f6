"""Failures while lowering or running a graph: a clear error naming the op and the traced
line; the error stays with the tensors that depend on the failed op (reading them raises it
again), the graph's other tensors and every later step work, no broken graph is cached, and
a held error keeps no IR alive (issue #23: one failed graph no longer fails every later one).

``mark_step()`` launches graphs asynchronously: a run that fails raises on the first read
of its results or at the next ``mark_step``; ``mark_step(wait=True)`` raises at once."""

import gc

import pytest
import torch
from support.hand_written_nodes import FaultyNeg, faulty_neg

import lazygen.runtime as lr
from lazygen.runtime import dispatch as registry
from lazygen.runtime.backends.torchscript.backend import TorchScriptBackend
from lazygen.runtime.execution import executor
from lazygen.runtime.graph import post_order
from lazygen.runtime.ir import DeviceData, InputWrite, Value

aten = torch.ops.aten


@pytest.fixture
def faulty():
    lr.mark_step()
    registry.register_kernels({aten.neg.default: faulty_neg})
    executor.clear_compile_cache()  # graphs lowered with another mode
    lr.config.set_debug(1)  # record the traced lines
    yield FaultyNeg
    FaultyNeg.mode = "ok"
    lr.mark_step()
    lr.state.reset()  # the installed kernels again, debug off, caches empty


def _traced(x):
    return (x * 2).neg() + 1  # the line the error names


def _check_error_stays_local(x, y, error, cached_before):
    assert error.failed_node is None  # the error holds no IR
    assert executor.compile_cache_size() == cached_before  # nothing half-built was kept
    with pytest.raises(lr.LazyGraphError) as again:
        y.cpu()  # the failed tensor carries its error
    assert str(again.value) == str(error)
    FaultyNeg.mode = "ok"
    lr.mark_step(wait=True)  # nothing left over fails again
    assert _traced(x).cpu().tolist() == [1.0, -1.0, -3.0]  # traced anew once fixed


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
        # the backend author's part, and where to fix it (a newcomer's lowering that raised)
        assert "this is the backend's error" in str(error) and "refused_ops()" in str(error)
    else:
        assert "mat1" in str(error) or "2D" in str(error) or "matrix" in str(error)
    _check_error_stays_local(x, y, error, cached)


def test_failure_without_recorded_line_says_how_to_get_it(faulty):
    lr.config.set_debug(0)
    y = torch.ones(2, device="lazygen").neg()
    faulty.mode = "lowering"
    with pytest.raises(lr.LazyGraphError, match="LAZYGEN_DEBUG=1"):
        y.cpu()
    faulty.mode = "ok"
    assert torch.ones(2, device="lazygen").neg().cpu().tolist() == [-1.0, -1.0]


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
    with pytest.raises(lr.LazyGraphError, match="neg"):
        y.cpu()  # it carries the error (errors stay local)
    again = (x * 2).view(1, 4).neg() + 1
    assert again.cpu().tolist() == [[1.0, -1.0, -3.0, -5.0]]


@pytest.mark.parametrize("wait", [True, False])
def test_failed_sync_leaves_other_tensors_usable(faulty, wait):
    good = torch.ones(2, device="lazygen") * 3
    bad = torch.ones(2, device="lazygen").neg()
    faulty.mode = "execution"
    with pytest.raises(lr.LazyGraphError):
        lr.mark_step(wait=wait)  # both in one graph
        lr.wait_device_ops()
    assert good.cpu().tolist() == [3.0, 3.0]  # independent of the failed op: its own graph
    with pytest.raises(lr.LazyGraphError):
        bad.cpu()  # still failing: it carries the error
    lr.mark_step(wait=True)  # with ``bad`` alive: it is not synced again
    assert (torch.ones(2, device="lazygen") + 1).cpu().tolist() == [2.0, 2.0]


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
    with pytest.raises(lr.LazyGraphError, match="neg"):
        y.cpu()  # a read raises the error it carries, every time


@pytest.mark.parametrize("wait", [True, False], ids=["wait", "async"])
def test_a_held_error_keeps_no_pending_ir_and_later_steps_work(faulty, wait):
    """A test runner keeps the last exception (``sys.last_value``, pytest's report): the
    tensors of the failed graph it keeps alive must not make every later step fail."""
    faulty.mode = "execution"
    x = torch.ones(2, device="lazygen")
    y = x.neg() * 2
    try:
        lr.mark_step(wait=wait)
        lr.wait_device_ops()
    except lr.LazyGraphError as error:
        held = error  # and its traceback, with the frames that synced ``y``
    assert held.failed_node is None
    device = lr.inner(x)._device
    for step in range(3):  # the cause is still there; steps without it work
        z = torch.ones(2, device="lazygen") * step
        lr.mark_step(wait=wait)
        assert z.cpu().tolist() == [float(step)] * 2
    assert [t for t in device.live_tensors() if not t.is_materialized] == []
    with pytest.raises(lr.LazyGraphError):
        y.cpu()


@pytest.mark.parametrize("mode", ["lowering", "execution"])
@pytest.mark.parametrize("wait", [True, False], ids=["wait", "async"])
def test_a_failed_steps_tensors_are_freed_once_the_program_drops_them(faulty, mode, wait):
    """A failed tensor stores the error, and the error's cause has a traceback whose
    frames link to their callers (``f_back``) up to the sync that held the failed tensor:
    a cycle through the tensor's C++ side that the garbage collector cannot free. Every
    tensor of a failed step stayed alive for good (memory, and ``set_device_backend``
    then refused to switch the device: "already holds tensors")."""
    device = lr.inner(torch.ones(1, device="lazygen"))._device
    lr.mark_step(wait=True)
    gc.collect()
    before = len(device.live_tensors())

    def failing_step():
        faulty.mode = mode
        x = torch.arange(3.0, device="lazygen")
        y, z = x.neg() * 2, x * 5  # ``z`` does not depend on the failure
        with pytest.raises(lr.LazyGraphError):
            lr.mark_step(wait=wait)
            lr.wait_device_ops()
            y.cpu()
        faulty.mode = "ok"
        assert z.cpu().tolist() == [0.0, 5.0, 10.0]

    failing_step()
    gc.collect()
    assert len(device.live_tensors()) == before


def test_an_op_reading_a_failed_tensor_fails_with_its_error(faulty):
    faulty.mode = "execution"
    bad = torch.ones(2, device="lazygen").neg()
    with pytest.raises(lr.LazyGraphError) as first:
        lr.mark_step(wait=True)
    faulty.mode = "ok"
    later, unrelated = bad + 1, torch.ones(2, device="lazygen") * 5
    with pytest.raises(lr.LazyGraphError) as second:
        lr.mark_step(wait=True)  # ``later`` reads the failed value
    assert str(second.value) == str(first.value)
    assert unrelated.cpu().tolist() == [5.0, 5.0]
    with pytest.raises(lr.LazyGraphError):
        later.cpu()
    lr.mark_step(wait=True)


@pytest.mark.parametrize("mode", ["lowering", "execution"])
def test_a_failed_early_results_graph_leaves_the_rest_of_the_step_usable(faulty, mode):
    """``mark_step`` syncs a step's single-element results in a graph of their own first
    (``split.py``); when that graph fails, the rest of the step still runs."""
    x = torch.ones(3, device="lazygen")
    lr.mark_step(wait=True)
    faulty.mode = mode
    loss = x.neg().sum()  # single element: the early graph, which fails
    other = x * 4  # the rest of the step
    with pytest.raises(lr.LazyGraphError, match="neg"):
        lr.mark_step()
        lr.wait_device_ops()
        loss.cpu()
    assert other.cpu().tolist() == [4.0, 4.0, 4.0]
    with pytest.raises(lr.LazyGraphError, match="neg"):
        loss.cpu()
    lr.mark_step(wait=True)


def test_the_diagnosis_of_a_failed_run_never_writes_the_callers_tensors(monkeypatch):
    """A graph that writes an input (``InputWrite``: a compiled optimizer step) and fails
    is re-run node by node to name the failing op; that re-run must not write the input a
    second time (here the failure does not reproduce, so every node re-runs)."""
    device = lr.devices.default_device()
    target = DeviceData(torch.zeros(3))
    lazy = torch.ones(3).to("lazygen")
    lr.mark_step()
    doubled = lr.inner(lazy * 2)._value
    order = [target] + post_order([doubled])[0] + [InputWrite(Value(target, 0), doubled)]
    executable = device.backend.compile(order, [], device.backing)
    inputs = [node.materialize() for node in order if node.is_input]

    def fails(*args):
        raise ValueError("lost device")

    monkeypatch.setattr(device.backend, "execute", fails)
    with pytest.raises(lr.LazyGraphError, match="lost device"):
        executor.execute(device, executable, order, inputs)
    assert torch.equal(inputs[0], torch.zeros(3))
    lr.mark_step()


# A backend whose results break execute's contract ---------------------------------------

MANGLING_INDEX = 6  # a device index no other test file runs on another backend


class _Done:
    """A finished run's handle (what ``launch`` returns)."""

    def __init__(self, results):
        self.results = results

    def wait(self):
        return self.results


class ManglingBackend(TorchScriptBackend):
    """TorchScript, with results mangled as a newcomer's ``execute`` might: ``mode``."""

    name = "mangling"
    mode = "ok"

    def execute(self, executable, inputs):
        results = super().execute(executable, inputs)
        return {
            "ok": results,
            "one": results[0],  # the tensor, not a list of one
            "short": results[:-1],
            "none": None,
        }[type(self).mode]

    def launch(self, executable, inputs):
        return _Done(self.execute(executable, inputs))


@pytest.fixture(scope="module")
def mangling():
    lr.set_device_backend(MANGLING_INDEX, ManglingBackend())
    yield ManglingBackend
    ManglingBackend.mode = "ok"
    lr.mark_step()


@pytest.mark.parametrize(
    "mode, message",
    [
        ("one", "returned a Tensor, not a list, for a graph of 2 outputs"),
        ("short", "returned 1 results for a graph of 2 outputs"),
        ("none", "returned a NoneType, not a list"),
    ],
)
@pytest.mark.parametrize("method", ["execute", "launch"])
def test_results_that_break_executes_contract_fail_the_run_naming_it(
    mangling, mode, message, method
):
    """A newcomer's ``execute`` returning one tensor, or too few, failed on a bare ``zip()``
    error (or a TypeError). The run fails with an error naming the backend's method and
    the contract; the error stays with the graph's tensors, and the device works again."""
    device = f"lazygen:{MANGLING_INDEX}"
    lr.mark_step()
    x = torch.ones(3, 3).to(device)
    y, z = x @ x, (x + 1).sum(0)
    mangling.mode = mode
    with pytest.raises(lr.LazyGraphError) as info:
        if method == "execute":
            lr.mark_step(wait=True)
        else:
            lr.mark_step()
            y.cpu()
    error = str(info.value)
    assert f"ManglingBackend.{method} {message}" in error, error
    assert "one tensor per graph output" in error and "backend 'mangling'" in error
    with pytest.raises(lr.LazyGraphError):
        z.cpu()  # the run's tensors carry its error
    mangling.mode = "ok"
    assert ((x @ x) + (x + 1).sum(0)).cpu().tolist() == [[9.0] * 3] * 3
