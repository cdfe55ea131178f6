"""Donation on the jax backend: each result takes over the buffer of the input it replaces.

``jax.jit`` pairs donated inputs with results by shape and dtype in argument and result
order; a step's results come in sync order (gradients among them), so that pairing crossed
parameters, and XLA copied each crossed parameter before overwriting it (59 copies in the
encoder step). ``donation.pair`` pairs each result with the nearest input of its shape that
it reads, and the program returns results in that order."""

from __future__ import annotations

import re

import pytest
import torch

pytest.importorskip("jax", reason="the jax backend needs JAX: pip install lazygen[jax]")

import lazygen.runtime as lr  # noqa: E402
from lazygen.runtime import debug  # noqa: E402
from lazygen.runtime.backends.jax import donation, uploads  # noqa: E402
from lazygen.runtime.backends.jax.backend import JaxBackend  # noqa: E402
from lazygen.runtime.ir import DeviceData, Node, Shape, Value  # noqa: E402
from lazygen.runtime.tracing.tensor import inner  # noqa: E402

from .conftest import BACKENDS, index_zero_on  # noqa: E402

SHAPE = Shape(torch.float32, (3,))


@pytest.fixture(scope="module", autouse=True)
def _jax_backend():
    BACKENDS.setdefault("jax", JaxBackend())


class _Op(Node):
    __slots__ = ()
    op_name = "op"


def _op(*operands) -> Value:
    return Value(_Op(tuple(operands), (), (SHAPE,)), 0)


def _data(shape: Shape = SHAPE) -> Value:
    return Value(DeviceData(None, None, shape, backend=object()), 0)


def test_each_result_is_paired_with_the_input_it_replaces_not_the_first_of_its_shape():
    p1, m1, p2, m2 = _data(), _data(), _data(), _data()
    grad1, grad2 = _op(), _op()  # computed, same shape, listed first: they took p1, m1
    new_m1, new_m2 = _op(m1, grad1), _op(m2, grad2)
    new_p1, new_p2 = _op(p1, new_m1), _op(p2, new_m2)
    outputs = [grad1, new_p1, new_m1, grad2, new_p2, new_m2]
    order = [p1.node, m1.node, grad1.node, new_m1.node, new_p1.node]
    order += [p2.node, m2.node, grad2.node, new_m2.node, new_p2.node]
    inputs = [0, 1, 5, 6]
    paired = donation.pair(order, outputs, inputs)
    assert paired == {1: 0, 2: 1, 4: 5, 5: 6}
    parameter = {position: k for k, position in enumerate(inputs)}
    # jax.jit pairs the k-th donated argument with the k-th result of its shape
    assert donation.output_order(len(outputs), paired, parameter) == [1, 2, 4, 5, 0, 3]


def test_inputs_left_over_take_results_of_their_shape_left_over():
    other = Shape(torch.float32, (5,))
    a, b = _data(), _data(other)
    fresh = _op()  # reads no input
    outputs = [fresh, Value(_Op((), (), (other,)), 0)]
    assert donation.pair([a.node, b.node, fresh.node], outputs, [0, 1]) == {0: 0, 1: 1}
    assert donation.pair([a.node], [a], [0]) == {}  # an input handed back: nothing computes it


def test_an_optimizer_step_copies_no_donated_parameter_and_trains_like_eager():
    with index_zero_on("jax"):
        _train_checking_copies("lazygen:0")


def _train_checking_copies(device: str) -> None:
    torch.manual_seed(0)
    eager = torch.nn.Linear(16, 16)
    model = torch.nn.Linear(16, 16)
    model.load_state_dict(eager.state_dict())
    model.to(device)
    x = torch.randn(4, 16)
    pairs = [(model, x.to(device)), (eager, x)]
    optimizers = [torch.optim.Adam(net.parameters(), lr=1e-2) for net, _ in pairs]
    lr.mark_step()
    for _ in range(3):
        old = [inner(p)._value.node.native for p in model.parameters()]
        old = [array for array in old if not BACKENDS["jax"].small_uploads.holds(array)]
        for (net, data), optimizer in zip(pairs, optimizers, strict=True):
            optimizer.zero_grad()
            net(data).square().mean().backward()
            optimizer.step()
        lr.mark_step()
        assert old and all(array.is_deleted() for array in old)  # donated
    # crossed pairs made XLA copy 4 of the 6 donated arrays (weight, bias, 2 moments)
    assert not re.findall(r"copy\(%args", debug.last_graph())
    for got, want in zip(model.parameters(), eager.parameters(), strict=True):
        torch.testing.assert_close(got.cpu(), want.detach())


def test_small_uploads_are_one_kept_copy_that_no_graph_donates():
    backend = BACKENDS["jax"]
    host = torch.zeros(4)
    first = backend.to_data(host, torch.device("cpu"))
    assert backend.to_data(torch.zeros(4), torch.device("cpu")) is first
    host += 1  # the caller's memory changes; the kept copy does not
    assert (first == 0).all() and backend.to_data(host, torch.device("cpu")) is not first
    big = torch.zeros(128)  # 512 bytes: uploaded as it is
    assert not backend.small_uploads.holds(backend.to_data(big, torch.device("cpu")))
    with index_zero_on("jax"):
        _update_twice_with_a_kept_input()
    assert not first.is_deleted()


def _update_twice_with_a_kept_input() -> None:
    # w.mul_(2) compiles donating w (a graph result, not a kept upload); the same graph then
    # gets a kept upload where it donates: copied, never deleted
    w = torch.zeros(4).to("lazygen:0") + 1
    lr.mark_step()
    for _ in range(2):
        w.mul_(2)
        lr.mark_step()
    uploaded = torch.zeros(4).to("lazygen:0")
    uploaded.mul_(2)
    lr.mark_step()
    assert w.cpu().equal(torch.full((4,), 4.0)) and uploaded.cpu().equal(torch.zeros(4))


def test_a_full_table_of_small_uploads_keeps_what_it_handed_out(monkeypatch):
    # emptying it would forget arrays several tensors may still share, which a graph
    # could then donate
    monkeypatch.setattr(uploads, "MAX_KEPT", 2)
    table = uploads.SmallUploads()
    first, second = table.get(torch.zeros(2)), table.get(torch.ones(2))
    assert table.get(torch.full((2,), 2.0)) is None  # full: uploaded as any other
    assert table.get(torch.zeros(2)) is first and table.holds(first) and table.holds(second)
    assert table.get(torch.zeros(65)) is None  # 260 bytes: never kept
    assert table.get(torch.zeros(2, dtype=torch.bfloat16)) is None  # numpy lacks it
