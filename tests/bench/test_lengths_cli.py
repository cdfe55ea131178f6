"""``bench/lengths.py`` from the command line: bad arguments are refused with the valid
choices; a short run prints one row per model, backend and mode with the graphs compiled
(the transformers models of issue 49: slow)."""

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.bench_scripts import load_bench_script

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "lengths.py"


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=900
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--models", "gpt2,t5"), "unknown model(s) t5; known: gpt2, llama, bert"),
        (("--backends", "inductor"), "unknown backend(s) inductor; known: torchscript, jax"),
        (("--modes", ""), "unknown mode(s) (none)"),
        (("--steps", "3"), "must be at least 4"),
    ],
)
def test_bad_arguments_are_refused(args, message, capsys):
    """In this process (the script's ``main``): a fresh interpreter per case cost ~5 s."""
    script = load_bench_script("lengths")
    with pytest.raises(SystemExit) as exited:
        script.main(list(args))
    assert exited.value.code == 2
    assert message in capsys.readouterr().err


@pytest.mark.slow  # two fresh processes training GPT-2 (about a minute on 2 cores)
def test_a_short_run_prints_the_graphs_compiled():
    pytest.importorskip("transformers", reason="the workload is a transformers model")
    done = _run("--models", "gpt2", "--backends", "torchscript", "--modes", "static,dynamic",
                "--steps", "6")  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = {line.split("|")[3].strip(): line.split("|") for line in done.stdout.splitlines()[3:]}
    assert set(rows) == {"static", "dynamic"}, done.stdout
    static, dynamic = int(rows["static"][4]), int(rows["dynamic"][4])
    assert dynamic <= 4 < static, done.stdout  # 6 lengths: one graph for all of them
    assert float(rows["dynamic"][11]) < 1e-4, done.stdout  # the losses are eager's
