"""The recompile budget (``graph/budget.py``): past ``LAZYGEN_RECOMPILE_LIMIT`` compiles of
one step structure, a warning once, then sizes become graph inputs or graphs run
uncompiled; never unbounded compiling, and results stay right."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import torch

import lazygen.runtime as lr
from lazygen.runtime.execution import executor
from lazygen.runtime.graph import dynamic
from lazygen.runtime.graph.budget import PAST_THE_LIMIT
from lazygen.runtime.state import settings


@pytest.fixture
def limit(fresh_metrics):
    executor.clear_compile_cache()
    previous = lr.config.get_recompile_limit()

    def set_limit(n: int):
        lr.config.set_recompile_limit(n)
        return fresh_metrics

    yield set_limit
    lr.config.set_recompile_limit(previous)
    lr.config.set_dynamic_shapes(False)


def run_and_compare(make, values, device="lazygen"):
    """``make(value, device)`` per value, lazily (one step each) and eagerly: equal."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for value in values:
            got = make(value, device)
            lr.mark_step()
            torch.testing.assert_close(got.cpu(), make(value, "cpu"))
    return [w for w in caught if issubclass(w.category, lr.RecompileLimitWarning)]


def by_size(n, device):
    x = torch.arange(n * 3, dtype=torch.float32).reshape(n, 3).to(device)
    return (x.view(3, n) * 2).sum(dim=1)


def by_k(k, device):
    """``topk``'s ``k``: a ``SymInt`` equal to its result's size (a size input under dynamic
    shapes)."""
    x = torch.arange(24, dtype=torch.float32).reshape(3, 8).to(device)
    return torch.topk(x * 1.5, k, dim=1)[0]


def by_shift(shift, device):
    """``roll``'s shift: an attribute that is no size of its tensors (5 x 9)."""
    x = torch.arange(45, dtype=torch.float32).reshape(5, 9).to(device)
    return torch.roll(x * 1.5, shift, 1)


def test_past_the_limit_sizes_become_inputs(limit):
    metrics = limit(3)
    caught = run_and_compare(by_size, range(4, 12))
    assert len(caught) == 1, caught  # once
    assert "LAZYGEN_RECOMPILE_LIMIT=3" in str(caught[0].message)
    assert caught[0].filename == __file__  # the user's mark_step, not lazygen's executor
    # 3 for 3 sizes; the 4th size, traced with sizes as constants, runs uncompiled; then
    # sizes are inputs and one graph serves the rest.
    assert metrics.counter_value("UncachedCompile") == 4
    assert metrics.counter_value("UncompiledGraphRun") == 1
    assert metrics.counter_value("DynamicCompile") == 1
    assert lr.config.get_dynamic_shapes()


def test_past_the_limit_the_switch_is_the_graph_layers_not_the_users_setting(limit):
    """The budget switches dynamic shapes on in the graph layer's own state: the user's
    setting is untouched, and ``set_dynamic_shapes(False)`` or ``lr.reset()`` undo it."""
    limit(2)
    before = {name: getattr(settings, name) for name in type(settings).__slots__}
    run_and_compare(by_size, range(4, 8))
    assert lr.config.get_dynamic_shapes() and dynamic.on()
    assert {
        name: getattr(settings, name) for name in type(settings).__slots__
    } == before  # nothing in the compile path wrote a setting
    lr.config.set_dynamic_shapes(False)
    assert not dynamic.on()
    executor.clear_compile_cache()  # a fresh budget: the switch comes again
    run_and_compare(by_size, range(8, 12))
    assert dynamic.on()
    lr.state.reset()
    assert not dynamic.on() and not lr.config.get_dynamic_shapes()


def test_past_the_limit_a_changing_attribute_runs_uncompiled(limit):
    metrics = limit(2)
    caught = run_and_compare(by_shift, [1, 2, 3, 4, 6, 7, 3])
    assert len(caught) == 1
    assert metrics.counter_value("UncachedCompile") == 2
    assert metrics.counter_value("UncompiledGraphRun") == 5
    assert metrics.counter_value("EagerGraphRun") == 5  # the name before issue 42
    assert "run uncompiled, op by op" in lr.debug.last_graph()
    assert "aten::roll" in lr.debug.last_graph()


