"""Counters and timers (names as torch._lazy reports them: ``lazy::add.Tensor``, ``aten::nonzero``,
``CachedCompile``, ``UncachedCompile``, ``MarkStep``, ``CompileTime``, ``ExecuteTime``)."""

from __future__ import annotations

import time
from contextlib import contextmanager

_counters: dict[str, int] = {}
_timers: dict[str, list[float]] = {}  # name -> [count, total seconds, max seconds]


def count(name: str, delta: int = 1) -> None:
    _counters[name] = _counters.get(name, 0) + delta


def reset() -> None:
    _counters.clear()
    _timers.clear()


def counter_names() -> list[str]:
    return sorted(name for name, value in _counters.items() if value)


def counter_value(name: str) -> int | None:
    return _counters.get(name)


def metric_names() -> list[str]:
    return sorted(_timers)


def metric_data(name: str) -> tuple[int, float, float] | None:
    """``(samples, total seconds, max seconds)`` of a timer, or None."""
    data = _timers.get(name)
    return None if data is None else (int(data[0]), data[1], data[2])


def add_time(name: str, seconds: float) -> None:
    data = _timers.get(name)
    if data is None:
        _timers[name] = [1, seconds, seconds]
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
    for name in counter_names():
        lines.append(f"Counter: {name}")
        lines.append(f"  Value: {_counters[name]}")
    return "\n".join(lines) + ("\n" if lines else "")
