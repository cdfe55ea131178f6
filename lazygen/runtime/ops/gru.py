"""``aten::gru`` (dense input) as one lazy op forward and one backward.

The same lever as ``lstm.py``: ATen's composite runs a GRU per step, layer and direction as
a transposed weight, two matrix products, the fused cell (its formula traced op by op) and
a stack, forward and backward. The lazy device's ``gru`` autograd kernel records one
``GruLayers`` node and, in its backward, one ``GruLayersBackward`` node, whose lowerings
unroll the recurrence (and backpropagation through time) into the backend's graph.

Per step, as ``nn.GRU`` documents: ``r = sigmoid(x_r + h_r)``, ``z = sigmoid(x_z + h_z)``,
``n = tanh(x_n + r * h_n)``, ``h' = n + z * (h - n)``, where ``x_* = W_i* x + b_i*`` and
``h_* = W_h* h + b_h*``. The workspace holds per layer and direction the hidden states,
``[r, z]``, ``n`` and ``h_n`` of every step.

Scope as ``lstm.py``'s: dropout between layers in training, packed sequences
(``gru.data``), other inputs and inference mode keep ATen's composite; a backward with
``create_graph=True`` recomputes through the composite (as ``lstm.py``'s does).
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
_GRU = aten.gru.input

#: Workspace tensors per layer and direction, each ``steps x batch x n``, in time order.
_WORKSPACE = ("hidden", "reset_update", "new_gate", "hidden_new_gate")
_WIDTHS = (1, 2, 1, 1)  # n in units of the hidden size


def _input_sizes(node):
    """The sizes of the node's ``input`` operand (its first; the backward's third)."""
    value = node.operands[0 if type(node) is GruLayers else 2]
    return value.node.shapes[value.index].sizes


class GruLayers(Node):
    """``(output, h_n[, workspace])`` of a GRU over ``(input, h0, *params)``; attributes
    ``(num_layers, bidirectional, batch_first, has_biases, with_workspace)``."""

    __slots__ = ()
    op_kind = "lazygen::gru_layers"
    op_name = "gru_layers"
    schema = (
        "gru_layers(Tensor input, Tensor h0, Tensor[] params, int num_layers, "
        "bool bidirectional, bool batch_first, bool has_biases, bool with_workspace) "
        "-> Tensor[]"
    )

    def lower(self, ctx):
        e = Emit(ctx)
        x, h0, *params = (ctx.tensor(v) for v in self.operands)
        layout = Layout(self.attrs, _input_sizes(self))
        cells, hidden = self.shapes[1].sizes[0], self.shapes[1].sizes[-1]
        layer_input = e.transpose01(x) if layout.batch_first else x
        starts = e.split(h0, cells, 0)
        finals, workspace, outputs = [], [], []
        for _, direction, index in layout.cells():
            w_ih, w_hh, *biases = params[index * layout.per_cell : (index + 1) * layout.per_cell]
            b_ih, b_hh = biases if biases else (ctx.constant(None), None)
            projected = e.split(e.op("aten::linear", layer_input, w_ih, b_ih), layout.steps, 0)
            w_hh_t = e.t(w_hh)
            h = starts[index]
            saved = [{} for _ in _WORKSPACE]
            for step in layout.order(direction):
                if b_hh is None:
                    recurrent = e.mm(h, w_hh_t)
                else:
                    recurrent = e.keywords("aten::addmm", [b_hh, h, w_hh_t], beta=1, alpha=1)
                x_gates = projected[step]
                rz = e.op(
                    "aten::sigmoid",
                    e.add(
                        e.narrow(x_gates, 1, 0, 2 * hidden), e.narrow(recurrent, 1, 0, 2 * hidden)
                    ),
                )
                r, z = e.split(rz, 2, 1)
                h_n = e.narrow(recurrent, 1, 2 * hidden, hidden)
                n = e.keywords(
                    "aten::addcmul", [e.narrow(x_gates, 1, 2 * hidden, hidden), r, h_n], value=1
                )
                n = e.op("aten::tanh", n)
                h = e.keywords("aten::addcmul", [n, z, e.sub(h, n)], value=1)
                for seq, value in zip(saved, (h, rz, n, h_n), strict=True):
                    seq[step] = value
            finals.append(h)
            stacked = [e.stack([seq[s] for s in range(layout.steps)]) for seq in saved]
            if self.attrs[4]:
                workspace += stacked
            outputs.append(stacked[0])
            if direction == layout.directions - 1:
                layer_input = e.cat(outputs, -1)
                outputs = []
        output = e.transpose01(layer_input) if layout.batch_first else layer_input
        return [output, e.stack(finals), *workspace]


class GruLayersBackward(Node):
    """``(grad_input, grad_h0, *grad_params)`` from ``(grad_output, grad_h_n, input, h0,
    *params, *workspace)``; attributes as ``GruLayers``'s first four."""

    __slots__ = ()
    op_kind = "lazygen::gru_layers_backward"
    op_name = "gru_layers_backward"
    schema = (
        "gru_layers_backward(Tensor grad_output, Tensor grad_h_n, Tensor input, Tensor h0, "
        "Tensor[] params, Tensor[] workspace, int num_layers, bool bidirectional, "
        "bool batch_first, bool has_biases) -> Tensor[]"
    )

    def lower(self, ctx):
        e = Emit(ctx)
        values = [ctx.tensor(v) for v in self.operands]
        grad_output, grad_hn, x, h0 = values[:4]
        layout = Layout(self.attrs, _input_sizes(self))
        count = layout.num_layers * layout.directions * layout.per_cell
        params, workspace = values[4 : 4 + count], values[4 + count :]
        cells, hidden = self.shapes[1].sizes[0], self.shapes[1].sizes[-1]
        steps, batch = layout.steps, layout.batch
        grad_params = [None] * count
        grad_h0 = [None] * cells
        grads_h, starts = e.split(grad_hn, cells, 0), e.split(h0, cells, 0)
        per_cell = len(_WORKSPACE)

        def direction_backward(layer_input, grad_layer_output, index, direction):
            first = index * layout.per_cell
            w_ih, w_hh = params[first], params[first + 1]
            hs, *stacked = workspace[per_cell * index : per_cell * (index + 1)]
            rzs, ns, h_ns = (e.split(t, steps, 0) for t in stacked)
            hidden_states = e.split(hs, steps, 0)
            grad_hs = step_output_grads(e, layout, grad_layer_output, direction, hidden)
            grad_h = grads_h[index]
            order = layout.order(direction)
            grad_x_gates, grad_h_gates = [None] * steps, [None] * steps
            for position in reversed(range(steps)):
                step = order[position]
                h_prev = starts[index] if position == 0 else hidden_states[order[position - 1]]
                grad_h = e.add(grad_h, grad_hs[step])
                grad_x_gates[step], grad_h_gates[step], through_z = _cell_backward(
                    e, grad_h, rzs[step], ns[step], h_ns[step], h_prev
                )
                grad_h = e.add(through_z, e.mm(grad_h_gates[step], w_hh))
            grad_h0[index] = grad_h
            grad_x_all, grad_h_all = e.stack(grad_x_gates), e.stack(grad_h_gates)
            flat_x = e.reshape(grad_x_all, (steps * batch, 3 * hidden))
            flat_h = e.reshape(grad_h_all, (steps * batch, 3 * hidden))
            inputs = e.reshape(layer_input, (steps * batch, -1))
            grad_params[first] = e.mm(e.t(flat_x), inputs)
            previous = previous_hidden(e, hs, starts[index], direction, steps)
            grad_params[first + 1] = e.mm(e.t(flat_h), e.reshape(previous, (steps * batch, hidden)))
            if layout.has_biases:
                for offset, flat in ((2, flat_x), (3, flat_h)):
                    grad_params[first + offset] = bias_grad(e, flat)
            return e.op("aten::matmul", grad_x_all, w_ih)

        grad_input = backward_through_layers(
            e, layout, x, grad_output, workspace, per_cell, direction_backward
        )
        return [grad_input, e.stack(grad_h0), *grad_params]


