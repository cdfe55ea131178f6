"""Step closures (``lazygen.runtime.execution.step_closures``): synchronous ones run inside
``mark_step``; ``run_async=True`` ones run on the closure thread once the step's graphs
ran, in order, while the program goes on; an exception of an asynchronous closure comes out
of the next ``mark_step`` or ``wait_device_ops`` and the closures queued after it do not
run (PyTorch's ``test/lazy/test_step_closures.py`` pins the same behaviours for LTC)."""

from __future__ import annotations

import contextlib
import gc
import threading
import weakref

import pytest
import torch

import lazygen.runtime as lr

TIMEOUT = 10


@pytest.fixture(autouse=True)
def _no_closures_left():
    lr.wait_device_ops()
    yield
    with contextlib.suppress(lr.LazygenRuntimeError):
        lr.wait_device_ops()


def test_a_synchronous_closure_has_run_when_mark_step_returns():
    seen = []
    x = torch.ones(2, device="lazygen") * 3
    lr.add_step_closure(lambda t: seen.append((threading.current_thread(), t.cpu().tolist())), (x,))
    assert seen == []
    lr.mark_step()
    assert seen == [(threading.current_thread(), [3.0, 3.0])]


def test_an_asynchronous_closure_runs_off_the_tracing_thread_while_the_program_goes_on():
    released, ran = threading.Event(), []

    def closure():
        ran.append((threading.current_thread(), released.wait(TIMEOUT)))

    lr.add_step_closure(closure, run_async=True)
    lr.mark_step()  # returns although the closure waits for the program
    released.set()
    lr.wait_device_ops()  # waits for the closure
    ((thread, was_released),) = ran
    assert thread is not threading.current_thread() and was_released


def test_the_closure_thread_keeps_no_arguments_alive():
    """Tensors handed to a closure die with the program's references (a lazy tensor held
    on the closure thread kept ``set_device_backend`` from switching the device)."""
    x = torch.ones(3, device="lazygen") * 2
    lr.add_step_closure(lambda t: t.sum().item(), (x,), run_async=True)
    lr.mark_step()
    lr.wait_device_ops()
    ref = weakref.ref(lr.inner(x))
    del x
    gc.collect()
    assert ref() is None


def test_an_asynchronous_closure_sees_its_step_materialised():
    x = torch.ones(3, device="lazygen")
    y = (x * 2).sum()
    seen = []
    lr.add_step_closure(
        lambda t: seen.append((lr.inner(t).is_materialized, t.item())), (y,), run_async=True
    )
    lr.mark_step()
    lr.wait_device_ops()
    assert seen == [(True, 6.0)]


def test_asynchronous_closures_run_in_the_order_they_were_added():
    order = []
    for step in range(3):
        for k in range(2):
            lr.add_step_closure(order.append, ((step, k),), run_async=True)
        lr.mark_step()
    lr.wait_device_ops()
    assert order == [(s, k) for s in range(3) for k in range(2)]


@pytest.mark.parametrize("surfaces_at", ["mark_step", "wait_device_ops"])
def test_an_asynchronous_exception_surfaces_later_and_stops_the_queue(surfaces_at):
    raised, later = threading.Event(), []

    def failing():
        raised.set()
        raise ValueError("closure failed")

    lr.add_step_closure(failing, run_async=True)
    lr.mark_step()  # does not raise: the closure runs later, elsewhere
    assert raised.wait(TIMEOUT)
    lr.add_step_closure(lambda: later.append("ran"), run_async=True)
    with pytest.raises(lr.LazygenRuntimeError, match="closure failed") as info:
        lr.mark_step() if surfaces_at == "mark_step" else lr.wait_device_ops()
    assert isinstance(info.value.__cause__, ValueError)
    lr.wait_device_ops()  # raised once: nothing left to raise
    lr.mark_step()
    lr.wait_device_ops()
    # A closure of the step whose mark_step raised the error never runs; one added before
    # wait_device_ops raised it belongs to the next step, which runs it.
    assert later == ([] if surfaces_at == "mark_step" else ["ran"])


def test_a_synchronous_exception_comes_out_of_mark_step():
    def failing():
        raise KeyError("sync closure")

    lr.add_step_closure(failing)
    with pytest.raises(KeyError, match="sync closure"):
        lr.mark_step()
