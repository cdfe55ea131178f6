"""The conformance worker: ``python -m lazygen.conformance.worker`` runs a chunk of entries
on one backend's lazy device and streams an event per step on its stdout.

It is a separate process so that an entry that kills its interpreter (a signal, an abort)
takes down only its chunk: the runner sees which entry had started and had not finished.
The request is one JSON object on stdin (see ``Request``); every event is one line
``MARK + json`` on the stdout it was started with. Anything else the entries print, from
Python or from C++, goes to stderr, as does faulthandler's traceback of a fatal signal.
"""

from __future__ import annotations

import contextlib
import faulthandler
import json
import os
import sys
import time
import traceback
import warnings
from dataclasses import dataclass, replace
from typing import IO

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

#: Prefix of the worker's event lines.
MARK = "@@lazygen-conformance@@ "
#: Prefix of the stderr lines naming each aten op called on lazy tensors (``trace_ops``).
OP_MARK = "@@lazygen-op@@ "
#: Exit status of a worker that could not set up (bad backend, unknown entry).
SETUP_FAILED = 3


@dataclass
class Request:
    """What one worker runs: ``entries`` by name on ``backend`` (None: ``LAZYGEN_BACKEND``,
    else the default), samples of ``dtype``, gradients with ``grad``, at most ``samples``
    samples per entry, ``threads`` intra-op threads (None: torch's default). With
    ``trace_ops`` every aten op called on a lazy tensor is written to stderr as it starts
    (``OP_MARK + name``), so the last one names the op a crash happened in."""

    entries: list[str]
    backend: str | None = None
    dtype: str = "float32"
    grad: bool = False
    samples: int = 100_000
    conversions: bool = False
    threads: int | None = None
    trace_ops: bool = False


class _Events:
    """Writes event lines to the protocol stream, one flushed line each."""

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream

    def emit(self, event: str, **fields) -> None:
        self.stream.write(MARK + json.dumps({"event": event, **fields}) + "\n")
        self.stream.flush()


class _OpTracer(TorchDispatchMode):
    """Writes ``OP_MARK + op`` to fd 2, unbuffered (it must survive a crash), for each aten
    op that reaches dispatch with a tensor on the lazy device."""

    def __init__(self, device_type: str) -> None:
        super().__init__()
        self.device_type = device_type

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        leaves, _ = tree_flatten((args, kwargs))
        if any(isinstance(t, torch.Tensor) and t.device.type == self.device_type for t in leaves):
            os.write(2, f"{OP_MARK}{func}\n".encode())
        return func(*args, **kwargs)


def _protocol_stream() -> IO[str]:
    """A private copy of stdout for events; fd 1 then points at stderr so that output of
    the code under test cannot interleave with (or forge) an event line."""
    sys.stdout.flush()
    stream = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return stream


def run(request: Request, events: _Events) -> int:
    from .entries import DTYPES, entries_by_name, no_test_case_lookup

    if request.threads:
        torch.set_num_threads(request.threads)
    try:
        import lazygen.runtime as lr

        lr.init(request.backend)
    except Exception as exc:
        events.emit("setup_error", message=f"backend {request.backend!r}: {exc}")
        return SETUP_FAILED
    if request.dtype not in DTYPES:
        events.emit("setup_error", message=f"unknown dtype {request.dtype!r}")
        return SETUP_FAILED
    dtype = DTYPES[request.dtype]
    available = entries_by_name(dtype, request.grad, request.conversions)
    unknown = [name for name in request.entries if name not in available]
    if unknown:
        events.emit("setup_error", message=f"unknown entries: {', '.join(unknown)}")
        return SETUP_FAILED
    device = lr.device()
    with no_test_case_lookup():
        return _run_entries(request, events, available, device, dtype, lr)


def _run_entries(request: Request, events: _Events, available, device, dtype, lr) -> int:
    from .classify import EntryResult, run_entry

    events.emit("ready", backend=lr.backend().name, device=str(device))
    for name in request.entries:
        events.emit("start", entry=name)
        started = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tracer = _OpTracer(device.type) if request.trace_ops else contextlib.nullcontext()
            try:
                with tracer:
                    result = run_entry(
                        available[name], device, lr.metrics, request.samples, dtype, request.grad
                    )
            except Exception as exc:  # the classification itself failed: still a result
                result = EntryResult(name, "error", 0, f"harness: {type(exc).__name__}: {exc}")
            try:
                lr.mark_step(wait=True)  # its pending work runs (or crashes) as its own
            except Exception as exc:
                result = replace(
                    result, outcome="error", detail=f"mark_step: {type(exc).__name__}: {exc}"
                )
        result = replace(result, seconds=round(time.perf_counter() - started, 3))
        events.emit("result", result=result.to_json())
    return 0


def main() -> int:
    events = _Events(_protocol_stream())
    faulthandler.enable(file=sys.stderr, all_threads=True)
    try:
        request = Request(**json.loads(sys.stdin.read()))
    except (ValueError, TypeError) as exc:
        events.emit("setup_error", message=f"bad request: {exc}")
        return SETUP_FAILED
    try:
        return run(request, events)
    except Exception:
        events.emit("setup_error", message=traceback.format_exc())
        return SETUP_FAILED


if __name__ == "__main__":
    sys.exit(main())
