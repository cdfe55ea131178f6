"""Which c10d process group of the *data* device runs a lazy group's collectives.

A ``LazyProcessGroup`` (the ``lazygen`` c10d backend) owns a plain c10d ``ProcessGroup`` on
gloo (CPU data) or nccl (CUDA data), registered with c10d under its own name so that the
functional collectives of a graph find it from C++ (graphs may run on a worker thread,
without the GIL). Functional collectives traced on lazy tensors may name either group (the
lazy one, as ``torch.distributed._functional_collectives`` does, or the data group): both
resolve here to the data group's name, which is what a graph node holds.
"""

from __future__ import annotations

import threading

_lock = threading.Lock()
_data_group_of: dict[str, str] = {}  # group name (lazy or data) -> data group name


def register(lazy_name: str, data_name: str) -> None:
    with _lock:
        _data_group_of[lazy_name] = data_name
        _data_group_of[data_name] = data_name


def forget(lazy_name: str) -> None:
    with _lock:
        data_name = _data_group_of.pop(lazy_name, None)
        _data_group_of.pop(data_name, None)


def data_group_name(group_name) -> str:
    """The data group behind ``group_name``; a name lazygen does not know (a group made by
    another backend) is used as it is."""
    name = str(group_name)
    return _data_group_of.get(name, name)
