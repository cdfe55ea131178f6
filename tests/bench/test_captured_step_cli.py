"""``bench/captured_step.py`` end to end on its smallest workload: one row per route, the
captured step's losses equal eager's, and torchax's route is named as skipped, or timed,
depending on whether it is installed."""

import importlib.util
import os
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
        + ["--routes", "eager", "dynamo-floor", "captured-torchscript", "torchax"],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    rows = {
        line.split("|")[2].strip(): line for line in done.stdout.splitlines() if "| mlp |" in line
    }
    assert {"eager", "dynamo-floor", "captured-torchscript"} <= set(rows), done.stdout
    for route in ("dynamo-floor", "captured-torchscript"):
        drift = float(rows[route].rstrip(" |").rsplit("|", 1)[1])
        assert drift < 1e-4, route  # losses against eager's, relative
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
    routes = ["eager", "dynamo-floor", "captured-jax", "torchax"]
    commands = _script()._commands(routes, str(tmp_path))
    assert list(commands) == [
        "eager",
        "dynamo-floor",
        "captured-jax@base",
        "captured-jax",
        "torchax",
    ]
    python, script, route = commands["captured-jax@base"]
    assert python == str(tmp_path / ".venv" / "bin" / "python")
    assert script == str(tmp_path / "bench" / "captured_step.py") and route == "captured-jax"
    assert commands["captured-jax"][0] == sys.executable


def test_a_base_that_is_no_checkout_is_refused(tmp_path, capsys):
    with pytest.raises(SystemExit) as exited:
        _script().main(["--base", str(tmp_path)])
    assert exited.value.code == 2
    assert "no bench/captured_step.py there" in capsys.readouterr().err


def test_cold_runs_get_empty_caches_of_their_own_and_leave_none_behind():
    """First steps are compared cold against torchax, which persists nothing: each lazygen
    process gets a new, empty cache directory (lazygen's and Inductor's), removed after."""
    caches = _script()._caches
    with caches(cold=True) as env:
        directory = env["LAZYGEN_CACHE_DIR"]
        assert os.path.isdir(directory) and not os.listdir(directory)
        assert env["TORCHINDUCTOR_CACHE_DIR"].startswith(directory)
    assert not os.path.exists(directory)
    with caches(cold=True) as again:
        assert again["LAZYGEN_CACHE_DIR"] != directory
    with caches(cold=False) as env:
        assert env is None  # the machine's caches: the process's own environment


def test_the_wrapper_floor_runs_each_graph_once_then_replays_its_first_results():
    """``wrapper-floor`` times torch.compile's wrappers around graphs that do no work: its
    step returns the first step's loss at every call (nothing trains), and its row is an
    anchor (run once, from this tree, under ``--base``)."""
    torch = pytest.importorskip("torch")
    script = _script()
    step = torch.compile(
        script.training_step("mlp", on_lazy_device=False), backend=script._no_work()
    )
    losses = [step().item() for _ in range(3)]
    assert losses[0] == losses[1] == losses[2]
    assert "wrapper-floor" in script.ANCHORS


def test_the_floors_run_the_optimizer_the_captured_step_runs():
    """torch picks the ``_foreach_*`` implementation for the lazy device's parameters and the
    per-tensor loop for the CPU's; the floors' CPU step must trace the captured one's."""
    pytest.importorskip("torch")
    step = _script()._cpu_step_as_captured("mlp")
    assert [group["foreach"] for group in step.optimizer.param_groups] == [True]