def _cell_backward(e, grad_h, rz, n, h_n, h_prev):
    """``(d input gates, d hidden gates, d h_prev through z)`` of one step from ``d h'``."""
    r, z = e.split(rz, 2, 1)
    grad_n = e.op("aten::tanh_backward", e.sub(grad_h, e.mul(grad_h, z)), n)
    grad_z = e.mul(grad_h, e.sub(h_prev, n))
    grad_r = e.mul(grad_n, h_n)
    grad_rz = e.op("aten::sigmoid_backward", e.cat([grad_r, grad_z], 1), rz)
    grad_x_gates = e.cat([grad_rz, grad_n], 1)
    grad_h_gates = e.cat([grad_rz, e.mul(grad_n, r)], 1)
    return grad_x_gates, grad_h_gates, e.mul(grad_h, z)


# Tracing ----------------------------------------------------------------------------------


def _supported(input, hx, params, has_biases, num_layers, dropout, train, bidirectional):
    """Whether the node computes this call as ATen would (see the module docstring)."""
    if dropout > 0 and train and num_layers > 1:
        return False
    if not (is_lazy(input) and input.dim() == 3 and input.dtype in FLOATS and is_lazy(hx)):
        return False
    if input.shape[0] == 0 or input.shape[1] == 0 or torch.is_inference_mode_enabled():
        return False
    directions = 2 if bidirectional else 1
    if len(params) != num_layers * directions * (4 if has_biases else 2) or hx.dim() != 3:
        return False
    if params[1].shape[-1] != hx.shape[-1]:
        return False
    device = input.device
    return all(t.dtype == input.dtype and t.device == device for t in (hx, *params)) and all(
        is_lazy(t) for t in params
    )


_CELLS = (aten._thnn_fused_gru_cell.default, aten._thnn_fused_gru_cell_backward.default)
GRU_LAYERS = RecurrentLayers("gru", _GRU, GruLayers, GruLayersBackward, 1, _WIDTHS, _CELLS)


def gru(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first):
    """The lazy device's ``gru.input`` (an autograd kernel, on the user's tensors): the
    node pair where it applies and the backend does not decline it (``declined``), else
    ATen's composite (which also raises ATen's errors)."""
    arguments = (has_biases, num_layers, dropout, train, bidirectional)
    if not _supported(input, hx, params, *arguments) or declined(
        GRU_LAYERS, input, (input, hx, params, *arguments, batch_first)
    ):
        return _GRU._op_dk(COMPOSITE, input, hx, params, *arguments, batch_first)
    return trace_layers(GRU_LAYERS, input, (hx,), params, arguments, batch_first)


#: At the lazy device's autograd key, on the user's tensors.
GRU_AUTOGRAD_KERNELS = MappingProxyType({_GRU: gru})
