"""``bench/number_operands_ab.py`` on its smallest setting: both arms timed in one process,
on programs that give the same bits."""

import re
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"


def test_both_arms_timed_on_the_same_bits():
    done = subprocess.run(
        [sys.executable, str(BENCH / "number_operands_ab.py"), "--workload", "mlp",
         "--blocks", "2", "--runs", "1"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    rows = dict(
        re.findall(r"mlp captured share_number_operands (on|off): [\d.]+ ms CPU (.*)", done.stdout)
    )
    assert set(rows) == {"on", "off"}, done.stdout
    assert all(row.endswith("same bits: True)") for row in rows.values()), rows
