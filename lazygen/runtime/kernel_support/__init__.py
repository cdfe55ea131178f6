"""What generated kernels call (imported as ``rt``); see docs/architecture.md, "Kernel support".

The contract's names, by job: ``recording`` (one op recorded: each argument as an IR value,
the node, the fast path ``trace`` and the lazy results), ``random_ops`` (a random op's
generator operand); here, what is left: ``device_of``'s sibling ``elsewhere``, the eager
fallback and the node classes of the installed tables. Every function is on the per-op hot path: keep
them short. Generated code reads each name as an attribute of this module (``rt.trace``), so
these re-exports cost nothing per call.
"""

from __future__ import annotations

import warnings

import torch

from lazygen import renamed

from .. import dispatch
from ..dispatch.fallback import eager_fallback
from ..ir import Node, Shape, Value
from ..metrics import count
from ..state import settings
from ..tracing.output_shapes import infer_shapes, shape_key
from ..tracing.tensor import LazyTensor
from .random_ops import GeneratorData, default_generator, generator
from .recording import (
    TracedOp,
    device_of,
    inplace,
    make_node,
    optional_scalar,
    optional_tensor,
    optional_tensor_list,
    scalar,
    symint,
    symint_list,
    tensor,
    tensor_list,
    trace,
    upload,
    wrap,
    wrap_list,
    wrap_tuple,
)

__all__ = [
    "GeneratorData",
    "LazyTensor",
    "Shape",
    "Value",
    "count",
    "default_generator",
    "device_of",
    "elsewhere",
    "eager_fallback",
    "generator",
    "infer_shapes",
    "inplace",
    "make_node",
    "node_class",
    "optional_scalar",
    "optional_tensor",
    "optional_tensor_list",
    "scalar",
    "shape_key",
    "symint",
    "symint_list",
    "tensor",
    "tensor_list",
    "trace",
    "upload",
    "TracedOp",
    "wrap",
    "wrap_list",
    "wrap_tuple",
]


def elsewhere(device) -> bool:
    """True when a `device=` option names another device than the lazy one."""
    return device is not None and torch.device(device).type != settings.device_type


def eager(op, args, kwargs):
    """``eager_fallback``'s old name (``lazygen.renamed.KERNEL_SUPPORT_NAMES``), which code
    generated before the rename calls: it still runs, with a deprecation warning saying to
    regenerate. A function of its own, not a module ``__getattr__``: Python does not
    specialise attribute loads on a module that has one, and every ``rt.<name>`` of a
    generated kernel would pay for it (measured: 4-5% of a traced op)."""
    _warn_renamed("eager")
    return eager_fallback(op, args, kwargs)


def _warn_renamed(name: str) -> None:
    renamed_to = renamed.KERNEL_SUPPORT_NAMES[name]
    warnings.warn(
        f"lazygen: kernel_support.{name} is now kernel_support.{renamed_to.new} (the old name "
        f"goes away in lazygen {renamed_to.goes_away_in}); regenerate this backend's code "
        "with `lazygen gen` (or reinstall it) to use the new name",
        DeprecationWarning,
        stacklevel=3,
    )


def node_class(op_name: str) -> type[Node]:
    """The IR node class of ``op_name`` in the installed kernel tables: how a hand-written
    kernel reaches a generated (e.g. non-native) node class without importing generated
    code, which does not exist yet when the generator checks the hand-written package."""
    try:
        return dispatch.installed().node_classes[op_name]
    except KeyError:
        raise LookupError(
            f"lazygen: no IR node class {op_name!r} in the kernel tables of this process's "
            "backends; is it in the op list, and was the backend initialised?"
        ) from None
