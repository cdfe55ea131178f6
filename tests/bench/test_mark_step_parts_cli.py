"""``bench/mark_step_parts.py`` on its smallest setting: ``mark_step`` and each launched
graph timed, wall and main-thread CPU, for every timed step."""

import re
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"


def test_mark_step_and_both_launches_are_timed():
    done = subprocess.run(
        [sys.executable, str(BENCH / "mark_step_parts.py"), "--workload", "mlp_adam",
         "--steps", "2"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    rows = re.findall(
        r"mlp_adam torchscript (\S+): wall [\d.]+ ms, main-thread CPU [\d.]+ ms \((\d+) calls\)",
        done.stdout,
    )
    parts = dict(rows)
    assert parts.pop("mark_step") == "2", done.stdout
    # the early-results split launches two graphs a step: the loss's and the rest
    assert len(parts) == 2 and all(p.startswith("launch/") for p in parts), done.stdout
    assert set(parts.values()) == {"2"}, done.stdout
