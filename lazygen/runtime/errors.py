"""Errors of the graph executor: which op failed, at which stage, and where it was traced."""

from __future__ import annotations


class LazyGraphError(RuntimeError):
    """Lowering, compiling or running a lazy graph failed.

    ``op_name`` names the IR node's op, ``source`` the user's ``file:line`` that traced it
    (recorded with ``LAZYGEN_DEBUG=1``), ``stage`` is ``"lowering"`` or ``"execution"``; the
    original exception is ``__cause__``. The tensors being synced keep their IR.
    """

    def __init__(self, stage: str, node, cause: BaseException | None) -> None:
        self.stage = stage
        self.node = node
        self.op_name = None if node is None else (node.op_name or node.op_kind)
        self.source = None if node is None else node.source
        if node is None:
            what = "a lazy graph"
        else:
            where = self.source or "an unknown line (set LAZYGEN_DEBUG=1 to record it)"
            what = f"{self.op_name}, traced at {where}"
        detail = "" if cause is None else f": {type(cause).__name__}: {_message(cause)}"
        super().__init__(f"lazygen: {stage} of {what} failed{detail}")


_TS_TRACEBACK = "Traceback of TorchScript (most recent call last):"


def _message(cause: BaseException) -> str:
    """The cause's message without the TorchScript interpreter's preamble."""
    text = str(cause)
    if _TS_TRACEBACK in text:
        text = text.split(_TS_TRACEBACK, 1)[1].strip()
        for prefix in ("RuntimeError: ", "Error: "):
            if text.startswith(prefix):
                text = text[len(prefix) :]
    return text
