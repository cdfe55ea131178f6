"""IR reuse across steps (``config.set_reuse_ir``): the next step's equal nodes are the last
step's, counted per node class as LTC counts them, and results stay right while inputs
change under the reused nodes."""

import pytest
import torch
from support import training

import lazygen.runtime as lr


@pytest.fixture
def reuse():
    lr.mark_step(wait=True)
    lr.ir_cache.reset()
    lr.metrics.reset()
    lr.config.set_reuse_ir(True)
    try:
        yield
    finally:
        lr.config.set_reuse_ir(False)
        lr.ir_cache.reset()


def test_a_loop_reuses_its_nodes_with_this_steps_data(reuse):
    x, y = torch.randn(2, 3), torch.randn(2, 3)
    z = torch.zeros(2, 3)
    lx, ly, lz = (t.to("lazygen") for t in (x, y, z))
    nodes = []
    for _ in range(6):
        z += x + y
        lz += lx + ly  # z's input changes every step: the reused node reads the new one
        nodes.append(lr.inner(lz)._value.node)
        lr.mark_step()
    assert torch.equal(lz.cpu(), z)
    assert all(n is nodes[0] for n in nodes)
    assert lr.metrics.counter_value("IrNodeReused_AddTensor") == 10  # 2 per step after the 1st
    # LTC's spelling of the same counter
    assert lr.metrics.counter_value("IrNodeReused_torch::lazy::AddTensor") == 10
    assert "IrNodeReused_torch::lazy::AddTensor" in lr.metrics.counter_names()


def test_a_different_op_leaves_the_path_for_the_rest_of_the_step(reuse):
    x, y = torch.randn(4), torch.randn(4)
    lx, ly = x.to("lazygen"), y.to("lazygen")
    lz = torch.zeros(4, device="lazygen")  # a ``zero`` node: step 0's path starts with it
    z = torch.zeros(4)
    for i in range(6):
        z += (x + y) if i < 3 else (x - y)
        lz += (lx + ly) if i < 3 else (lx - ly)
        lr.mark_step()
    assert torch.allclose(lz.cpu(), z)
    # step 1 leaves step 0's path at once (no ``zero`` this time); step 2 reuses both adds;
    # step 3 traces a sub (the add after it is new too); 4 and 5 reuse the sub and the add
    assert lr.metrics.counter_value("IrNodeReused_AddTensor") == 4
    assert lr.metrics.counter_value("IrNodeReused_SubTensor") == 2


def test_scalars_are_rebound_not_baked_in(reuse):
    x = torch.ones(3, device="lazygen")
    lr.mark_step()  # ``ones`` is traced (a fill node) once, not in the loop
    for scale in (2.0, 3.0, 5.0):
        out = x * scale + 1
        lr.mark_step()
        assert out.cpu().tolist() == [scale + 1] * 3
    assert lr.metrics.counter_value("IrNodeReused") >= 4


def test_an_input_still_in_flight_is_read_once_delivered(reuse):
    """The reused node reads the data of a graph launched by the last mark_step (async)."""
    w = torch.ones(8, device="lazygen")
    lr.mark_step()
    for _ in range(5):
        w = w * 2 + 0  # each step's input is the previous run's output, maybe in flight
        lr.mark_step()
    assert w.cpu().tolist() == [32.0] * 8
    assert lr.metrics.counter_value("IrNodeReused_MulTensor") == 4


def test_a_tensor_kept_from_an_earlier_step_keeps_its_value(reuse):
    """Reuse rebinds only the reused node's private inputs: tensors of earlier steps (and
    their values) are untouched."""
    x = torch.arange(4.0, device="lazygen")
    kept = []
    for _ in range(4):
        x = x + 1
        kept.append(x)
        lr.mark_step()
    assert [t.cpu().tolist() for t in kept] == [[j + i for j in range(1, 5)] for i in range(4)]


def test_mark_step_of_one_device_out_of_several_drops_the_path(reuse):
    a = torch.ones(2, device="lazygen:0")
    b = torch.ones(2, device="lazygen:1")
    for _ in range(3):
        a = a + 1
        b = b + 1
        lr.mark_step("lazygen:0")  # b's IR is still pending: its nodes may not be rebound
    assert b.cpu().tolist() == [4.0, 4.0] and a.cpu().tolist() == [4.0, 4.0]
    assert not lr.metrics.counter_value("IrNodeReused")


def test_reuse_off_keeps_nothing(reuse):
    x = torch.ones(2, device="lazygen")
    (x + 1).cpu()
    lr.mark_step()
    lr.config.set_reuse_ir(False)
    lr.config.set_reuse_ir(True)
    (x + 1).cpu()
    assert not lr.metrics.counter_value("IrNodeReused")


def test_random_ops_draw_from_this_steps_generator_state(reuse):
    """A reused random node reads the generator state of this step, as eager draws."""
    eager_gen, lazy_gen = torch.Generator().manual_seed(7), torch.Generator().manual_seed(7)
    base = torch.zeros(4, device="lazygen")
    lr.mark_step()
    for _ in range(4):
        expected = torch.zeros(4).uniform_(generator=eager_gen) * 2
        got = torch.zeros_like(base).uniform_(generator=lazy_gen) * 2
        lr.mark_step()
        assert torch.equal(got.cpu(), expected)
    assert lr.metrics.counter_value("IrNodeReused") >= 6


@pytest.mark.parametrize("optimizer", ["sgd_momentum", "adam"])
def test_training_with_reuse_is_as_accurate_as_eager(reuse, optimizer):
    """A training loop (dropout, optimizer state, parameters that change every step)
    reusing most of its IR trains as eager does, with no more compiles than without."""
    uncached = training.compare_training(optimizer, steps=6)
    assert lr.metrics.counter_value("IrNodeReused") > 0
    assert uncached[-1] == uncached[2]  # nothing new compiled once the loop settled


def test_a_shared_input_is_reused_only_where_it_is_still_shared(reuse):
    """Nodes of a step read one input through one slot (a graph has as many inputs with
    reuse as without); a later step reading two different inputs there gets a new node."""
    x, y = torch.randn(3), torch.randn(3)
    lx, ly = x.to("lazygen"), y.to("lazygen")
    lr.mark_step()
    square = lx * lx
    lr.mark_step()
    again = lx * lx
    assert (
        lr.inner(again)._value.node.operands[0].node is lr.inner(again)._value.node.operands[1].node
    )
    lr.mark_step()
    product = lx * ly  # the last step's node reads one slot twice: not this one
    lr.mark_step()
    assert torch.equal(product.cpu(), x * y)
    assert torch.equal(square.cpu(), x * x) and torch.equal(again.cpu(), x * x)
    assert lr.metrics.counter_value("IrNodeReused_MulTensor") == 1
