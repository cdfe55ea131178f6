"""Dynamic dimensions and the recompile budget on the ``fx`` and ``inductor`` backends (the
TorchScript cases: tests/runtime/graph/test_dynamic_shapes.py, test_recompile_budget.py)."""

from __future__ import annotations

import pytest
import torch

import lazygen.runtime as lr
from lazygen.runtime.backends.inductor import compile as compile_module
from lazygen.runtime.execution import executor
from runtime.graph.test_dynamic_shapes import check_transformer_over_24_lengths
from runtime.graph.test_recompile_budget import by_shift, by_size, run_and_compare
from runtime.graph.test_size_inputs import check_causal_lm_over_lengths

from .conftest import INDUCTOR, index_zero_on


def test_fx_transformer_over_24_lengths_compiles_at_most_8_graphs():
    lr.config.set_dynamic_shapes(True)
    try:
        with index_zero_on("fx"):
            check_transformer_over_24_lengths()
    finally:
        lr.config.set_dynamic_shapes(False)


def test_fx_a_causal_model_over_lengths_compiles_its_graphs_once(fresh_metrics):
    """The mask's slice end (a size input under dynamic shapes) on the fx backend: the
    first and the steady step compile for all sizes, once (issue 49)."""
    executor.clear_compile_cache()
    lr.config.set_dynamic_shapes(True)
    try:
        with index_zero_on("fx"):
            check_causal_lm_over_lengths((5, 9, 7, 12))
    finally:
        lr.config.set_dynamic_shapes(False)
    assert fresh_metrics.counter_value("DynamicCompile") == 2
    assert fresh_metrics.counter_value("UncachedCompile") == 2
    assert fresh_metrics.counter_value("DynamicShapeReuse") == 2


@pytest.mark.slow  # one Inductor compile with symbolic sizes: ~60 s on a loaded machine
def test_inductor_reads_size_attributes_as_symbols(fresh_metrics):
    """A mask cut to the length and a padding by the length (``SymInt`` attributes equal
    to a size) are symbols of Inductor's graph for all sizes: one compile, every length."""
    executor.clear_compile_cache()
    mask = torch.ones(16, 16).tril()
    lazy_mask = mask.to(INDUCTOR)
    lr.config.set_dynamic_shapes(True)
    try:
        for n in (5, 9, 7, 12):
            x = torch.randn(3, n)

            def f(m, x, n=n):
                return (m[:n, :n] @ x.t()).sum(0) + torch.nn.functional.pad(x, (0, n)).sum(1)

            torch.testing.assert_close(f(lazy_mask, x.to(INDUCTOR)).cpu(), f(mask, x))
    finally:
        lr.config.set_dynamic_shapes(False)
    assert fresh_metrics.counter_value("UncachedCompile") == 1
    assert fresh_metrics.counter_value("DynamicShapeReuse") == 3
    assert not fresh_metrics.counter_value("InductorRecompile")


def _past_a_limit_of_one(make, values, metrics):
    executor.clear_compile_cache()
    previous = lr.config.get_recompile_limit()
    lr.config.set_recompile_limit(1)
    try:
        caught = run_and_compare(make, values, INDUCTOR)
    finally:
        lr.config.set_recompile_limit(previous)
    assert len(caught) == 1
    assert metrics.counter_value("UncachedCompile") == 1
    assert metrics.counter_value("UncompiledGraphRun") == len(values) - 1


@pytest.mark.slow  # 24 Inductor trainings: ~140 s on a cold cache
def test_inductor_transformer_over_24_lengths_compiles_at_most_8_graphs(fresh_metrics):
    """Inductor compiles a graph for all sizes with symbolic sizes; a size its guards
    reject (a size of 1, sizes that were equal) compiles a variant, counted too."""
    lr.config.set_dynamic_shapes(True)
    try:
        with index_zero_on("inductor"):
            check_transformer_over_24_lengths()
    finally:
        lr.config.set_dynamic_shapes(False)
    variants = fresh_metrics.counter_value("InductorRecompile") or 0
    assert fresh_metrics.counter_value("UncachedCompile") + variants <= 8


