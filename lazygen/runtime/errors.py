"""The runtime's errors: one base class, ``LazygenRuntimeError``, for every error lazygen's
runtime raises itself (a ``RuntimeError``, as torch's own errors are), and
``LazyGraphError`` for a graph that failed: which op, at which stage, traced where.

Errors that mirror torch's for the same mistake (a wrong dtype, a missing device) keep
torch's wording, so code written against eager sees the message it expects."""

from __future__ import annotations

import copy
import traceback
from types import MappingProxyType


class LazygenRuntimeError(RuntimeError):
    """Base class of the errors lazygen's runtime raises (catch it to tell them from
    torch's own)."""


#: What to do, by stage. A lowering sees no data, only the traced op and its shapes, so
#: its failure is the backend's (a lowering context without a case for the op, a
#: hand-written ``lower_<name>`` that raises), whatever the program: say where that is
#: fixed. Compilation and execution errors may be the program's own (a wrong size that
#: eager would refuse too), so they keep the cause's text alone.
_HINTS = MappingProxyType(
    {
        "lowering": (
            " (lowering runs before anything does, so this is the backend's error, not the "
            "program's: fix the lowering of this op — the backend's LoweringContext.call, or "
            "the op's hand-written lower_<name> — or declare the op in the backend's "
            "refused_ops() so that it runs eagerly; docs/backend-guide.md, sections 6 and 7)"
        ),
    }
)


class LazyGraphError(LazygenRuntimeError):
    """Lowering, compiling or running a lazy graph failed.

    ``op_name`` names the IR node's op, ``source`` the user's ``file:line`` that traced it
    (recorded with ``LAZYGEN_DEBUG=1``), ``stage`` is ``"lowering"``, ``"compilation"`` or
    ``"execution"``, ``backend`` the backend's name; the original exception is ``cause``
    (and ``__cause__``).

    The error stays with the tensors whose values depend on the failed node: reading one
    raises it again, while the graph's other tensors keep their IR and sync on their own
    (see ``executor``). ``failed_node`` is the IR node that failed (None when the backend
    cannot tell), kept only until the executor has marked those tensors: a program that
    holds the error (a test runner keeping the last exception) holds no IR through it.
    """

    def __init__(self, stage: str, node, cause: BaseException | None, backend=None) -> None:
        self.stage = stage
        self.failed_node = node
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
        super().__init__(f"lazygen: {stage} of {what}{on} failed{detail}{_HINTS.get(stage, '')}")

    def described_by(self, backend) -> LazyGraphError:
        """The same error, worded by ``backend`` (errors raised while lowering know no
        backend yet)."""
        return LazyGraphError(self.stage, self.failed_node, self.cause, backend)

    def detached(self) -> LazyGraphError:
        """A copy that holds no frame: what failed tensors store, and what a read of one
        raises (same message, fields and cause, the cause as ``frame_free`` makes it). A
        stored error that was raised holds the frames it passed through, and so does its
        cause: each frame holds its locals and its caller (``f_back``), up to the sync
        that held the failed tensor. A failed tensor holding such an error makes a cycle
        through C++ (autograd graphs) that the garbage collector cannot free, keeping the
        failed step's tensors and IR alive for good."""
        again = type(self).__new__(type(self))
        again.__dict__.update(self.__dict__)
        again.args = self.args
        again.__cause__ = frame_free(self.__cause__)
        again.__suppress_context__ = True
        again.cause = again.__cause__ if self.cause is self.__cause__ else frame_free(self.cause)
        return again

    def release_ir(self) -> None:
        """Let go of the failed node and of the locals of the finished frames that raised the
        error and its cause (lowering contexts, graphs, tensor lists): the text and the
        traceback's lines stay."""
        self.failed_node = None
        seen: set[int] = set()
        chain: list[BaseException | None] = [self, self.cause]
        while chain:
            error = chain.pop()
            if error is None or id(error) in seen:
                continue
            seen.add(id(error))
            if isinstance(error, LazyGraphError):
                error.failed_node = None
            if error.__traceback__ is not None:
                traceback.clear_frames(error.__traceback__)
            chain += [error.__cause__, error.__context__]


def frame_free(error: BaseException | None) -> BaseException | None:
    """A copy of ``error`` as it reads (type, message, fields), holding no frame: without
    a traceback, whose lines it keeps as a note (shown when the error prints: where a
    backend's lowering raised stays visible), its cause made the same way. Always a new
    object, so that raising it attaches the raiser's frames to the copy, never to a
    stored error. An exception that cannot be copied (a constructor taking other
    arguments than its ``args``) becomes a ``LazygenRuntimeError`` naming its type and
    message."""
    if error is None:
        return None
    if isinstance(error, LazyGraphError):
        return error.detached()
    try:
        again = copy.copy(error)  # type(error)(*error.args), then its __dict__
    except Exception:
        again = LazygenRuntimeError(f"{type(error).__name__}: {error}")
    notes = list(getattr(error, "__notes__", None) or [])
    if error.__traceback__ is not None:
        lines = "".join(traceback.format_tb(error.__traceback__)).rstrip()
        notes.append(f"{type(error).__name__} was raised here (most recent call last):\n{lines}")
    if notes:
        again.__notes__ = notes
    again.__traceback__ = None
    again.__cause__ = frame_free(error.__cause__)
    again.__suppress_context__ = True
    return again


class GraphCutWarning(UserWarning):
    """Ops without a lazy kernel cut a step into more graphs than it needs (each read
    tensors with pending IR, so the graph traced so far ran first). Warned once per
    process; ``lazygen.runtime.metrics.fallback_report()`` lists the ops and where they
    ran. Silence it with ``warnings.filterwarnings("ignore", category=GraphCutWarning)``."""
