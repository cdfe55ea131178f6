"""Lazy random ops draw eager's random numbers under the same seed (``rt.generator``)."""

from __future__ import annotations

import pytest
import torch
from torch.testing._internal.common_utils import freeze_rng_state

import lazygen.runtime as lr
from lazygen.runtime import kernel_support as rt
from lazygen.runtime import op_registry

LAZY = "lazygen"


def _cpu(results):
    lr.mark_step()
    return [r.cpu() for r in results]


def _both(program, seed=7):
    """``program(device)``'s results eagerly and lazily, each run from ``seed``, plus the
    next number of the default stream after each (the generator must be left as eager
    leaves it)."""
    torch.manual_seed(seed)
    eager = [r.clone() for r in program("cpu")] + [torch.rand(3)]
    torch.manual_seed(seed)
    lazy = program(LAZY)
    after = torch.rand(3)
    return eager, _cpu(lazy) + [after]


def _assert_equal(eager, lazy):
    assert len(eager) == len(lazy)
    for index, (want, got) in enumerate(zip(eager, lazy, strict=True)):
        assert torch.equal(got, want), f"result {index} differs"


PROBS = torch.linspace(0.05, 0.95, 60).reshape(6, 10)

RANDOM_OPS = {
    "bernoulli": lambda d: [torch.bernoulli(PROBS.to(d))],
    "bernoulli.p": lambda d: [torch.bernoulli(PROBS.to(d), 0.3)],
    "bernoulli_": lambda d: [torch.zeros(6, 10, device=d).bernoulli_(0.6)],
    "random": lambda d: [torch.zeros(5, 4, device=d).random_()],
    "random.from": lambda d: [torch.zeros(5, 4, device=d).random_(-3, 12)],
    "random.to": lambda d: [torch.zeros(5, 4, device=d).random_(5)],
    "uniform": lambda d: [torch.zeros(33, device=d).uniform_(-2.0, 5.0)],
    "normal_functional": lambda d: [torch.zeros(33, device=d).normal_(1.0, 3.0)],
    "normal.Tensor_float": lambda d: [torch.normal(PROBS.to(d), 0.5)],
    "normal.float_Tensor": lambda d: [torch.normal(0.5, PROBS.to(d))],
    "normal.Tensor_Tensor": lambda d: [torch.normal(PROBS.to(d), PROBS.to(d) * 2)],
    "normal.float_float": lambda d: [torch.normal(0.0, 2.0, (17, 3), device=d)],
    "cauchy": lambda d: [torch.zeros(33, device=d).cauchy_(1.0, 2.0)],
    "exponential": lambda d: [torch.zeros(33, device=d).exponential_(1.5)],
    "geometric": lambda d: [torch.zeros(33, device=d).geometric_(0.25)],
    "log_normal": lambda d: [torch.zeros(33, device=d).log_normal_(0.5, 0.75)],
    "rand": lambda d: [torch.rand(4, 5, device=d), torch.randn(7, device=d)],
    "rand_like": lambda d: [torch.randn_like(PROBS.to(d)), torch.randint_like(PROBS.to(d), 9)],
    "dropout": lambda d: [torch.nn.functional.dropout(PROBS.to(d), 0.4, training=True)],
    "native_dropout": lambda d: list(torch.ops.aten.native_dropout(PROBS.to(d), 0.25, True)),
    # reduced precision: eager rounds the kept values' factor 1 / (1 - p) to the dtype first
    "dropout_bfloat16": lambda d: [
        torch.nn.functional.dropout(PROBS.to(d, torch.bfloat16) * 7, 0.1, training=True)
    ],
    "native_dropout_float16": lambda d: list(
        torch.ops.aten.native_dropout(PROBS.to(d, torch.float16) * 7, 0.1, True)
    ),
    "dropout_p1": lambda d: [torch.nn.functional.dropout(PROBS.to(d), 1.0, training=True)],
    "dropout2d": lambda d: [torch.nn.functional.dropout2d(PROBS.to(d).reshape(1, 6, 10, 1), 0.5)],
    "alpha_dropout": lambda d: [torch.nn.functional.alpha_dropout(PROBS.to(d), 0.3, True)],
}


@pytest.mark.parametrize("name", sorted(RANDOM_OPS))
def test_random_op_matches_eager(name):
    _assert_equal(*_both(RANDOM_OPS[name]))