def test_past_the_limit_a_size_attribute_counts_as_a_size(limit):
    """Regression (issue 49): a ``SymInt`` attribute equal to a size (``topk``'s ``k``, a
    causal mask's slice end) made graphs differ in more than sizes, so past the budget
    every later one ran uncompiled (GPT-2 on jax: 8 steps at ~1.2 s each). It is a size:
    dynamic shapes are switched on, and one more graph serves every k."""
    metrics = limit(2)
    caught = run_and_compare(by_k, [2, 3, 4, 5, 6, 7])
    assert len(caught) == 1 and lr.config.get_dynamic_shapes()
    # 2 compiles; the 3rd k, traced as a constant, uncompiled; then one graph for all k
    assert metrics.counter_value("UncompiledGraphRun") == 1
    assert metrics.counter_value("UncachedCompile") == 3
    assert metrics.counter_value("DynamicCompile") == 1


def test_limit_zero_means_no_limit(limit):
    metrics = limit(0)
    assert not run_and_compare(by_shift, [1, 2, 3, 4, 6])
    assert metrics.counter_value("UncachedCompile") == 5
    assert not metrics.counter_value("UncompiledGraphRun")


def test_a_negative_limit_is_refused():
    with pytest.raises(ValueError, match="0 \\(none\\) or positive"):
        lr.config.set_recompile_limit(-1)


def test_the_default_limit_is_8_and_the_environment_sets_it():
    code = "import lazygen.runtime as lr; print(lr.config.get_recompile_limit())"
    env = {k: v for k, v in os.environ.items() if k != "LAZYGEN_RECOMPILE_LIMIT"}
    for extra, want in (({}, "8"), ({"LAZYGEN_RECOMPILE_LIMIT": "3"}, "3")):
        done = subprocess.run(
            [sys.executable, "-c", code], env=env | extra, capture_output=True, text=True
        )
        assert done.stdout.strip() == want, done.stderr


def test_the_compile_past_the_limit_is_not_spent_on_a_graph_traced_before(limit):
    """Regression: the step that turned dynamic shapes on had a second graph, traced with
    sizes as constants; it was compiled "for all sizes" (its constants compiled in, so it
    never served another size) and spent its structure's last compile, and every later
    step of that structure ran uncompiled."""
    metrics = limit(2)

    def split_step(n, device):
        x = torch.arange(n * 3, dtype=torch.float32).reshape(n, 3).to(device)
        total = (x.view(3, n) * 2).sum()
        rows = (x.view(3, n) + 1).sum(dim=0)
        if device != "cpu":
            lr.mark_step()  # two graphs: ``total`` first, then ``rows``
        return torch.cat([total.reshape(1), rows])

    run_and_compare(split_step, range(4, 16))
    assert metrics.counter_value("EarlyResultGraph"), "the step must be two graphs"
    # 12 sizes x 3 graphs (``total``, ``rows``, and the ``cat`` synced at the next step):
    # 2 sizes compiled per graph, then the step that turned dynamic shapes on runs its two
    # graphs uncompiled, then one compile for all sizes per graph, reused ever after.
    assert metrics.counter_value("UncompiledGraphRun") == 2
    assert metrics.counter_value("DynamicCompile") == 3
    assert metrics.counter_value("UncachedCompile") == 9
    assert metrics.counter_value("DynamicShapeReuse") == 36 - 9 - 2


def _prose(text: str) -> str:
    """Text as words: quote marks, backticks and line breaks left out."""
    return " ".join(text.replace(">", " ").replace("`", "").split())


def test_what_happens_past_the_limit_is_stated_once_the_same_everywhere(limit):
    """Regression (issue 49): the warning and docs/dynamic-shapes.md disagreed about what
    happens past the budget. One statement (``budget.PAST_THE_LIMIT``): the warning says
    it, and both pages quote it."""
    limit(2)
    caught = run_and_compare(by_size, range(4, 8))
    assert PAST_THE_LIMIT in str(caught[0].message)
    docs = Path(__file__).resolve().parents[3] / "docs"
    for page in ("dynamic-shapes.md", "guides/recompiles.md"):
        assert _prose(PAST_THE_LIMIT) in _prose((docs / page).read_text()), page


def test_the_warning_does_not_advise_dynamic_shapes_when_they_are_on(limit):
    limit(2)
    lr.config.set_dynamic_shapes(True)
    caught = run_and_compare(by_k, [2, 3, 4, 5])  # k equals the result's size: an input
    assert not caught  # one graph serves every k
    caught = run_and_compare(by_shift, [2, 3, 4, 6])
    assert len(caught) == 1 and "LAZYGEN_DYNAMIC_SHAPES=1" not in str(caught[0].message)
