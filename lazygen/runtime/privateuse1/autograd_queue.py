"""Whether torch's autograd engine can run backward() on the lazy device.

The engine sizes its per-device ready queues once per process, on the first backward(),
from the device guards registered at that moment. A backward() that runs before
``lazygen.runtime.init()`` (so before the lazy device's guard exists) leaves the engine
without a queue for it, and every later backward() through a lazy tensor fails with
torch's ``device_ready_queues_ ... INTERNAL ASSERT FAILED ... please report a bug to
PyTorch``. (The same assert comes from a backward() through tensors of ``<device>:1`` and
above, which torch 2.13's engine has no queue for: ``other_index``.) The process cannot be
repaired; what can be done is to say so plainly:
``check(device)`` probes the engine once at init, warns, and makes later backward() calls
raise an error that names the cause and the fix instead of torch's assert.
"""

from __future__ import annotations

import atexit
import time
import warnings

import torch

from .. import state
from ..errors import LazygenRuntimeError
from . import backward_errors, backward_thread

_ASSERT_TEXT = "device_ready_queues_"


def explanation(device_type: str) -> str:
    """The user-facing account of the broken state, shared by the warning and the error."""
    return (
        f"lazygen: backward() cannot run on {device_type!r} tensors in this process: a "
        "backward() ran before lazygen.runtime.init(), and torch's autograd engine fixes "
        "its set of devices at the first backward() of a process. Call "
        "lazygen.runtime.init() before any backward(), e.g. at the top of the script or in a test suite's conftest; "
        "forward passes and inference on the lazy device still work"
    )


def other_index(device_type: str) -> str:
    """Why backward() cannot run through tensors of ``<device>:1`` and above."""
    return (
        f"lazygen: backward() through {device_type!r} tensors of an index other than 0 "
        "cannot run: torch's autograd engine keeps one queue per device index its device "
        "guard reports, and torch 2.13 lets a Python-registered guard report only index 0 "
        f"(docs/device-contract.md). Train on {device_type}:0; other indices work for "
        "forward passes and inference"
    )


def engine_has_queue(device: torch.device) -> bool:
    """Run an empty backward on ``device``; False when the engine has no queue for it."""
    try:
        _empty_backward(device)
    except RuntimeError as error:
        if _ASSERT_TEXT in str(error):
            return False
        raise
    return True


def _empty_backward(device: torch.device) -> list:
    """A backward of an empty leaf into itself on ``device``: its tensors and result.

    The engine is called directly (``torch.autograd.graph._engine_run_backward``, what
    ``torch.autograd.grad`` calls), skipping ``grad``'s check of the given gradient's
    size: that check imports ``torch.fx.experimental.symbolic_shapes`` (sympy, ~0.3 s),
    and an implicit gradient (``ones_like``) dispatches to the lazy tensor's class,
    whose first ``__torch_dispatch__`` makes torch import ``torch.distributed.tensor``
    (~0.6 s): neither ``init()`` nor the exit pays them (a program's first op does).
    It runs on the engine's device thread (``backward_thread.engine_threads``): the probe
    asks for that thread's queue, the drain waits for that thread."""
    leaf = torch.empty(0, device=device, requires_grad=True)
    grad = torch.empty(0, device=device)
    run = getattr(torch.autograd.graph, "_engine_run_backward", None)
    if run is None:  # a torch without it: the public way
        return [leaf, grad, *torch.autograd.grad(leaf, leaf, grad_outputs=grad)]
    run = backward_thread.engine_threads(run)
    return [leaf, grad, *run((leaf,), (grad,), False, False, (leaf,), False, accumulate_grad=False)]


def check(device: torch.device) -> bool:
    """Probe once; on failure warn and translate torch's assert on every later backward."""
    if engine_has_queue(device):
        _drain_at_exit(device)
        # The engine works for index 0; its assert can then only mean another index.
        _translate_engine_assert(other_index(device.type))
        return True
    message = explanation(device.type)
    backward_thread.engine_lacks_queue()
    warnings.warn(message, RuntimeWarning, stacklevel=3)
    _translate_engine_assert(message)
    return False


def _translate_engine_assert(message: str) -> None:
    def translate(error: BaseException) -> BaseException | None:
        if isinstance(error, RuntimeError) and _ASSERT_TEXT in str(error):
            return LazygenRuntimeError(message)
        return None

    backward_errors.add_translator(translate)


class _Drains:
    """The devices whose engine thread is drained at exit, and what the drain hands the
    engine, kept until the interpreter frees them itself: held for the process (torch's
    engine threads and ``atexit`` outlive any reset; ``state.for_process``)."""

    __slots__ = ("draining", "kept_for_exit")

    def __init__(self) -> None:
        self.draining: set[torch.device] = set()
        self.kept_for_exit: list[torch.Tensor] = []


#: How long the exit-time drain lets the device thread run (it needs microseconds).
_EXIT_GRACE_S = 0.002


def _drain_at_exit(device: torch.device) -> None:
    """At exit, let the engine's device thread finish before the interpreter finalizes.

    Why: the engine signals a backward's end before its device thread drops the task's
    references, and dropping a lazy tensor's last reference (or our Python device guard)
    runs Python on that thread. Once the interpreter is finalizing, a thread taking the GIL
    is made to exit, and that unwinds through torch's ``noexcept`` frames: SIGABRT
    ("terminate called without an active exception") in about one in twenty short scripts
    that call ``init()`` and exit. At exit (before finalization) one empty backward runs on
    the device: the thread takes tasks in order, so every earlier one has been cleaned up
    when it returns; its own tensors stay referenced here, so the thread drops no last
    reference, and a short wait lets it finish the guard calls of that task."""
    draining = state.for_process(_Drains).draining
    if device in draining:
        return
    draining.add(device)
    atexit.register(_drain, device)


def _drain(device: torch.device) -> None:
    try:
        state.for_process(_Drains).kept_for_exit.extend(_empty_backward(device))
    except Exception:  # noqa: BLE001 - exiting: a failed drain must not hide the real exit
        return
    time.sleep(_EXIT_GRACE_S)
