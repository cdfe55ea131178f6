"""The fused recurrent cells as lazy ops (``supported`` kernels, re-exported by ``kernels``).

ATen's ``lstm``/``gru`` drivers (and ``lstm_cell``/``gru_cell``) send every input that is not
on the CPU, PrivateUse1 included, to the fused cells ``_thnn_fused_lstm_cell`` and
``_thnn_fused_gru_cell`` and their backward ops, which only CUDA implements. These kernels
compute what CUDA's kernels compute (``aten/src/ATen/native/cuda/RNN.cu``) from
elementwise ops, so the drivers keep doing everything else as on CUDA: layers, directions,
projections, dropout between layers, packed sequences, and autograd through the cells'
formulas in ``derivatives.yaml`` (which call the backward ops below, or the differentiable
composite backward when a graph of the gradient is wanted).

Workspaces hold what the backward needs, in CUDA's layout: the LSTM's four activated gates
``[i, f, g, o]`` (``batch x 4H``); the GRU's ``[r, z, n, hx, hn + b_hn]`` (``batch x 5H``).
An undefined incoming gradient (an output nobody used) counts as zeros, as in CUDA.

The LSTM cell and its backward each record one node (``LstmCell``, ``LstmCellBackward``)
whose lowering emits the elementwise ops into the backend's graph, instead of tracing each
of them (docs/benchmarks.md, "Measurements behind the code"). The GRU cell still
traces its formula op by op. ``nn.LSTM`` over a dense sequence (without projections or
dropout between layers in training) no longer reaches these cells: the runtime's ``lstm``
autograd kernel records the whole layer stack as one node each way (``runtime/ops/lstm.py``).

A backend that refuses a cell op (``Backend.refused_ops``) declines its node: the cell is
traced op by op instead (``refusals.declines``; the GRU cell always is), each op refused or
not on its own. Eager has no CPU kernel for these ops, so they are never run eagerly.
"""

from __future__ import annotations

import torch

from .. import kernel_support as rt
from ..dispatch import call, refusals
from ..ir import Node, Shape

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


class LstmCell(Node):
    """One LSTM cell step, elementwise: ``(hy, cy, i, f, g, o)`` (the activated gates
    separate: the kernel concatenates them into the workspace) from ``(input_gates,
    hidden_gates, cx, input_bias?, hidden_bias?)``. One node instead of ~15 traced ops."""

    __slots__ = ()
    op_kind = "lazygen::lstm_cell"
    op_name = "lstm_cell"
    schema = (
        "lstm_cell(Tensor input_gates, Tensor hidden_gates, Tensor cx, Tensor? input_bias, "
        "Tensor? hidden_bias) -> (Tensor hy, Tensor cy, Tensor i, Tensor f, Tensor g, "
        "Tensor o)"
    )

    def lower(self, ctx):
        input_gates, hidden_gates, cx, input_bias, hidden_bias = self.operands
        gates = _g_add(ctx, ctx.tensor(input_gates), ctx.tensor(hidden_gates))
        for bias in (input_bias, hidden_bias):
            if bias is not None:
                gates = _g_add(ctx, gates, ctx.tensor(bias))
        i, f, g, o = _g_chunks(ctx, gates, self.shapes[2].sizes[-1])
        i, f, o = (_g(ctx, "aten::sigmoid", t) for t in (i, f, o))
        g = _g(ctx, "aten::tanh", g)
        cy = _g_add(ctx, _g_mul(ctx, f, ctx.tensor(cx)), _g_mul(ctx, i, g))
        hy = _g_mul(ctx, o, _g(ctx, "aten::tanh", cy))
        return [hy, cy, i, f, g, o]


