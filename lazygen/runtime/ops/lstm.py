"""``aten::lstm`` (dense input) as one lazy op forward and one backward.

ATen's ``lstm`` is a composite: on the lazy device it runs per time step, layer and
direction a transposed weight, two matrix products, the fused cell, and a stack of the
results, forward and backward: hundreds of ops per training step of a small LSTM (a third
of them ``t_copy`` of the recurrent weights; docs/benchmarks.md, "Measurements behind the
code"), each a Python call and a new lazy tensor, while the work per op is tiny: tracing
dominated the step.

The lazy device therefore registers its own ``lstm`` at its autograd key: an autograd
``Function`` (``recurrent_tracing``, shared with ``gru.py``) whose forward records one
``LstmLayers`` node and whose backward records one ``LstmLayersBackward`` node. Their
lowerings unroll the whole recurrence (every layer, direction and step; backpropagation
through time for the backward) into the backend's graph, so tracing costs a handful of
Python calls per LSTM call while the compiled graph does the work. The unrolled length
becomes part of the graph's structure (one compile per sequence length, as the graph cache
keys by structure).

The forward node also returns, per layer and direction, what the backward needs: the
hidden states, the pre-activation gates and the cell states of every step (when a gradient
may be wanted; inference records the node without them).

Scope: what ``nn.LSTM`` passes for a dense input without projections, of one floating
dtype, all on one lazy device; dropout between layers in training mode, ``proj_size``,
packed sequences (``lstm.data``), other inputs and inference mode keep ATen's composite
(the per-cell path), so eager's random numbers and errors stay eager's. A backward with
``create_graph=True`` (a gradient of the gradient) recomputes through ATen's composite
instead of recording the backward node, whose gradients autograd cannot differentiate.
"""

from __future__ import annotations

from types import MappingProxyType

import torch

from ..ir import Node
from ..tracing.tensor import is_lazy
from .recurrent_lowering import (
    Emit,
    Layout,
    backward_through_layers,
    bias_grad,
    previous_hidden,
    step_output_grads,
)
from .recurrent_tracing import COMPOSITE, FLOATS, RecurrentLayers, declined, trace_layers

aten = torch.ops.aten
_LSTM = aten.lstm.input


#: Workspace tensors per layer and direction, each ``steps x batch x n``, in time order.
_WORKSPACE = ("hidden", "sigmoid_gates", "cell_gate", "cell", "tanh_cell")
_WIDTHS = (1, 4, 1, 1, 1)  # n in units of the hidden size


def _input_sizes(node):
    """The sizes of the node's ``input`` operand (its first; the backward's fourth)."""
    value = node.operands[0 if type(node) is LstmLayers else 3]
    return value.node.shapes[value.index].sizes


