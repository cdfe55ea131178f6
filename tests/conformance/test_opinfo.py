"""OpInfo conformance suite (always runs in CI): >= 95% correct, no regression vs baseline.

The harness runs in a subprocess so that a crash in one op cannot take pytest down with
it. Regenerate the stored baseline after an intended change with

    LAZYGEN_UPDATE_BASELINE=1 python -m pytest tests/conformance
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
BASELINE = HERE / "baseline.json"
CORRECT = {"lazy", "fallback"}
#: Moving from the left outcome to the right one is a regression.
RANK = {"lazy": 0, "fallback": 1, "wrong": 2, "error": 2, "no_sample": 2}


def run_harness(tmp_path) -> dict[str, str]:
    out = tmp_path / "results.json"
    result = subprocess.run(
        [sys.executable, str(HERE / "opinfo_harness.py"), "--json", str(out)],
        capture_output=True,
        text=True,
        timeout=1500,
    )
    print(result.stdout[-4000:])
    assert result.returncode == 0, result.stderr[-4000:]
    return json.loads(out.read_text())


def test_opinfo_conformance(tmp_path):
    results = run_harness(tmp_path)
    correct = sum(outcome in CORRECT for outcome in results.values())
    fully_lazy = sum(outcome == "lazy" for outcome in results.values())
    print(f"conformance: {correct}/{len(results)} correct, {fully_lazy} fully lazy")
    if os.environ.get("LAZYGEN_UPDATE_BASELINE") == "1":
        BASELINE.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    baseline = json.loads(BASELINE.read_text())
    assert len(results) >= 677, "every float32 CPU entry of op_db must run"
    assert correct >= 0.95 * len(results), f"only {correct}/{len(results)} correct"
    regressions = {
        name: f"{before} -> {results.get(name, 'missing')}"
        for name, before in baseline.items()
        if RANK.get(results.get(name, "error"), 2) > RANK[before]
    }
    assert not regressions, regressions


#: Entries the inductor test compiles (one sample each, a graph each: seconds per compile):
#: a Scalar ``alpha``, a Scalar ``value``, a Scalar weight Inductor branches on, a
#: reduction and a select. ``opinfo_harness.py --subset inductor`` runs a larger slice.
INDUCTOR_ENTRIES = ["add", "addcdiv", "lerp", "sum", "where"]


@pytest.mark.slow
def test_opinfo_inductor_subset(tmp_path):
    out = tmp_path / "results.json"
    result = subprocess.run(
        [sys.executable, str(HERE / "opinfo_harness.py"), "--backend", "inductor"]
        + ["--samples", "1", "--json", str(out), "--only", *INDUCTOR_ENTRIES],
        capture_output=True,
        text=True,
        timeout=1500,
    )
    print(result.stdout[-4000:])
    assert result.returncode == 0, result.stderr[-4000:]
    results = json.loads(out.read_text())
    assert set(results) == set(INDUCTOR_ENTRIES)
    assert all(outcome in CORRECT for outcome in results.values()), results
