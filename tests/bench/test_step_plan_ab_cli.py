"""``bench/step_plan_ab.py`` on its smallest setting: both arms timed in one process, and
only the plan's arm replays the plan."""

import re

from tests.support.bench_scripts import run_bench_script


def test_both_arms_timed():
    out = run_bench_script("step_plan_ab", "--workload", "mlp", "--blocks", "2", "--steps", "2")
    rows = dict(re.findall(r"mlp torchscript (\w+): step CPU [\d.]+ ms, sync less (.*)", out))
    assert set(rows) == {"plan", "generic"}, out
    assert rows["plan"].endswith("(1 steps, 1 planned)"), rows
    assert rows["generic"].endswith("(1 steps, 0 planned)"), rows
