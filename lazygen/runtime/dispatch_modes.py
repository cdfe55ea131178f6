"""Dispatcher states a backend runs or compiles its graphs in.

Apart from ``backend_interface`` (the contract) because these are tools a backend uses
while running (``without_autograd``) or compiling (``outside_dispatch``), not methods the
core calls; ``backend_interface`` re-exports them, where backends have always found them.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

import torch
from torch.utils._python_dispatch import _disable_current_modes

from . import state


class without_autograd:
    """``torch.no_grad()`` for a backend's ``execute``, set with the C switch directly.

    A graph runs on device data that no autograd graph records, and ``torch.no_grad()``, a
    Python context manager with a decorator's machinery, costs about 2 us a call, a tenth of
    a tiny graph's run (a replayed ``torch.compile`` step runs two).
    """

    __slots__ = ("previous",)

    def __enter__(self) -> None:
        """Turn autograd off, remembering its state."""
        self.previous = torch.is_grad_enabled()
        torch._C._set_grad_enabled(False)

    def __exit__(self, *exc_info) -> None:
        """Put autograd's state back."""
        torch._C._set_grad_enabled(self.previous)


@state.process_memo
def _plain_dispatch_keys() -> tuple[torch._C.DispatchKeySet, torch._C.DispatchKeySet]:
    """The dispatcher's thread-local included and excluded keys of a thread in no kernel.

    Read once on a new thread (a thread's keys start at their defaults).
    """
    found: list = []
    reader = threading.Thread(
        target=lambda: found.extend(
            (torch._C._dispatch_tls_local_include_set(), torch._C._dispatch_tls_local_exclude_set())
        )
    )
    reader.start()
    reader.join()
    return found[0], found[1]


@contextlib.contextmanager
def outside_dispatch() -> Iterator[None]:
    """Inside the block, torch dispatches as it does from plain Python.

    The thread's included and excluded dispatch keys are at their defaults and no
    ``TorchDispatchMode`` is active.

    A backend that traces with torch while compiling (Inductor: aot_autograd's trace) needs
    it: the core compiles a graph wherever the program first needs its results, and a host
    read (``.cpu()``, ``.item()``) does so inside the lazy tensor's ``__torch_dispatch__``,
    where autograd and functionalization are excluded. There, aot's trace skipped the
    decompositions torch registers at the autograd key (``upsample_bilinear2d``'s), so one
    graph compiled differently when read than after ``mark_step()``.
    """
    include, exclude = _plain_dispatch_keys()
    with torch._C._ForceDispatchKeyGuard(include, exclude), _disable_current_modes():
        yield
