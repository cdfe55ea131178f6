"""Every ``torch.optim`` optimizer trains on the lazy device as eagerly
(``support.optimizers``: the classes, their options, foreach on and off, fused, capturable,
a tensor lr). The default run trains one case per class; the whole matrix is slow.

Each run's losses, parameters and optimizer state after three steps are as accurate as
eager's own float32 run, measured against a float64 run (``assert_as_accurate_as_eager``),
and no op of the steps runs eagerly or reads a value on the host (but for the
``.item()`` calls in torch's own Adafactor and non-capturable ASGD)."""

from __future__ import annotations

import pytest
import torch
from support.optimizers import CASES, ONE_PER_CLASS, reads_on_host, reference_options, train
from support.training import assert_as_accurate_as_eager, make_mlp

import lazygen.runtime as lr


def _check_lazy(case: str) -> None:
    cls, kwargs = CASES[case]

    def nothing_ran_eagerly():
        """No op of the steps ran eagerly; none read a value on the host but the
        ``.item()`` calls of torch's own optimizer code (``reads_on_host``)."""
        report = lr.metrics.fallback_report()
        assert report.fallbacks == (), str(report)
        reads = {e.op for e in report.host_reads}
        assert reads <= ({"aten::_local_scalar_dense"} if reads_on_host(cls, kwargs) else set())

    got = train(cls, kwargs, "lazy", trained=nothing_ran_eagerly)
    want = train(cls, reference_options(kwargs), "eager")
    assert len(got) == len(want)
    assert_as_accurate_as_eager(
        got, want, lambda: train(cls, reference_options(kwargs), "eager", torch.float64)
    )


@pytest.mark.parametrize("case", ONE_PER_CLASS)
def test_each_optimizer_class_trains_on_the_lazy_device(case, fresh_metrics):
    _check_lazy(case)


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(set(CASES) - set(ONE_PER_CLASS)))
def test_every_optimizer_option_trains_on_the_lazy_device(case, fresh_metrics):
    _check_lazy(case)


def test_the_matrix_covers_every_optimizer_class():
    """A new torch.optim class fails here until it joins the matrix. LBFGS (a closure per
    step) has its own test below; SparseAdam takes sparse gradients, which the lazy device
    refuses with an error that says what to do."""
    classes = {
        c
        for c in vars(torch.optim).values()
        if isinstance(c, type) and issubclass(c, torch.optim.Optimizer)
        and c not in (torch.optim.Optimizer, torch.optim.LBFGS, torch.optim.SparseAdam)
    }  # fmt: skip
    covered = {cls for cls, _ in CASES.values()}
    assert classes <= covered, sorted(c.__name__ for c in classes - covered)


def _lbfgs_run(device, dtype, kwargs):
    model = make_mlp(seed=1, sizes=(6, 8, 3)).to(device, dtype)
    torch.manual_seed(2)
    x, y = torch.randn(5, 6).to(device, dtype), torch.randint(0, 3, (5,)).to(device)
    opt = torch.optim.LBFGS(model.parameters(), lr=0.5, max_iter=3, **kwargs)

    def closure():
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        return loss

    for _ in range(2):
        opt.step(closure)
        if device != "cpu":
            lr.mark_step()
    assert lr.metrics.fallback_report().fallbacks == ()
    return [p.detach().cpu() for p in model.parameters()]


@pytest.mark.parametrize(
    "line_search_fn", [None, pytest.param("strong_wolfe", marks=pytest.mark.slow)]
)
def test_lbfgs_with_a_closure_trains_as_eagerly(line_search_fn, fresh_metrics):
    """LBFGS re-evaluates the closure inside its step and reads its convergence tests on
    the host (``.item()``, torch's own code: a graph per read, hence few iterations here):
    nothing runs eagerly, results as eager's."""
    kwargs = dict(line_search_fn=line_search_fn)
    got = _lbfgs_run("lazygen", torch.float32, kwargs)
    want = _lbfgs_run("cpu", torch.float32, kwargs)
    assert_as_accurate_as_eager(got, want, lambda: _lbfgs_run("cpu", torch.float64, kwargs))


def _differentiable_run(device, cls, kwargs):
    """Two ``differentiable=True`` steps of a non-leaf parameter (made from a leaf ``w``),
    then the gradient of the result with respect to ``w`` through both steps."""
    torch.manual_seed(0)
    w = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
    p = w.to(device) * 1.5
    opt = cls([p], differentiable=True, **kwargs)
    for _ in range(2):
        p.grad = p.detach() * 2 - 1
        opt.step()
    p.square().sum().backward()
    if device != "cpu":
        lr.mark_step()
    return [p.detach().cpu(), w.grad]


@pytest.mark.parametrize(
    "cls, kwargs",
    [
        (torch.optim.Adam, dict(lr=1e-2, amsgrad=True)),
        (torch.optim.SGD, dict(lr=0.1, momentum=0.9, nesterov=True)),
        (torch.optim.RMSprop, dict(lr=1e-2, centered=True)),
    ],
    ids=lambda v: v.__name__ if isinstance(v, type) else "",
)
def test_differentiable_steps_give_eager_gradients(cls, kwargs):
    """``differentiable=True`` (parameters that are not leaves, a gradient through the
    optimizer's steps, as in meta-learning) on the lazy device equals eager (float64: the
    same rounding both ways)."""
    got = _differentiable_run("lazygen", cls, kwargs)
    want = _differentiable_run("cpu", cls, kwargs)
    for g, w in zip(got, want, strict=True):
        torch.testing.assert_close(g, w, rtol=1e-12, atol=1e-12)
