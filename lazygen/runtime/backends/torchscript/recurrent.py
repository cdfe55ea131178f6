"""The fused recurrent cells as lazy ops (``supported`` kernels, re-exported by ``kernels``).

ATen's ``lstm``/``gru`` drivers (and ``lstm_cell``/``gru_cell``) send every input that is not
on the CPU, PrivateUse1 included, to the fused cells ``_thnn_fused_lstm_cell`` and
``_thnn_fused_gru_cell`` and their backward ops, which only CUDA implements. These kernels
compute what CUDA's kernels compute (``aten/src/ATen/native/cuda/RNN.cu``) from lazy
elementwise ops, so the drivers keep doing everything else as on CUDA: layers, directions,
projections, dropout between layers, packed sequences, and autograd through the cells'
formulas in ``derivatives.yaml`` (which call the backward ops below, or the differentiable
composite backward when a graph of the gradient is wanted).

Workspaces hold what the backward needs, in CUDA's layout: the LSTM's four activated gates
``[i, f, g, o]`` (``batch x 4H``); the GRU's ``[r, z, n, hx, hn + b_hn]`` (``batch x 5H``).
An undefined incoming gradient (an output nobody used) counts as zeros, as in CUDA.
"""

from __future__ import annotations

import torch

from ... import kernel_support as rt
from ...dispatch import call

aten = torch.ops.aten


def _add(a, b):
    return b if a is None else a if b is None else call(aten.add.Tensor, a, b)


def _mul(a, b):
    return call(aten.mul.Tensor, a, b)


def _chunks(t, n):
    """``n`` equal parts of the last dimension (gates are ``batch x nH``, biases ``nH``)."""
    return call(aten.split_copy.Tensor, t, t.shape[-1] // n, -1)


def _cat(tensors):
    return call(aten.cat.default, list(tensors), 1)


def _bias_sum(grad, has_bias):
    return call(aten.sum.dim_IntList, grad, [0]) if has_bias else None


def _thnn_fused_lstm_cell(input_gates, hidden_gates, cx, input_bias=None, hidden_bias=None):
    """``(hy, cy, workspace)``; the gates sum as CUDA's does: input, hidden, then biases."""
    rt.count("lazy::_thnn_fused_lstm_cell")
    gates = _add(_add(_add(input_gates, hidden_gates), input_bias), hidden_bias)
    i, f, g, o = _chunks(gates, 4)
    i, f, o = (call(aten.sigmoid.default, t) for t in (i, f, o))
    g = call(aten.tanh.default, g)
    cy = _add(_mul(f, cx), _mul(i, g))
    hy = _mul(o, call(aten.tanh.default, cy))
    return hy, cy, _cat((i, f, g, o))


def _thnn_fused_lstm_cell_backward_impl(grad_hy, grad_cy, cx, cy, workspace, has_bias):
    """``(grad_gates, grad_cx, grad_bias)``: d/d(pre-activation gates), d/d(cx), and the
    gates' gradient summed over the batch (the bias gradient; both biases get it)."""
    if grad_hy is None and grad_cy is None:
        return None, None, None
    rt.count("lazy::_thnn_fused_lstm_cell_backward_impl")
    i, f, g, o = _chunks(workspace, 4)
    tanh_cy = call(aten.tanh.default, cy)
    grad_c = grad_cy
    if grad_hy is not None:
        grad_c = _add(call(aten.tanh_backward.default, _mul(grad_hy, o), tanh_cy), grad_c)
        grad_o = call(aten.sigmoid_backward.default, _mul(grad_hy, tanh_cy), o)
    else:
        grad_o = call(aten.zeros_like.default, o)
    grad_i = call(aten.sigmoid_backward.default, _mul(grad_c, g), i)
    grad_f = call(aten.sigmoid_backward.default, _mul(grad_c, cx), f)
    grad_g = call(aten.tanh_backward.default, _mul(grad_c, i), g)
    grad_gates = _cat((grad_i, grad_f, grad_g, grad_o))
    return grad_gates, _mul(grad_c, f), _bias_sum(grad_gates, has_bias)


def _thnn_fused_gru_cell(input_gates, hidden_gates, hx, input_bias=None, hidden_bias=None):
    """``(hy, workspace)`` with ``r = sigmoid(ir + hr)``, ``z = sigmoid(iz + hz)``,
    ``n = tanh(in + r * hn)``, ``hy = n + z * (hx - n)`` (biases added per gate)."""
    rt.count("lazy::_thnn_fused_gru_cell")
    ir, iz, in_ = _chunks(input_gates, 3)
    hr, hz, hn = _chunks(hidden_gates, 3)
    b1 = _chunks(input_bias, 3) if input_bias is not None else (None,) * 3
    b2 = _chunks(hidden_bias, 3) if hidden_bias is not None else (None,) * 3
    r = call(aten.sigmoid.default, _add(_add(_add(ir, hr), b1[0]), b2[0]))
    z = call(aten.sigmoid.default, _add(_add(_add(iz, hz), b1[1]), b2[1]))
    hn = _add(hn, b2[2])
    n = call(aten.tanh.default, _add(_add(in_, b1[2]), _mul(r, hn)))
    hy = _add(n, _mul(z, call(aten.sub.Tensor, hx, n)))
    return hy, _cat((r, z, n, hx, hn))


def _thnn_fused_gru_cell_backward(grad_hy, workspace, has_bias):
    """``(grad_input_gates, grad_hidden_gates, grad_hx, grad_input_bias, grad_hidden_bias)``;
    the two gates' gradients differ only in the new gate's third (``r`` scales ``hn``)."""
    if grad_hy is None:
        return None, None, None, None, None
    rt.count("lazy::_thnn_fused_gru_cell_backward")
    r, z, n, hx, hn = _chunks(workspace, 5)
    grad_z = call(aten.sigmoid_backward.default, _mul(grad_hy, call(aten.sub.Tensor, hx, n)), z)
    grad_hx = _mul(grad_hy, z)
    grad_n = call(aten.tanh_backward.default, _mul(grad_hy, call(aten.rsub.Scalar, z, 1)), n)
    grad_hn = _mul(grad_n, r)
    grad_r = call(aten.sigmoid_backward.default, _mul(grad_n, hn), r)
    grad_input_gates = _cat((grad_r, grad_z, grad_n))
    grad_hidden_gates = _cat((grad_r, grad_z, grad_hn))
    return (
        grad_input_gates,
        grad_hidden_gates,
        grad_hx,
        _bias_sum(grad_input_gates, has_bias),
        _bias_sum(grad_hidden_gates, has_bias),
    )
