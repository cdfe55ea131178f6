"""Recompiles of graphs captured under ``torch.compile(backend="lazygen")`` are explained
like the lazy device's: the op that differs and the user's line that traced it."""

from __future__ import annotations

from pathlib import Path

import torch

import lazygen.dynamo  # noqa: F401  (registers the backend)
import lazygen.runtime as lr
from lazygen.runtime.execution import executor


def _f(x, w):
    return (x @ w).relu().sum(dim=1)  # THE-LINE


def test_a_captured_graph_compiled_again_names_the_op_and_the_users_line(capsys):
    executor.clear_compile_cache()
    lr.config.set_explain_recompiles(True)
    try:
        f = torch.compile(_f, backend="lazygen", dynamic=False)
        w = torch.randn(4, 3)
        for n in (2, 5):
            x = torch.randn(n, 4)
            torch.testing.assert_close(f(x, w), _f(x, w))
    finally:
        lr.config.set_explain_recompiles(False)
    err = capsys.readouterr().err
    assert "recompiling" in err and "reason: shape" in err, err
    lines = Path(__file__).read_text().splitlines()
    line = next(i for i, text in enumerate(lines, 1) if "THE-LINE" in text)
    assert f"test_recompile_explanations.py:{line}" in err, err
    assert lr.metrics.counter_value("Recompile_shape") >= 1
