"""``bench/compile_step_cpu.py``: implementations compiled in one process, timed in turns."""

import subprocess
import sys
from pathlib import Path

DRIVER = Path(__file__).resolve().parents[2] / "bench" / "compile_step_cpu.py"


def test_two_implementations_are_timed_in_turns_in_one_process():
    done = subprocess.run(
        [sys.executable, str(DRIVER), "mlp_tiny", "eager", "lazygen-torchscript"]
        + ["--blocks", "2", "--steps", "3"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout
    assert "mlp_tiny: thread CPU time per step, 2 blocks of 3" in out
    rows = [line.split() for line in out.splitlines() if "least" in line]
    assert [row[0] for row in rows] == ["eager", "lazygen-torchscript"]
    assert rows[0][-1] == "1.00x"  # the first implementation against itself
    assert "Inductor's frames pay Dynamo's stream prologue" in out


def test_an_unknown_implementation_is_refused():
    done = subprocess.run(
        [sys.executable, str(DRIVER), "mlp_tiny", "tvm"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode != 0
    assert "unknown implementation 'tvm'" in done.stderr
