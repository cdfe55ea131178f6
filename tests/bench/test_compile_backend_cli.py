"""``bench/compile_backend.py`` end to end on its smallest workload: the table row reports
the two-graph step (backward traced into the forward's graph) with nothing run eagerly, and
three graphs when Dynamo breaks at ``backward()``."""

import subprocess
import sys
from pathlib import Path

import pytest

DRIVER = Path(__file__).resolve().parents[2] / "bench" / "compile_backend.py"


def _row(backward: str) -> str:
    done = subprocess.run(
        [sys.executable, str(DRIVER), "--workloads", "mlp_tiny", "--impls"]
        + ["eager,lazygen-torchscript", "--steps", "6", "--backward", backward],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [line for line in done.stdout.splitlines() if "| lazygen-torchscript |" in line]
    assert len(rows) == 1, done.stdout + done.stderr
    return rows[0]


@pytest.mark.slow
@pytest.mark.parametrize(
    "backward, graphs", [("traced", 2), ("graph-break", 3)], ids=["traced", "graph_break"]
)
def test_the_tiny_step_runs_whole_on_lazygen(backward: str, graphs: int):
    row = _row(backward)
    assert f"{graphs} graphs/step, 0 eager graphs" in row, row
