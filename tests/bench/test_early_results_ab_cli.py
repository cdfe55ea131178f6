"""``bench/early_results_ab.py`` on its smallest setting: both settings timed in one process,
and the split setting's steps really split (the other's never)."""

import re
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"


def test_both_settings_timed_and_only_one_splits():
    done = subprocess.run(
        [sys.executable, str(BENCH / "early_results_ab.py"), "--workloads", "mlp_adam",
         "--blocks", "1", "--steps", "2"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    rows = dict(re.findall(r"mlp_adam torchscript (\w+): (.*)", done.stdout))
    assert set(rows) == {"split", "whole"}, done.stdout
    assert rows["split"].endswith("2 of 2 steps split"), rows
    assert rows["whole"].endswith("0 of 2 steps split"), rows
