"""Ops that a tensor subclass's ``__torch_dispatch__`` runs on lazy tensors it wraps (DTensor
and funcol's ``AsyncCollectiveTensor`` on the lazy device), sent through functionalization.

torch runs such a handler with every dispatch key above Python excluded, functionalization
among them. An op the handler runs on a lazy tensor (a functional wrapper) therefore goes
straight to the device key: ops without a device kernel reached the backend fallback and ran
eagerly (a graph cut each), and torch's view kernels that serve every device
(CompositeExplicitAutograd: ``t``, ``transpose``, ``_unsafe_view``...) made plain tensors
aliasing the wrapper's storage, which holds no data: reading one crashed the process (a
DTensor ``linear`` on 3-D activations, as tensor parallelism runs it). The backend fallback
and device-key kernels of those views (``register``) call such an op again with
functionalization re-enabled, so it is recorded in the graph and its
views are functionalization's. On other tensors of the device (fake tensors of it: DTensor's
sharding propagation, Dynamo) the view kernels run torch's own.

``alias`` and ``detach`` keep torch's kernel: ``Tensor._make_subclass`` (FakeTensor's
constructor) detaches its tensor at the device key, and a Python kernel there gives the
new tensor a Python object before the subclass does ("the raw Tensor object is already
associated to a python object").
"""

from __future__ import annotations

import torch

_K = torch._C.DispatchKey
#: Only functionalization: with ADInplaceOrView on too, a view of a local tensor that
#: requires grad got autograd view metadata, and autograd then refused to make DTensor's
#: result a view ("the tensor already had autograd metadata associated with it").
_FUNCTIONALIZE = torch._C.DispatchKeySet(_K.Functionalize)


#: torch's view ops whose one kernel (CompositeExplicitAutograd) serves every device, and
#: ``_unsafe_view``, which aliases without saying so in its schema (``alias``, ``detach``:
#: see the module docstring).
VIEW_OPS = (
    "_unsafe_view",
    "diagonal",
    "expand",
    "permute",
    "select.int",
    "slice.Tensor",
    "split.Tensor",
    "split_with_sizes",
    "squeeze",
    "squeeze.dim",
    "squeeze.dims",
    "t",
    "transpose.int",
    "unbind.int",
    "unsqueeze",
    "view.dtype",
)


def has_functional_tensor(args, kwargs) -> bool:
    for value in (*args, *kwargs.values()):
        values = value if isinstance(value, (list, tuple)) else (value,)
        for item in values:
            if isinstance(item, torch.Tensor) and torch._is_functional_tensor(item):
                return True
    return False


def can_reenter() -> bool:
    """Whether functionalization, once re-enabled, can reach the lazy tensor under the
    wrapper: not where torch itself excluded the Python key (``torch.tensor([t, t])`` reads
    each element so, with ``_local_scalar_dense``): there torch's functionalization kernel
    finds no Python kernel to call and fails an internal assert. A subclass's handler runs
    with the Python key on."""
    return not torch._C._dispatch_tls_is_dispatch_key_excluded(_K.Python)


def reenter(op, args, kwargs):
    """``op`` once more, with functionalization on (see the module docstring)."""
    include = torch._C._dispatch_tls_local_include_set()
    exclude = torch._C._dispatch_tls_local_exclude_set()
    with torch._C._ForceDispatchKeyGuard(include, exclude - _FUNCTIONALIZE):
        return op(*args, **kwargs)


def _view_kernel(op):
    def kernel(*args, **kwargs):
        if has_functional_tensor(args, kwargs):
            return reenter(op, args, kwargs)
        return op._op_dk(_K.CompositeExplicitAutograd, *args, **kwargs)

    return kernel


def register() -> torch.library.Library:
    """The device-key kernels of ``VIEW_OPS``; returns the library (keep it alive)."""
    library = torch.library.Library("aten", "IMPL")
    for name in VIEW_OPS:
        packet, _, overload = name.partition(".")
        op = getattr(getattr(torch.ops.aten, packet), overload or "default")
        library.impl(name, _view_kernel(op), "PrivateUse1")
    return library
