"""The runtime's errors: one base class, ``LazygenRuntimeError``, for every error lazygen's
runtime raises itself (a ``RuntimeError``, as torch's own errors are), and
``LazyGraphError`` for a graph that failed: which op, at which stage, traced where.

Errors that mirror torch's for the same mistake (a wrong dtype, a missing device) keep
torch's wording, so code written against eager sees the message it expects."""

from __future__ import annotations


class LazygenRuntimeError(RuntimeError):
    """Base class of the errors lazygen's runtime raises (catch it to tell them from
    torch's own)."""


class LazyGraphError(LazygenRuntimeError):
    """Lowering, compiling or running a lazy graph failed.

    ``op_name`` names the IR node's op, ``source`` the user's ``file:line`` that traced it
    (recorded with ``LAZYGEN_DEBUG=1``), ``stage`` is ``"lowering"``, ``"compilation"`` or
    ``"execution"``, ``backend`` the backend's name; the original exception is ``cause``
    (and ``__cause__``). The tensors being synced keep their IR.
    """

    def __init__(self, stage: str, node, cause: BaseException | None, backend=None) -> None:
        self.stage = stage
        self.node = node
        self.cause = cause
        self.backend = None if backend is None else backend.name
        self.op_name = None if node is None else (node.op_name or node.op_kind)
        self.source = None if node is None else node.source
        if node is None:
            what = "a lazy graph"
        else:
            where = self.source or "an unknown line (set LAZYGEN_DEBUG=1 to record it)"
            what = f"{self.op_name}, traced at {where}"
        on = "" if backend is None else f" on backend {backend.name!r}"
        detail = ""
        if cause is not None:
            text = str(cause) if backend is None else backend.error_message(cause)
            detail = f": {type(cause).__name__}: {text}"
        super().__init__(f"lazygen: {stage} of {what}{on} failed{detail}")

    def described_by(self, backend) -> LazyGraphError:
        """The same error, worded by ``backend`` (errors raised while lowering know no
        backend yet)."""
        return LazyGraphError(self.stage, self.node, self.cause, backend)
