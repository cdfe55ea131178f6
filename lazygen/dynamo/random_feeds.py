"""What a replay feeds its graph's random ops at every call, one of the two forms of
``Backend.random_numbers`` (``lazygen.runtime.tracing.random_inputs``):

* ``GENERATOR`` feeds (torch-generator backends): the live default generator of the
  device, which the graph draws from and advances exactly as eager (the capture ordered
  the random ops as the FX graph calls them);
* ``SEED`` feeds (seed backends): fresh seeds, drawn from that default generator in the
  order the random ops were traced, one ``randint`` per device for all of them: each call
  draws new numbers, and ``torch.manual_seed`` makes the calls repeatable.
"""

from __future__ import annotations

import torch

from lazygen.runtime.capture_interface import default_generator, draw_seeds

from .capture import GENERATOR, SEED


class RandomFeeds:
    """The random inputs of one captured graph: where each goes, and how it is drawn."""

    __slots__ = ("generators", "seeds")

    def __init__(self, feeds: list) -> None:
        self.generators: list[tuple[int, torch.device]] = []  # (position, device)
        ranked: dict[torch.device, list[tuple[int, int]]] = {}  # device -> (rank, position)
        for position, (kind, payload) in enumerate(feeds):
            if kind == GENERATOR:
                self.generators.append((position, payload))
            elif kind == SEED:
                device, rank = payload
                ranked.setdefault(device, []).append((rank, position))
        #: Per generator's device, the positions of the seeds it draws, in trace order.
        self.seeds: list[tuple[torch.device, list[int]]] = [
            (device, [position for _, position in sorted(pairs)])
            for device, pairs in ranked.items()
        ]

    def __bool__(self) -> bool:
        return bool(self.generators or self.seeds)

    def fill(self, inputs: list) -> None:
        """Put this call's generators and seeds in their positions of ``inputs``."""
        for position, device in self.generators:
            inputs[position] = default_generator(device)
        for device, positions in self.seeds:
            drawn = draw_seeds(default_generator(device), len(positions))
            for position, seed in zip(positions, drawn, strict=True):
                inputs[position] = seed
