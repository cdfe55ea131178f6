"""``bench/history.py`` keeps the latest run per benchmark on the page and every run in the
JSON history (none lost, none twice), and ``bench/plots.py`` draws the latest figures."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"

PAGE = """# Benchmarks

Produced by `python bench/run_all.py` on 2026-11-20.

### dynamic: a transformer over 24 sequence lengths (`python bench/dynamic.py --lengths 24`)

Measured 2026-11-25 at commit 9c505df.

| implementation | graphs compiled | first pass |
|---|---:|---:|
| eager | 0 | 0.10 s |
| lazygen, `LAZYGEN_DYNAMIC_SHAPES=1` | 6 | 1.28 s |

### real loops: loss read every step (`python bench/real_loops.py --repeats 3`)

Measured 2026-11-23 at commit 50a941a.

| workload | implementation | step | vs eager |
|---|---|---:|---:|
| mlp_sgd | eager | 2.00 ms | 1.00x |
| mlp_sgd | lazygen-torchscript | 4.00 ms | 2.00x |
| mlp_sgd | dynamo-inductor | 1.50 ms | 0.75x |

### real loops, session 5 (2026-11-22): an older A/B

| workload | implementation | step | vs eager |
|---|---|---:|---:|
| mlp_sgd | lazygen-torchscript | 9.00 ms | 4.50x |

## Measurements behind the code

A table that is no run.
"""


def _run(script: str, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, str(BENCH / script), *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=BENCH,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_archive_keeps_the_latest_run_on_the_page_and_every_run_in_the_history(tmp_path):
    page, history = tmp_path / "benchmarks.md", tmp_path / "history"
    page.write_text(PAGE)
    _run("history.py", "--page", str(page), "--history", str(history))
    text = page.read_text()
    assert "an older A/B" not in text and "9.00 ms" not in text
    assert "*run of 2026-11-23, commit 50a941a, `python bench/real_loops.py --repeats 3`*" in text
    assert "(1 older in `bench/history/real_loops.json`)" in text
    assert text.rstrip().endswith("A table that is no run.")
    loops = json.loads((history / "real_loops.json").read_text())
    assert [r["date"] for r in loops] == ["2026-11-23", "2026-11-22"]
    assert loops[0]["tables"][0][1] == {
        "workload": "mlp_sgd",
        "implementation": "lazygen-torchscript",
        "step": "4.00 ms",
        "vs eager": "2.00x",
    }
    # Archiving again adds nothing and changes nothing.
    _run("history.py", "--page", str(page), "--history", str(history))
    assert page.read_text() == text
    assert len(json.loads((history / "real_loops.json").read_text())) == 2


def test_plots_draw_the_latest_runs(tmp_path):
    page, history, out = tmp_path / "benchmarks.md", tmp_path / "history", tmp_path / "figures"
    page.write_text(PAGE)
    _run("history.py", "--page", str(page), "--history", str(history))
    _run("plots.py", "--history", str(history), "--out", str(out))
    loops = (out / "real_loops.svg").read_text()
    assert "mlp_sgd" in loops and "50a941a" in loops
    assert "graphs compiled for 24 sequence lengths" in (out / "dynamic.svg").read_text()
