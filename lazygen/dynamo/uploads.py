"""Host tensors a captured graph reads, uploaded to a backend whose data is not torch's (the
jax backend) only when they changed: the model-on-CPU compile route's uploads.

A model compiled on the CPU hands every call its parameters, buffers and optimizer state as
CPU tensors; each went to XLA again at every call (143 ``jax.dlpack.from_dlpack`` calls of
~70 us a step of a small encoder, a copy of the whole model per call on a GPU or TPU). A
tensor's version counter says whether it changed since: the upload is kept with the version
it was made at and handed out again while the version is the same. A graph that writes a
host tensor (the optimizer's step writes parameters and states back) leaves the backend's
array of the new value here too, with the version the write-back gave the tensor, so the
next graph reading it (the forward) uploads nothing.

What the counter cannot see: a write that bypasses it (through ``.data``, or through memory
shared with numpy) into a tensor whose kept array is a copy (small tensors, results of a
graph); DLPack uploads share the tensor's memory and see every write. Such code should not
compile the model on the CPU: move it to the lazy device instead.
"""

from __future__ import annotations

import torch
from torch.multiprocessing.reductions import StorageWeakRef

from lazygen.runtime import capture_interface as runtime
from lazygen.runtime import metrics


class _Kept:
    __slots__ = ("storage", "version", "data")

    def __init__(self, storage: StorageWeakRef, version: int, data) -> None:
        self.storage = storage
        self.version = version
        self.data = data


class Uploads:
    """The uploads kept (a part of the runtime object: a reset forgets them)."""

    def __init__(self) -> None:
        """Nothing kept yet."""
        #: (storage address, offset, sizes, strides, dtype) -> its kept upload: by memory,
        #: not by tensor object, so that an alias sharing the memory and the version counter
        #: finds it (autograd's ``detach()`` of a graph's result, stored as a ``.grad``)
        self.kept: dict[tuple, _Kept] = {}
        self.prune_at = 1024


def _key(tensor: torch.Tensor) -> tuple:
    storage = tensor.untyped_storage()
    return (
        storage.data_ptr(),
        tensor.storage_offset(),
        tensor.shape,
        tensor.stride(),
        tensor.dtype,
    )


def upload(tensor: torch.Tensor, backend, backing: torch.device, bumps: int = 0):
    """The backend's data of host ``tensor``: the kept array while ``tensor`` is unchanged
    (its version is the kept one, ``bumps`` later: an argument the graph mutates was bumped
    by aot_autograd's runtime wrapper just before the graph runs, ``increment_version``),
    else a new upload (``Backend.to_data``), kept."""
    key = _key(tensor)
    kept = runtime.part(Uploads).kept.get(key)
    if kept is not None and kept.version + bumps == tensor._version and not kept.storage.expired():
        metrics.count("DynamoUploadKept")
        return kept.data
    metrics.count("DynamoUpload")
    data = backend.to_data(tensor, backing)
    _put(key, tensor, data)
    return data


def keep(tensor: torch.Tensor, data) -> None:
    """Remember ``data`` as the backend's array of ``tensor`` at its current version."""
    _put(_key(tensor), tensor, data)


def _put(key: tuple, tensor: torch.Tensor, data) -> None:
    uploads = runtime.part(Uploads)
    kept = uploads.kept
    kept[key] = _Kept(StorageWeakRef(tensor.untyped_storage()), tensor._version, data)
    if len(kept) > uploads.prune_at:  # memory freed since: its entries go
        for stale in [k for k, entry in kept.items() if entry.storage.expired()]:
            del kept[stale]
        uploads.prune_at = max(1024, 2 * len(kept))
