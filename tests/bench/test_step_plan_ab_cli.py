"""``bench/step_plan_ab.py`` on its smallest setting: both arms timed in one process, and
only the plan's arm replays the plan."""

import re
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"


def test_both_arms_timed():
    done = subprocess.run(
        [sys.executable, str(BENCH / "step_plan_ab.py"), "--workload", "mlp",
         "--blocks", "2", "--steps", "2"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    rows = dict(
        re.findall(r"mlp torchscript (\w+): step CPU [\d.]+ ms, sync less (.*)", done.stdout)
    )
    assert set(rows) == {"plan", "generic"}, done.stdout
    assert rows["plan"].endswith("(1 steps, 1 planned)"), rows
    assert rows["generic"].endswith("(1 steps, 0 planned)"), rows
