"""``lazygen.runtime.debug``: ``last_graph()`` (what the backend ran last, as LTC's
``_get_latest_computation_graph``) and ``LAZYGEN_SAVE_TENSORS_FILE`` (every synced graph's
IR with the user's lines, as LTC's ``LTC_SAVE_TENSORS_FILE``)."""

from __future__ import annotations

import os
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
    script = textwrap.dedent(
        """
        import torch, lazygen.runtime as lr
        lr.init()
        x = torch.ones(3, device="lazygen")
        y = (x * 2).relu()  # LINE-A
        lr.mark_step()
        z = y.sigmoid()  # LINE-B
        z.cpu()  # LINE-C
        """
    )
    env = {**os.environ, "LAZYGEN_SAVE_TENSORS_FILE": str(path)}
    run = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr
    text = path.read_text()
    graphs = text.split("[lazygen graph ")[1:]
    assert len(graphs) == 2, text
    first, second = graphs
    assert "aten::relu" in first and "<string>:5" in first  # the node's line
    assert "<string>:6 in <module>" in first  # the frame that synced it
    assert "aten::sigmoid" in second and "<string>:7" in second
    assert "<string>:8 in <module>" in second
