"""A backward whose roots are all on the lazy device's index 0 runs on the calling thread
(``privateuse1/backward_thread.py``); any other keeps torch's engine threads. Either way
the gradients and the hooks' order are torch's."""

from __future__ import annotations

import contextlib
import threading

import pytest
import torch

import lazygen.runtime as lr
from lazygen.runtime.privateuse1 import backward_thread


@pytest.fixture(autouse=True)
def _init():
    lr.init()


@contextlib.contextmanager
def _engine_threads():
    """torch's backward entry point past lazygen's calling-thread wrapper, for a while."""
    graph, wrapped = torch.autograd.graph, torch.autograd.graph._engine_run_backward
    graph._engine_run_backward = torch.autograd._engine_run_backward = (
        backward_thread.engine_threads(wrapped)
    )
    try:
        yield
    finally:
        graph._engine_run_backward = torch.autograd._engine_run_backward = wrapped


def _thread_names_of_backward(roots_of, pinned: bool = False) -> tuple[list[str], torch.Tensor]:
    """The threads a tensor hook, a grad_fn hook and an accumulate-grad hook ran on, and the
    leaf's gradient, for a backward from ``roots_of(y)``."""
    p = torch.tensor([1.0, 2.0, 3.0], device=lr.device(), requires_grad=True)
    y = p * p
    names: list[str] = []
    y.register_hook(lambda grad: names.append(threading.current_thread().name))
    y.grad_fn.register_hook(lambda *_: names.append(threading.current_thread().name))
    p.register_post_accumulate_grad_hook(lambda _: names.append(threading.current_thread().name))
    roots = roots_of(y)
    if pinned:
        with _engine_threads():
            torch.autograd.backward(roots)
    else:
        torch.autograd.backward(roots)
    return names, p.grad.cpu()


def test_lazy_roots_run_on_the_calling_thread_with_torchs_gradients():
    names, grad = _thread_names_of_backward(lambda y: [y.sum()])
    caller = threading.current_thread().name
    assert names == [caller] * 3
    torch.testing.assert_close(grad, torch.tensor([2.0, 4.0, 6.0]))
    assert torch._C._is_multithreading_enabled()  # restored


def test_past_the_wrapper_the_engines_device_thread_runs_them():
    names, grad = _thread_names_of_backward(lambda y: [y.sum()], pinned=True)
    caller = threading.current_thread().name
    assert len(names) == 3 and caller not in names
    torch.testing.assert_close(grad, torch.tensor([2.0, 4.0, 6.0]))


def test_a_cpu_root_among_the_roots_keeps_torchs_threads():
    cpu_leaf = torch.ones(2, requires_grad=True)
    names, grad = _thread_names_of_backward(lambda y: [y.sum(), (cpu_leaf * 2).sum()])
    assert threading.current_thread().name not in names
    torch.testing.assert_close(grad, torch.tensor([2.0, 4.0, 6.0]))
    torch.testing.assert_close(cpu_leaf.grad, torch.full((2,), 2.0))


def test_the_callers_own_choice_is_kept():
    """A caller that turned multithreading off keeps it off after the call; one that keeps
    it on gets it back on after a backward that raised."""
    with torch.autograd.set_multithreading_enabled(False):
        names, _ = _thread_names_of_backward(lambda y: [y.sum()])
        assert not torch._C._is_multithreading_enabled()
    assert names == [threading.current_thread().name] * 3
    p = torch.ones(2, device=lr.device(), requires_grad=True)
    y = p * 2
    y.register_hook(lambda grad: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        y.sum().backward()
    assert torch._C._is_multithreading_enabled()


def test_which_roots_run_on_the_calling_thread():
    on = backward_thread.on_calling_thread
    lazy = torch.ones(1, device=lr.device())
    assert on((lazy,))
    assert not on(())
    assert not on((lazy, torch.ones(1)))
    assert not on((torch.ones(1, device=f"{lr.device().type}:1"),))
    edge = torch.autograd.graph.get_gradient_edge(lazy.requires_grad_() * 2)
    assert not on((edge,))


def test_an_engine_without_the_devices_queue_keeps_its_threads(monkeypatch):
    """Once the probe found no queue (a backward ran before init), every backward keeps the
    engine's threads, so it gets the probe's clear error rather than running on some roots
    only (``test_autograd_queue`` runs that process)."""
    held = lr.state.for_process(backward_thread._EngineQueue)
    monkeypatch.setattr(held, "missing", False)
    assert backward_thread.on_calling_thread((torch.ones(1, device=lr.device()),))
    backward_thread.engine_lacks_queue()
    assert not backward_thread.on_calling_thread((torch.ones(1, device=lr.device()),))


def test_installed_once_around_the_error_delivery():
    run = torch.autograd.graph._engine_run_backward
    assert run._lazygen_on_calling_thread and run._lazygen_delivers_errors
    assert backward_thread.engine_threads(run)._lazygen_delivers_errors
    assert torch.autograd._engine_run_backward is run
    backward_thread.install()
    assert torch.autograd.graph._engine_run_backward is run
