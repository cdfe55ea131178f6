"""A backward through lazy tensors runs on the thread that calls it.

torch's autograd engine hands every backward node whose gradients live on an accelerator to
that device's worker thread, and the calling thread waits for it. On the lazy device a
backward node does no device work: it records IR (or splices one call of a compiled
backward graph), in Python, under the GIL. The hop buys nothing and costs two thread
wake-ups and two GIL hand-offs per ``backward()``: measured on a captured training step
(``bench/backward_thread_ab.py``), 3-6% of its CPU time and about 10% of its wall time with
the JAX backend.

``install()`` wraps torch's backward entry point (``_engine_run_backward``, under both of
its names, as ``backward_errors`` does) so that a ``backward()`` / ``autograd.grad()`` whose
roots are all tensors of ``<device>:0`` runs with ``torch.autograd.set_multithreading_enabled
(False)``: torch's documented mode in which the engine runs every node on the calling thread.
It changes where the nodes run, never what they compute nor whether they run: the engine
still sets each node's device and stream, accumulates into ``.grad`` and runs hooks in the
same order. A root on another device (or a ``GradientEdge``) keeps torch's default, as does
a caller who turned multithreading off (or on) for the call itself. Roots of ``<device>:1``
and above, and every root once ``autograd_queue`` found the engine without a queue for the
device, go to the engine's queue, whose refusal ``autograd_queue`` explains (the calling
thread would run them, but what runs on the lazy device must not depend on which roots a
backward has). ``autograd_queue``'s probe and exit-time drain, which exist to exercise the
device thread, call the engine past this wrapper (``engine_threads``).
"""

from __future__ import annotations

import functools

import torch
import torch.autograd
import torch.autograd.graph

from .. import state

_multithreading_enabled = torch._C._is_multithreading_enabled
_set_multithreading_enabled = torch._C._set_multithreading_enabled
_backend_name = torch._C._get_privateuse1_backend_name


class _EngineQueue:
    """Whether torch's engine lacks a queue for the lazy device (``autograd_queue``'s probe
    said so): fixed at the process's first backward, so held for the process
    (``state.for_process``)."""

    __slots__ = ("missing",)

    def __init__(self) -> None:
        self.missing = False


def engine_lacks_queue() -> None:
    """From now on every backward keeps torch's engine threads (and so its refusal)."""
    state.for_process(_EngineQueue).missing = True


def engine_threads(run):
    """``run`` (torch's backward entry point as installed) without this module's wrapper:
    the lazy device's nodes on the engine's device thread."""
    return getattr(run, "_lazygen_engine_threads", run)


def on_calling_thread(roots) -> bool:
    """Whether a backward from ``roots`` runs on the calling thread: each root a tensor of
    the lazy device's index 0, multithreading on and the engine with a queue for it."""
    if not roots or not _multithreading_enabled() or state.for_process(_EngineQueue).missing:
        return False
    name = _backend_name()
    for root in roots:
        if not isinstance(root, torch.Tensor):
            return False
        device = root.device
        if device.type != name or device.index not in (0, None):
            return False
    return True


def install() -> None:
    """Wrap torch's backward entry point once per process (idempotent)."""
    original = torch.autograd.graph._engine_run_backward
    if getattr(original, "_lazygen_on_calling_thread", False):
        return

    @functools.wraps(original)
    def run_backward(t_outputs, *args, **kwargs):
        if not on_calling_thread(t_outputs):
            return original(t_outputs, *args, **kwargs)
        _set_multithreading_enabled(False)
        try:
            return original(t_outputs, *args, **kwargs)
        finally:
            _set_multithreading_enabled(True)

    run_backward._lazygen_on_calling_thread = True
    run_backward._lazygen_engine_threads = original
    run_backward._lazygen_delivers_errors = getattr(original, "_lazygen_delivers_errors", False)
    # torch.autograd binds the function by name at import, so both names are replaced.
    torch.autograd.graph._engine_run_backward = run_backward
    torch.autograd._engine_run_backward = run_backward
