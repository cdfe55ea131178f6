"""Asynchronous execution: ``mark_step`` launches its graph and returns; reads wait for it."""

import sys
import threading
import time

import pytest
import torch
from support.ts_graphs import product_graph

import lazygen.runtime as lr
from lazygen.runtime.backends.torchscript.backend import (
    TorchScriptBackend as TSBackend,
)
from lazygen.runtime.backends.torchscript.backend import TSExecutable, _launcher
from lazygen.runtime.execution import executor
from lazygen.runtime.ir import DeviceData


def _device():
    return lr.inner(torch.zeros(1, device="lazygen"))._device


@pytest.fixture
def async_on():
    lr.mark_step(wait=True)
    before = lr.config.get_async_execution()
    lr.config.set_async_execution(True)
    lr.metrics.reset()
    yield
    lr.config.set_async_execution(before)
    lr.wait_device_ops()


def test_mark_step_launches_and_reads_wait(async_on):
    x = torch.arange(6.0, device="lazygen").reshape(2, 3)
    y = (x * 2).t() + 1
    lr.mark_step()
    assert lr.metrics.counter_value("AsyncLaunch") == 1
    assert lr.inner(y).is_materialized  # device data, maybe still in flight
    assert y.cpu().tolist() == [[1.0, 7.0], [3.0, 9.0], [5.0, 11.0]]
    assert torch.equal(y.cpu(), ((torch.arange(6.0).reshape(2, 3) * 2).t() + 1))


def test_at_most_one_run_in_flight_per_device(async_on):
    device = _device()
    w = torch.ones(8, 8, device="lazygen")
    for _ in range(10):
        w = w * 0.5 + 1
        lr.mark_step()
        assert len(device.in_flight) <= 1
    lr.wait_device_ops()
    assert device.in_flight == []
    expected = torch.ones(8, 8)
    for _ in range(10):
        expected = expected * 0.5 + 1
    assert torch.allclose(w.cpu(), expected)


def test_wait_and_disabled_async_run_synchronously(async_on):
    device = _device()
    x = torch.ones(3, device="lazygen") + 1
    lr.mark_step(wait=True)
    assert device.in_flight == [] and lr.metrics.counter_value("AsyncLaunch") is None
    lr.config.set_async_execution(False)
    y = x * 3
    lr.mark_step()
    assert device.in_flight == [] and lr.metrics.counter_value("AsyncLaunch") is None
    assert y.cpu().tolist() == [6.0, 6.0, 6.0]


def test_the_next_step_consumes_a_run_still_in_flight(async_on):
    """Parameters updated by step N are inputs of step N+1 before N's run is read."""
    torch.manual_seed(0)
    model = torch.nn.Linear(5, 3)
    lazy_model = torch.nn.Linear(5, 3).to("lazygen")
    lazy_model.load_state_dict(model.state_dict())
    data = torch.randn(4, 5)
    lazy_data = data.to("lazygen")
    for m, d, step in ((model, data, lambda: None), (lazy_model, lazy_data, lr.mark_step)):
        opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
        for _ in range(4):
            opt.zero_grad()
            m(d).square().sum().backward()
            opt.step()
            step()
    assert torch.allclose(lazy_model.weight.cpu(), model.weight, atol=1e-6)


def test_a_read_from_another_thread_waits_for_the_run(async_on):
    x = torch.full((4,), 2.0, device="lazygen") ** 3
    lr.mark_step()
    seen = []
    reader = threading.Thread(target=lambda: seen.append(x.cpu().tolist()))
    reader.start()
    reader.join(timeout=30)
    assert seen == [[8.0, 8.0, 8.0, 8.0]]


def test_a_run_never_needs_the_tracing_threads_gil():
    """A launched graph must finish while this thread keeps the GIL: with the switch
    interval raised, a run that wanted the GIL (releasing the caller's own tensors on the
    worker does) would not finish before the deadline."""
    backend = TSBackend()
    a, b = torch.randn(64, 64), torch.randn(64, 64)
    graph, mm = product_graph()
    graph.registerOutput(mm.output())
    executable = TSExecutable(None, _launcher("gil_check", graph), 1, graph)
    backend.launch(executable, [a, b]).wait()  # compiled, warm
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1000.0)
    try:
        run = backend.launch(executable, [a, b])
        deadline = time.monotonic() + 20
        while not run.done() and time.monotonic() < deadline:
            pass  # pure Python: the GIL is never released here
        finished = run.done()
    finally:
        sys.setswitchinterval(interval)
    assert finished, "the run waited for the GIL held by the tracing thread"
    assert torch.allclose(run.wait()[0], a @ b)


def test_strided_results_are_made_contiguous_when_read():
    base = torch.arange(6.0).reshape(2, 3)
    node = DeviceData(base.t())
    assert not node._data.is_contiguous()  # kept as the graph returned it
    assert node.data.is_contiguous() and torch.equal(node.data, base.t())


def test_gradient_of_a_product_is_contiguous_in_the_graph(async_on):
    """The weight gradient ``t(mm(...))`` is computed as a contiguous product (see
    ts_backend/passes.py): no strided copy is left for whoever reads it."""
    layer = torch.nn.Linear(6, 4).to("lazygen")
    layer(torch.randn(3, 6, device="lazygen")).sum().backward()
    grad = layer.weight.grad
    lr.mark_step(wait=True)
    assert lr.inner(grad)._value.node._data.is_contiguous()
    assert executor.compile_cache_size() >= 1


def test_a_finished_runs_handle_and_inputs_outlive_its_delivery(async_on):
    """The worker must not hold the last reference to tensors Python has seen (see
    launches.InFlight): the delivering thread keeps the run's handle and inputs until the
    next run is delivered."""
    from lazygen.runtime.execution import launches

    x = torch.ones(4, device="lazygen") * 3
    lr.mark_step()
    x.cpu()
    handle, inputs = launches.retired()[-1]
    assert handle.done() and inputs
    y = x + 1
    lr.mark_step()
    y.cpu()
    assert launches.retired()[-1][0] is not handle  # the older one is released now


_EXIT_WITH_RUN_IN_FLIGHT = """
import torch
import lazygen.runtime as lr
lr.init()
model = torch.nn.Linear(32, 8).to("lazygen")
opt = torch.optim.SGD(model.parameters(), lr=0.1)
data = torch.randn(16, 32).to("lazygen")
for _ in range(5):
    opt.zero_grad()
    loss = model(data).square().mean()
    loss.backward()
    opt.step()
    lr.mark_step()
print(float(loss.detach().cpu()))
lr.mark_step()  # the interpreter exits with this run in flight
"""


def test_the_process_exits_cleanly_with_a_run_in_flight():
    import subprocess

    for _ in range(3):
        done = subprocess.run(
            [sys.executable, "-c", _EXIT_WITH_RUN_IN_FLIGHT], capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr[-2000:]
        assert "terminate" not in done.stderr