class LstmCellBackward(Node):
    """The gradients of one LSTM cell step with respect to its four pre-activation gates
    and ``cx``: ``(grad_i, grad_f, grad_g, grad_o, grad_cx)`` from ``(grad_hy?, grad_cy?,
    cx, cy, workspace)``."""

    __slots__ = ()
    op_kind = "lazygen::lstm_cell_backward"
    op_name = "lstm_cell_backward"
    schema = (
        "lstm_cell_backward(Tensor? grad_hy, Tensor? grad_cy, Tensor cx, Tensor cy, "
        "Tensor workspace) -> (Tensor grad_i, Tensor grad_f, Tensor grad_g, Tensor grad_o, "
        "Tensor grad_cx)"
    )

    def lower(self, ctx):
        grad_hy, grad_cy, cx, cy, workspace = self.operands
        i, f, g, o = _g_chunks(ctx, ctx.tensor(workspace), self.shapes[0].sizes[-1])
        tanh_cy = _g(ctx, "aten::tanh", ctx.tensor(cy))
        grad_c = None if grad_cy is None else ctx.tensor(grad_cy)
        if grad_hy is not None:
            grad_hy = ctx.tensor(grad_hy)
            through_h = _g(ctx, "aten::tanh_backward", _g_mul(ctx, grad_hy, o), tanh_cy)
            grad_c = through_h if grad_c is None else _g_add(ctx, through_h, grad_c)
            grad_o = _g(ctx, "aten::sigmoid_backward", _g_mul(ctx, grad_hy, tanh_cy), o)
        else:
            none = ctx.constant(None)
            grad_o = ctx.call("aten::zeros_like", [o], dict.fromkeys(_LIKE_OPTIONS, none), 1)[0]
        grad_i = _g(ctx, "aten::sigmoid_backward", _g_mul(ctx, grad_c, g), i)
        grad_f = _g(ctx, "aten::sigmoid_backward", _g_mul(ctx, grad_c, ctx.tensor(cx)), f)
        grad_g = _g(ctx, "aten::tanh_backward", _g_mul(ctx, grad_c, i), g)
        return [grad_i, grad_f, grad_g, grad_o, _g_mul(ctx, grad_c, f)]


_LIKE_OPTIONS = ("dtype", "layout", "device", "pin_memory", "memory_format")


def _g(ctx, op, *args):
    """One op of a node's lowering, on backend values."""
    return ctx.call(op, list(args), {}, 1)[0]


def _g_add(ctx, a, b):
    return ctx.call("aten::add.Tensor", [a, b], {"alpha": ctx.constant(1)}, 1)[0]


def _g_mul(ctx, a, b):
    return _g(ctx, "aten::mul.Tensor", a, b)


def _g_chunks(ctx, t, size):
    """The four ``size``-wide parts of ``t``'s last dimension."""
    last = ctx.constant(-1)
    return [
        _g(ctx, "aten::narrow", t, last, ctx.constant(k * size), ctx.constant(size))
        for k in range(4)
    ]


def _declined(op, device, args) -> bool:
    """Whether ``device``'s backend refuses (declines) this call of cell op ``op``."""
    return refusals.declines(device.backend, op, args)


def _traced_lstm_cell(input_gates, hidden_gates, cx, input_bias, hidden_bias):
    """``LstmCell`` (and the kernel's workspace) traced op by op, for a backend that
    declines the node."""
    gates = _add(_add(_add(input_gates, hidden_gates), input_bias), hidden_bias)
    i, f, g, o = _chunks(gates, 4)
    i, f, o = (call(aten.sigmoid.default, t) for t in (i, f, o))
    g = call(aten.tanh.default, g)
    cy = _add(_mul(f, cx), _mul(i, g))
    return _mul(o, call(aten.tanh.default, cy)), cy, _cat((i, f, g, o))


def _traced_lstm_cell_backward(grad_hy, grad_cy, cx, cy, workspace):
    """``LstmCellBackward``'s gradients traced op by op: ``(grad_gates, grad_cx)``."""
    i, f, g, o = _chunks(workspace, 4)
    tanh_cy = call(aten.tanh.default, cy)
    grad_c = grad_cy
    if grad_hy is not None:
        through_h = call(aten.tanh_backward.default, _mul(grad_hy, o), tanh_cy)
        grad_c = _add(through_h, grad_c)
        grad_o = call(aten.sigmoid_backward.default, _mul(grad_hy, tanh_cy), o)
    else:
        grad_o = call(aten.zeros_like.default, o)
    grad_i = call(aten.sigmoid_backward.default, _mul(grad_c, g), i)
    grad_f = call(aten.sigmoid_backward.default, _mul(grad_c, cx), f)
    grad_g = call(aten.tanh_backward.default, _mul(grad_c, i), g)
    return _cat((grad_i, grad_f, grad_g, grad_o)), _mul(grad_c, f)


