"""OpInfo conformance suites: no regression against their stored baselines.

* float32 forward (always runs in CI, ~5 min): >= 95% correct, baseline ``baseline.json``.
* gradients and the float64 / bfloat16 / int64 / bool forward suites (``--grad``,
  ``--dtype``), baselines ``baseline_<suite>.json``. Their full runs take as long as the
  float32 suite each (the gradient one longer), more than CI's 30-minute budget allows
  together, so every CI run runs them on a deterministic subset: the first
  ``SUBSET_SAMPLES`` sample inputs of **every** entry (samples are built under a fixed seed,
  so the subset is the same each run and a subset of the full run). An entry's outcome is
  its worst sample's, so a subset run can only be as good as or better than the full run:
  any entry worse than its full baseline is a regression. The full suites are
  ``@pytest.mark.slow`` and also need ``LAZYGEN_FULL_CONFORMANCE=1`` (``CI=true`` alone
  runs slow tests, and these would take it past its budget); run them before changing a
  kernel widely, and to rewrite the baselines.

The harness runs in a subprocess so that a crash in one op cannot take pytest down with
it. Regenerate the stored baselines after an intended change with

    LAZYGEN_UPDATE_BASELINE=1 python -m pytest tests/conformance -k float32
    LAZYGEN_FULL_CONFORMANCE=1 LAZYGEN_UPDATE_BASELINE=1 python -m pytest tests/conformance --slow
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
BASELINE = HERE / "baseline.json"
CORRECT = {"lazy", "fallback"}
#: Moving from the left outcome to the right one is a regression.
RANK = {"lazy": 0, "fallback": 1, "wrong": 2, "error": 2, "no_sample": 2}
#: Suite -> harness arguments (its baseline is baseline_<suite>.json).
WIDENED = {
    "grad": ["--grad"],
    "float64": ["--dtype", "float64"],
    "bfloat16": ["--dtype", "bfloat16"],
    "int64": ["--dtype", "int64"],
    "bool": ["--dtype", "bool"],
}
#: Sample inputs per entry in the CI subset of the widened suites.
SUBSET_SAMPLES = 1


def run_harness(tmp_path, *arguments: str, timeout: int = 1500) -> dict[str, str]:
    out = tmp_path / "results.json"
    result = subprocess.run(
        [sys.executable, str(HERE / "opinfo_harness.py"), *arguments, "--json", str(out)],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    print(result.stdout[-4000:])
    assert result.returncode == 0, result.stderr[-4000:]
    return json.loads(out.read_text())


def regressions(results: dict[str, str], baseline: dict[str, str]) -> dict[str, str]:
    return {
        name: f"{before} -> {results.get(name, 'missing')}"
        for name, before in baseline.items()
        if RANK.get(results.get(name, "error"), 2) > RANK[before]
    }


def _update_requested() -> bool:
    return os.environ.get("LAZYGEN_UPDATE_BASELINE") == "1"


def test_opinfo_conformance(tmp_path):
    results = run_harness(tmp_path)
    correct = sum(outcome in CORRECT for outcome in results.values())
    fully_lazy = sum(outcome == "lazy" for outcome in results.values())
    print(f"conformance: {correct}/{len(results)} correct, {fully_lazy} fully lazy")
    if _update_requested():
        BASELINE.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    baseline = json.loads(BASELINE.read_text())
    assert len(results) >= 677, "every float32 CPU entry of op_db must run"
    assert correct >= 0.95 * len(results), f"only {correct}/{len(results)} correct"
    found = regressions(results, baseline)
    assert not found, found


def _baseline_path(suite: str) -> Path:
    return HERE / f"baseline_{suite}.json"


@pytest.mark.parametrize("suite", sorted(WIDENED))
def test_opinfo_widened_subset(suite, tmp_path):
    """Every entry of the suite, first ``SUBSET_SAMPLES`` samples: nothing worse than the
    full run's baseline, and no entry missing."""
    results = run_harness(tmp_path, *WIDENED[suite], "--samples", str(SUBSET_SAMPLES))
    print(f"{suite} (subset): {dict(Counter(results.values()))}")
    baseline = json.loads(_baseline_path(suite).read_text())
    assert set(results) >= set(baseline), sorted(set(baseline) - set(results))
    found = regressions(results, baseline)
    assert not found, found


