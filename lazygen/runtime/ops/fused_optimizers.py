"""torch's fused optimizer steps (``fused=True``: ``_fused_adam_``, ``_fused_adamw_``,
``_fused_sgd_``, ``_fused_adagrad_``, each also with a tensor ``lr``) as lazy ops.

``torch.optim`` takes its fused path on every device in
``_get_fused_kernels_supported_devices()``, which names the PrivateUse1 backend, so a lazy
parameter reaches these ops. Below autograd they broke in two ways: torch's generated
functionalization kernel of ``_fused_adam_`` counts the empty ``max_exp_avg_sqs`` list
(``amsgrad=False``) as a non-functional argument and trips an internal assert, and the
functional variants (``_fused_sgd``...) have no meta kernel, which a lazy kernel needs for
its output shapes. The lazy device therefore registers these ops at its autograd key,
which runs before functionalization: each kernel computes the step of eager's CPU kernel
(``aten/src/ATen/native/cpu/Fused*Kernel.cpp``) with ``torch._foreach_*`` ops on the lazy
tensors (one call per list, not per tensor: per-tensor ops made tracing fused Adam's
step 2.85x foreach Adam's, the lists 1.5x; ``bench/optimizers.py``) and writes the results
back with ``_foreach_copy_``. Functionalization then sees only ops it handles, and the
step joins the lazy graph like a ``foreach`` step.

Semantics kept from the CPU kernels:

* ``grad_scale`` (what ``torch.amp.GradScaler`` passes): the gradient is divided by it and
  the unscaled gradient is written back into ``grads``.
* ``found_inf``: where it equals 1 nothing changes (parameters, states and gradients keep
  their values). The CPU kernel reads the flag on the host and returns early; here each
  written tensor takes ``where(found_inf == 1, old, new)``, so the step needs no host sync.
* The step count (``state_steps``) and a tensor ``lr`` stay tensors on the device (the CPU
  kernel reads them with ``item()``): the bias corrections are computed in float64, as
  the CPU kernel computes them in double. A ``lr`` tensor on the host is read as a number.
* Half and bfloat16 parameters are updated in float32 and rounded once when written back,
  as the CPU kernel computes in its ``opmath`` type.
"""

from __future__ import annotations

from types import MappingProxyType

import torch

from ..errors import LazygenRuntimeError

aten = torch.ops.aten

_LOW_PRECISION = (torch.float16, torch.bfloat16)


def _opmath(tensors: list) -> list:
    """``tensors`` in the type the CPU kernel computes in (float32 for half and bfloat16)."""
    return [t.float() if t.dtype in _LOW_PRECISION else t for t in tensors]


def _on(t, device):
    """A tensor argument (``grad_scale``, ``found_inf``, a tensor ``lr``) on ``device``;
    a ``lr`` tensor on the host is read as a number, as the CPU kernel reads every ``lr``
    tensor (no device sync: the value is already on the host)."""
    if not isinstance(t, torch.Tensor):
        return t
    if t.device.type == "cpu" and t.dim() == 0 and device.type != "cpu":
        return t.item()
    return t if t.device == device else t.to(device)


def _counts(state_steps: list, device) -> torch.Tensor:
    """The step counts as one float64 vector (the CPU kernel's bias corrections are
    computed in double); per-tensor factors are taken from it with ``unbind``."""
    return torch.stack([s.to(device) for s in state_steps]).to(torch.float64)


class _Step:
    """What one fused call shares across its tensors: the gradient scale and the
    ``found_inf`` flag on the parameters' device, and the write that honours the flag."""

    def __init__(self, device, grad_scale, found_inf) -> None:
        self.grad_scale = None if grad_scale is None else grad_scale.to(device)
        self.skip = None if found_inf is None else found_inf.to(device).eq(1)

    def unscale(self, grads: list) -> list:
        """The gradients in the compute type, divided by ``grad_scale``; the unscaled
        gradients are written back into ``grads`` (as the CPU kernel does)."""
        g = _opmath(grads)
        if self.grad_scale is None:
            return g
        g = torch._foreach_div(g, self.grad_scale)
        self.write(grads, g)
        return g

    def write(self, targets: list, new: list) -> None:
        """``targets`` take ``new``, unless ``found_inf`` flags the step as skipped."""
        if self.skip is not None:
            old = _opmath(targets)
            new = [torch.where(self.skip, o, n) for o, n in zip(old, new, strict=True)]
        torch._foreach_copy_(targets, new)


def _start(params, grads, lr, grad_scale, found_inf, maximize):
    """What every fused step begins with, as the CPU kernels do: the step's shared state
    (``_Step``), the parameters' device, ``lr`` there, the unscaled gradients (negated with
    ``maximize``) and the parameters, both in the compute type."""
    device = params[0].device
    step = _Step(device, grad_scale, found_inf)
    g = step.unscale(grads)
    if maximize:
        g = torch._foreach_neg(g)
    return step, device, _on(lr, device), g, _opmath(params)


def _check_lengths(op: str, params, **lists) -> None:
    n = len(params)
    for name, tensors in lists.items():
        if len(tensors) != n:
            raise LazygenRuntimeError(
                f"lazygen: {op} got {n} parameters but {len(tensors)} {name}; pass one "
                f"{name} tensor per parameter (torch.optim does)"
            )