class LstmLayers(Node):
    """``(output, h_n, c_n[, workspace])`` of an LSTM over ``(input, h0, c0, *params)``;
    attributes ``(num_layers, bidirectional, batch_first, has_biases, with_workspace)``.
    The workspace holds per layer and direction what the backward reads (``_WORKSPACE``):
    hidden states, ``sigmoid`` of all four gates ``[i, f, g, o]`` (one op for three of
    them; the ``g`` slot is unused), ``tanh`` of the cell gate, cell states, ``tanh`` of
    the cell states."""

    __slots__ = ()
    op_kind = "lazygen::lstm_layers"
    op_name = "lstm_layers"
    schema = (
        "lstm_layers(Tensor input, Tensor h0, Tensor c0, Tensor[] params, int num_layers, "
        "bool bidirectional, bool batch_first, bool has_biases, bool with_workspace) "
        "-> Tensor[]"
    )

    def lower(self, ctx):
        e = Emit(ctx)
        x, h0, c0, *params = (ctx.tensor(v) for v in self.operands)
        layout = Layout(self.attrs, _input_sizes(self))
        hidden = self.shapes[1].sizes[-1]
        layer_input = e.transpose01(x) if layout.batch_first else x
        starts_h = e.split(h0, self.shapes[1].sizes[0], 0)
        starts_c = e.split(c0, self.shapes[1].sizes[0], 0)
        finals_h, finals_c, workspace, outputs = [], [], [], []
        for _, direction, index in layout.cells():
            w_ih, w_hh, *biases = params[index * layout.per_cell : (index + 1) * layout.per_cell]
            if biases:  # both biases once per sequence, not per step (eager adds per step)
                projected = e.op("aten::linear", layer_input, w_ih, e.add(biases[0], biases[1]))
            else:
                projected = e.op("aten::linear", layer_input, w_ih, ctx.constant(None))
            projected = e.split(projected, layout.steps, 0)
            w_hh_t = e.t(w_hh)
            h, c = starts_h[index], starts_c[index]
            saved = [{} for _ in _WORKSPACE]
            for step in layout.order(direction):
                gates = e.keywords("aten::addmm", [projected[step], h, w_hh_t], beta=1, alpha=1)
                sig = e.op("aten::sigmoid", gates)
                i, f, _, o = e.split(sig, 4, 1)
                g = e.op("aten::tanh", e.narrow(gates, 1, 2 * hidden, hidden))
                c = e.keywords("aten::addcmul", [e.mul(f, c), i, g], value=1)
                tanh_c = e.op("aten::tanh", c)
                h = e.mul(o, tanh_c)
                for seq, value in zip(saved, (h, sig, g, c, tanh_c), strict=True):
                    seq[step] = value
            finals_h.append(h)
            finals_c.append(c)
            steps = range(layout.steps)
            stacked = [e.stack([seq[s] for s in steps]) for seq in saved]
            if self.attrs[4]:
                workspace += stacked
            outputs.append(stacked[0])
            if direction == layout.directions - 1:
                layer_input = e.cat(outputs, -1)
                outputs = []
        output = e.transpose01(layer_input) if layout.batch_first else layer_input
        return [output, e.stack(finals_h), e.stack(finals_c), *workspace]


class LstmLayersBackward(Node):
    """``(grad_input, grad_h0, grad_c0, *grad_params)`` from ``(grad_output, grad_h_n,
    grad_c_n, input, h0, c0, *params, *workspace)`` (the forward node's workspace);
    attributes as ``LstmLayers``'s first four. Backpropagation through time, unrolled: per
    layer from the top, per direction, per step from the last one processed."""

    __slots__ = ()
    op_kind = "lazygen::lstm_layers_backward"
    op_name = "lstm_layers_backward"
    schema = (
        "lstm_layers_backward(Tensor grad_output, Tensor grad_h_n, Tensor grad_c_n, "
        "Tensor input, Tensor h0, Tensor c0, Tensor[] params, Tensor[] workspace, "
        "int num_layers, bool bidirectional, bool batch_first, bool has_biases) -> Tensor[]"
    )

    def lower(self, ctx):
        e = Emit(ctx)
        values = [ctx.tensor(v) for v in self.operands]
        grad_output, grad_hn, grad_cn, x, h0, c0 = values[:6]
        layout = Layout(self.attrs, _input_sizes(self))
        count = layout.num_layers * layout.directions * layout.per_cell
        params, workspace = values[6 : 6 + count], values[6 + count :]
        hidden, cells = self.shapes[1].sizes[-1], self.shapes[1].sizes[0]
        steps, batch = layout.steps, layout.batch
        grad_params = [None] * count
        grad_h0, grad_c0 = [None] * cells, [None] * cells
        grads_h, grads_c = e.split(grad_hn, cells, 0), e.split(grad_cn, cells, 0)
        starts_h, starts_c = e.split(h0, cells, 0), e.split(c0, cells, 0)
        per_cell = len(_WORKSPACE)

        def direction_backward(layer_input, grad_layer_output, index, direction):
            first = index * layout.per_cell
            w_ih, w_hh = params[first], params[first + 1]
            hs, *stacked = workspace[per_cell * index : per_cell * (index + 1)]
            sigs, gs, cs, tanh_cs = (e.split(t, steps, 0) for t in stacked)
            grad_hs = step_output_grads(e, layout, grad_layer_output, direction, hidden)
            grad_h, grad_c = grads_h[index], grads_c[index]
            order = layout.order(direction)
            grad_gates = [None] * steps
            for position in reversed(range(steps)):
                step = order[position]
                c_prev = starts_c[index] if position == 0 else cs[order[position - 1]]
                grad_h = e.add(grad_h, grad_hs[step])
                grad_gates[step], grad_c = _cell_backward(
                    e, grad_h, grad_c, sigs[step], gs[step], tanh_cs[step], c_prev
                )
                grad_h = e.mm(grad_gates[step], w_hh)
            grad_h0[index], grad_c0[index] = grad_h, grad_c
            grad_all = e.stack(grad_gates)
            flat = e.reshape(grad_all, (steps * batch, 4 * hidden))
            flat_t = e.t(flat)
            inputs = e.reshape(layer_input, (steps * batch, -1))
            grad_params[first] = e.mm(flat_t, inputs)
            previous = previous_hidden(e, hs, starts_h[index], direction, steps)
            grad_params[first + 1] = e.mm(flat_t, e.reshape(previous, (steps * batch, hidden)))
            if layout.has_biases:
                grad_params[first + 2] = grad_params[first + 3] = bias_grad(e, flat)
            return e.op("aten::matmul", grad_all, w_ih)

        grad_input = backward_through_layers(
            e, layout, x, grad_output, workspace, per_cell, direction_backward
        )
        return [grad_input, e.stack(grad_h0), e.stack(grad_c0), *grad_params]


