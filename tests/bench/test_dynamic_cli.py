"""``bench/dynamic.py`` from the command line: bad arguments are refused with the valid
choices, and a tiny run prints its table with the graphs each implementation compiled."""

import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "dynamic.py"


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=600
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--impls", "eager,lazy"), "unknown implementation(s) lazy; known: eager"),
        (("--lengths", "0"), "must be at least 1"),
    ],
)
def test_bad_arguments_are_refused(args, message):
    done = _run(*args)
    assert done.returncode == 2
    assert message in done.stderr


@pytest.mark.slow  # three fresh processes, each compiling (about a minute on 2 cores)
def test_a_tiny_run_prints_compiles_and_ratios():
    done = _run("--lengths", "3", "--passes", "2", "--impls", "eager,lazy-static,lazy-dynamic")
    assert done.returncode == 0, done.stderr
    rows = {line.split("|")[1].strip(): line.split("|") for line in done.stdout.splitlines()[3:]}
    assert set(rows) == {"eager", "lazy-static", "lazy-dynamic"}, done.stdout
    assert rows["eager"][5].strip() == "1.00x"
    static, dynamic = int(rows["lazy-static"][2]), int(rows["lazy-dynamic"][2])
    assert dynamic < static, done.stdout  # the third length reuses the graph for all sizes
