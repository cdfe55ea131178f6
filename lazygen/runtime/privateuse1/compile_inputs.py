"""Lazy tensors that require grad as ``torch.compile`` inputs: lazygen's error, with the way out.

A model moved to the lazy device and then compiled (``torch.compile(model.to("lazygen"))``,
any backend, Dynamo's ``eager`` too) hands Dynamo parameters that are lazy tensors
requiring grad. Dynamo makes a fake tensor of each input, and torch 2.13's meta converter
cannot describe a functional tensor whose ``requires_grad`` was set on the wrapper: it
failed with a bare ``AssertionError: True != False`` from ``meta_utils``, naming nothing
the user did. ``install()`` wraps ``MetaConverter.__call__`` so that this failure, for a
lazy tensor that requires grad, raises ``CompileInputError`` instead, which says what to
do: compile the model on the CPU (lazygen compiles it for the lazy device's backend), or
train it on the lazy device without ``torch.compile``. Every other tensor, and every
other failure, is torch's as before.
"""

from __future__ import annotations

import functools

from torch._subclasses import meta_utils

from .. import state
from ..errors import LazygenRuntimeError
from ..tracing.tensor import is_lazy

_originals: dict = {}


class CompileInputError(LazygenRuntimeError, AssertionError):
    """A lazy tensor that requires grad reached ``torch.compile`` as an input.

    Also an ``AssertionError``: it replaces torch's assertion at the same place, so code
    that caught that still catches it, and Dynamo passes it to the caller unwrapped.
    """


def refusal(tensor) -> CompileInputError:
    return CompileInputError(
        f"lazygen: torch.compile cannot take a {tensor.device} tensor that requires grad "
        "(a model moved to the lazy device, then compiled): torch 2.13's Dynamo cannot make "
        "a fake tensor of it. Keep the model on the CPU and compile it with "
        'torch.compile(model, backend="lazygen"), which runs its graphs on the lazy '
        "device's backend; or train it on the lazy device without torch.compile "
        "(lazygen.runtime.mark_step() per step)"
    )


def _guarded(original):
    @functools.wraps(original)
    def wrapper(self, t, *args, **kwargs):
        try:
            return original(self, t, *args, **kwargs)
        except AssertionError as error:
            if is_lazy(t) and t.requires_grad and not isinstance(error, CompileInputError):
                raise refusal(t) from error
            raise

    wrapper._lazygen_original = original
    return wrapper


def install() -> None:
    """Wrap the meta converter's entry (once per process)."""
    if _originals:
        return
    _originals["__call__"] = meta_utils.MetaConverter.__call__
    meta_utils.MetaConverter.__call__ = _guarded(meta_utils.MetaConverter.__call__)


state.once_per_process(
    __name__,
    ("_originals",),
    "torch's meta converter entry as it was before lazygen wrapped it: torch holds the wrapper for the process",
)
