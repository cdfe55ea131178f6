"""torch's fused optimizer ops (``runtime/ops/fused_optimizers.py``) on the lazy device
against eager's fused CPU kernels: each written list (parameters, gradients, states) after
one call, within eager's own float32 error of a float64 run of the same CPU kernel.

Regressions: ``_fused_adam_``/``_fused_adamw_`` failed with functionalization's internal
assert ("mutating a non-functional tensor with a functional tensor": the empty
``max_exp_avg_sqs`` list), ``_fused_sgd_``/``_fused_adagrad_`` with "no fake impl or Meta
kernel"."""

from __future__ import annotations

import pytest
import torch
from support.training import assert_as_accurate_as_eager

import lazygen.runtime as lr

ops = torch.ops.aten
SHAPES = ((5, 3), (7,))


def _lists(names, steps=(3.0, 1.0)):
    """Random inputs: one tensor per shape for each list name; positive second moments and
    sums (as an optimizer's state is); ``state_steps`` float32 counts."""
    lists = {}
    for name in names:
        if name == "state_steps":
            lists[name] = [torch.tensor(s) for s in steps]
        elif name in ("exp_avg_sqs", "max_exp_avg_sqs", "state_sums"):
            lists[name] = [torch.rand(s) * 0.1 for s in SHAPES]
        else:
            lists[name] = [torch.randn(s) for s in SHAPES]
    return lists


#: (op, list arguments in schema order, keyword arguments)
ADAM_LISTS = ("params", "grads", "exp_avgs", "exp_avg_sqs", "max_exp_avg_sqs", "state_steps")
ADAM = dict(lr=1e-2, beta1=0.9, beta2=0.999, weight_decay=0.0, eps=1e-8)
SGD = dict(weight_decay=0.0, momentum=0.9, lr=0.1, dampening=0.0)
SGD_FLAGS = dict(nesterov=False, maximize=False, is_first_step=False)
ADAGRAD = dict(lr=0.1, lr_decay=0.0, weight_decay=0.0, eps=1e-10, maximize=False)
CASES = {
    "adam": (ops._fused_adam_.default, ADAM_LISTS, dict(ADAM, amsgrad=False, maximize=False)),
    "adam_amsgrad_wd_maximize": (
        ops._fused_adam_.default,
        ADAM_LISTS,
        dict(ADAM, weight_decay=0.1, amsgrad=True, maximize=True),
    ),
    "adam_tensor_lr": (
        ops._fused_adam_.tensor_lr,
        ADAM_LISTS,
        dict(ADAM, lr=torch.tensor(1e-2), amsgrad=False, maximize=False),
    ),
    "adamw_wd": (
        ops._fused_adamw_.default,
        ADAM_LISTS,
        dict(ADAM, weight_decay=0.1, amsgrad=False, maximize=False),
    ),
    "adamw_amsgrad_tensor_lr": (
        ops._fused_adamw_.tensor_lr,
        ADAM_LISTS,
        dict(ADAM, lr=torch.tensor(1e-2), weight_decay=0.1, amsgrad=True, maximize=False),
    ),
    "sgd": (
        ops._fused_sgd_.default,
        ("params", "grads", "bufs"),
        dict(SGD, momentum=0.0, **SGD_FLAGS),
    ),
    "sgd_momentum_first_step": (
        ops._fused_sgd_.default,
        ("params", "grads", "bufs"),
        dict(SGD, **dict(SGD_FLAGS, is_first_step=True)),
    ),
    "sgd_nesterov_wd": (
        ops._fused_sgd_.default,
        ("params", "grads", "bufs"),
        dict(SGD, weight_decay=0.01, **dict(SGD_FLAGS, nesterov=True)),
    ),
    "sgd_dampening_maximize_tensor_lr": (
        ops._fused_sgd_.tensor_lr,
        ("params", "grads", "bufs"),
        dict(SGD, lr=torch.tensor(0.1), dampening=0.1, **dict(SGD_FLAGS, maximize=True)),
    ),
    "adagrad": (
        ops._fused_adagrad_.default,
        ("params", "grads", "state_sums", "state_steps"),
        ADAGRAD,
    ),
    "adagrad_decay_wd_maximize_tensor_lr": (
        ops._fused_adagrad_.tensor_lr,
        ("params", "grads", "state_sums", "state_steps"),
        dict(ADAGRAD, lr=torch.tensor(0.1), lr_decay=0.01, weight_decay=0.1, maximize=True),
    ),
}


def _call(op, names, lists, kwargs, device, dtype=torch.float32, scale=None, found_inf=None):
    """Call ``op`` on copies of ``lists`` moved to ``device``; return every list after it
    (in ``names`` order, flattened, still on ``device``)."""

    def move(t):
        t = t.to(dtype) if t.is_floating_point() and t.dim() else t
        return t.to(device, copy=True)  # the caller's lists stay as they were

    args = []
    for name in names:
        if _empty(name, kwargs):
            args.append([])
        else:
            args.append([move(t) for t in lists[name]])
    kw = dict(kwargs)
    if isinstance(kw["lr"], torch.Tensor):
        kw["lr"] = kw["lr"].to(device)
    if scale is not None:
        kw["grad_scale"] = torch.tensor(scale).to(device)
    if found_inf is not None:
        kw["found_inf"] = torch.tensor(found_inf).to(device)
    op(*args, **kw)
    if device != "cpu":
        lr.mark_step()
    return [t.detach() for tensors in args for t in tensors]


def _host(tensors):
    return [t.cpu() for t in tensors]


