"""What the SPMD programs do with their devices: per compiled graph, the layout of its
inputs and results and the collectives XLA's partitioner inserted (read from the compiled
program's text); per module, the bytes of parameters each device holds.

``report()`` prints them; ``programs()`` gives them as values (``ProgramReport``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from lazygen.runtime import devices, sharding
from lazygen.runtime.errors import LazygenRuntimeError

from .api import global_device_count
from .mesh import spec_entry


def _spec(placement) -> tuple | None:
    return None if placement is None else tuple(spec_entry(axes) for axes in placement.dims)


@dataclass(frozen=True)
class ProgramReport:
    """One compiled SPMD graph: each input's and result's partition spec (None:
    replicated), how many of each collective the compiled program runs, and the bytes of
    arguments, outputs and temporaries one device holds for it (XLA's memory analysis)."""

    inputs: tuple
    outputs: tuple
    collectives: dict
    device_bytes: dict

    def __str__(self) -> str:
        def side(specs) -> str:
            split = [f"#{i} {s}" for i, s in enumerate(specs) if s is not None]
            replicated = len(specs) - len(split)
            return f"{replicated} replicated" + (f"; split: {', '.join(split)}" if split else "")

        collectives = ", ".join(f"{k} x{n}" for k, n in sorted(self.collectives.items()))
        held = ", ".join(f"{k} {n}" for k, n in self.device_bytes.items())
        return (
            f"inputs: {side(self.inputs)}\noutputs: {side(self.outputs)}\n"
            f"collectives: {collectives or 'none'}\nbytes per device: {held or 'not reported'}"
        )


def programs() -> list[ProgramReport]:
    """The SPMD graphs compiled for the lazy device, oldest first."""
    device = devices.get_device(0)
    reports = []
    for executable in list(device.cache.executables.values()):
        layout = device.backend.program_layout(executable)
        if layout is None:
            continue
        reports.append(
            ProgramReport(
                tuple(map(_spec, layout.inputs)),
                tuple(map(_spec, layout.outputs)),
                dict(layout.collectives),
                dict(layout.device_bytes),
            )
        )
    return reports


def parameter_bytes(module: torch.nn.Module) -> dict[int, int]:
    """Bytes of ``module``'s parameters each device holds, by global device id (each
    parameter once; a split one holds one piece per device, a replicated one whole)."""
    count = global_device_count()
    held = dict.fromkeys(range(count), 0)
    for parameter in module.parameters():
        known, placement = sharding.placement_of(parameter)
        if not known:
            raise LazygenRuntimeError(
                "lazygen.spmd.parameter_bytes: a parameter is still a pending value; call "
                "lazygen.runtime.mark_step() first"
            )
        size = parameter.numel() * parameter.element_size()
        pieces = 1
        if placement is not None:
            pieces = math.prod(placement.shards(d) for d in range(len(placement.dims)))
        for device in held:
            held[device] += size // pieces
    return held


def report(module: torch.nn.Module | None = None) -> str:
    """Every compiled SPMD graph's layouts and collectives, and, given a module, the bytes
    of its parameters per device against the whole."""
    lines = []
    for k, program in enumerate(programs()):
        lines.append(f"graph {k}:\n{program}")
    if module is not None:
        whole = sum(p.numel() * p.element_size() for p in module.parameters())
        per_device = parameter_bytes(module)
        most = max(per_device.values())
        lines.append(
            f"parameters: {whole} bytes; per device at most {most} ({most / whole:.3f} of "
            "the whole)"
        )
    return "\n".join(lines)
