"""``bench/xla_program.py``: the captured step's XLA program timed apart from the step, one
program a step, and a clear message where torchax is missing."""

import importlib.util
import json
import subprocess
import sys

import pytest

from tests.support.bench_scripts import BENCH, load_bench_script

pytest.importorskip("jax", reason="the captured step on jax needs JAX (the jax extra)")


def test_the_captured_steps_program_is_timed_once_a_step_and_within_the_step():
    done = subprocess.run(
        [sys.executable, str(BENCH / "xla_program.py"), "--one", "captured-jax", "mlp"]
        + ["--steps", "12"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.splitlines()[-1])
    assert result["programs_per_step"] == 1  # the whole step is one program
    assert 0 < result["program_min"] <= result["program"] < result["steady"]


@pytest.mark.skipif(
    importlib.util.find_spec("torchax") is not None, reason="torchax is installed here"
)
def test_without_torchax_the_script_says_what_to_install():
    with pytest.raises(SystemExit) as exited:
        load_bench_script("xla_program").main(["--workloads", "mlp", "--repeats", "1"])
    assert "pip install --no-deps torchax" in str(exited.value)
