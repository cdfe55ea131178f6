"""``bench/number_operands_ab.py`` on its smallest setting: both arms timed in one process,
on programs that give the same bits."""

import re

from tests.support.bench_scripts import run_bench_script


def test_both_arms_timed_on_the_same_bits():
    out = run_bench_script(
        "number_operands_ab", "--workload", "mlp", "--blocks", "2", "--runs", "1"
    )
    rows = dict(re.findall(r"mlp captured share_number_operands (on|off): [\d.]+ ms CPU (.*)", out))
    assert set(rows) == {"on", "off"}, out
    assert all(row.endswith("same bits: True)") for row in rows.values()), rows
