"""``bench/jax_backend.py`` on its smallest workload: one row per backend, the lazy
backends' steps with nothing run eagerly."""

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("jax", reason="the jax backend needs JAX: pip install lazygen[jax]")

DRIVER = Path(__file__).resolve().parents[2] / "bench" / "jax_backend.py"


def test_the_table_has_a_row_per_backend_with_nothing_eager():
    done = subprocess.run(
        [sys.executable, str(DRIVER), "--workloads", "mlp", "--backends", "eager", "jax",
         "--steps", "3"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [line for line in done.stdout.splitlines() if line.startswith("| mlp |")]
    assert [row.split("|")[2].strip() for row in rows] == ["eager", "jax"]
    assert rows[1].rstrip(" |").endswith("| 0")
