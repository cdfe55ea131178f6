"""A jax graph compiled for all sizes: one lazygen graph, one XLA executable per size.

With dynamic shapes on, the executor compiles a graph once for every size of it from a
copy whose shapes hide their sizes (``graph/dynamic.py``). The jax backend lowers that
copy once (``lowering.py`` with ``generic`` set: sizes come from the operands' shapes and
from the size inputs, never from the traced shapes) and returns ``AllSizesExecutable``,
which lazygen's graph cache then holds for every size.

XLA compiles for static shapes only, so each new set of input sizes (and of the numbers a
size depends on: the size inputs, compiled in) still costs ``jax.jit`` a trace and XLA a
compile: the executable keeps one per set (``JaxSizeCompile``, ``JaxSizeCompileTime``).
``jax.export`` with symbolic dimensions was measured as the alternative (docs/jax-backend.md):
it lowers to StableHLO once, but calling the export with new sizes refines and compiles it
again, so it could save at most the trace (about 7% of a new size's cost on an encoder's
training step, XLA's compile the rest; ``bench/jax_sizes.py`` measured no consistent
saving), at the price of guards for sizes JAX's symbolic arithmetic cannot decide.

Donation: the copy the executor compiles holds stand-ins for the graph's inputs, so which
inputs nothing else reads is decided at the first call, from the executor's ``dead``
(``execution/liveness.py``); each size's executable donates those a result of the same
dtype and rank takes over (``donation.pair``), kept small uploads never.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable

import jax

from ... import metrics
from ...graph import recompiles
from ...graph.dynamic import HiddenSizes
from ...ir import Node
from ...state import log, settings
from . import donation


class AllSizesExecutable:
    """``executable(inputs)``: the graph's results for inputs of any sizes, compiling (once)
    an XLA executable for each new set of input sizes and compiled-in numbers."""

    __slots__ = ("make", "static", "arrays", "dead", "donated", "variants", "latest", "nodes")

    def __init__(
        self,
        make: Callable[[dict[int, int], list, frozenset[int]], tuple],
        static: tuple[int, ...],
        arrays: tuple[int, ...],
        nodes: int = 0,
    ) -> None:
        #: ``make(numbers by input position, inputs, dead)``: ``(compiled, donated,
        #: placed)``, a variant for those inputs donating (some of) the ``dead`` ones.
        self.make = make
        #: Input positions whose numbers each variant compiles in (sizes read as ``SymInt``).
        self.static = static
        #: Input positions of device data (``jax.Array``), whose shapes key the variants.
        self.arrays = arrays
        #: Inputs nothing read at the first run (None before it): every variant may donate
        #: them (``donation.pair`` by dtype and rank).
        self.dead: frozenset[int] | None = None
        #: Inputs the latest variant donates (``JaxBackend.execute_donating`` reads it).
        self.donated: frozenset[int] = frozenset()
        self.variants: dict[tuple, tuple] = {}
        self.latest = None
        #: The graph's node count (for the recompile explanation).
        self.nodes = nodes

    def __call__(self, inputs: list, dead: frozenset[int] = frozenset()) -> list:
        key = (
            tuple([inputs[i] for i in self.static]),
            tuple([inputs[i].shape for i in self.arrays]),
        )
        variant = self.variants.get(key)
        if variant is None:
            if self.dead is None:  # the first run: what nothing else reads now
                self.dead = frozenset(dead or ()) & frozenset(self.arrays)
            variant = self._compile(key, inputs)
        compiled, donated, placed = variant
        self.donated = donated
        if donated:
            inputs = donation.spare_live_inputs(inputs, donated, dead)
        results = compiled(*inputs)
        if placed is None:
            return list(results)
        return [results[k] for k in placed]

    def _compile(self, key: tuple, inputs: list) -> tuple:
        if settings.explain_recompiles and self.variants:
            self._explain(key)
        start = time.perf_counter()
        numbers = dict(zip(self.static, key[0], strict=True))
        with warnings.catch_warnings():
            # donation is paired by dtype and rank for every size: XLA says when sizes
            # leave a donated buffer without a result to take it (the buffer is kept)
            warnings.filterwarnings("ignore", message="Some donated buffers were not usable")
            variant = self.make(numbers, inputs, self.dead)
        seconds = time.perf_counter() - start
        metrics.count("JaxSizeCompile")
        metrics.add_time("JaxSizeCompileTime", seconds)
        log(2, f"jax: graph for all sizes compiled for sizes {key[1]} in {seconds:.2f} s")
        self.variants[key] = variant
        self.latest = variant[0]
        return variant

    def _explain(self, key: tuple) -> None:
        """``LAZYGEN_EXPLAIN_RECOMPILES``: which sizes are new (the input sizes, and the
        size inputs compiled in), against the sets compiled so far."""
        seen = list(self.variants)

        def text(k: tuple) -> str:
            shapes = "; ".join(f"{list(s)}" for s in k[1])
            return f"input sizes {shapes}" + (f", size inputs {list(k[0])}" if k[0] else "")

        recompiles.report_explanation(
            recompiles.Explanation(
                "sizes",
                -1,
                "new sizes of a graph compiled for all sizes",
                None,
                text(key),
                f"{len(seen)} set(s) of sizes, the last: {text(seen[-1])}",
                self.nodes,
                layer="jax",
            )
        )

    def describe(self) -> str:
        if self.latest is None:
            return "a jax graph compiled for all sizes; no size compiled by XLA yet"
        return self.latest.as_text()


def hides_sizes(order: list[Node]) -> bool:
    """Whether ``order`` is the copy of a graph the executor compiles for all sizes."""
    return any(
        s is not None and type(s.sizes) is HiddenSizes for node in order for s in node.shapes
    )


def abstract(data):
    """What ``jax.jit`` traces for one input fed to a graph for all sizes: a shape and
    dtype for device data, the number itself for a scalar or a seed (weakly typed)."""
    if isinstance(data, jax.Array):
        return jax.ShapeDtypeStruct(data.shape, data.dtype)
    return data
