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

from .. import state

_lock = threading.Lock()


class _DataGroups(dict):
    """Group name (lazy or data) -> data group name: process groups live in
    torch.distributed for the process, beyond a reset (``state.for_process``)."""


def register(lazy_name: str, data_name: str) -> None:
    with _lock:
        groups = state.for_process(_DataGroups)
        groups[lazy_name] = data_name
        groups[data_name] = data_name


def forget(lazy_name: str) -> None:
    with _lock:
        groups = state.for_process(_DataGroups)
        data_name = groups.pop(lazy_name, None)
        groups.pop(data_name, None)


def data_group_name(group_name) -> str:
    """The data group behind ``group_name``; a name lazygen does not know (a group made by
    another backend) is used as it is."""
    name = str(group_name)
    return state.for_process(_DataGroups).get(name, name)
