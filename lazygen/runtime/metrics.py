"""Counters and timers (names as torch._lazy reports them: ``lazy::add.Tensor``, ``aten::nonzero``,
``CachedCompile``, ``UncachedCompile``, ``MarkStep``, ``CompileTime``, ``ExecuteTime``).

Graphs launched by ``mark_step`` count ``AsyncLaunch`` and time ``LaunchTime`` (starting the
run); they run on another thread, so no ``ExecuteTime`` is recorded for them."""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager

from . import state

# Each thread counts into its own dicts (no lock on the hot path, no lost updates between
# threads); reading merges them. Dicts of finished threads are kept: their counts stay.
_local = threading.local()
_all_counters: list[dict[str, int]] = []
_all_timers: list[dict[str, list]] = []  # name -> [count, total seconds, max seconds]
_registry_lock = threading.Lock()


def _register():
    counters: dict[str, int] = {}
    timers: dict[str, list] = {}
    with _registry_lock:
        _all_counters.append(counters)
        _all_timers.append(timers)
    _local.counters = counters
    _local.timers = timers
    return counters


def count(name: str, delta: int = 1) -> None:
    try:
        counters = _local.counters
    except AttributeError:
        counters = _register()
    counters[name] = counters.get(name, 0) + delta


def reset() -> None:
    with _registry_lock:
        for d in _all_counters:
            d.clear()
        for d in _all_timers:
            d.clear()


def _merged_counters() -> dict[str, int]:
    merged: dict[str, int] = {}
    with _registry_lock:
        dicts = list(_all_counters)
    for d in dicts:
        for name, value in list(d.items()):
            merged[name] = merged.get(name, 0) + value
    return merged


def _merged_timers() -> dict[str, list]:
    merged: dict[str, list] = {}
    with _registry_lock:
        dicts = list(_all_timers)
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


def counter_names() -> list[str]:
    return sorted(name for name, value in _merged_counters().items() if value)


def counter_value(name: str) -> int | None:
    return _merged_counters().get(name)


def metric_names() -> list[str]:
    return sorted(_merged_timers())


def metric_data(name: str) -> tuple[int, float, float] | None:
    """``(samples, total seconds, max seconds)`` of a timer, or None."""
    data = _merged_timers().get(name)
    return None if data is None else (int(data[0]), data[1], data[2])


def add_time(name: str, seconds: float) -> None:
    try:
        timers = _local.timers
    except AttributeError:
        _register()
        timers = _local.timers
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
    start = time.perf_counter()
    try:
        yield
    finally:
        add_time(name, time.perf_counter() - start)


def report() -> str:
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


state.register("metrics", reset)
