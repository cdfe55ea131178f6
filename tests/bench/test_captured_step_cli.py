"""``bench/captured_step.py`` end to end on its smallest workload: one row per route, the
captured step's losses equal eager's, and torchax's route is named as skipped, or timed,
depending on whether it is installed."""

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.bench_scripts import load_bench_script

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


def _script():
    """The driver loaded in this process."""
    return load_bench_script("captured_step")


def test_base_runs_each_lazygen_route_from_the_other_checkout_first(tmp_path):
    """``--base``: an A/B of two checkouts in one run, the anchors run once, from this tree."""
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    (tmp_path / ".venv" / "bin" / "python").touch()
    commands = _script()._commands(["eager", "captured-jax", "torchax"], str(tmp_path))
    assert list(commands) == ["eager", "captured-jax@base", "captured-jax", "torchax"]
    python, script, route = commands["captured-jax@base"]
    assert python == str(tmp_path / ".venv" / "bin" / "python")
    assert script == str(tmp_path / "bench" / "captured_step.py") and route == "captured-jax"
    assert commands["captured-jax"][0] == sys.executable


def test_a_base_that_is_no_checkout_is_refused(tmp_path, capsys):
    with pytest.raises(SystemExit) as exited:
        _script().main(["--base", str(tmp_path)])
    assert exited.value.code == 2
    assert "no bench/captured_step.py there" in capsys.readouterr().err
