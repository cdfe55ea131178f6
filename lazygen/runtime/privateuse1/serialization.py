"""Copying and serialising lazy tensors as torch does CUDA tensors.

A user-facing lazy tensor is functionalization's wrapper, whose storage is a placeholder
(``FunctionalStorageImpl``: no memory, no allocator behind it). torch decides how to copy
and pickle a tensor by asking ``torch._C._has_storage``, which says True for the wrapper, so
``copy.deepcopy`` cloned that placeholder storage (a segfault: PrivateUse1 has no allocator)
and ``torch.save`` read its data pointer ("invalid python storage"). torch offers no hook
for either decision, so ``install()`` puts four small wrappers around torch functions, each
of which changes nothing for tensors of other devices:

* ``torch._C._has_storage`` is False for lazy tensors, so ``Tensor.__deepcopy__`` takes the
  branch torch has for storage-less PrivateUse1 tensors: ``clone()`` on the device.
* ``Tensor._reduce_ex_internal`` (what ``pickle`` and ``torch.save`` call) writes a lazy
  tensor as a CUDA tensor is written: a storage of its bytes tagged with its device
  (``lazygen:0``). So checkpoints read like CUDA ones: ``map_location="cpu"``, a dict or a
  callable all work, and a process without lazygen gets torch's usual "don't know how to
  restore data location" error instead of a silent copy.
* A storage location handler (``torch.serialization.register_package``) restores storages
  tagged with (or mapped to) the lazy device: it keeps the bytes on the host and binds the
  storage to its lazy device; ``torch._utils._rebuild_tensor`` / ``_rebuild_tensor_v3`` then
  move the tensor built on such a storage there. Tensors that shared a storage become
  separate lazy tensors (a lazy device has no storages to share), as in torch_xla.
* ``torch.UntypedStorage(..., device=<lazy>)`` (also reached by ``storage.clone()``,
  ``copy.deepcopy(storage)`` and ``storage.to(device=<lazy>)``) raises an error naming what
  to do instead of letting C++ allocate with a null allocator (a segfault).
* ``UntypedStorage.data_ptr()`` of a lazy tensor's placeholder storage raised "Attempted to
  access the data pointer on an invalid python storage". The ecosystem reads it as a
  storage's identity: transformers' ``save_pretrained`` and safetensors find tied and
  shared tensors by ``(device, storage data_ptr, nbytes)``. It now returns the storage's
  own address in the process (``_cdata``, which functionalization shares between a tensor,
  its views and a tied parameter): unique among live storages and stable while the storage
  lives, as a device pointer is. It is never memory the host may read (a CUDA pointer is
  not either); the bytes come from ``.cpu()``, which is what those libraries call next.
"""

from __future__ import annotations

import torch
import torch.serialization
import torch.storage

from ..errors import LazygenRuntimeError
from ..state import settings
from ..tracing.tensor import is_lazy
from . import patches

_LOCATION = "_lazygen_location"  # on a host storage written for a lazy tensor: its device
_BOUND = "_lazygen_device"  # on a host storage read for the lazy device: the target device
_PRIORITY = 5  # ahead of torch's CPU tagger (10), which claims every host storage


def install() -> None:
    """Wrap the torch functions above (once per process)."""
    if not patches.replace(torch._C, "_has_storage", _has_storage):
        return
    patches.replace(torch.Tensor, "_reduce_ex_internal", _reduce_ex_internal)
    patches.replace(torch._utils, "_rebuild_tensor", _rebuild_tensor)
    patches.replace(torch._utils, "_rebuild_tensor_v3", _rebuild_tensor_v3)
    storage = torch.storage.UntypedStorage
    patches.replace(storage, "__new__", staticmethod(_new_untyped_storage))
    patches.replace(storage, "data_ptr", _storage_data_ptr)
    torch.serialization.register_package(_PRIORITY, _location_tag, _restore_location)


def _has_storage(tensor) -> bool:
    if is_lazy(tensor):
        return False
    return patches.original(torch._C, "_has_storage")(tensor)


def _reduce_ex_internal(self, proto):
    if not is_lazy(self) or torch._C._functorch.is_functorch_wrapped_tensor(self):
        return patches.original(torch.Tensor, "_reduce_ex_internal")(self, proto)
    torch.utils.hooks.warn_if_has_hooks(self)
    # A fresh host copy (``Backend.from_data`` copies): the tag below must never land on a
    # storage that anything else uses.
    host = self.detach().cpu()
    rebuild, args = patches.original(torch.Tensor, "_reduce_ex_internal")(host, proto)
    storage = args[0]
    untyped = storage._untyped_storage if isinstance(storage, torch.TypedStorage) else storage
    setattr(untyped, _LOCATION, str(self.device))
    # (storage, offset, size, stride, requires_grad, backward_hooks, ...)
    return rebuild, (*args[:4], self.requires_grad, *args[5:])


def _location_tag(storage):
    return getattr(storage, _LOCATION, None)


def _restore_location(storage, location: str):
    name = settings.device_type
    if location != name and not location.startswith(name + ":"):
        return None
    device = torch.device(location)
    count = torch.get_device_module(name).device_count()
    if (device.index or 0) >= count:
        raise LazygenRuntimeError(
            f"lazygen: cannot load a tensor onto {location}: this process has {count} "
            f"{name} device(s); pass torch.load a map_location naming one of them"
        )
    setattr(storage, _BOUND, device)
    return storage


def _to_bound_device(tensor: torch.Tensor, device) -> torch.Tensor:
    with torch.no_grad():
        moved = tensor.to(device)
    return moved.requires_grad_(tensor.requires_grad)


def _rebuild_tensor(storage, storage_offset, size, stride):
    tensor = patches.original(torch._utils, "_rebuild_tensor")(
        storage, storage_offset, size, stride
    )
    device = getattr(storage._untyped_storage, _BOUND, None)
    return tensor if device is None else _to_bound_device(tensor, device)


def _rebuild_tensor_v3(storage, *args, **kwargs):
    tensor = patches.original(torch._utils, "_rebuild_tensor_v3")(storage, *args, **kwargs)
    device = getattr(storage._untyped_storage, _BOUND, None)
    return tensor if device is None else _to_bound_device(tensor, device)


def _new_untyped_storage(cls, *args, **kwargs):
    device = kwargs.get("device")
    if device is not None and _device_type(device) == settings.device_type:
        name = settings.device_type
        raise LazygenRuntimeError(
            f"lazygen: storages cannot be allocated on the {name} device: lazy tensors hold "
            "no addressable memory (their data lives in traced graphs and on the backing "
            f"device). Make a tensor instead (torch.empty(n, device='{name}')), or copy the "
            "data to the CPU first (t.cpu().untyped_storage())"
        )
    return patches.original(torch.storage.UntypedStorage, "__new__")(cls, *args, **kwargs)


def _storage_data_ptr(self) -> int:
    if self.device.type == settings.device_type:
        return self._cdata
    return patches.original(torch.storage.UntypedStorage, "data_ptr")(self)


def _device_type(device) -> str | None:
    try:
        return torch.device(device).type
    except (RuntimeError, TypeError):
        return None
