"""``bench/torchscript_floor.py`` on one repeat: every row, and a warm process that loaded
the graphs the cold one stored (else its parse and plans would be a cold process's)."""

import os
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"


def test_rows_and_a_warm_process_that_loaded_the_stored_graphs():
    done = subprocess.run(
        [sys.executable, str(BENCH / "torchscript_floor.py"), "--repeats", "1"],
        capture_output=True, text=True, timeout=600,
        env={  # lazygen's stores on, as by default (the test suite turns them off)
            k: v
            for k, v in os.environ.items()
            if k not in ("LAZYGEN_GRAPH_CACHE", "LAZYGEN_SHAPE_CACHE")
        },
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [line for line in done.stdout.splitlines() if line.startswith("| ")][1:]
    assert len(rows) == 6, done.stdout
    assert "parse of the 4 stored graphs" in done.stdout
    assert "Warm processes loaded 4 stored graphs" in done.stdout