@pytest.mark.parametrize("name", ["bernoulli", "uniform", "normal.Tensor_Tensor", "random.from"])
def test_random_ops_are_lazy(name, fresh_metrics):
    RANDOM_OPS[name](LAZY)
    lr.mark_step()
    assert not [n for n in fresh_metrics.counter_names() if n.startswith(("aten::", "Random"))]


def test_several_random_ops_in_one_graph_keep_eager_order(fresh_metrics):
    def program(d):
        p = PROBS.to(d)
        a = torch.bernoulli(p)
        b = torch.zeros(6, 10, device=d).uniform_()
        c = torch.nn.functional.dropout(a + b, 0.5)
        return [a, b, c, torch.bernoulli(c.clamp(0, 1))]

    _assert_equal(*_both(program))
    assert (fresh_metrics.counter_value("UncachedCompile") or 0) <= 1


def test_explicit_generator_matches_eager_and_leaves_default_stream_alone():
    def program(d):
        gen = torch.Generator().manual_seed(1234)
        return [
            torch.bernoulli(PROBS.to(d), generator=gen),
            torch.zeros(9, device=d).normal_(generator=gen),
            torch.bernoulli(PROBS.to(d), 0.5, generator=gen),
        ]

    eager, lazy = _both(program)
    _assert_equal(eager, lazy)
    gen = torch.Generator().manual_seed(1234)
    first = torch.bernoulli(PROBS, generator=gen)
    assert torch.equal(lazy[0], first)


def test_freeze_rng_state_applies_at_the_call():
    def program(d):
        p = PROBS.to(d)
        with freeze_rng_state():
            inside = torch.bernoulli(p)
        return [inside, torch.bernoulli(p)]

    eager, lazy = _both(program)
    _assert_equal(eager, lazy)
    assert torch.equal(lazy[0], lazy[1])  # the frozen block did not advance the stream


def test_graph_does_not_depend_on_the_generator_state(fresh_metrics):
    results = []
    for seed in (1, 2, 3):
        torch.manual_seed(seed)
        results.append(torch.bernoulli(PROBS.to(LAZY)))
        lr.mark_step()
    assert (fresh_metrics.counter_value("UncachedCompile") or 0) <= 1
    assert fresh_metrics.counter_value("CachedCompile") >= 2
    assert not torch.equal(results[0].cpu(), results[1].cpu())


def test_a_new_generator_seed_compiles_nothing_new(fresh_metrics):
    """LTC bakes an explicit generator's seed into the graph (a new seed recompiles);
    lazygen feeds the generator's state in, so every seed runs the one compiled graph and
    draws eager's numbers."""
    got, expected = [], []
    for seed in (1, 2, 1):
        expected.append(
            torch.tensor(1.0).uniform_(-1, 1, generator=torch.Generator().manual_seed(seed))
        )
        t = torch.tensor(1.0, device=LAZY)
        got.append(t.uniform_(-1, 1, generator=torch.Generator().manual_seed(seed)))
        lr.mark_step()
    assert fresh_metrics.counter_value("UncachedCompile") == 1
    assert fresh_metrics.counter_value("CachedCompile") == 2
    assert [g.cpu() for g in got] == expected
    assert "uniform" in lr.debug.last_graph()


def test_a_random_node_run_twice_gives_the_same_numbers():
    p = PROBS.to(LAZY)
    r = torch.bernoulli(p)
    a = (r + 1).cpu()  # runs the graph of `a` only; `r` stays IR
    b = (r * 2).cpu()  # runs the bernoulli node again, from the same saved state
    assert torch.equal(b, (a - 1) * 2)


def test_generator_is_a_graph_input():
    r = torch.bernoulli(PROBS.to(LAZY))
    text = lr.debug.dump_ir([r], "backend")
    assert "Generator?" in text
    assert "aten::bernoulli" in text
    lr.mark_step()


class _Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(12, 16)
        self.drop = torch.nn.Dropout(0.3)
        self.fc2 = torch.nn.Linear(16, 3)

    def forward(self, x):
        return self.fc2(self.drop(torch.relu(self.fc1(x))))


