"""``torch.amp.GradScaler``'s two ops as lazy ops, so a mixed-precision step stays one graph.

``GradScaler.unscale_`` calls ``_amp_foreach_non_finite_check_and_unscale_`` and
``GradScaler.update`` calls ``_amp_update_scale_``. Without lazy kernels both ran through
the eager fallback, and each read the gradients' pending IR: every AMP step was cut into
three graphs, with every gradient synced to the host in between. Functionalization turns
them into their functional variants, whose kernels here build the same results from ops
every kernel set has, with the semantics of ATen's CPU and CUDA kernels
(``aten/src/ATen/native/cpu/AmpGradScalerKernels.cpp``, ``cuda/AmpKernels.cu``):

* unscale: each gradient times ``inv_scale`` (in the gradient's dtype, computed in its
  op-math type, as the kernels' ``val * inv_scale`` is); ``found_inf`` becomes 1.0 if any
  element of any gradient is infinite or NaN, and keeps its value otherwise;
* update: with ``found_inf`` nonzero, ``scale * backoff`` and the growth tracker reset;
  otherwise the tracker counts one more successful step, and on reaching
  ``growth_interval`` the scale becomes ``scale * growth`` (a double product stored as
  float, kept only if finite) and the tracker restarts at 0.

No value is read on the host: the optimizer step that ``GradScaler.step`` skips on an
infinite gradient is decided by ``found_inf.item()`` in ``GradScaler`` itself, which syncs
the graph once, as on CUDA.
"""

from __future__ import annotations

from types import MappingProxyType

import torch

from ..dispatch import call

aten = torch.ops.aten


def non_finite_check_and_unscale(grads: list, found_inf, inv_scale) -> tuple[list, object]:
    """``_amp_foreach_non_finite_check_and_unscale``: the unscaled gradients and the new
    ``found_inf``."""
    unscaled = [call(aten.mul.Tensor, grad, inv_scale) for grad in grads]
    finite = None
    for grad in grads:
        all_finite = call(aten.all.default, call(aten.isfinite.default, grad))
        finite = (
            all_finite if finite is None else call(aten.logical_and.default, finite, all_finite)
        )
    if finite is None:  # no gradients
        return unscaled, found_inf
    return unscaled, call(aten.where.ScalarOther, finite, found_inf, 1.0)


def update_scale(
    scale, growth_tracker, found_inf, growth_factor: float, backoff_factor: float, interval: int
) -> tuple[object, object]:
    """``_amp_update_scale``: the new scale and growth tracker."""
    found = call(aten.ne.Scalar, found_inf, 0)
    in_double = call(aten._to_copy.default, scale, dtype=torch.float64)
    grown = call(
        aten._to_copy.default, call(aten.mul.Scalar, in_double, growth_factor), dtype=scale.dtype
    )
    backed_off = call(
        aten._to_copy.default, call(aten.mul.Scalar, in_double, backoff_factor), dtype=scale.dtype
    )
    successful = call(aten.add.Scalar, growth_tracker, 1)
    at_interval = call(aten.eq.Scalar, successful, interval)
    grows = call(aten.logical_and.default, at_interval, call(aten.isfinite.default, grown))
    kept_or_grown = call(aten.where.self, grows, grown, scale)
    new_scale = call(aten.where.self, found, backed_off, kept_or_grown)
    restart = call(aten.logical_or.default, found, at_interval)
    new_tracker = call(aten.where.ScalarSelf, restart, 0, successful)
    return new_scale, new_tracker


#: Below functionalization, on the inner lazy tensors.
GRAD_SCALING_KERNELS = MappingProxyType(
    {
        aten._amp_foreach_non_finite_check_and_unscale.default: non_finite_check_and_unscale,
        aten._amp_update_scale.default: update_scale,
    }
)
