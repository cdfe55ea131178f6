"""Random numbers of the lazy device: its seeding API and its generators.

A lazy device has no random-number engine of its own: its graphs and its eager fallback run
on the backing device, and a random op draws eager's numbers by copying the state of the
backing device's generator (``kernel_support.generator``). So ``lazygen:<i>``'s default
generator *is* its backing device's (the CPU's ``torch.default_generator``, or
``torch.cuda.default_generators[j]``): seeding the lazy device seeds it, and
``torch.manual_seed(s)`` followed by a lazy ``torch.randn`` gives the CPU's numbers for ``s``.
This is the one difference from CUDA (whose generators are separate from the CPU's),
documented in docs/device-contract.md.

``torch.Generator(device="lazygen")`` reaches ``PrivateUse1HooksInterface::getNewGenerator``,
which torch 2.13's Python hooks (``torch._C._acc.PrivateUse1Hooks``) cannot override: it
raises "You should register PrivateUse1HooksInterface...". ``install()`` therefore puts a
class in ``torch.Generator``'s place that makes a ``DeviceGenerator`` for a lazy device and
torch's own generator for every other; ``isinstance(g, torch.Generator)`` keeps answering for
torch's generators. A process-wide effect (``device_generators`` in ``process.EFFECTS``).
"""

from __future__ import annotations

import torch

from .. import devices
from ..kernel_support import default_generator
from ..state import is_lazy_device

_TorchGenerator = torch._C.Generator


def backing_generator(index: int | None = None) -> torch.Generator:
    """The generator lazy device ``index`` (None: the current one) draws from."""
    if index is None:
        index = devices.current_index()
    return default_generator(devices.backing_of(index))


def _index(device) -> int:
    """The lazy device index of a ``device=`` argument of the RNG API (CUDA's conventions:
    None or the bare type is the current device, an int is an index)."""
    if device is None:
        return devices.current_index()
    if isinstance(device, int):
        return device
    device = torch.device(device)
    if not is_lazy_device(device):
        raise ValueError(
            f"lazygen: expected a {torch._C._get_privateuse1_backend_name()} device, "
            f"got {device}"
        )
    return devices.current_index() if device.index is None else device.index


def _distinct(generators) -> list[torch.Generator]:
    """Each generator once: several lazy devices may share one backing generator."""
    return list({id(g): g for g in generators}.values())


def _all() -> list[torch.Generator]:
    return _distinct(backing_generator(i) for i in range(devices.device_count()))


def manual_seed(seed: int) -> None:
    # Not torch.manual_seed: that calls back into the device module's manual_seed_all.
    backing_generator().manual_seed(int(seed))


def manual_seed_all(seed: int) -> None:
    for generator in _all():
        generator.manual_seed(int(seed))


def seed() -> None:
    backing_generator().seed()


def seed_all() -> None:
    for generator in _all():
        generator.seed()


def initial_seed() -> int:
    return backing_generator().initial_seed()


def get_rng_state(device=None) -> torch.Tensor:
    return backing_generator(_index(device)).get_state()


def set_rng_state(state: torch.Tensor, device=None) -> None:
    backing_generator(_index(device)).set_state(state)


def get_rng_state_all() -> list[torch.Tensor]:
    return [get_rng_state(i) for i in range(devices.device_count())]


def set_rng_state_all(states) -> None:
    for index, state in enumerate(states):
        set_rng_state(state, index)


def new_generator(device) -> torch.Generator:
    """``torch.Generator(device=<lazy device>)``: a new generator of the lazy device's backing
    device (its ``device`` is the backing device). A random op on the lazy device given it
    draws the numbers eager draws from a backing-device generator in the same state; Dynamo,
    pickling and ``torch.utils.data`` treat it as the torch generator it is."""
    return _TorchGenerator(devices.backing_of(_index(device)))


class _GeneratorType(type(_TorchGenerator)):
    """Metaclass of the class put in ``torch.Generator``'s place: calling it with a lazy device
    makes a ``DeviceGenerator``; everything else is torch's generator, and instance and
    subclass checks answer as for torch's class."""

    def __call__(cls, device="cpu"):
        if is_lazy_device(device):
            return new_generator(device)
        return _TorchGenerator(device)

    def __instancecheck__(cls, instance) -> bool:
        return isinstance(instance, _TorchGenerator)

    def __subclasscheck__(cls, subclass) -> bool:
        return issubclass(subclass, _TorchGenerator)


class Generator(_TorchGenerator, metaclass=_GeneratorType):
    __doc__ = _TorchGenerator.__doc__
    __module__ = "torch"


def install() -> None:
    """Put ``Generator`` in ``torch.Generator``'s place (once per process)."""
    if torch.Generator is _TorchGenerator:
        torch.Generator = Generator
