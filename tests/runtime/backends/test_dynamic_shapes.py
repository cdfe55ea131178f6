"""Dynamic dimensions and the recompile budget on the ``fx`` and ``inductor`` backends (the
TorchScript cases: tests/runtime/graph/test_dynamic_shapes.py, test_recompile_budget.py)."""

from __future__ import annotations

import lazygen.runtime as lr
from lazygen.runtime import executor
from runtime.graph.test_dynamic_shapes import check_transformer_over_24_lengths
from runtime.graph.test_recompile_budget import by_k, by_size, run_and_compare

from .conftest import INDUCTOR, index_zero_on


def test_fx_transformer_over_24_lengths_compiles_at_most_8_graphs():
    lr.config.set_dynamic_shapes(True)
    try:
        with index_zero_on("fx"):
            check_transformer_over_24_lengths()
    finally:
        lr.config.set_dynamic_shapes(False)


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
    assert metrics.counter_value("EagerGraphRun") == len(values) - 1


def test_inductor_compiles_per_size_and_the_budget_bounds_it(fresh_metrics):
    """Inductor specialises its code to sizes (``size_generic`` is False): each size is a
    compile, even with dynamic shapes on; past the budget graphs run uncompiled, right."""
    lr.config.set_dynamic_shapes(True)
    try:
        _past_a_limit_of_one(by_size, [4, 5, 6], fresh_metrics)
    finally:
        lr.config.set_dynamic_shapes(False)
    assert not fresh_metrics.counter_value("DynamicCompile")


def test_inductor_past_the_limit_a_changing_attribute_runs_uncompiled(fresh_metrics):
    _past_a_limit_of_one(by_k, [1, 2, 3], fresh_metrics)
    assert not lr.config.get_dynamic_shapes()  # not a size change: dynamic shapes stay off
