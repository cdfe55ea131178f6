"""Lazy tensors as ``torch.compile`` inputs: Dynamo fakes them as torch fakes XLA's tensors.

A model moved to the lazy device and compiled (``torch.compile(step)`` of a training step
whose model, optimizer state and batch live on ``lazygen``) hands Dynamo lazy tensors:
functional tensor wrappers (C++ functionalization) around lazygen's inner ``LazyTensor``.
torch's meta converter takes a functional tensor apart (its inner tensor faked, wrapped
again, its autograd metadata mirrored), which for a parameter failed with a bare
``AssertionError: True != False`` (``is_leaf``), and would hand aot_autograd a functional
wrapper it cannot functionalize again. torch treats XLA's tensors, functional wrappers of
the same kind, as plain dense tensors of their device (``meta_utils``: ``device.type not
in ("xla", "lazy")``). ``install()`` wraps the describer so that the lazy device's tensors
are described the same way: Dynamo and aot_autograd then trace fake tensors of the lazy
device, and lazygen's Dynamo backend replays their graphs on the tensors' own IR
(``lazygen.dynamo``).

The converter still cannot describe a lazy tensor that is a view (torch refuses to fake a
functional view: "Cannot safely fakify a view"); such an input raises ``CompileInputError``,
which says how to pass it.

Lazy tensors seen by Dynamo also mean Dynamo sees lazygen's own Python running eagerly
between its graphs (a kernel called by the program's uncompiled parts): it would try to
compile those frames, break its graphs in them and recompile them per call. The lazy
device's code is put on Dynamo's skip list the first time it fakes a lazy tensor
(``skip_lazygen_frames``).
"""

from __future__ import annotations

import dataclasses
import functools
import sys

from torch._subclasses import meta_utils

from .. import dispatch, state
from ..errors import LazygenRuntimeError
from ..tracing.tensor import is_lazy
from . import patches


class _Skipped:
    """The packages lazygen put on Dynamo's skip list, and how many kernels were installed
    when their modules last were: Dynamo holds the list for the process
    (``state.for_process``)."""

    __slots__ = ("packages", "kernels")

    def __init__(self) -> None:
        self.packages: list[str] = []
        self.kernels = 0


class CompileInputError(LazygenRuntimeError, AssertionError):
    """A lazy tensor that torch's meta converter cannot fake reached ``torch.compile``.

    Also an ``AssertionError``, as the converter's own failures are: Dynamo passes those
    to the caller unwrapped (any other error reaches the user inside Dynamo's internal
    error)."""


def refusal(tensor, error: Exception) -> CompileInputError:
    return CompileInputError(
        f"lazygen: torch.compile cannot take a view of a {tensor.device} tensor as an input "
        f"({tuple(tensor.shape)}, {tensor.dtype}): torch's meta converter refuses to fake a "
        f"view of a functional tensor ({error}). Pass its base, or a copy (.clone()), or "
        "make the view inside the compiled function"
    )


def _lazy_described(original):
    @functools.wraps(original)
    def describe_tensor(self, t, *args, **kwargs):
        if not is_lazy(t):
            return original(self, t, *args, **kwargs)
        skip_lazygen_frames()
        try:
            desc = original(self, t, *args, **kwargs)
        except RuntimeError as error:
            if t._is_view():
                raise refusal(t, error) from error
            raise
        if not desc.is_functional:
            return desc
        return dataclasses.replace(
            desc, is_functional=False, unwrapped=None, autograd_meta_from=None, current_level=None
        )

    describe_tensor._lazygen_original = original
    return describe_tensor


def skip_lazygen_frames(packages: tuple[str, ...] = ("lazygen",)) -> None:
    """Put ``packages`` on Dynamo's skip list (once each), and the modules of the installed
    kernels (``dispatch.kernel_modules``: a generated package's source folder need not be
    inside its package, as the built-in op list's is not in a source checkout, and a
    backend's own package is not lazygen's): Dynamo then never compiles a frame of theirs,
    so a lazy kernel that runs between compiled graphs runs as plain Python. Missing the
    generated kernels cost a captured step ~7%: ``loss.backward()``'s ``ones_like`` kernel
    was compiled in five pieces whose guards ran at every step."""
    if "torch._dynamo" not in sys.modules:
        return  # no Dynamo yet: its first compile fakes the inputs, which calls this again
    from torch._dynamo import trace_rules  # already imported: costs nothing

    installed, skipped = len(dispatch.installed().kernels), state.for_process(_Skipped)
    if installed != skipped.kernels:  # tables installed since: their kernels' modules too
        skipped.kernels = installed
        packages = (*packages, *sorted(dispatch.kernel_modules()))
    for package in packages:
        if package not in skipped.packages:
            trace_rules.add(package)
            skipped.packages.append(package)


def install() -> None:
    """Wrap the meta converter's describer (once per process)."""
    patches.wrap(meta_utils.MetaTensorDescriber, "describe_tensor", _lazy_described)
