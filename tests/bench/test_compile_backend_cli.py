"""``bench/compile_backend.py`` end to end on its smallest workload: the table row reports
the two-graph step (backward traced into the forward's graph) with nothing run eagerly, and
three graphs when Dynamo breaks at ``backward()``. A step that trains nothing is refused,
and GPT-2's step, whose backward Dynamo once dropped, trains."""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tests.support.bench_scripts import load_bench_script

DRIVER = Path(__file__).resolve().parents[2] / "bench" / "compile_backend.py"


@pytest.fixture(scope="module")
def bench():
    return load_bench_script("compile_backend")


def test_a_step_that_updates_no_parameter_is_refused(bench):
    params = [torch.ones(3), torch.zeros(2)]
    before = [p.clone() for p in params]
    with pytest.raises(SystemExit, match="gpt2 inductor: the step did not train"):
        bench.check_trained("gpt2 inductor", params, before)
    params[1] += 1e-3  # one parameter updated: a training step
    bench.check_trained("gpt2 inductor", params, before)


def _row(backward: str) -> str:
    done = subprocess.run(
        [sys.executable, str(DRIVER), "--workloads", "mlp_tiny", "--impls"]
        + ["eager,lazygen-torchscript", "--steps", "6", "--backward", backward],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [line for line in done.stdout.splitlines() if "| lazygen-torchscript |" in line]
    assert len(rows) == 1, done.stdout + done.stderr
    return rows[0]


@pytest.mark.slow
@pytest.mark.parametrize(
    "backward, graphs", [("traced", 2), ("graph-break", 3)], ids=["traced", "graph_break"]
)
def test_the_tiny_step_runs_whole_on_lazygen(backward: str, graphs: int):
    row = _row(backward)
    assert f"{graphs} graphs/step, 0 eager graphs" in row, row


@pytest.mark.slow
def test_gpt2s_traced_step_trains(bench):
    """GPT-2's loss logged a warning, a graph break before ``loss.backward()`` across which
    Dynamo with ``trace_autograd_ops`` dropped the backward: the step measured trained
    nothing. The run checks that its parameters change (else it fails)."""
    if importlib.util.find_spec("transformers") is None:
        pytest.skip("transformers is not installed")
    done = subprocess.run(
        [sys.executable, str(DRIVER), "--child", "gpt2", "lazygen-torchscript", "--steps", "7"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["eager_graphs"] == 0


def test_the_same_contract_anchor_gets_its_column_and_mean(bench, monkeypatch, capsys):
    """``inductor-eager-random`` (Inductor drawing eager's random numbers, lazygen's
    contract) is a steady-step anchor of its own: a column of ratios and a geometric
    mean, from the rows measured in the same run."""
    steady = {"lazygen-inductor": 1.0, "inductor": 0.8, "inductor-eager-random": 1.25}
    monkeypatch.setattr(
        bench, "_child", lambda w, impl, *rest: {"first_s": 2.0, "steady_ms": steady[impl]}
    )
    impls = ",".join(steady)
    monkeypatch.setattr(sys, "argv", ["compile_backend", "--workloads", "gpt2", "--impls", impls])
    bench.main()
    out = capsys.readouterr().out
    assert "| vs inductor | vs inductor-eager-random | notes |" in out
    assert "| gpt2 | lazygen-inductor | 2.00 s | 1.00x | 1.00 ms | - | 1.25x | 0.80x |" in out
    assert "lazygen-inductor: first step vs inductor 1.00x, steady vs inductor 1.25x, " in out
    assert "steady vs inductor-eager-random 0.80x" in out


def test_repeats_take_turns_and_keep_the_least_median(bench, monkeypatch, capsys):
    """``--repeats``: the implementations run in turns (a slow spell falls on all), each
    later run reuses its first run's cache, the first step is the first (cold) run's and
    the steady step the least of the medians; the notes give the runs' spread."""
    calls = []
    steady = {"lazygen-inductor": [1.3, 1.0, 1.1], "inductor": [0.9, 1.2, 1.0]}

    def child(workload, impl, steps, timeout, cache_dir, backward):
        calls.append((impl, cache_dir))
        attempt = sum(1 for i, _ in calls if i == impl) - 1
        return {"first_s": 10.0 + attempt, "steady_ms": steady[impl][attempt]}

    monkeypatch.setattr(bench, "_child", child)
    argv = ["compile_backend", "--workloads", "gpt2", "--impls", ",".join(steady)]
    monkeypatch.setattr(sys, "argv", argv + ["--repeats", "3"])
    bench.main()
    out = capsys.readouterr().out
    assert [impl for impl, _ in calls] == ["lazygen-inductor", "inductor"] * 3
    for impl in steady:
        dirs = {cache for i, cache in calls if i == impl}
        assert len(dirs) == 1 and None not in dirs  # one cache each, first run's
        assert not Path(dirs.pop()).exists()  # removed afterwards
    assert (
        "| gpt2 | lazygen-inductor | 10.00 s | 1.00x | 1.00 ms | - | 1.11x | runs 1.00-1.30 ms |"
        in out
    )
    assert "least of 3 runs taken in turns" in out


def test_a_repeat_is_not_tried_for_an_implementation_that_failed(bench, monkeypatch, capsys):
    calls = []

    def child(workload, impl, *rest):
        calls.append(impl)
        return None if impl == "inductor" else {"first_s": 1.0, "steady_ms": 1.0}

    monkeypatch.setattr(bench, "_child", child)
    argv = ["compile_backend", "--workloads", "gpt2", "--impls", "eager,inductor"]
    monkeypatch.setattr(sys, "argv", argv + ["--repeats", "2"])
    bench.main()
    assert calls == ["eager", "inductor", "eager"]
    assert "| gpt2 | inductor |" not in capsys.readouterr().out
