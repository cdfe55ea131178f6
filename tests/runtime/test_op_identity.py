"""One identity per op (issue 52 item 1): every spelling the runtime meets converts to the
``OpOverload`` in ``op_registry``, and back to each spelling, in one place."""

from __future__ import annotations

import pytest
import torch
from lazygen.runtime.builtin.generated import ir

import lazygen.runtime  # noqa: F401  (the ops package declares the facts on import)
from lazygen.runtime import op_registry

aten = torch.ops.aten


@pytest.mark.parametrize(
    "spelling",
    [
        aten.add.Tensor,
        "aten::add.Tensor",
        "add.Tensor",
        "lazy::add.Tensor",
        ir.AddTensor,
    ],
    ids=["overload", "schema", "op_list", "counter", "node_class"],
)
def test_every_spelling_names_the_overload(spelling):
    assert op_registry.overload_of(spelling) is aten.add.Tensor
    assert op_registry.op_string(op_registry.overload_of(spelling)) == "aten::add.Tensor"


def test_a_default_overload_drops_its_name():
    for spelling in (aten.relu.default, "aten::relu", "relu", "lazy::relu", ir.Relu):
        assert op_registry.overload_of(spelling) is aten.relu.default, spelling
    assert op_registry.op_string(aten.relu.default) == "aten::relu"
    assert op_registry.library_name(aten.relu.default) == "relu"
    assert op_registry.table_key("aten::relu.default") == "relu"
    assert op_registry.counter_name(aten.relu.default) == "lazy::relu"


def test_the_derived_names():
    op = aten.div.Tensor
    assert op_registry.library_name(op) == "div.Tensor"
    assert op_registry.op_list_name(op) == "div.Tensor"
    assert op_registry.base_name(op) == "div"
    assert op_registry.counter_name(op) == "lazy::div.Tensor"
    assert op_registry.counter_name(aten.div) == "lazy::div"  # a packet: every overload
    assert op_registry.fallback_counter(op) == "aten::div"
    assert op_registry.random_sync_counter(aten.bernoulli.p) == "RandomSync::aten::bernoulli"
    assert op_registry.table_key(op) == "div.Tensor"
    assert op_registry.table_key("ltc_cast") == "ltc_cast"  # a non-native opkind as it is
    assert op_registry.names_match(op, {"div"}) and op_registry.names_match(op, {"div.Tensor"})
    assert not op_registry.names_match(op, {"div.Scalar"})
    assert op_registry.namespace_of(aten.div) == "aten"
    assert op_registry.overload_name(op) == "Tensor"
    assert op_registry.overload_name(aten.random_.to) == "to"
    assert op_registry.kind_counter("lstm_layers") == "lazy::lstm_layers"


def test_op_families_are_answered_by_the_converter():
    """The ``_foreach_`` family and a view's copying form: the matches the core used to do
    on names (``dispatch/decompositions.py``, ``lowering_context.py``)."""
    assert op_registry.is_foreach(aten._foreach_add.List)
    assert not op_registry.is_foreach(aten.add.Tensor)
    assert not op_registry.is_foreach("ltc_cast")  # a non-native kind
    assert op_registry.view_of_copy(aten.t_copy.default) is aten.t.default
    assert op_registry.view_of_copy(aten.slice_copy.Tensor) is aten.slice.Tensor
    assert op_registry.view_of_copy(aten.add.Tensor) is None
    assert op_registry.table_key("aten::add.Tensor") == "add.Tensor"  # set_force_fallback's


def test_packets_stand_for_every_overload():
    assert op_registry.packet_of(aten.normal.Tensor_float) is aten.normal
    assert op_registry.packet_of("aten::normal") is aten.normal  # no default overload
    assert op_registry.packet_of("normal") is aten.normal
    assert op_registry.packet_of(aten.normal) is aten.normal
    assert op_registry.packet_of("aten::no_such_op") is None


def test_names_torch_does_not_know():
    assert op_registry.overload_of("ltc_cast") is None
    assert op_registry.overload_of("tiny::silu") is None
    assert op_registry.op_string("tiny::silu") == "tiny::silu"
    with pytest.raises(TypeError, match="name the overload"):
        op_registry.op_string(aten.relu)
    with pytest.raises(TypeError, match="not int 3"):
        op_registry.overload_of(3)
    with pytest.raises(ValueError, match="names no op"):
        op_registry.library_name("tiny::silu")


def test_every_generated_counter_is_the_identity_s():
    """The generator spells a traced op's counter itself (it never imports the runtime): it
    must be the one ``op_registry.counter_name`` derives from the op."""
    from lazygen.runtime.builtin.generated import kernels

    traced = [v for v in vars(kernels).values() if type(v).__name__ == "TracedOp"]
    assert len(traced) > 100
    for op in traced:
        assert op.counter == op_registry.counter_name(op.op), op


def test_facts_are_keyed_by_the_op():
    assert op_registry.has("host_reads", aten._local_scalar_dense.default)
    assert op_registry.has("host_reads", "aten::_local_scalar_dense")
    assert op_registry.has("may_alias", aten.t_copy.default)
    assert not op_registry.has("may_alias", aten.add.Tensor)
    assert op_registry.of("view_copy_views", aten.view_copy.default) is aten.reshape
    assert op_registry.of("host_results", aten._pack_padded_sequence.default) == {1}
    assert op_registry.get("input_write") is aten.copy_.default
    with pytest.raises(ValueError, match="names 'aten::no_such_op', no op"):
        op_registry.declare("metadata_only", {"aten::no_such_op"}, "lazygen.runtime.ops.facts")
