"""``bench/captured_step_parts.py``: its table on the smallest workload, and its clocks'
accounting of nested parts."""

import re
import time

from tests.support.bench_scripts import load_bench_script, run_bench_script


def test_every_part_of_a_captured_step_is_a_row():
    out = run_bench_script(
        "captured_step_parts", "--workload", "mlp", "--backend", "torchscript", "--steps", "3"
    )
    assert re.search(r"mlp captured-torchscript: step [\d.]+ ms wall, [\d.]+ ms main-thread", out)
    rows = dict(re.findall(r"^  (\S.*?)\s+(-?[\d.]+)\s+(?:-?[\d.]+)$", out, re.MULTILINE))
    for row in ("splice (a graph's call spliced)", "step plan: replay (the guard)", "rest"):
        assert any(name.startswith(row) for name in rows), out
    assert "lazygen parts (CPU)" in out


def test_a_part_called_by_another_is_not_counted_twice():
    clocks = load_bench_script("captured_step_parts").Clocks()

    def inner():
        time.sleep(0.02)

    wrapped_inner = clocks.wrap(inner, "inner")

    def outer():
        wrapped_inner()
        time.sleep(0.01)

    clocks.wrap(outer, "outer")()
    assert clocks.wall["inner"] >= 0.02
    assert 0.01 <= clocks.wall["outer"] < 0.02  # its own time only