@pytest.mark.parametrize("scaled", [False, True], ids=["plain", "grad_scale"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_fused_step_equals_eager_cpu_kernel(case, scaled, fresh_metrics):
    op, names, kwargs = CASES[case]
    lists = _lists(names)
    # A GradScaler's scale and a step without infs (found_inf 0): the gradients are divided
    # by the scale (and written back unscaled) and the step is taken.
    scale, found_inf = (1024.0, 0.0) if scaled else (None, None)
    if scaled:
        lists["grads"] = [g * scale for g in lists["grads"]]
    got = _call(op, names, lists, kwargs, "lazygen", scale=scale, found_inf=found_inf)
    report = lr.metrics.fallback_report()
    assert report.fallbacks == () and report.host_reads == (), str(report)
    got = _host(got)
    want = _call(op, names, lists, kwargs, "cpu", scale=scale, found_inf=found_inf)
    want64 = _call(op, names, lists, kwargs, "cpu", torch.float64, scale, found_inf)
    assert_as_accurate_as_eager(got, want, want64)
    # The step changed the parameters (a kernel that did nothing would pass nowhere).
    assert not torch.equal(got[0], lists["params"][0])


@pytest.mark.parametrize("case", ["adam_amsgrad_wd_maximize", "sgd_nesterov_wd", "adagrad"])
def test_found_inf_skips_the_step_without_a_host_read(case, fresh_metrics):
    """``found_inf == 1`` (GradScaler saw an inf): nothing is written, gradients stay
    scaled, as eager's kernel returns early; lazily the flag is never read on the host."""
    op, names, kwargs = CASES[case]
    lists = _lists(names)
    before = [t.clone() for name in names for t in lists[name] if not _empty(name, kwargs)]
    got = _call(op, names, lists, kwargs, "lazygen", scale=1024.0, found_inf=1.0)
    assert lr.metrics.fallback_report().host_reads == ()
    got = _host(got)
    want = _call(op, names, lists, kwargs, "cpu", scale=1024.0, found_inf=1.0)
    for g, w, b in zip(got, want, before, strict=True):
        assert torch.equal(w, b) and torch.equal(g, b)


def _empty(name, kwargs):
    return (name == "max_exp_avg_sqs" and not kwargs.get("amsgrad")) or (
        name == "bufs" and kwargs.get("momentum") == 0
    )


def test_bfloat16_parameters_round_once_as_eager():
    """Half and bfloat16 parameters are updated in float32 and rounded when written, as
    eager's kernel computes in its opmath type: the results equal eager's within one
    bfloat16 rounding of the float64 run."""
    op, names, kwargs = CASES["adam_amsgrad_wd_maximize"]
    lists = _lists(names)
    got = _host(_call(op, names, lists, kwargs, "lazygen", torch.bfloat16))
    want = _call(op, names, lists, kwargs, "cpu", torch.bfloat16)
    want64 = _call(op, names, lists, kwargs, "cpu", torch.float64)
    assert_as_accurate_as_eager([g.float() for g in got], [w.float() for w in want], want64)


def test_mismatched_lists_name_the_argument():
    params = [torch.randn(3).to("lazygen"), torch.randn(2).to("lazygen")]
    with pytest.raises(lr.LazygenRuntimeError, match="2 parameters but 1 grads"):
        torch._fused_sgd_(
            params, params[:1], [], weight_decay=0.0, momentum=0.0, lr=0.1, dampening=0.0,
            nesterov=False, maximize=False, is_first_step=False,
        )  # fmt: skip
    with pytest.raises(lr.LazygenRuntimeError, match="amsgrad=False"):
        torch._fused_adam_(
            params, params, params, params, params, [torch.tensor(1.0).to("lazygen")] * 2,
            amsgrad=False, maximize=False, **ADAM,
        )  # fmt: skip


@pytest.mark.parametrize(
    "cls, kwargs",
    [
        (torch.optim.Adam, dict(lr=1e-2, amsgrad=True, weight_decay=0.1)),
        (torch.optim.AdamW, dict(lr=1e-2, weight_decay=0.1)),
        (torch.optim.SGD, dict(lr=0.1, momentum=0.9, nesterov=True)),
        (torch.optim.Adagrad, dict(lr=0.1, lr_decay=0.01)),
    ],
    ids=lambda v: v.__name__ if isinstance(v, type) else "",
)
def test_grad_scaler_with_fused_optimizer_equals_eager(cls, kwargs, fresh_metrics):
    """``torch.amp.GradScaler`` hands the fused step its scale and ``found_inf`` (the
    optimizer's ``_step_supports_amp_scaling``): three steps, the second with an inf
    gradient (skipped, the scale halved), equal to the same run on the CPU."""

    def run(device, dtype=torch.float32):
        torch.manual_seed(0)
        model = torch.nn.Linear(4, 3).to(device, dtype)
        opt = cls(model.parameters(), fused=True, **kwargs)
        scaler = torch.amp.GradScaler(device, init_scale=256.0)
        x = torch.randn(6, 4).to(device, dtype)
        for i in range(3):
            opt.zero_grad()
            loss = model(x).square().mean() * (float("inf") if i == 1 else 1.0)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            if device != "cpu":
                lr.mark_step()
        return [p.detach().cpu() for p in model.parameters()] + [scaler.get_scale()]

    got, want, want64 = run("lazygen"), run("cpu"), run("cpu", torch.float64)
    assert got[-1] == want[-1] == 128.0  # the skipped step halved the scale once
    assert lr.metrics.fallback_report().fallbacks == ()
    assert_as_accurate_as_eager(got[:-1], want[:-1], want64[:-1])