@pytest.mark.slow
@pytest.mark.skipif(
    os.environ.get("LAZYGEN_FULL_CONFORMANCE") != "1",
    reason="the full widened suites need LAZYGEN_FULL_CONFORMANCE=1 (CI runs their subset)",
)
@pytest.mark.parametrize("suite", sorted(WIDENED))
def test_opinfo_widened_full(suite, tmp_path):
    results = run_harness(tmp_path, *WIDENED[suite], timeout=3600)
    print(f"{suite}: {dict(Counter(results.values()))}")
    path = _baseline_path(suite)
    if _update_requested():
        path.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    found = regressions(results, json.loads(path.read_text()))
    assert not found, found


#: Entries the inductor test compiles (one sample each, a graph each: seconds per compile):
#: a Scalar ``alpha``, a Scalar ``value``, a Scalar weight Inductor branches on, a
#: reduction and a select. ``opinfo_harness.py --subset inductor`` runs a larger slice.
INDUCTOR_ENTRIES = ["add", "addcdiv", "lerp", "sum", "where"]


@pytest.mark.slow
def test_opinfo_inductor_subset(tmp_path):
    results = run_harness(
        tmp_path, "--backend", "inductor", "--samples", "1", "--only", *INDUCTOR_ENTRIES
    )
    assert set(results) == set(INDUCTOR_ENTRIES)
    assert all(outcome in CORRECT for outcome in results.values()), results


def test_opinfo_fx_backend_subset(tmp_path):
    """The fx backend (the same generated lowerings, run as torch.fx graphs) over every
    float32 entry's first sample: nothing worse than the TorchScript backend's full-run
    baseline (a subset scores the same or better than the full run). The full fx run,
    ``LAZYGEN_BACKEND=fx python tests/conformance/opinfo_harness.py``, takes as long as the
    TorchScript suite; its figures are in the README."""
    results = run_harness(tmp_path, "--backend", "fx", "--samples", str(SUBSET_SAMPLES))
    print(f"fx (subset): {dict(Counter(results.values()))}")
    baseline = json.loads(BASELINE.read_text())
    assert set(results) >= set(baseline), sorted(set(baseline) - set(results))
    found = regressions(results, baseline)
    assert not found, found


#: Entries the jax backend may answer with an error the TorchScript baseline does not list:
#: ``chalf`` (JAX has no complex32; the error says to convert first).
JAX_OWN_ERRORS = {"chalf"}

#: Entries whose sample draws random numbers (multi-head attention's gradient sample trains
#: with dropout; the in-place distributions, lowered with JAX's generator since issue #49):
#: a backend on the "seed" random contract draws its own numbers, not eager's, so the
#: harness answers ``no_sample`` ("random: the backend draws its own numbers"). Their
#: distributions are checked in tests/runtime/test_random.py.
JAX_RANDOM_SAMPLES = {
    "nn.functional.multi_head_attention_forward",
    "cauchy",
    "exponential",
    "geometric",
    "log_normal",
}


@pytest.mark.slow
@pytest.mark.parametrize("suite", ["float32", "grad"])
def test_opinfo_jax_backend_subset(suite, tmp_path):
    """The jax backend (issue #39: its executor is not torch), every entry's first sample,
    forward and gradients: nothing wrong, and no error beyond the TorchScript baseline's
    (and ``JAX_OWN_ERRORS``). Ops the jax backend lacks are refused (``fallback``: correct,
    eager). The full runs' figures are in docs/jax-backend.md."""
    pytest.importorskip("jax", reason="the jax backend needs JAX: pip install lazygen[jax]")
    extra = ["--grad"] if suite == "grad" else []
    results = run_harness(tmp_path, "--backend", "jax", "--samples", "1", *extra)
    print(f"jax {suite} (subset): {dict(Counter(results.values()))}")
    baseline_path = BASELINE if suite == "float32" else HERE / f"baseline_{suite}.json"
    baseline = json.loads(baseline_path.read_text())
    # the TorchScript baseline's wrong entries are the core's (shared by every backend)
    wrong = {n for n, o in results.items() if o == "wrong"} - {
        n for n, o in baseline.items() if o == "wrong"
    }
    assert not wrong, f"jax: entries wrong: {sorted(wrong)}"
    allowed = {n for n, o in baseline.items() if o not in CORRECT} | JAX_OWN_ERRORS
    errors = {n for n, o in results.items() if o in ("error", "no_sample")}
    errors -= {n for n in JAX_RANDOM_SAMPLES if results.get(n) == "no_sample"}
    assert errors <= allowed, sorted(errors - allowed)