def _gate_shape(gates, *others) -> Shape:
    dtype = gates.dtype
    for t in others:
        if t is not None:
            dtype = torch.promote_types(dtype, t.dtype)
    return Shape(dtype, (*gates.shape[:-1], gates.shape[-1] // 4))


@refusals.declining
def _thnn_fused_lstm_cell(input_gates, hidden_gates, cx, input_bias=None, hidden_bias=None):
    """``(hy, cy, workspace)``; the gates sum as CUDA's does: input, hidden, then biases."""
    device = rt.device_of(input_gates)
    args = (input_gates, hidden_gates, cx, input_bias, hidden_bias)
    if _declined(aten._thnn_fused_lstm_cell.default, device, args):
        return _traced_lstm_cell(*args)
    rt.count("lazy::_thnn_fused_lstm_cell")
    operands = tuple(
        rt.optional_tensor(t, device)
        for t in (input_gates, hidden_gates, cx, input_bias, hidden_bias)
    )
    gate = _gate_shape(input_gates, hidden_gates, input_bias, hidden_bias)
    state = Shape(torch.promote_types(gate.dtype, cx.dtype), gate.sizes)
    shapes = (Shape(state.dtype, state.sizes), state) + (gate,) * 4
    node = rt.make_node(LstmCell, operands, (), shapes)
    hy, cy, i, f, g, o = rt.wrap_tuple(node, device)
    return hy, cy, _cat((i, f, g, o))


@refusals.declining
def _thnn_fused_lstm_cell_backward_impl(grad_hy, grad_cy, cx, cy, workspace, has_bias):
    """``(grad_gates, grad_cx, grad_bias)``: d/d(pre-activation gates), d/d(cx), and the
    gates' gradient summed over the batch (the bias gradient; both biases get it)."""
    if grad_hy is None and grad_cy is None:
        return None, None, None
    device = rt.device_of(grad_hy, grad_cy, cx)
    args = (grad_hy, grad_cy, cx, cy, workspace, has_bias)
    if _declined(aten._thnn_fused_lstm_cell_backward_impl.default, device, args):
        grad_gates, grad_cx = _traced_lstm_cell_backward(*args[:5])
        return grad_gates, grad_cx, _bias_sum(grad_gates, has_bias)
    rt.count("lazy::_thnn_fused_lstm_cell_backward_impl")
    operands = tuple(rt.optional_tensor(t, device) for t in (grad_hy, grad_cy, cx, cy, workspace))
    shapes = (_gate_shape(workspace),) * 5
    node = rt.make_node(LstmCellBackward, operands, (), shapes)
    grad_i, grad_f, grad_g, grad_o, grad_cx = rt.wrap_tuple(node, device)
    grad_gates = _cat((grad_i, grad_f, grad_g, grad_o))
    return grad_gates, grad_cx, _bias_sum(grad_gates, has_bias)


@refusals.declining  # traced op by op already: a refusal is noted, nothing else changes
def _thnn_fused_gru_cell(input_gates, hidden_gates, hx, input_bias=None, hidden_bias=None):
    """``(hy, workspace)`` with ``r = sigmoid(ir + hr)``, ``z = sigmoid(iz + hz)``,
    ``n = tanh(in + r * hn)``, ``hy = n + z * (hx - n)`` (biases added per gate)."""
    args = (input_gates, hidden_gates, hx, input_bias, hidden_bias)
    if not _declined(aten._thnn_fused_gru_cell.default, rt.device_of(input_gates), args):
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


@refusals.declining
def _thnn_fused_gru_cell_backward(grad_hy, workspace, has_bias):
    """``(grad_input_gates, grad_hidden_gates, grad_hx, grad_input_bias, grad_hidden_bias)``;
    the two gates' gradients differ only in the new gate's third (``r`` scales ``hn``)."""
    if grad_hy is None:
        return None, None, None, None, None
    args = (grad_hy, workspace, has_bias)
    if not _declined(aten._thnn_fused_gru_cell_backward.default, rt.device_of(grad_hy), args):
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
