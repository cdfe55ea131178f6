"""``bench/jax_sizes.py`` on its smallest run: both paths' rows, each a number per column;
bad arguments are refused."""

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("jax", reason="the jax backend needs JAX: pip install lazygen[jax]")

DRIVER = Path(__file__).resolve().parents[2] / "bench" / "jax_sizes.py"


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(DRIVER), *args], capture_output=True, text=True, timeout=300
    )


def test_one_row_per_path_with_its_costs():
    done = _run("--lengths", "2", "--layers", "1")
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [line.split("|")[1:-1] for line in done.stdout.splitlines() if "| jax." in line]
    assert [row[0].strip().split()[0] for row in rows] == ["jax.jit", "jax.export,"]
    for row in rows:
        assert all(float(cell) > 0 for cell in row[2:]), done.stdout
    assert float(rows[1][1]) > 0, done.stdout  # the export, once


def test_bad_arguments_are_refused():
    done = _run("--lengths", "0")
    assert done.returncode == 2 and "at least 1" in done.stderr