def _cell_backward(e, grad_h, grad_c, sig, g, tanh_c, c_prev):
    """``(d gates, d c_prev)`` of one step from its incoming ``d h``, ``d c``."""
    i, f, _, o = e.split(sig, 4, 1)
    grad_o = e.op("aten::sigmoid_backward", e.mul(grad_h, tanh_c), o)
    grad_c = e.add(grad_c, e.op("aten::tanh_backward", e.mul(grad_h, o), tanh_c))
    grad_i = e.op("aten::sigmoid_backward", e.mul(grad_c, g), i)
    grad_f = e.op("aten::sigmoid_backward", e.mul(grad_c, c_prev), f)
    grad_g = e.op("aten::tanh_backward", e.mul(grad_c, i), g)
    return e.cat([grad_i, grad_f, grad_g, grad_o], 1), e.mul(grad_c, f)


# Tracing ----------------------------------------------------------------------------------


def _supported(input, hx, params, has_biases, num_layers, dropout, train, bidirectional):
    """Whether the node computes this call as ATen would (see the module docstring)."""
    if dropout > 0 and train and num_layers > 1:
        return False
    if not (is_lazy(input) and input.dim() == 3 and input.dtype in FLOATS and len(hx) == 2):
        return False
    if input.shape[0] == 0 or input.shape[1] == 0 or torch.is_inference_mode_enabled():
        return False
    directions = 2 if bidirectional else 1
    if len(params) != num_layers * directions * (4 if has_biases else 2):
        return False
    h0, c0 = hx
    if h0.dim() != 3 or h0.shape != c0.shape or params[1].shape[-1] != h0.shape[-1]:
        return False
    device = input.device
    return all(is_lazy(t) and t.dtype == input.dtype and t.device == device for t in (*hx, *params))


_CELLS = (aten._thnn_fused_lstm_cell.default, aten._thnn_fused_lstm_cell_backward_impl.default)
LSTM_LAYERS = RecurrentLayers("lstm", _LSTM, LstmLayers, LstmLayersBackward, 2, _WIDTHS, _CELLS)


def lstm(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first):
    """The lazy device's ``lstm.input`` (an autograd kernel, on the user's tensors): the
    node pair where it applies and the backend does not decline it (``declined``), else
    ATen's composite (which also raises ATen's errors)."""
    arguments = (has_biases, num_layers, dropout, train, bidirectional)
    if not _supported(input, hx, params, *arguments) or declined(
        LSTM_LAYERS, input, (input, hx, params, *arguments, batch_first)
    ):
        return _LSTM._op_dk(COMPOSITE, input, hx, params, *arguments, batch_first)
    return trace_layers(LSTM_LAYERS, input, tuple(hx), params, arguments, batch_first)


#: At the lazy device's autograd key, on the user's tensors.
LSTM_AUTOGRAD_KERNELS = MappingProxyType({_LSTM: lstm})
