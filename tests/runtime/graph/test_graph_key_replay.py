"""Plans: a step whose graph repeats an earlier one's structure replays its post-order."""

import torch

import lazygen.runtime as lr
from lazygen.runtime import devices
from lazygen.runtime.execution import executor
from lazygen.runtime.graph import post_order
from lazygen.runtime.tracing.tensor import inner


def _lazy(t):
    return t.to("lazygen")


def _walks():
    return lr.metrics.counter_value("GraphWalk") or 0


def test_repeated_structure_replays_without_walking(fresh_metrics):
    x = _lazy(torch.ones(3))
    for step in range(4):
        y = (x * (step + 1.5) + x).sum()
        assert y.cpu().item() == 3 * (step + 2.5)
    assert _walks() == 1
    assert lr.metrics.counter_value("UncachedCompile") == 1
    assert lr.metrics.counter_value("CachedCompile") == 3


def test_input_aliasing_is_part_of_the_match(fresh_metrics):
    x, y = _lazy(torch.ones(3)), _lazy(torch.full((3,), 2.0))
    assert (x + y).cpu().tolist() == [3.0] * 3
    assert (x + x).cpu().tolist() == [2.0] * 3  # same shapes and ops, one input shared
    assert (y + x).cpu().tolist() == [3.0] * 3
    assert (y + y).cpu().tolist() == [4.0] * 3
    assert lr.metrics.counter_value("UncachedCompile") == 2


def test_shared_intermediate_is_part_of_the_match(fresh_metrics):
    x = _lazy(torch.ones(3))
    a = x * 2.0
    first = (a + a).cpu()
    second = (x * 2.0 + x * 2.0).cpu()  # the same tree, two nodes instead of one
    third = (x * 3.0 + x * 2.0).cpu()
    assert first.tolist() == second.tolist() == [4.0] * 3
    assert third.tolist() == [5.0] * 3
    assert lr.metrics.counter_value("UncachedCompile") == 2


def test_different_attrs_or_shapes_do_not_replay(fresh_metrics):
    x = _lazy(torch.arange(6.0).reshape(2, 3))
    assert x.sum(0).cpu().tolist() == [3.0, 5.0, 7.0]
    assert x.sum(1).cpu().tolist() == [3.0, 12.0]
    z = _lazy(torch.arange(6.0).reshape(3, 2))
    assert z.sum(0).cpu().tolist() == [6.0, 9.0]
    assert lr.metrics.counter_value("UncachedCompile") == 3


def test_evicted_graph_is_not_replayed(fresh_metrics):
    x = _lazy(torch.ones(3))
    assert (x + 1.0).cpu().tolist() == [2.0] * 3
    executor.clear_compile_cache()
    assert (x + 2.0).cpu().tolist() == [3.0] * 3
    assert lr.metrics.counter_value("UncachedCompile") == 2


def test_replayed_order_matches_walk(fresh_metrics):
    x, w = _lazy(torch.randn(4, 5)), _lazy(torch.randn(5, 3))
    for _ in range(2):
        outs = [x @ w, (x @ w).relu(), x.t()]
        values = [inner(o)._value for o in outs]
        values = list(dict.fromkeys(values))
        plan, order = devices.get_device(0).cache.find_template(values)
        walked, _ = post_order(values)
        if plan is not None:
            assert order == walked
        lr.mark_step()
    assert _walks() == 1


def test_scalar_inputs_keep_their_values(fresh_metrics):
    x = _lazy(torch.ones(2))
    got = [(x * v).cpu().tolist() for v in (2.0, -0.0, 0.0, float("nan"), 2.0, 3)]
    assert got[0] == [2.0, 2.0] and got[4] == [2.0, 2.0] and got[5] == [3.0, 3.0]
    assert [str(v) for v in got[1]] == ["-0.0", "-0.0"]
    assert [str(v) for v in got[2]] == ["0.0", "0.0"]
    assert all(v != v for v in got[3])
