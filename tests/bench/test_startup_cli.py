"""``bench/startup.py`` and ``bench/jax_overlap.py`` on their smallest settings: every row
of the tables, each process's phases measured, and the warm process loading what the cold
one stored."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


def test_startup_rows_cold_warm_and_anchors():
    done = subprocess.run(
        [sys.executable, str(BENCH / "startup.py"), "--backends", "torchscript",
         "--repeats", "1", "--steps", "1"],
        capture_output=True, text=True, timeout=600,
        env={k: v for k, v in os.environ.items() if k != "LAZYGEN_GRAPH_CACHE"},  # the default
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    rows = {
        line.split("|")[1].strip(): line
        for line in done.stdout.splitlines()
        if line.startswith("| ") and not line.startswith("| process")
    }
    assert set(rows) == {"anchor torch", "eager", "torchscript cold", "torchscript warm"}
    assert "beyond torch's import" in rows["torchscript cold"]
    assert "0 loaded" in rows["torchscript cold"] and "0 loaded" not in rows["torchscript warm"]
    assert "torchscript: 1 steady steps cost" in done.stdout  # the warm steps' floor


def test_overlap_rows_per_batch():
    pytest.importorskip("jax", reason="the jax backend needs JAX: pip install lazygen[jax]")
    done = subprocess.run(
        [sys.executable, str(BENCH / "jax_overlap.py"), "--batches", "4", "--steps", "3",
         "--repeats", "1"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [line for line in done.stdout.splitlines() if line.startswith("| 4 |")]
    assert len(rows) == 1 and "steady / max" not in rows[0] and "goal ~1" in rows[0]
