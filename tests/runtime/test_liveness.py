"""``execution/liveness``: which graph inputs a backend may donate, and its self-check that
turns donation off where the interpreter's reference counts are not the measured ones."""

from __future__ import annotations

import sys

import pytest
import torch

from lazygen.runtime.execution import liveness
from lazygen.runtime.ir import DeviceData, Shape, Value


def _graph():
    order = [DeviceData(None, shape=Shape(torch.float32, (2,)), backend=object())]
    order.append(liveness._Probe((Value(order[0], 0),)))
    return order


@pytest.mark.skipif(
    sys.implementation.name != "cpython" or sys.version_info[:2] != (3, 11),
    reason="the reference counts were measured on CPython 3.11 (elsewhere donation may be off)",
)
def test_the_counts_hold_on_this_interpreter():
    assert liveness.COUNTS_HOLD


def test_an_input_only_the_graph_holds_is_dead_and_a_held_one_is_not():
    order = _graph()
    assert liveness.unreferenced_inputs(order, [0]) == ({0} if liveness.COUNTS_HOLD else set())
    held = order[0]
    assert liveness.unreferenced_inputs(order, [0]) == frozenset()
    del held


def test_torch_data_is_never_donated():
    order = [DeviceData(torch.zeros(2))]
    order.append(liveness._Probe((Value(order[0], 0),)))
    assert liveness.unreferenced_inputs(order, [0]) == frozenset()


def test_an_interpreter_counting_one_reference_fewer_turns_donation_off(monkeypatch):
    # as if our own references were one more than this interpreter reports: a held input
    # would look dead, and the self-check must see it
    monkeypatch.setattr(liveness, "_OWN_NODE_REFS", liveness._OWN_NODE_REFS + 1)
    monkeypatch.setattr(liveness, "_OWN_VALUE_REFS", liveness._OWN_VALUE_REFS + 1)
    assert not liveness._counts_hold()
    monkeypatch.undo()
    assert liveness._counts_hold()
    # the per-input finder of a replayed step checks its own counts
    monkeypatch.setattr(liveness, "_OWN_SLOT_NODE_REFS", liveness._OWN_SLOT_NODE_REFS + 1)
    assert not liveness._counts_hold()
    monkeypatch.undo()
    monkeypatch.setattr(liveness, "_OWN_SLOT_VALUE_REFS", liveness._OWN_SLOT_VALUE_REFS + 1)
    assert not liveness._counts_hold()
    monkeypatch.setattr(liveness, "COUNTS_HOLD", False)
    assert liveness.unreferenced_inputs(_graph(), [0]) == frozenset()
