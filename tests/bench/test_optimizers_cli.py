"""``bench/optimizers.py`` from the command line: unknown optimizers are refused with the
valid choices, and a tiny run prints one row per implementation, foreach as the anchor."""

import subprocess
import sys
from pathlib import Path

import pytest

DRIVER = Path(__file__).resolve().parents[2] / "bench" / "optimizers.py"


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(DRIVER), *args], capture_output=True, text=True, timeout=600
    )


def test_unknown_optimizers_are_refused_with_the_choices():
    done = _run("--optimizers", "adam,lbfgs")
    assert done.returncode == 2
    assert "unknown optimizers ['lbfgs']: choose from adam,adamw,sgd,adagrad" in done.stderr


@pytest.mark.slow
def test_a_tiny_run_prints_each_implementation_against_foreach():
    done = _run("--optimizers", "sgd", "--steps", "2")
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [line for line in done.stdout.splitlines() if line.startswith("| SGD ")]
    assert [row.split(" | ")[0] for row in rows] == [
        "| SGD foreach",
        "| SGD fused",
        "| SGD for-loop",
    ]
    assert rows[0].endswith("| anchor |") and "x foreach" in rows[1], rows
