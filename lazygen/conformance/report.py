"""How conformance results read: one line per entry, a summary, and the JSON matrix.

The matrix (``--json``) is for tools and for comparing runs:

.. code-block:: text

    {"format": 1, "lazygen": ..., "torch": ..., "backend": ..., "op_list": ...,
     "dtype": ..., "grad": ..., "samples": ...,
     "summary": {"entries": N, "correct": ..., "lazy": ..., ..., "crash": ...},
     "entries": {entry: {"outcome": ..., "samples": ..., "detail": ..., "fallbacks": [...],
                         "max_abs": ..., "max_rel": ..., "signal": ..., "seconds": ...}},
     "ops": {op-list name: {"entries": [...], "outcomes": {outcome: count}}},
     "worker_failures": [{"entries": [...], "how": ..., "stderr_tail": ...}]}

Non-finite differences are written as the strings ``"nan"``/``"inf"`` (JSON has no NaN).
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any

from .classify import OUTCOMES, EntryResult, summarise
from .runner import WorkerFailure

FORMAT = 1


def _number(value: float | None) -> str:
    return "?" if value is None else f"{value:.3g}"


def describe(result: EntryResult) -> str:
    """What follows an entry's outcome and name on its line."""
    if result.outcome == "fallback":
        return "falls back: " + ", ".join(op.removeprefix("aten::") for op in result.fallbacks)
    if result.outcome == "wrong":
        return (
            f"max abs diff {_number(result.max_abs)}, max rel diff "
            f"{_number(result.max_rel)} ({result.detail})"
        )
    return result.detail


def line(result: EntryResult, done: int | None = None, total: int | None = None) -> str:
    """``[ 12/677] wrong     addmm  max abs diff 0.01, ...`` (crashes in capitals)."""
    progress = f"[{done:>{len(str(total))}}/{total}] " if done is not None and total else ""
    outcome = result.outcome.upper() if result.outcome in ("crash", "timeout") else result.outcome
    text = f"{progress}{outcome:<9} {result.name}"
    detail = describe(result)
    return f"{text}  {detail}" if detail else text


def summary_line(results: Iterable[EntryResult]) -> str:
    counts = Counter(r.outcome for r in results)
    total = sum(counts.values())
    parts = [f"{counts[o]} {o}" for o in OUTCOMES if counts[o] or o in ("lazy", "fallback")]
    return f"{total} entries: " + ", ".join(parts)


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


def entry_json(result: EntryResult) -> dict:
    data = {k: _finite(v) for k, v in result.to_json().items()}
    data.pop("name", None)
    return data


def matrix(
    results: list[EntryResult],
    *,
    backend: str | None,
    op_list: str | None,
    dtype: str,
    grad: bool,
    samples: int,
    ops: Mapping[str, list[str]] | None = None,
    failures: list[WorkerFailure] | None = None,
) -> dict:
    """The JSON matrix of a run (see the module docstring)."""
    import torch

    import lazygen

    by_name = {r.name: r for r in results}
    op_view = {
        op: {
            "entries": list(names),
            "outcomes": dict(Counter(by_name[n].outcome for n in names if n in by_name)),
        }
        for op, names in (ops or {}).items()
    }
    return {
        "format": FORMAT,
        "lazygen": lazygen.__version__,
        "torch": torch.__version__,
        "backend": backend,
        "op_list": op_list,
        "dtype": dtype,
        "grad": grad,
        "samples": samples,
        "summary": summarise(results),
        "entries": {r.name: entry_json(r) for r in sorted(results, key=lambda r: r.name)},
        "ops": op_view,
        "worker_failures": [asdict(f) for f in failures or ()],
    }


def write_matrix(path: Path, data: dict) -> None:
    path.write_text(json.dumps(data, indent=1, sort_keys=False) + "\n")
