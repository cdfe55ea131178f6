"""Random numbers for backends that do not run torch's generators: seeds as graph inputs.

A random op's ``Generator?`` operand reaches a graph in one of two forms, chosen by one
declaration of the backend (``Backend.random_numbers``):

* ``"torch_generator"`` (every built-in torch backend): a ``GeneratorData`` input holding a
  copy of the state eager's call would start from (``kernel_support.generator``); the graph
  draws eager's exact numbers with torch's kernels.
* ``"seed"``: a ``SeedData`` input, an int64 seed drawn at trace time from the generator
  eager's call would use (the one given, else the backing device's default). The backend
  draws with its own counter-based generator from it (the JAX backend:
  ``jax.random.key(seed)``), so ``torch.manual_seed`` makes runs repeatable and every
  random op of every step gets its own stream; the numbers differ from eager's, their
  distribution does not. The seed is a graph input, never a constant: one graph serves
  every step. ``ctx.generator(v)`` hands the lowering the seed's graph value.

A graph replayed without tracing (``torch.compile(backend="lazygen")``'s captured graphs,
``lazygen.dynamo``) draws fresh seeds for every call from the same generator
(``draw_seeds``), in the order the random ops were traced, so each call draws new numbers
and ``torch.manual_seed`` makes the calls repeatable as on the lazy device.
"""

from __future__ import annotations

import torch

from ..ir import Node, Shape, Value
from ..metrics import count

#: The largest seed drawn (a non-negative int64).
_SEED_HIGH = 2**63 - 1
_SEED_SHAPES = (Shape(torch.int64, ()),)

#: The counter of seeds drawn (one per random op traced on a ``"seed"`` backend).
SEED_DRAWS = "RandomSeedDraw"

#: The declarations ``Backend.random_numbers`` accepts.
CONTRACTS = ("torch_generator", "seed")


class SeedData(Node):
    """A random op's seed: a graph input (an int64 number), hashed by kind only."""

    __slots__ = ("seed", "device")
    op_kind = "prim::SeedData"
    op_name = "seed_data"
    is_input = True
    is_generator = True  # the random op's generator operand, in the seed's form
    is_seed = True

    def __init__(self, seed: int, device: torch.device) -> None:
        self.operands = ()
        self.attrs = ()
        self.shapes = _SEED_SHAPES
        self.seed = seed
        self.device = device  # whose generator drew it (a replay draws the next one there)
        self.source = None

    @property
    def value(self) -> int:
        """The number fed to the graph (``ScalarData``'s attribute of the same name)."""
        return self.seed

    def materialize(self) -> int:
        return self.seed


def seed_value(gen: torch.Generator) -> Value:
    """A ``SeedData`` value for one random op, drawn from ``gen`` (which advances it)."""
    (seed,) = draw_seeds(gen, 1)
    count(SEED_DRAWS)
    return Value(SeedData(seed, gen.device), 0)


def draw_seeds(gen: torch.Generator, n: int) -> list[int]:
    """``n`` seeds drawn from ``gen`` in one call (advancing it): a replay's seeds for the
    ``n`` random ops of its graph that draw from ``gen``."""
    return torch.randint(_SEED_HIGH, (n,), generator=gen, device=gen.device).tolist()
