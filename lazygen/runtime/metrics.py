"""Counters and timers, named as torch._lazy reports them.

E.g. ``lazy::add.Tensor``, ``aten::nonzero``, ``CachedCompile``, ``UncachedCompile``,
``MarkStep``, ``CompileTime``, ``ExecuteTime``.

Graphs launched by ``mark_step`` count ``AsyncLaunch`` and time ``LaunchTime`` (starting the
run); they run on another thread, so no ``ExecuteTime`` is recorded for them.

``fallback_report()`` lists the ops that ran eagerly on lazy tensors: how often, the user's
``file:line`` of the first call, and how often each cut a graph (it read tensors with
pending IR, so the graph traced so far had to run first); host reads (``.item()``,
``.cpu()``) and ops the backend refused to run in a graph (``Backend.refused_ops``) are
listed apart, and so are ops whose own node a backend declined (refused) so that they ran
as plain ops, traced one by one (an LSTM layer taking ATen's per-cell path).
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from types import MappingProxyType

from lazygen import renamed

from . import state

_registry_lock = threading.Lock()


class Tables:
    """The runtime's counters, timers and fallback tables (a part of ``state.runtime``).

    Each thread counts into its own dicts (no lock on the hot path, no lost updates between
    threads), reached through ``state.runtime.per_thread``; reading merges them. Dicts of
    finished threads are kept: their counts stay. ``state.reset()`` is a new runtime, hence
    new tables and new per-thread dicts.
    """

    def __init__(self) -> None:
        """Empty tables; no thread has counted yet."""
        self.all_counters: list[dict[str, int]] = []
        self.all_timers: list[dict[str, list]] = []  # name -> [count, total s, max s]
        # op name -> FallbackEntry, written under the registry lock (the autograd thread
        # falls back too)
        self.fallbacks: dict[str, FallbackEntry] = {}
        self.host_reads: dict[str, FallbackEntry] = {}
        self.refused: dict[str, FallbackEntry] = {}
        self.declined: dict[str, FallbackEntry] = {}  # decomposed, not run eagerly
        self.step_cuts: dict[str, int] = {}  # fallbacks that cut a graph since mark_step
        self.step_refused: dict[str, int] = {}  # refused calls that cut a graph, likewise
        #: Other spellings of counters -> lazygen's name (LTC's ``lazy::view_copy_symint``
        #: for ``lazy::view_copy``): backends' kernel tables add them (``COUNTER_ALIASES``).
        self.aliases: dict[str, str] = {}

    def on_reset(self) -> Tables:
        """A reset keeps the aliases the installed tables brought (``init()`` added them)."""
        fresh = Tables()
        fresh.aliases.update(self.aliases)
        return fresh


def _register():
    counters: dict[str, int] = {}
    timers: dict[str, list] = {}
    runtime = state.runtime
    tables = runtime.part(Tables)
    with _registry_lock:
        tables.all_counters.append(counters)
        tables.all_timers.append(timers)
    runtime.per_thread.counters = counters
    runtime.per_thread.timers = timers
    return counters


def count(name: str, delta: int = 1) -> None:
    """Add ``delta`` to counter ``name`` (per thread, merged when read)."""
    try:
        counters = state.runtime.per_thread.counters
    except AttributeError:
        counters = _register()
    counters[name] = counters.get(name, 0) + delta


def reset() -> None:
    """Zero every counter and timer, and forget the fallbacks recorded so far."""
    tables = state.part(Tables)
    with _registry_lock:
        for d in tables.all_counters:
            d.clear()
        for d in tables.all_timers:
            d.clear()
        for table in (tables.fallbacks, tables.host_reads, tables.refused, tables.declined):
            table.clear()
        tables.step_cuts.clear()
        tables.step_refused.clear()


def _merged_counters() -> dict[str, int]:
    merged: dict[str, int] = {}
    with _registry_lock:
        dicts = list(state.part(Tables).all_counters)
    for d in dicts:
        for name, value in list(d.items()):
            merged[name] = merged.get(name, 0) + value
    return merged


def _merged_timers() -> dict[str, list]:
    merged: dict[str, list] = {}
    with _registry_lock:
        dicts = list(state.part(Tables).all_timers)
    for d in dicts:
        for name, data in list(d.items()):
            samples, total, longest = data
            have = merged.get(name)
            if have is None:
                merged[name] = [samples, total, longest]
            else:
                have[0] += samples
                have[1] += total
                have[2] = max(have[2], longest)
    return merged


def counters() -> dict[str, int]:
    """Every counter and its value, in one read (merging the threads' counts once)."""
    return _merged_counters()


def add_counter_aliases(aliases: dict[str, str]) -> None:
    """Let ``counter_value`` and ``counter_names`` answer to these names too."""
    state.part(Tables).aliases.update(aliases)


#: The runtime's own counters under other names: torch._lazy's (``SyncedTensorsWithIR`` is
#: lazygen's ``SyncedTensors``) and the old names of renamed counters, both listed in
#: ``lazygen.renamed`` (the latter with the release that drops them).
_CORE_ALIASES = MappingProxyType(
    {**renamed.LTC_COUNTERS, **{old: r.new for old, r in renamed.COUNTERS.items()}}
)

#: LTC names a reused node's counter after its C++ class (``IrNodeReused_torch::lazy::
#: AddTensor``); lazygen after its Python class (``IrNodeReused_AddTensor``).
_LTC_REUSED = "IrNodeReused_torch::lazy::"
_REUSED = "IrNodeReused_"


def _lazygen_name(name: str) -> str:
    if name.startswith(_LTC_REUSED):
        return _REUSED + name[len(_LTC_REUSED) :]
    return state.part(Tables).aliases.get(name) or _CORE_ALIASES.get(name, name)


def counter_names() -> list[str]:
    """Counters with a value, under lazygen's names and their aliases (LTC's spellings)."""
    merged = _merged_counters()
    names = {name for name, value in merged.items() if value}
    aliases = state.part(Tables).aliases | _CORE_ALIASES
    names.update(alias for alias, name in aliases.items() if merged.get(name))
    names.update(
        _LTC_REUSED + name[len(_REUSED) :] for name in list(names) if name.startswith(_REUSED)
    )
    return sorted(names)


def counter_value(name: str) -> int | None:
    """A counter's value by lazygen's name or an alias; None if it never counted."""
    merged = _merged_counters()
    value = merged.get(name)
    if value is None:
        value = merged.get(_lazygen_name(name))
    return value


def metric_names() -> list[str]:
    """Names of the timers with samples (``CompileTime``, ``LaunchTime`` ...)."""
    return sorted(_merged_timers())


def metric_data(name: str) -> tuple[int, float, float] | None:
    """``(samples, total seconds, max seconds)`` of a timer, or None."""
    data = _merged_timers().get(name)
    return None if data is None else (int(data[0]), data[1], data[2])


def add_time(name: str, seconds: float) -> None:
    """Record one sample of ``seconds`` in timer ``name``."""
    try:
        timers = state.runtime.per_thread.timers
    except AttributeError:
        _register()
        timers = state.runtime.per_thread.timers
    data = timers.get(name)
    if data is None:
        timers[name] = [1, seconds, seconds]
    else:
        data[0] += 1
        data[1] += seconds
        if seconds > data[2]:
            data[2] = seconds


@contextmanager
def timed(name: str):
    """A context manager that records the time its block takes in timer ``name``."""
    start = time.perf_counter()
    try:
        yield
    finally:
        add_time(name, time.perf_counter() - start)


def report() -> str:
    """Every timer and counter, in ``torch._lazy.metrics``' report format."""
    lines = []
    for name in metric_names():
        samples, total, longest = metric_data(name)
        lines.append(f"Metric: {name}")
        lines.append(f"  TotalSamples: {samples}")
        lines.append(f"  Accumulator: {total * 1e3:.3f}ms")
        lines.append(f"  Mean: {total / samples * 1e3:.3f}ms  Max: {longest * 1e3:.3f}ms")
    counters = _merged_counters()
    for name in sorted(n for n, v in counters.items() if v):
        lines.append(f"Counter: {name}")
        lines.append(f"  Value: {counters[name]}")
    return "\n".join(lines) + ("\n" if lines else "")


# Fallbacks and host reads ---------------------------------------------------------------------


@dataclass
class FallbackEntry:
    """One op that ran eagerly: how often, how often it cut a graph, where it first ran."""

    op: str
    count: int = 0
    graph_cuts: int = 0
    first_source: str | None = None
    #: The overloads that ran, as an op list names them (`div.Tensor`; `op` is `aten::div`).
    listed: tuple[str, ...] = ()


def record_fallback(
    op: str,
    graph_cut: bool,
    source,
    host_read: bool = False,
    refused: bool = False,
    listed: str | None = None,
) -> None:
    """Note one eager run of ``op``.

    ``source`` is a callable giving the user's ``file:line``, called for an op's first
    occurrence only (it walks the stack); ``listed`` is the overload as an op list names it.
    Host reads and refused ops go to their own tables, and their graph cuts are not warned
    about (a read must cut; a refusal is the backend's declared choice).
    """
    tables = state.part(Tables)
    table = tables.host_reads if host_read else tables.refused if refused else tables.fallbacks
    with _registry_lock:
        entry = table.get(op)
        if entry is None:
            entry = table[op] = FallbackEntry(op, first_source=source())
        if listed is not None and listed not in entry.listed:
            entry.listed = tuple(sorted((*entry.listed, listed)))
        entry.count += 1
        if graph_cut:
            entry.graph_cuts += 1
            if refused:
                tables.step_refused[op] = tables.step_refused.get(op, 0) + 1
            elif not host_read:
                tables.step_cuts[op] = tables.step_cuts.get(op, 0) + 1


def record_declined(op: str, source) -> None:
    """Note one call of ``op`` whose node a backend declined.

    It ran as plain ops instead (``refusals.declines``); ``source`` as for
    ``record_fallback``.
    """
    declined = state.part(Tables).declined
    with _registry_lock:
        entry = declined.get(op)
        if entry is None:
            entry = declined[op] = FallbackEntry(op, first_source=source())
        entry.count += 1


def take_step_cuts() -> dict[str, int]:
    """The fallbacks that cut a graph since the last call (``mark_step`` asks), by op."""
    tables = state.part(Tables)
    with _registry_lock:
        cuts = dict(tables.step_cuts)
        tables.step_cuts.clear()
    return cuts


def take_step_refusals() -> dict[str, int]:
    """The refused calls that cut a graph since the last call (``mark_step`` asks), by op."""
    tables = state.part(Tables)
    with _registry_lock:
        cuts = dict(tables.step_refused)
        tables.step_refused.clear()
    return cuts


@dataclass(frozen=True)
class FallbackReport:
    """What ran eagerly since the last ``metrics.reset()``; ``str()`` prints a table."""

    fallbacks: tuple[FallbackEntry, ...]
    host_reads: tuple[FallbackEntry, ...]
    #: Ops the device's backend refused to run in a graph (``Backend.refused_ops``).
    refused: tuple[FallbackEntry, ...] = ()
    #: Ops whose node the backend declined, which ran as plain ops traced one by one (in
    #: the graph, not eagerly), each refused or not on its own (``refusals.declines``).
    declined: tuple[FallbackEntry, ...] = ()

    def __str__(self) -> str:
        """The report as tables, one section per kind of eager run."""
        lines = []
        sections = [
            ("Ops run eagerly (not in the op list)", self.fallbacks),
            ("Ops the backend refused in a graph (run eagerly)", self.refused),
            ("Host reads (.item(), .cpu(), printing)", self.host_reads),
        ]
        if self.declined:  # a section of its own only where a backend declined an op
            sections.append(("Ops the backend declined (traced as plain ops)", self.declined))
        for title, entries in sections:
            lines.append(f"{title}: {len(entries)}")
            if entries:
                width = max(len(e.op) for e in entries)
                # What to add to the op list, with its overload (`aten::div` ran as
                # `div.Tensor`): only for ops missing from it.
                names = [", ".join(e.listed) for e in entries] if entries is self.fallbacks else []
                named = max((len(n) for n in names), default=0)
                named = max(named, len("op list name")) if names else 0
                head = f"  {'op list name':<{named}}" if names else ""
                lines.append(f"  {'op':<{width}}{head}  {'count':>7}  {'graph cuts':>10}  first at")
                for i, e in enumerate(entries):
                    listed = f"  {names[i]:<{named}}" if names else ""
                    lines.append(
                        f"  {e.op:<{width}}{listed}  {e.count:>7}  {e.graph_cuts:>10}  "
                        f"{e.first_source or '?'}"
                    )
        return "\n".join(lines)


def fallback_report() -> FallbackReport:
    """Ops that ran eagerly, most graph cuts first.

    Host reads and refused ops are listed apart (see the module doc).
    """

    def order(table):
        entries = [
            FallbackEntry(e.op, e.count, e.graph_cuts, e.first_source, e.listed) for e in table
        ]
        return tuple(sorted(entries, key=lambda e: (-e.graph_cuts, -e.count, e.op)))

    tables = state.part(Tables)
    with _registry_lock:
        return FallbackReport(
            order(tables.fallbacks.values()),
            order(tables.host_reads.values()),
            order(tables.refused.values()),
            order(tables.declined.values()),
        )
