"""Tensor assertions in captured graphs: checked at every replay, not once at capture.

Dynamo turns a Python ``assert`` on a tensor (``assert (x > 0).all(), "..."``) into
``torch._assert_async``; aot_autograd's graphs keep it as ``aten._assert_async`` (or its
functional form, which returns a dependency token); torch's ``one_hot`` checks its class
values with it (MoE routers: SwitchTransformers). The op returns nothing, so tracing it
through the eager fallback checked the first call's values only and left no trace in the
IR: every replay skipped the check and returned what eager refuses to compute.

The capture instead traces the condition as one more result of the compiled graph (a
one-element bool, computed with the rest of the graph: no cut, no sync of its own) and the
replay raises eager's ``RuntimeError`` when it is false, before any result reaches the
caller or the replay writes an argument back (a backend that writes arguments inside the
graph, ``ir.InputWrite``, has written them: aot_autograd moves an input's mutation after
the assertion, eager left it where the program put it).
"""

from __future__ import annotations

import torch

_aten = torch.ops.aten

#: The FX targets of a tensor assertion, each ``(condition, message?, ...)``.
ASSERT_OPS = frozenset(
    {_aten._assert_async.default, _aten._assert_async.msg, _aten._functional_assert_async.msg}
)

#: What eager's ``_assert_async`` raises without a message.
DEFAULT_MESSAGE = "Expected Tensor with single nonzero value, but got zero"


def trace(target, args, kwargs) -> tuple[torch.Tensor | None, str, object]:
    """``(condition, message, what the op returns)`` for an assertion traced on lazy
    tensors: the condition as a 0-d bool tensor, true where eager's is nonzero (built, not
    read), or None when the op must run as it is (a condition that is not one element
    raises eager's error; the capture also runs one on a host constant as it is)."""
    cond = args[0]
    message = args[1] if len(args) > 1 else kwargs.get("assert_msg", DEFAULT_MESSAGE)
    # the functional form hands its dependency token on (nothing reads its value)
    returned = args[2] if target is _aten._functional_assert_async.msg else None
    if not isinstance(cond, torch.Tensor) or cond.numel() != 1:
        return None, message, returned
    # ``ne`` makes a node of its own even for an argument that is the condition itself
    return cond.reshape(()).ne(0), message, returned


def check(results: list, asserts: list[tuple[int, str]]) -> None:
    """Raise as eager does when one of the replay's assertion results is false."""
    for index, message in asserts:
        if not bool(results[index]):
            raise RuntimeError(message)
