"""Errors raised while autograd runs backward on the lazy device, delivered to the
``backward()`` / ``autograd.grad()`` call instead of aborting the process.

Why this exists: torch's autograd engine runs each backward node of the lazy device on its
device thread inside a stream guard. When Python code raises there (a lazy kernel, a tensor
hook, a ``grad_fn`` hook), torch throws a C++ ``python_error`` *with the Python error still
set* and unwinds through that guard. The guard's destructor asks the device guard for its
type, and torch's Python device guard (``torch._C._acc.DeviceGuard``) answers by calling
``type_`` in Python from a ``noexcept`` function. A call into Python while an error is set
fails, and the failure inside ``noexcept`` is ``std::terminate``: the user's process dies with
SIGABRT ("terminate called without an active exception").

The guard therefore calls :func:`take_over_pending_error` before answering: any error still
set on that thread surfaces in that Python frame (CPython refuses to return a result with an
error set and raises ``SystemError`` chained to it), is kept here, and the guard answers
normally. The engine then reports an empty error to the caller, and the wrapper that
:func:`install` puts around torch's ``_engine_run_backward`` raises the kept error instead,
with its own traceback. ``add_translator`` lets other parts of the runtime turn the engine's
errors into ones that say what to do (see ``autograd_queue``).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable

import torch.autograd
import torch.autograd.graph

from .. import state

Translator = Callable[[BaseException], "BaseException | None"]

_lock = threading.Lock()


class TakenOver(list):
    """Errors taken over on the engine's threads, oldest first, until ``backward()`` raises
    the first (a part of ``state.runtime``)."""


class _Translators(list):
    """The translators modules install at import (``add_translator``): held for the process
    (``state.for_process``), as an import happens once."""


_probe = int  # any builtin: calling it while an error is set raises that error's SystemError


def take_over_pending_error() -> None:
    """Keep and clear the Python error set on this thread, if any (no-op otherwise).

    Called from code that torch runs in ``noexcept`` C++ while an error may be set."""
    try:
        _probe()
    except BaseException as refused:  # noqa: BLE001 - every pending error is kept, none lost
        original = refused.__cause__ if isinstance(refused, SystemError) else None
        kept = state.part(TakenOver)
        with _lock:
            kept.append(original if original is not None else refused)


def _take_kept() -> BaseException | None:
    taken = state.part(TakenOver)
    with _lock:
        kept = taken[0] if taken else None
        taken.clear()
    return kept


def add_translator(translator: Translator) -> None:
    """``translator(error)`` returns the error to raise instead of the engine's, or None."""
    translators = state.for_process(_Translators)
    if translator not in translators:
        translators.append(translator)


def install() -> None:
    """Wrap torch's backward entry point once per process (idempotent)."""
    original = torch.autograd.graph._engine_run_backward
    if getattr(original, "_lazygen_delivers_errors", False):
        return

    @functools.wraps(original)
    def run_backward(*args, **kwargs):
        _take_kept()  # a stale error from a backward run outside this entry point
        try:
            return original(*args, **kwargs)
        except BaseException as error:
            kept = _take_kept()
            if kept is not None:
                # Its own cause stays; the engine's empty error is no context worth showing.
                raise kept from kept.__cause__
            for translator in state.for_process(_Translators):
                replacement = translator(error)
                if replacement is not None:
                    raise replacement from None
            raise

    run_backward._lazygen_delivers_errors = True
    # torch.autograd binds the function by name at import, so both names are replaced.
    torch.autograd.graph._engine_run_backward = run_backward
    torch.autograd._engine_run_backward = run_backward