def _train(device, steps=4):
    torch.manual_seed(0)
    model = _Model().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    data = torch.randn(8, 12)
    target = torch.randint(0, 3, (8,))
    losses, compiles = [], []
    for _ in range(steps):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(data.to(device)), target.to(device))
        loss.backward()
        opt.step()
        if device == LAZY:
            lr.mark_step()
            compiles.append(lr.metrics.counter_value("UncachedCompile"))
        losses.append(loss.detach().cpu())
    return torch.stack(losses), [p.detach().cpu() for p in model.parameters()], compiles


def test_dropout_training_step_matches_eager_in_one_cached_graph(fresh_metrics):
    eager_losses, eager_params, _ = _train("cpu")
    lazy_losses, lazy_params, compiles = _train(LAZY)
    torch.testing.assert_close(lazy_losses, eager_losses)
    for got, want in zip(lazy_params, eager_params, strict=True):
        torch.testing.assert_close(got, want)
    assert compiles[-1] == compiles[1]  # no compile per step after warm-up
    assert not [n for n in fresh_metrics.counter_names() if n.startswith("aten::")]


def _state_after(op, args, kwargs):
    gen = torch.Generator().manual_seed(99)
    op(*args, **{**kwargs, "generator": gen})
    return gen.get_state()


_ALLOW_LIST_CASES = [
    (torch.ops.aten.bernoulli.default, lambda v: (v,), {}),
    (torch.ops.aten.bernoulli.p, lambda v: (v, 0.3), {}),
    (torch.ops.aten.random.default, lambda v: (v,), {}),
    (getattr(torch.ops.aten.random, "from"), lambda v: (v, -2, 40), {}),
    (torch.ops.aten.random.to, lambda v: (v, 1000), {}),
    (torch.ops.aten.uniform.default, lambda v: (v, -1.0, 2.0), {}),
    (torch.ops.aten.normal_functional.default, lambda v: (v, 0.0, 2.0), {}),
    (torch.ops.aten.normal.Tensor_float, lambda v: (v, 0.5), {}),
    (torch.ops.aten.normal.float_Tensor, lambda v: (0.5, v), {}),
    (torch.ops.aten.normal.Tensor_Tensor, lambda v: (v, v), {}),
    (torch.ops.aten.cauchy.default, lambda v: (v,), {}),
    (torch.ops.aten.exponential.default, lambda v: (v, 2.0), {}),
    (torch.ops.aten.geometric.default, lambda v: (v, 0.3), {}),
    (torch.ops.aten.log_normal.default, lambda v: (v,), {}),
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("case", range(len(_ALLOW_LIST_CASES)))
def test_allow_listed_ops_consume_independently_of_values(case, dtype):
    """What ``rt.generator`` relies on to replay a call on zeros: the same number of random
    draws whatever the inputs' values."""
    op, make_args, kwargs = _ALLOW_LIST_CASES[case]
    assert op_registry.has("value_independent_random", op)
    for size in (5, 37):
        zeros = _state_after(op, make_args(torch.zeros(size, dtype=dtype)), kwargs)
        values = _state_after(op, make_args(torch.rand(size, dtype=dtype)), kwargs)
        assert torch.equal(zeros, values)


def test_value_dependent_random_op_syncs_and_matches_eager(fresh_metrics):
    """An op outside the allow-list (poisson draws per value) replays on the real values."""
    rates = PROBS * 5
    device = lr.devices.default_device()
    torch.manual_seed(5)
    want = torch.poisson(rates)
    after_eager = torch.rand(2)
    torch.manual_seed(5)
    lazy_rates = rates.to(LAZY) + 0  # pending IR
    value = rt.generator(None, device, torch.ops.aten.poisson.default, (lazy_rates,), {})
    after_lazy = torch.rand(2)
    assert torch.equal(after_eager, after_lazy)
    assert fresh_metrics.counter_value("RandomSync::aten::poisson") == 1
    drawn = torch.poisson(rates, generator=value.node.materialize())
    assert torch.equal(drawn, want)


def test_ir_dump_names_the_generator_input():
    """Regression: the generator graph input was printed as `scalar()`."""
    x = torch.full((4,), 0.5, device="lazygen")
    text = lr.debug.dump_ir([torch.bernoulli(x)], "text")
    assert "generator_data()" in text and "aten::bernoulli" in text
    lr.mark_step()
