"""Every environment variable lazygen reads, in one list, with its default and meaning.

It is also the list of the settings the environment sets: a variable with a ``setting`` is
the default of ``state.settings.<setting>``, parsed as its ``kind`` says, and ``state``
builds the settings from this list (``Variable.read``); the settings no variable sets are
listed in ``state`` with why. The other variables keep their readers (``devices``,
``debug``, the composition root, the backends); this list is what a user is told. The
documentation's settings table is rendered from it and from ``process.EFFECTS`` (the
opt-outs of lazygen's changes to the process) at build time, and
``tests/docs/test_environment_table.py`` fails when a ``LAZYGEN_*`` name read anywhere in
``lazygen/`` is missing from both, so the table cannot fall behind the code.
"""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Variable:
    """One environment variable.

    Attributes:
        name: The variable, e.g. ``LAZYGEN_BACKEND``.
        default: Its value when unset, as a user would write it.
        effect: What it changes (markdown).
        api: The Python call that changes the same setting at run time, if any.
        setting: The attribute of ``state.settings`` it is the default of, if any.
        kind: How that setting parses it: ``"int"``, or ``"flag"`` (an int, on unless 0).
    """

    name: str
    default: str
    effect: str
    api: str = ""
    setting: str = ""
    kind: str = ""

    def read(self) -> int | bool:
        """The setting's value from the environment (the default where unset or not an int)."""
        try:
            value = int(os.environ.get(self.name, self.default))
        except ValueError:
            value = int(self.default)
        return value != 0 if self.kind == "flag" else value


VARIABLES: tuple[Variable, ...] = (
    Variable(
        "LAZYGEN_BACKEND",
        "torchscript",
        "the backend `init()` chooses when given none: `torchscript` (where TorchScript does "
        "not work in the installed torch, `fx`, with one warning), `inductor`, `fx`, `jax`, or "
        "a third-party one registered under the `lazygen.backends` entry point",
        "`lr.init(backend=...)`",
    ),
    Variable(
        "LAZYGEN_DEVICE_NAME",
        "the backend's, else `lazygen`",
        "the lazy device's torch name when `init()` is given none",
        "`lr.init(device_name=...)`",
    ),
    Variable(
        "LAZYGEN_DEVICE_COUNT",
        "8",
        "how many lazy devices (`lazygen:0` ... `lazygen:<n-1>`) the process offers; an index "
        'past them raises "invalid device ordinal"',
        "`lr.init(device_count=n)`",
    ),
    Variable(
        "LAZYGEN_BACKING_DEVICE",
        "cpu",
        "where the built-in backends keep device data and run graphs: `cpu` or `cuda`",
        "`lr.config.set_backing_device`",
    ),
    Variable(
        "LAZYGEN_DEBUG",
        "0",
        "`1` records the user's source line on every IR node (dumps, errors); `2` also logs "
        "each uncached compile and sync",
        "`lr.config.set_debug`",
        setting="debug",
        kind="int",
    ),
    Variable(
        "LAZYGEN_EXPLAIN_RECOMPILES",
        "0",
        "`1` prints why each recompile happens: the first node that differs from the nearest "
        "cached graph, the user's line that traced it and what to do; counted as "
        "`Recompile_<reason>`",
        "`lr.config.set_explain_recompiles`",
        setting="explain_recompiles",
        kind="flag",
    ),
    Variable(
        "LAZYGEN_DYNAMIC_SHAPES",
        "0",
        "`1` makes sizes graph inputs (tensor sizes, size lists, `SymInt` attributes equal to "
        "a size): every graph compiles once for all sizes",
        "`lr.init(dynamic_shapes=True)`, `lr.config.set_dynamic_shapes`, `lr.mark_dynamic`",
        setting="dynamic_shapes",
        kind="flag",
    ),
    Variable(
        "LAZYGEN_RECOMPILE_LIMIT",
        "8",
        "graphs one step structure (same ops, any sizes and attributes) may compile (`0`: no "
        "limit); past it a `RecompileLimitWarning`, at most one more graph (for all sizes), "
        "and the structure's other graphs run uncompiled, op by op",
        "`lr.config.set_recompile_limit`",
        setting="recompile_limit",
        kind="int",
    ),
    Variable(
        "LAZYGEN_SAVE_TENSORS_FILE",
        "unset",
        "append every synced graph's IR to this file after the Python frames that synced it, "
        "with each node's user line when set before start-up (LTC's `LTC_SAVE_TENSORS_FILE` "
        "is read too)",
    ),
    Variable(
        "LAZYGEN_SAVE_TENSORS_FMT",
        "text",
        "the format of `LAZYGEN_SAVE_TENSORS_FILE`: `text` or `dot` (Graphviz)",
    ),
    Variable(
        "LAZYGEN_MAX_PENDING_NODES",
        "100000",
        "cut a graph automatically past this many pending nodes",
        "`lr.config.set_max_pending_nodes`",
        setting="max_pending_nodes",
        kind="int",
    ),
    Variable(
        "LAZYGEN_COMPILE_CACHE_SIZE",
        "1024",
        "compiled graphs kept per backend (least recently used go first)",
        "`lr.config.set_compile_cache_size`",
        setting="compile_cache_size",
        kind="int",
    ),
    Variable(
        "LAZYGEN_SHAPE_CACHE_SIZE",
        "50000",
        "shape inferences kept (least recently used go first)",
        "`lr.config.set_shape_cache_size`",
        setting="shape_cache_size",
        kind="int",
    ),
    Variable(
        "LAZYGEN_CACHE",
        "1",
        "`0` turns every persistent cache off: JAX's compilation cache and lazygen's "
        "compiled graphs kept on disk between processes (docs/guides/persistent-caches.md)",
    ),
    Variable(
        "LAZYGEN_CACHE_DIR",
        "`$XDG_CACHE_HOME/lazygen`, else `~/.cache/lazygen`",
        "where the persistent caches live: one folder per store, CPU and software versions",
    ),
    Variable(
        "LAZYGEN_GRAPH_CACHE",
        "1",
        "`0` turns off only lazygen's store of compiled graphs (kept per graph structure, "
        "read back in the next process instead of lowering and compiling again)",
    ),
    Variable(
        "LAZYGEN_SHAPE_CACHE",
        "1",
        "`0` turns off only lazygen's store of output shapes (what each op signature's meta "
        "kernel answered, read back in the next process instead of running them again)",
    ),
    Variable(
        "LAZYGEN_ASYNC",
        "1",
        "`0` runs each `mark_step`'s graph before returning; by default it runs while the "
        "next step is traced, reads wait for it, and a failed run raises at the first read or "
        "the next `mark_step`",
        "`lr.config.set_async_execution`",
        setting="async_execution",
        kind="flag",
    ),
    Variable(
        "LAZYGEN_EARLY_RESULTS",
        "1",
        "`0` stops `mark_step` from running a step's one-element results (the loss) in a "
        "graph of their own ahead of the rest (why a step with a read loss shows two graphs)",
        "`lr.config.set_early_results`",
        setting="early_results",
        kind="flag",
    ),
    Variable(
        "LAZYGEN_EARLY_RESULTS_MAX_NODES",
        "2048",
        "the largest step whose one-element results get their own early graph",
        setting="early_results_max_nodes",
        kind="int",
    ),
)

#: The variables that set a setting (``state.settings`` reads them through this list).
SETTINGS = tuple(v for v in VARIABLES if v.setting)