def test_inductor_guards_compile_a_variant_for_a_size_they_reject(fresh_metrics, capsys):
    """A size of 1 is specialised by Inductor's tracing (broadcasting decides on it): the
    graph compiled for all sizes does not serve it, another variant does, right; the
    explanation names the condition, the sizes and the user's line."""
    executor.clear_compile_cache()
    lr.config.set_dynamic_shapes(True)
    lr.config.set_explain_recompiles(True)
    try:
        for n in (3, 5, 1, 7):
            x = torch.arange(n * 4, dtype=torch.float32).reshape(n, 4)
            expected = (x.view(2 * n, 2) * 2).sum(0)
            got = (x.to(INDUCTOR).view(2 * n, 2) * 2).sum(0).cpu()  # THE-VIEW-LINE
            torch.testing.assert_close(got, expected, rtol=0, atol=0)
    finally:
        lr.config.set_dynamic_shapes(False)
        lr.config.set_explain_recompiles(False)
    err = capsys.readouterr().err
    assert "backend 'inductor' compiles another variant" in err and "reason: guard" in err, err
    assert "[1, 4]" in err and "test_dynamic_shapes.py:" in err, err
    assert fresh_metrics.counter_value("Recompile_guard") == 1
    assert fresh_metrics.counter_value("DynamicCompile") == 1
    assert fresh_metrics.counter_value("InductorRecompile") == 1  # n = 1
    assert fresh_metrics.counter_value("DynamicShapeReuse") == 3  # n = 5, 1 and 7


def test_inductor_past_the_limit_a_changing_size_compiles_for_all_sizes(fresh_metrics):
    """Past the budget, sizes that change force dynamic shapes: one compile for all
    sizes on Inductor too, not a run op by op."""
    executor.clear_compile_cache()
    previous = lr.config.get_recompile_limit()
    lr.config.set_recompile_limit(1)
    try:
        caught = run_and_compare(by_size, [4, 5, 6, 7], INDUCTOR)
    finally:
        lr.config.set_recompile_limit(previous)
        lr.config.set_dynamic_shapes(False)
    assert len(caught) == 1
    assert fresh_metrics.counter_value("DynamicCompile") == 1


def test_inductor_past_the_limit_a_changing_attribute_runs_uncompiled(fresh_metrics):
    _past_a_limit_of_one(by_shift, [1, 2, 3], fresh_metrics)
    assert not lr.config.get_dynamic_shapes()  # not a size change: dynamic shapes stay off


def test_inductor_compiles_for_its_own_sizes_when_it_cannot_for_all(monkeypatch, fresh_metrics):
    """A graph Inductor fails to compile with symbolic sizes is compiled for the sizes of
    the call, and guarded by them: other sizes compile another variant, right."""

    def symbolic_fails(module, inputs):
        raise RuntimeError("cannot compile this for all sizes")

    monkeypatch.setattr(compile_module, "compile_for_all_sizes", symbolic_fails)
    executor.clear_compile_cache()
    lr.config.set_dynamic_shapes(True)
    try:
        for n in (3, 5, 6, 5):
            x = torch.arange(n * 4, dtype=torch.float32).reshape(n, 4)
            got = (x.to(INDUCTOR).view(2 * n, 2) * 2).sum(0).cpu()
            torch.testing.assert_close(got, (x.view(2 * n, 2) * 2).sum(0), rtol=0, atol=0)
    finally:
        lr.config.set_dynamic_shapes(False)
    assert fresh_metrics.counter_value("InductorStaticFallback") == 3  # n = 3, 5, then 6
    assert fresh_metrics.counter_value("InductorRecompile") == 2  # n = 5 and 6; 5 again reuses