def _adam(
    op,
    decoupled,
    params,
    grads,
    exp_avgs,
    exp_avg_sqs,
    max_exp_avg_sqs,
    state_steps,
    *,
    lr,
    beta1,
    beta2,
    weight_decay,
    eps,
    amsgrad,
    maximize,
    grad_scale=None,
    found_inf=None,
):
    """Adam (``decoupled``: AdamW) over each parameter, as ``FusedAdamKernel.cpp``."""
    _check_lengths(op, params, grads=grads, exp_avgs=exp_avgs, exp_avg_sqs=exp_avg_sqs)
    _check_lengths(op, params, state_steps=state_steps)
    if amsgrad:
        _check_lengths(op, params, max_exp_avg_sqs=max_exp_avg_sqs)
    elif len(max_exp_avg_sqs):
        raise LazygenRuntimeError(
            f"lazygen: {op} got max_exp_avg_sqs with amsgrad=False; pass an empty list "
            "or amsgrad=True"
        )
    if not params:
        return
    with torch.no_grad():
        step, device, lr, g, p = _start(params, grads, lr, grad_scale, found_inf, maximize)
        if weight_decay != 0:
            if decoupled:
                p = torch._foreach_mul(p, 1 - lr * weight_decay)
            else:
                g = torch._foreach_add(g, p, alpha=weight_decay)
        exp_avg = torch._foreach_lerp(_opmath(exp_avgs), g, 1 - beta1)
        exp_avg_sq = torch._foreach_mul(_opmath(exp_avg_sqs), beta2)
        exp_avg_sq = torch._foreach_addcmul(exp_avg_sq, g, g, value=1 - beta2)
        counts = _counts(state_steps, device)
        step_sizes = (lr / (1 - torch.pow(beta1, counts))).unbind()
        bias_corrections2_sqrt = (1 - torch.pow(beta2, counts)).sqrt().unbind()
        if amsgrad:
            max_exp_avg_sq = torch._foreach_maximum(_opmath(max_exp_avg_sqs), exp_avg_sq)
            step.write(max_exp_avg_sqs, max_exp_avg_sq)
            second = max_exp_avg_sq
        else:
            second = exp_avg_sq
        denom = torch._foreach_div(torch._foreach_sqrt(second), bias_corrections2_sqrt)
        denom = torch._foreach_add(denom, eps)
        update = torch._foreach_div(torch._foreach_mul(exp_avg, step_sizes), denom)
        step.write(params, torch._foreach_sub(p, update))
        step.write(exp_avgs, exp_avg)
        step.write(exp_avg_sqs, exp_avg_sq)


def _fused_adam_(*args, **kwargs):
    _adam("_fused_adam_", False, *args, **kwargs)


def _fused_adamw_(*args, **kwargs):
    _adam("_fused_adamw_", True, *args, **kwargs)


def _fused_sgd_(
    params,
    grads,
    momentum_buffer_list,
    *,
    weight_decay,
    momentum,
    lr,
    dampening,
    nesterov,
    maximize,
    is_first_step,
    grad_scale=None,
    found_inf=None,
):
    """SGD over each parameter, as ``FusedSGDKernel.cpp``: on the first step the momentum
    buffer takes the gradient (torch.optim passes uninitialised buffers)."""
    op = "_fused_sgd_"
    _check_lengths(op, params, grads=grads)
    if momentum != 0:
        _check_lengths(op, params, momentum_buffer_list=momentum_buffer_list)
    if not params:
        return
    with torch.no_grad():
        step, _, lr, g, p = _start(params, grads, lr, grad_scale, found_inf, maximize)
        if weight_decay != 0:
            g = torch._foreach_add(g, p, alpha=weight_decay)
        if momentum != 0:
            if is_first_step:
                buf = g
            else:
                buf = torch._foreach_mul(_opmath(momentum_buffer_list), momentum)
                buf = torch._foreach_add(buf, g, alpha=1 - dampening)
            step.write(momentum_buffer_list, buf)
            g = torch._foreach_add(g, buf, alpha=momentum) if nesterov else buf
        step.write(params, torch._foreach_sub(p, torch._foreach_mul(g, lr)))


def _fused_adagrad_(
    params,
    grads,
    state_sums,
    state_steps,
    *,
    lr,
    lr_decay,
    weight_decay,
    eps,
    maximize,
    grad_scale=None,
    found_inf=None,
):
    """Adagrad over each parameter, as ``FusedAdagradKernel.cpp`` (torch.optim has already
    counted this step in ``state_steps``)."""
    op = "_fused_adagrad_"
    _check_lengths(op, params, grads=grads, state_sums=state_sums, state_steps=state_steps)
    if not params:
        return
    with torch.no_grad():
        step, device, lr, g, p = _start(params, grads, lr, grad_scale, found_inf, maximize)
        if weight_decay != 0:
            g = torch._foreach_add(g, p, alpha=weight_decay)
        state_sum = torch._foreach_addcmul(_opmath(state_sums), g, g)
        clrs = (lr / (1 + (_counts(state_steps, device) - 1) * lr_decay)).unbind()
        std = torch._foreach_add(torch._foreach_sqrt(state_sum), eps)
        step.write(state_sums, state_sum)
        step.write(
            params, torch._foreach_sub(p, torch._foreach_div(torch._foreach_mul(g, clrs), std))
        )


#: Registered at the lazy device's autograd key (``ops.runtime_tables()``).
FUSED_OPTIMIZER_AUTOGRAD_KERNELS = MappingProxyType(
    {
        aten._fused_adam_.default: _fused_adam_,
        aten._fused_adam_.tensor_lr: _fused_adam_,
        aten._fused_adamw_.default: _fused_adamw_,
        aten._fused_adamw_.tensor_lr: _fused_adamw_,
        aten._fused_sgd_.default: _fused_sgd_,
        aten._fused_sgd_.tensor_lr: _fused_sgd_,
        aten._fused_adagrad_.default: _fused_adagrad_,
        aten._fused_adagrad_.tensor_lr: _fused_adagrad_,
    }
)
