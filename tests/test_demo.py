"""The README's main job runs: regenerate (skipped when current) and train lazily."""

from __future__ import annotations

import re
import subprocess
import sys


def test_demo_trains_lazily_like_eager(tmp_path):
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "lazygen.demo",
            "--steps",
            "4",
            "--ir-picture",
            str(tmp_path / "ir.svg"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    rows = re.findall(r"^\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+(\d+)$", result.stdout, re.M)
    assert [int(r[0]) for r in rows] == [0, 1, 2, 3]
    for _, lazy, eager, _ in rows:
        assert abs(float(lazy) - float(eager)) < 1e-5
    # Each step runs as two graphs (the loss first, see runtime/split.py); the first step's
    # structure differs (the optimizer's state is created), later steps reuse the second's.
    compiles = [int(r[3]) for r in rows]
    assert (
        compiles[1] <= 4 and compiles[-1] == compiles[1]
    ), f"steps after the second must reuse cached compiles: {compiles}"
    assert "Counter: MarkStep" in result.stdout and "lazy::addmm" in result.stdout
