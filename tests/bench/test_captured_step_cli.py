"""``bench/captured_step.py`` end to end on its smallest workload: one row per route, the
captured step's losses equal eager's, and torchax's route is named as skipped, or timed,
depending on whether it is installed."""

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

DRIVER = Path(__file__).resolve().parents[2] / "bench" / "captured_step.py"


@pytest.mark.slow
def test_the_captured_step_table_names_every_route():
    done = subprocess.run(
        [sys.executable, str(DRIVER), "--workloads", "mlp", "--steps", "4"]
        + ["--routes", "eager", "captured-torchscript", "torchax"],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    rows = {
        line.split("|")[2].strip(): line for line in done.stdout.splitlines() if "| mlp |" in line
    }
    assert {"eager", "captured-torchscript"} <= set(rows), done.stdout
    drift = float(rows["captured-torchscript"].rstrip(" |").rsplit("|", 1)[1])
    assert drift < 1e-4  # losses against eager's, relative
    has_torchax = importlib.util.find_spec("torchax") is not None
    assert ("torchax" in rows) == has_torchax
    assert ("torchax: skipped" in done.stdout) != has_torchax
