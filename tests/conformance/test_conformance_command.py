"""`lazygen conformance`: entries selected from an op list, per-entry lines as they finish,
crash isolation (a worker killed by a signal names its entry), timeouts, the JSON matrix,
exit codes, and a clear message for every mistake in the arguments.

The worker-running tests use the test backends of ``tests/support/backend_sites.py`` (installed into a temporary
site directory, found by entry point) and one sample per entry, so each takes seconds.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from support.backend_sites import FOUR_OP_LIST

from lazygen.cli import main
from lazygen.commands.conformance import exit_status
from lazygen.conformance.classify import EntryResult
from lazygen.conformance.opmap import entries_for_ops, list_names
from lazygen.conformance.runner import RunConfig, Runner, crash_site, last_op
from lazygen.conformance.select import SelectionError, select

REPO = Path(__file__).resolve().parents[2]
OP_LIST = REPO / "yaml" / "builtin.yaml"


@pytest.fixture
def site(backend_site) -> Path:
    return backend_site


def _env(site: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), str(site), env.get("PYTHONPATH", "")])
    env.pop("LAZYGEN_BACKEND", None)
    return env


def _command(*arguments: str) -> list[str]:
    return [sys.executable, "-m", "lazygen", "conformance", str(OP_LIST), *arguments]


def _run(site: Path, *arguments: str, timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        _command(*arguments),
        env=_env(site),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_crash_is_isolated_and_named(site, tmp_path):
    """``sin`` kills its worker: it is reported as a crash with the signal, the entries
    before and after it still run, and the exit status is 1."""
    out = tmp_path / "matrix.json"
    entries = ["add", "sin", "tan", "mul", "to.bool.channels_last.slice_add_"]
    done = _run(
        site,
        "--backend",
        "crashing",
        "--conversions",
        "--samples",
        "1",
        "--only",
        *entries,
        "--json",
        str(out),
    )
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    by_entry = {line.split()[2]: line for line in lines if line.startswith("[")}
    assert set(by_entry) == set(entries), done.stdout
    assert "CRASH" in by_entry["sin"] and "SIGSEGV" in by_entry["sin"]
    assert "conformance_backends.py" in by_entry["sin"]  # the frame the process died in
    assert by_entry["tan"].split()[1] == "wrong" and "max abs diff 1" in by_entry["tan"]
    for entry in ("add", "mul", "to.bool.channels_last.slice_add_"):
        assert by_entry[entry].split()[1] == "lazy", by_entry[entry]
    assert "CRASH: sin: SIGSEGV" in done.stderr
    assert (
        f"repro: lazygen conformance {OP_LIST} --backend crashing --samples 1 --only sin"
        in done.stderr
    )

    matrix = json.loads(out.read_text())
    assert matrix["format"] == 1 and matrix["backend"] == "crashing"
    assert (matrix["dtype"], matrix["grad"], matrix["samples"]) == ("float32", False, 1)
    assert matrix["summary"]["entries"] == 5
    assert matrix["summary"]["crash"] == 1 and matrix["summary"]["wrong"] == 1
    assert matrix["summary"]["lazy"] == 3
    sin = matrix["entries"]["sin"]
    assert sin["outcome"] == "crash" and sin["signal"] == "SIGSEGV"
    assert "Segmentation fault" in sin["extra"]["stderr"]
    assert sin["extra"]["op"].startswith("aten.")  # the last op run on lazy tensors
    tan = matrix["entries"]["tan"]
    assert tan["max_abs"] == pytest.approx(1.0) and tan["max_rel"] > 0
    assert matrix["entries"]["add"] == {
        "outcome": "lazy",
        "samples": 1,
        "seconds": matrix["entries"]["add"]["seconds"],
    }
    assert "sin" in matrix["ops"]["sin"]["entries"]
    assert matrix["ops"]["sin"]["outcomes"] == {"crash": 1}
    assert matrix["worker_failures"] == []


def test_strict_fails_on_wrong_results(site):
    strict = _run(site, "--backend", "crashing", "--samples", "1", "--only", "tan", "--strict")
    assert strict.returncode == 1, strict.stdout + strict.stderr
    assert "wrong     tan" in strict.stdout


@pytest.mark.parametrize(
    "outcomes, worker_failed, strict, status",
    [
        (["lazy", "fallback", "wrong", "error", "no_sample"], False, False, 0),
        (["lazy", "wrong"], False, True, 1),
        (["lazy", "error"], False, True, 0),
        (["lazy", "crash"], False, False, 1),
        (["timeout"], False, False, 1),
        (["lazy"], True, False, 1),
    ],
)
def test_exit_status(outcomes, worker_failed, strict, status):
    results = [EntryResult(f"e{i}", outcome, 1) for i, outcome in enumerate(outcomes)]
    assert exit_status(results, worker_failed, strict) == status


def test_lines_stream_and_hangs_time_out(site):
    """The ``add`` line arrives while ``cos`` still runs; ``cos`` never finishes and is
    killed after ``--timeout`` seconds."""
    process = subprocess.Popen(
        _command(
            "--backend", "crashing", "--samples", "1", "--timeout", "8", "--only", "add", "cos"
        ),
        env=_env(site),
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        first = ""
        while not first.startswith("["):
            first = process.stdout.readline()
            assert first, "the command ended before printing an entry"
        assert first.split()[1:3] == ["lazy", "add"]
        assert process.poll() is None  # printed as it finished, not at exit
        rest, errors = process.communicate(timeout=300)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 1
    assert "TIMEOUT   cos  ran longer than 8 s" in rest, rest + errors


def test_four_op_backend_runs_its_entries(site, tmp_path):
    """A generated third-party backend, by name: the list's ops select their entries and
    ops outside the list fall back."""
    out = tmp_path / "four.json"
    op_list = tmp_path / "four.yaml"
    op_list.write_text(FOUR_OP_LIST)
    done = subprocess.run(
        [sys.executable, "-m", "lazygen", "conformance", str(op_list), "--backend", "fourop"]
        + ["--samples", "1", "--only", "relu", "mm", "nn.functional.relu6", "--json", str(out)],
        env=_env(site),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    matrix = json.loads(out.read_text())
    assert matrix["backend"] == "fourop"
    assert set(matrix["ops"]) == {"add.Tensor", "mul.Tensor", "mm", "relu"}
    assert matrix["entries"]["nn.functional.relu"]["outcome"] == "lazy"
    assert matrix["entries"]["mm"]["outcome"] == "lazy"
    relu6 = matrix["entries"]["nn.functional.relu6"]
    assert relu6["outcome"] == "fallback" and relu6["fallbacks"], relu6
    assert "nn.functional.relu" in matrix["ops"]["relu"]["entries"]


def test_death_between_entries_blames_no_entry(site):
    """A worker that dies after its last result (at exit) is a worker failure: its entries
    keep their results, none is called a crash."""
    config = RunConfig(
        backend="crashing",
        samples=1,
        env={"CONFORMANCE_TEST_CRASH_AT_EXIT": "1"},
        python_path=(str(site),),
    )
    runner = Runner(config)
    results = runner.run(["add", "mul"])
    assert [(r.name, r.outcome) for r in results] == [("add", "lazy"), ("mul", "lazy")]
    assert len(runner.failures) == 1
    assert runner.failures[0].how == "SIGSEGV" and runner.failures[0].entries == ["add", "mul"]
    assert "Segmentation fault" in runner.failures[0].stderr_tail


def test_list_prints_the_selection(capsys, tmp_path):
    op_list = tmp_path / "four.yaml"
    op_list.write_text(FOUR_OP_LIST)
    assert main(["conformance", str(op_list), "--list"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "nn.functional.relu  (relu)" in out
    assert any(line.startswith("kron  (") and "mul.Tensor" in line for line in out)
    assert "mm  (mm)" in out
    assert out[-1].endswith(" entries") and int(out[-1].split()[0]) > 20


# Mistakes: exit status 2 and a message saying what to do, no traceback. -------------------


def _fails(capsys, *arguments: str) -> str:
    assert main(["conformance", *arguments]) == 2
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return captured.err


def test_unknown_backend(capsys):
    err = _fails(capsys, str(OP_LIST), "--backend", "nosuch")
    assert "no backend named 'nosuch'" in err and "torchscript" in err
    assert "lazygen.backends" in err


def test_unknown_only_name_suggests(capsys):
    err = _fails(capsys, str(OP_LIST), "--only", "add.Tensr", "nn.functional.reluu")
    assert "add.Tensr" in err and "did you mean" in err
    assert "nn.functional.relu" in err


def test_missing_op_list(capsys, tmp_path):
    err = _fails(capsys, str(tmp_path / "nope.yaml"))
    assert "nope.yaml" in err


def test_json_directory_missing(capsys, tmp_path):
    err = _fails(capsys, str(OP_LIST), "--json", str(tmp_path / "no" / "m.json"))
    assert "does not exist" in err


@pytest.mark.parametrize(
    "arguments", [["--jobs", "0"], ["--timeout", "-1"], ["--samples", "x"], ["--dtype", "f8"]]
)
def test_bad_numbers_are_usage_errors(arguments, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["conformance", str(OP_LIST), *arguments])
    assert exit_info.value.code == 2
    assert "error: argument" in capsys.readouterr().err


def test_backend_that_cannot_start(site, tmp_path):
    """A backend whose import fails stops the run with one message, not a crash per
    entry."""
    broken = tmp_path / "broken"
    (broken / "broken-0.dist-info").mkdir(parents=True)
    (broken / "broken-0.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: broken\nVersion: 0\n"
    )
    (broken / "broken-0.dist-info" / "entry_points.txt").write_text(
        "[lazygen.backends]\nbroken = broken_backend:Missing\n"
    )
    (broken / "broken_backend.py").write_text("raise ImportError('no device here')\n")
    env = _env(site)
    env["PYTHONPATH"] += os.pathsep + str(broken)
    started = time.perf_counter()
    done = subprocess.run(
        _command("--backend", "broken", "--samples", "1", "--only", "add", "mul", "sub"),
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "no device here" in done.stderr and "Traceback" not in done.stderr
    assert time.perf_counter() - started < 120


# Selection and parsing, in process. ----------------------------------------------------


def test_op_list_names_select_entries():
    from lazygen.conformance.entries import cpu_entries

    wanted = {"add", "t", "nn.functional.relu", "kron", "transpose", "abs"}
    opinfos = [o for o in cpu_entries(torch.float32) if o.name in wanted]
    ops = ["add.Tensor", "t_copy", "relu", "mul.Tensor", "transpose_copy.int", "cholesky"]
    found = entries_for_ops(ops, opinfos, torch.float32)
    assert "add" in found["add.Tensor"]
    assert found["t_copy"] == ["t"]
    assert found["relu"] == ["nn.functional.relu"]
    assert "kron" in found["mul.Tensor"]  # through kron's composite kernel
    assert "transpose" in found["transpose_copy.int"]
    assert found["cholesky"] == []
    selection = select(opinfos, found, only=["relu", "kron"])
    assert selection.entries == [n for n in ["kron", "nn.functional.relu"]] or set(
        selection.entries
    ) == {"kron", "nn.functional.relu"}
    assert "cholesky" in select(opinfos, found).unreached
    with pytest.raises(SelectionError, match="cholesky"):
        select(opinfos, found, only=["cholesky"])


def test_recorded_names_match_list_names():
    assert list_names("add_.Tensor") >= {"add_.Tensor", "add.Tensor", "add_copy.Tensor"}
    assert "t_copy" in list_names("t")
    assert "__and__.Tensor" in list_names("__and__.Tensor")


def test_crash_reports_are_parsed():
    stderr = (
        "@@lazygen-op@@ aten.mul.Tensor\n"
        "@@lazygen-op@@ aten._unsafe_view.default\n"
        "Fatal Python error: Segmentation fault\n\n"
        "Thread 0x1 (most recent call first):\n"
        '  File "/x/other.py", line 1 in elsewhere\n\n'
        "Current thread 0x2 (most recent call first):\n"
        '  File "/t/torch/_utils.py", line 1014 in _functionalize_sync\n'
        '  File "/l/lazygen/runtime/tracing/decompositions.py", line 226 in _from_functional\n'
        '  File "/t/torch/utils/_pytree.py", line 1313 in unflatten\n'
        '  File "/t/torch/utils/_pytree.py", line 1578 in tree_map\n'
    )
    assert last_op(stderr) == "aten._unsafe_view.default"
    assert crash_site(stderr) == (
        "_utils.py:1014 _functionalize_sync <- decompositions.py:226 _from_functional "
        "<- _pytree.py:1313 unflatten"
    )
    assert crash_site("no fault here\n") == ""


def test_the_report_names_the_backend_that_runs_when_none_is_named(monkeypatch):
    """Where TorchScript does not work, ``init()`` runs the default's stand-in; the
    summary line and the rerun command name that one, not "torchscript"."""
    import lazygen.runtime.backends as backends
    from lazygen.commands import conformance

    class StandIn:
        name = "fx"

    monkeypatch.delenv("LAZYGEN_BACKEND", raising=False)
    monkeypatch.setattr(backends, "default_backend", StandIn)
    conformance._backend_name.cache_clear()
    try:
        assert conformance._backend_name(None) == "fx"
        assert conformance._backend_name("jax") == "jax"
    finally:
        conformance._backend_name.cache_clear()
