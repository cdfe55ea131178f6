"""Dynamic dimensions and the recompile budget on the ``fx`` and ``inductor`` backends (the
TorchScript cases: tests/runtime/graph/test_dynamic_shapes.py, test_recompile_budget.py)."""

from __future__ import annotations

import lazygen.runtime as lr
from lazygen.runtime import executor
from runtime.graph.test_dynamic_shapes import check_transformer_over_24_lengths
from runtime.graph.test_recompile_budget import by_size, run_and_compare

from .conftest import INDUCTOR, index_zero_on


def test_fx_transformer_over_24_lengths_compiles_at_most_8_graphs():
    lr.config.set_dynamic_shapes(True)
    try:
        with index_zero_on("fx"):
            check_transformer_over_24_lengths()
    finally:
        lr.config.set_dynamic_shapes(False)


def test_inductor_past_the_recompile_limit_runs_uncompiled(fresh_metrics):
    """Inductor specialises its code to sizes (``size_generic`` is False): each size is a
    compile, and the budget bounds them; the graphs past it run uncompiled, right."""
    executor.clear_compile_cache()
    previous = lr.config.get_recompile_limit()
    lr.config.set_recompile_limit(1)
    try:
        caught = run_and_compare(by_size, [4, 5, 6], INDUCTOR)
    finally:
        lr.config.set_recompile_limit(previous)
    assert len(caught) == 1
    assert fresh_metrics.counter_value("UncachedCompile") == 1
    assert fresh_metrics.counter_value("EagerGraphRun") == 2
    assert not lr.config.get_dynamic_shapes()
