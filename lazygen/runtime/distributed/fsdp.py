"""FSDP2 (``torch.distributed.fsdp.fully_shard``) on lazy tensors: the few places where it
reaches below the tensor API, adapted (the ``fsdp_storage`` effect of ``process.EFFECTS``).

FSDP2 manages memory by hand on CUDA: it frees an unsharded parameter's memory with
``untyped_storage().resize_(0)`` after forward and re-allocates it before the next
all-gather, and ``FSDPParam.reset_sharded_param`` compares ``untyped_storage().data_ptr()``
to see whether a sharded tensor changed. A lazy tensor is a functional wrapper, whose
storage torch marks as inaccessible ("Attempted to access the data pointer on an invalid
python storage"; ``resize_`` likewise): a lazy tensor has no memory of its own until a graph
runs. So, for lazy tensors only:

* ``alloc_storage``/``free_storage`` do nothing: FSDP re-fills the tensors (all-gather
  copy-out) before any read, so a freed tensor's value is never used, and the graph's
  planner frees what no later op reads;
* ``reset_sharded_param`` takes its "the sharded data changed" path, which re-pads the
  local shard and points FSDP at it (a few lazy copies, once, at FSDP's lazy init).

FSDP2's own ops with ``out=`` arguments (``fsdp::split_with_sizes_copy``,
``fsdp::chunk_cat``) and ``fsdp::all_gather_copy_in`` (whose results alias its input)
cannot be functionalized by torch ("Found a custom (non-ATen) operator whose output has
alias annotations"); their Functionalize kernels here compose them from the aten ops their
own kernels call, so each is recorded in the step's graph.
"""

from __future__ import annotations

import importlib

import torch

from .. import process, state
from ..tracing.tensor import is_lazy

_FSDP_PARAM = "torch.distributed.fsdp._fully_shard._fsdp_param"
_FSDP_PARAM_GROUP = "torch.distributed.fsdp._fully_shard._fsdp_param_group"
_FSDP_COLLECTIVES = "torch.distributed.fsdp._fully_shard._fsdp_collectives"


class _Installed(list):
    """The Functionalize library FSDP2's ops run through (a dropped library unregisters its
    kernels): held for the process (``state.for_process``)."""


def _wrap_storage_helper(original):
    def helper(tensor: torch.Tensor) -> None:
        if not is_lazy(tensor):
            original(tensor)

    helper.__wrapped__ = original
    helper.__doc__ = f"{original.__name__}, which a lazy tensor does not need (see lazygen's fsdp)"
    return helper


def _wrap_reset_sharded_param(original):
    def reset_sharded_param(self) -> None:
        data = getattr(self, "_sharded_param_data", None)
        if data is not None and is_lazy(data):
            self._sharded_param_data = None  # FSDP's "changed" path: no storage compared
        original(self)

    reset_sharded_param.__wrapped__ = original
    return reset_sharded_param


# Functionalize kernels of FSDP2's ops: the aten ops of FSDP's own CPU/CUDA kernels. -------


def _all_gather_copy_in(inputs, output, split_sizes, input_numel, rank):
    own = output.narrow(0, input_numel * rank, input_numel)
    with torch.no_grad():
        torch._foreach_copy_(list(torch.split(own, split_sizes)), inputs)
    return own, output


def _split_with_sizes_copy(output, split_sizes, dim=0, *, out):
    torch.split_with_sizes_copy(output, split_sizes, dim=dim, out=out)


def _chunk_cat(tensors, dim, num_chunks, *, out):
    torch._chunk_cat(tensors, dim, num_chunks, out=out)


def install() -> None:
    """Adapt FSDP2 (once per process; nothing when the effect is turned off). FSDP2 is
    imported here, not at module level: it costs ~0.7 s, which only programs that create a
    lazy process group pay."""
    installed = state.for_process(_Installed)
    if installed or not process.enabled("fsdp_storage"):
        return
    param = importlib.import_module(_FSDP_PARAM)
    group = importlib.import_module(_FSDP_PARAM_GROUP)
    importlib.import_module(_FSDP_COLLECTIVES)  # defines the fsdp:: ops
    param.alloc_storage = group.alloc_storage = _wrap_storage_helper(param.alloc_storage)
    param.free_storage = _wrap_storage_helper(param.free_storage)
    cls = param.FSDPParam
    cls.reset_sharded_param = _wrap_reset_sharded_param(cls.reset_sharded_param)
    library = torch.library.Library("fsdp", "IMPL")
    library.impl("all_gather_copy_in", _all_gather_copy_in, "Functionalize")
    library.impl("split_with_sizes_copy", _split_with_sizes_copy, "Functionalize")
    library.impl("chunk_cat", _chunk_cat, "Functionalize")
    installed.append(library)
