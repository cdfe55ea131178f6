"""The core's part of SPMD (``lazygen.runtime.sharding``), on a one-device backend.

The core carries placements without knowing what they mean: device data holds one in its
``attrs`` (so graph keys and recompile explanations see it), a value inside a graph gets a
``ShardingConstraint`` that a one-device backend lowers as the value itself. The jax
backend's lowering of both is tested on 8 emulated devices in ``tests/spmd``.
"""

from __future__ import annotations

import contextlib
import io

import pytest
import torch

import lazygen.runtime as lr
from lazygen.runtime import sharding
from lazygen.runtime.backends.fx.backend import FxBackend
from lazygen.runtime.errors import LazygenRuntimeError
from lazygen.runtime.ir import DeviceData, Shape
from lazygen.runtime.sharding import MeshLayout, ShardingConstraint, normal_form
from lazygen.runtime.tracing.tensor import inner

MESH = MeshLayout((0, 1, 2, 3), (4,), ("data",))
SPLIT = normal_form(MESH, (("data",), ()), (8, 2))


def test_device_data_holds_its_placement_in_its_attributes():
    shape = Shape(torch.float32, (8, 2))
    split = DeviceData(None, None, shape, backend=object(), placement=SPLIT)
    plain = DeviceData(None, None, shape, backend=object())
    assert split.attrs == (SPLIT,) and split.placement is SPLIT
    assert plain.attrs == () and plain.placement is None
    assert normal_form(MESH, ((), ()), (8, 2)) is None  # replicated: the plain node's


def test_a_constraint_is_the_value_itself_on_a_one_device_backend():
    x = torch.arange(16.0).reshape(8, 2).to("lazygen")
    y = x * 2
    sharding.annotate(y, SPLIT, MESH)
    assert type(inner(y)._value.node) is ShardingConstraint
    assert sharding.placement_of(y) == (True, SPLIT)
    lr.mark_step()
    assert torch.equal(y.cpu(), torch.arange(16.0).reshape(8, 2) * 2)
    sharding.annotate(x * 3, None, MESH)  # a replicated constraint too


def test_a_placement_change_is_another_graph_explained_as_a_sharding_change(fresh_metrics):
    err = io.StringIO()
    lr.config.set_explain_recompiles(True)
    try:
        with contextlib.redirect_stderr(err):
            for placement in (None, SPLIT, SPLIT):
                x = torch.ones(8, 2).to("lazygen")
                sharding.annotate(x, placement, MESH)  # a one-device backend keeps its data
                (x.sin() + 1).sum().item()
    finally:
        lr.config.set_explain_recompiles(False)
    assert fresh_metrics.counter_value("UncachedCompile") == 2
    assert fresh_metrics.counter_value("Recompile_sharding") == 1
    assert "now:    sharding ('data', None) over mesh(data=4)" in err.getvalue()


def test_a_view_cannot_be_annotated():
    x = torch.ones(8, 2).to("lazygen")
    with pytest.raises(LazygenRuntimeError, match="view"):
        sharding.annotate(x[2:], SPLIT, MESH)


def test_a_one_device_backend_refuses_spmd():
    with pytest.raises(LazygenRuntimeError, match="single-controller SPMD"):
        FxBackend().use_spmd()


@pytest.mark.parametrize(
    "dims, words",
    [
        ((("rows",), ()), "is not one of"),
        ((("data",), ("data",)), "splits two dimensions"),
        ((("data",),), "one entry per dimension"),
    ],
)
def test_bad_placements_are_named(dims, words):
    with pytest.raises(LazygenRuntimeError, match=words):
        normal_form(MESH, dims, (8, 2))
