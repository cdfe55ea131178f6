"""``bench/fsdp.py`` from the command line: bad world sizes are refused, and a tiny run
prints one row per world size with one lazy graph and no cut per step."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "fsdp.py"


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=600
    )


@pytest.mark.parametrize("nprocs", ["two", "3", "0"])
def test_bad_world_sizes_are_refused(nprocs):
    done = _run("--nprocs", nprocs)
    assert done.returncode == 2
    assert "--nprocs" in done.stderr


@pytest.mark.slow  # two processes training two sharded models
def test_a_tiny_run_prints_one_graph_and_no_cut_per_step():
    done = _run("--nprocs", "2", "--steps-per-block", "1", "--blocks", "1")
    assert done.returncode == 0, done.stderr[-3000:]
    (row,) = json.loads(done.stdout.strip().splitlines()[-1])
    assert row["processes"] == 2 and row["lazy_graphs_per_step"] == 1, done.stdout
    assert row["lazy_graph_cuts_per_step"] == 0, done.stdout
    assert row["lazy_collectives_per_step"] == row["cpu_collectives_per_step"], done.stdout
