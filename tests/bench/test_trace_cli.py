"""``bench/trace.py``'s rows, and its ``node-floor`` kernels: a real tracer, whose chain
computes eager's values, so that its row is the price of recording and nothing less."""

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"

CHAIN = """
import sys, torch
sys.path.insert(0, {bench!r})
import _workloads
impl = _workloads.Impl("node-floor")
torch.manual_seed(0)
x, y = torch.randn(16, 16, dtype=torch.float64), torch.randn(16, 16, dtype=torch.float64)
z, want = x.to(impl.device), x
for i in range(40):
    z = z + y.to(impl.device) if i % 2 == 0 else z * y.to(impl.device)
    want = want + y if i % 2 == 0 else want * y
impl.mark_step()
torch.testing.assert_close(z.cpu(), want)
print("same")
"""


def test_the_node_floor_records_a_chain_that_computes_eagers_values():
    done = subprocess.run(
        [sys.executable, "-c", CHAIN.format(bench=str(BENCH))],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().endswith("same")


def test_each_implementation_prints_its_cost_per_op():
    for impl in ("floor", "node-floor"):
        done = subprocess.run(
            [sys.executable, str(BENCH / "_workloads.py"), "trace", impl, "--ops", "50",
             "--repeats", "1"],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-2000:]
        assert json.loads(done.stdout.strip().splitlines()[-1])["us_per_op"] > 0
