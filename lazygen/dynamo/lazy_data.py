"""Lazy tensors in and out of a graph that runs at each call (``compiled.Replay``): the
device data a lazy argument holds, and lazy tensors of the results."""

from __future__ import annotations

import torch

from lazygen.runtime.capture_interface import (
    DeviceData,
    LazyDevice,
    LazyTensor,
    Value,
    from_data,
    inner,
    sync,
    to_functional,
)


def lazy_data(t: torch.Tensor, native: bool = False):
    """The device data of a lazy argument, running its pending IR first (``native``: as
    the backend holds it, for a backend whose data is not torch's)."""
    lazy = inner(t)
    node = lazy._value.node
    if not node.is_input:
        sync([lazy])
        node = lazy._value.node
    return node.materialize() if native else node.data


def lazy_results(device: LazyDevice, native, results: list, shapes: list) -> list:
    """Lazy tensors of a graph's results: the backend's own data where it is not torch's
    (no round trip through the host), else the torch results."""
    if native is None:
        return [to_functional(from_data(r, device)) for r in results]
    backend = device.backend
    return [
        to_functional(LazyTensor(Value(DeviceData(r, None, shape, backend), 0), device))
        for r, shape in zip(native, shapes, strict=True)
    ]
