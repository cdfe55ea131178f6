"""Where the user's code is: the innermost frame outside torch, lazygen and kernel modules,
as ``file:line`` (``user_source``, recorded on nodes and in the fallback report) or as a
``stacklevel`` for ``warnings.warn`` (``user_stacklevel``), so errors and warnings name the
user's line, not lazygen's.

Apart from the IR because it is about Python frames, not graphs: the IR, the eager
fallback, the recompile budget and the dumps all ask it.
"""

from __future__ import annotations

import os
import sys
import threading

import torch

_SKIP_DIRS = (os.path.dirname(torch.__file__), os.path.dirname(os.path.dirname(__file__)))


def is_internal_file(filename: str) -> bool:
    """Whether code in ``filename`` is torch's or lazygen's (not the user's)."""
    return filename.startswith(_SKIP_DIRS) or filename.startswith("<frozen")


def _is_internal(frame) -> bool:
    module = frame.f_globals.get("__name__", "")
    if module.startswith(("torch.", "lazygen.")) or module in ("torch", "lazygen"):
        return True
    if is_internal_file(frame.f_code.co_filename):
        return True
    # Kernel modules (generated or hand-written) import the kernel support as ``rt``.
    rt = frame.f_globals.get("rt")
    return getattr(rt, "__name__", None) == "lazygen.runtime.kernel_support"


def user_stacklevel() -> int:
    """The ``stacklevel`` for ``warnings.warn`` called here that names the first frame of
    the user's code (not torch's or lazygen's) among the callers; 1 when there is none."""
    frame, level = sys._getframe(1), 1
    while frame is not None and _is_internal(frame):
        frame, level = frame.f_back, level + 1
    return level if frame is not None else 1


#: The source of what a backward node traces with no user frame between it and autograd's
#: engine (a lazy kernel of a ``grad_fn``, not a user's hook).
BACKWARD_SOURCE = "backward (autograd's engine)"

#: The name of torch's Python entry into the engine (``torch.autograd.graph``), which every
#: ``backward()`` / ``autograd.grad()`` passes through.
_ENGINE_ENTRY = "_engine_run_backward"


def user_source() -> str | None:
    """``file:line`` of the innermost frame outside torch, lazygen and kernel modules;
    ``BACKWARD_SOURCE`` when torch's entry into the engine comes first (a backward node
    runs: on the calling thread, ``privateuse1/backward_thread.py``, the user's
    ``loss.backward()`` line is further out) or on another thread with no user frame
    (autograd's device thread); None on the main thread with none."""
    frame = sys._getframe(1)
    while frame is not None:
        if not _is_internal(frame):
            return f"{frame.f_code.co_filename}:{frame.f_lineno}"
        if frame.f_code.co_name == _ENGINE_ENTRY:
            return BACKWARD_SOURCE
        frame = frame.f_back
    if threading.current_thread() is not threading.main_thread():
        return BACKWARD_SOURCE
    return None
