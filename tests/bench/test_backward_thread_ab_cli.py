"""``bench/backward_thread_ab.py`` on its smallest setting: both arms timed in one process."""

import re

from tests.support.bench_scripts import run_bench_script


def test_both_arms_timed():
    out = run_bench_script(
        "backward_thread_ab", "--workload", "mlp", "--backend", "torchscript",
        "--blocks", "2", "--steps", "2",
    )  # fmt: skip
    rows = dict(re.findall(r"mlp torchscript (\w+): step [\d.]+ ms, CPU [\d.]+ ms, (.*)", out))
    assert set(rows) == {"threads", "caller"}, out
    assert all(row.endswith("(1 steps)") for row in rows.values()), rows
