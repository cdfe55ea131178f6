"""The lazy device's current stream, answered to Dynamo without asking torch each time.

Why this exists: while an accelerator is available, Dynamo registers its current stream in
every frame it compiles, and each call of a compiled frame then runs
``torch._dynamo.utils.get_current_stream(torch.device(...))`` before its graph (bytecode
Dynamo generates, read at call time from that module). For the lazy device that lookup goes
``torch.accelerator.current_stream`` -> C++ -> the Python device guard and builds a new
``torch.Stream`` each time: measured 3-8 us per compiled frame, about 15 us of a tiny
training step of 130 us, paid by every compiled frame of a process in which lazygen is
initialised (Inductor's own included).

The lazy device has exactly one stream per device index (id 0: the guard implements no
stream pool, ``set_stream`` changes nothing), so its current stream never changes and one
``torch.Stream`` per index is the exact answer. :func:`install` replaces Dynamo's lookup with
one that returns that object for the lazy device and defers to torch's for any other device.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from lazygen.runtime import devices

#: Each lazy device index's one stream, as torch answered it the first time.
_streams: dict[int, torch.Stream] = {}
#: The same streams by the ``torch.device`` Dynamo's bytecode asks with (an explicit index:
#: ``torch.device('lazygen', 0)``), so a call is one dict look-up (~0.3 us against ~1.4 us
#: through the device checks, per compiled frame and call).
_by_device: dict[torch.device, torch.Stream] = {}
_torch_lookup: list[Callable[[torch.device], torch.Stream]] = []  # Dynamo's own, once installed


def current_stream(device: torch.device) -> torch.Stream:
    """What ``torch.accelerator.current_stream(device)`` answers, from a per-index cache for
    the lazy device."""
    stream = _by_device.get(device)
    if stream is not None:
        return stream
    if not devices.is_lazy_device(device):
        return _torch_lookup[0](device)
    index = devices.current_index() if device.index is None else device.index
    stream = _streams.get(index)
    if stream is None:
        stream = _streams[index] = _torch_lookup[0](device)
    if device.index is not None:  # without one, the answer follows the current index
        _by_device[device] = stream
    return stream


def install() -> None:
    """Make Dynamo's compiled frames use :func:`current_stream` (idempotent)."""
    # Imported here, like the backend's aot_autograd: importing lazygen.dynamo must not pull
    # in Dynamo for programs that never compile.
    import torch._dynamo.utils

    if not _torch_lookup:
        _torch_lookup.append(torch._dynamo.utils.get_current_stream)
        torch._dynamo.utils.get_current_stream = current_stream
