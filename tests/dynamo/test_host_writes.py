"""Which host writes of a spliced graph run as one in-place add (``host_writes``): only a
graph whose every written value is its own target plus one common number."""

from __future__ import annotations

import pytest
import torch
import torch.fx

from lazygen.dynamo.host_writes import Increments, increment_of

add = torch.ops.aten.add.Scalar
mul = torch.ops.aten.mul.Scalar


def _module(ops) -> tuple[torch.fx.GraphModule, list]:
    """A module of two step counts and one constant input; ``ops(a, b, graph)`` lists its
    outputs."""
    graph = torch.fx.Graph()
    a, constant, b = (graph.placeholder(name) for name in ("a", "constant", "b"))
    graph.output(tuple(ops(a, b, graph)))
    del constant
    feeds = [(True, 3), (False, torch.tensor(1)), (True, 5)]
    return torch.fx.GraphModule(torch.nn.Module(), graph), feeds


def _count(graph, source, *args):
    return graph.call_function(add, (source, *args))


@pytest.mark.parametrize(
    ("ops", "targets", "expected"),
    [
        (lambda a, b, g: [_count(g, a, 1, 1), _count(g, b, 1, 1)], [3, 5], 1),
        (lambda a, b, g: [_count(g, a, 2), _count(g, b, 2)], [3, 5], 2),
        (lambda a, b, g: [_count(g, a, 1.5, 1), _count(g, b, 1.5, 1)], [3, 5], 1.5),
        # each written from the other argument: not ``target + n``
        (lambda a, b, g: [_count(g, b, 1, 1), _count(g, a, 1, 1)], [3, 5], None),
        (lambda a, b, g: [_count(g, a, 1, 1), _count(g, b, 2, 1)], [3, 5], None),
        (lambda a, b, g: [_count(g, a, 1, 1), _count(g, b, 1.0, 1)], [3, 5], None),
        (lambda a, b, g: [_count(g, a, 1, 2), _count(g, b, 1, 2)], [3, 5], None),
        (lambda a, b, g: [g.call_function(mul, (a, 2)), _count(g, b, 1, 1)], [3, 5], None),
        (lambda a, b, g: [_count(g, a, 1, 1), _count(g, a, 1, 1)], [3, 3], None),
    ],
)
def test_only_counts_plus_one_common_number_are_increments(ops, targets, expected):
    module, feeds = _module(ops)
    assert increment_of(module, feeds, targets) == expected


def test_a_count_whose_dtype_an_add_would_change_runs_the_graph():
    floats, ints = torch.zeros(()), torch.zeros((), dtype=torch.int64)
    assert Increments.keep_dtypes(1, [floats, ints])
    assert Increments.keep_dtypes(0.5, [floats])
    assert not Increments.keep_dtypes(0.5, [floats, ints])  # int64 + 0.5 is a float
    assert not Increments.keep_dtypes(1, [torch.zeros((), dtype=torch.bool)])


def test_an_increment_adds_in_place_and_bumps_each_version_once():
    counts = [torch.tensor(3.0), torch.tensor(7, dtype=torch.int32)]
    versions = [t._version for t in counts]
    Increments(1)(counts)
    assert [t.item() for t in counts] == [4.0, 8]
    assert counts[1].dtype is torch.int32
    assert [t._version for t in counts] == [v + 1 for v in versions]
