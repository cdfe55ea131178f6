"""``lazygen.runtime.debug``: ``last_graph()`` (what the backend ran last, as LTC's
``_get_latest_computation_graph``) and ``LAZYGEN_SAVE_TENSORS_FILE`` (every synced graph's
IR with the user's lines, as LTC's ``LTC_SAVE_TENSORS_FILE``)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap

import torch

import lazygen.runtime as lr


def test_last_graph_is_the_backends_text_of_the_latest_sync():
    x = torch.randn(3, device="lazygen")
    lr.mark_step()
    (x * 2).relu().cpu()
    relu_graph = lr.debug.last_graph()
    assert "aten::relu" in relu_graph and "aten::mul" in relu_graph
    x.sigmoid().cpu()
    latest = lr.debug.last_graph()
    assert "aten::sigmoid" in latest and "aten::relu" not in latest


def test_save_tensors_file_writes_each_synced_graph_with_its_lines(tmp_path):
    path = tmp_path / "graphs.txt"
    script = textwrap.dedent("""
        import torch, lazygen.runtime as lr
        lr.init()
        x = torch.ones(3, device="lazygen")
        y = (x * 2).relu()  # LINE-A
        lr.mark_step()
        z = y.sigmoid()  # LINE-B
        z.cpu()  # LINE-C
        """)
    env = {**os.environ, "LAZYGEN_SAVE_TENSORS_FILE": str(path)}
    run = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr
    text = path.read_text()
    graphs = text.split("[lazygen graph ")[1:]
    assert len(graphs) == 2, text
    first, second = graphs
    assert "aten::relu" in first and "location=<string>:5" in first  # the node's line
    # LTC's "Python Stacktrace" block: the API entry point first, then the caller's frames.
    assert re.search(
        r"Python Stacktrace:\n  mark_step \(.*__init__.py:\d+\)\n  <module> " r"\(<string>:6\)",
        first,
    ), first
    assert "aten::sigmoid" in second and "location=<string>:7" in second
    assert "<module> (<string>:8)" in second


def test_save_tensors_file_set_while_running_and_ltc_spelling(tmp_path, monkeypatch):
    """LTC's test sets ``LTC_SAVE_TENSORS_FILE`` after start-up: it is read at each sync."""
    path = tmp_path / "graphs.txt"
    monkeypatch.setenv("LTC_SAVE_TENSORS_FILE", str(path))
    model = torch.nn.Linear(5, 5).to("lazygen")
    output = model(torch.randn(1, 5).to("lazygen"))  # alive at the sync
    lr.mark_step()
    assert lr.inner(output).is_materialized
    text = path.read_text()
    assert re.search(
        r"Python Stacktrace:\n  mark_step \(.*__init__.py:\d+\)\n  "
        r"test_save_tensors_file_set_while_running_and_ltc_spelling \(",
        text,
    ), text
    assert "aten::addmm" in text or "aten::linear" in text, text
