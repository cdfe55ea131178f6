"""What the whole-layer recurrent nodes (``lstm``, ``gru``) share: emitting backend ops
from a lowering, and the layout of ATen's recurrent arguments.

ATen passes a recurrent layer stack as a flat parameter list, per layer and direction
``w_ih, w_hh[, b_ih, b_hh]``, and initial states of ``layers * directions x batch x H``;
the nodes unroll every step into the backend's graph through the ``LoweringContext``
contract, so every backend runs them.
"""

from __future__ import annotations


class Emit:
    """Backend ops of one lowering, on backend values (the ``LoweringContext`` contract)."""

    def __init__(self, ctx) -> None:
        self.ctx = ctx
        self.c = ctx.constant

    def op(self, name, *args):
        return self.ctx.call(name, list(args), {}, 1)[0]

    def keywords(self, name, args, **options):
        """An op with keyword-only arguments (given as constants)."""
        options = {key: self.c(value) for key, value in options.items()}
        return self.ctx.call(name, args, options, 1)[0]

    def add(self, a, b):
        return self.keywords("aten::add.Tensor", [a, b], alpha=1)

    def sub(self, a, b):
        return self.keywords("aten::sub.Tensor", [a, b], alpha=1)

    def mul(self, a, b):
        return self.op("aten::mul.Tensor", a, b)

    def select(self, t, index):
        return self.op("aten::select.int", t, self.c(0), self.c(index))

    def narrow(self, t, dim, start, length):
        return self.op("aten::narrow", t, self.c(dim), self.c(start), self.c(length))

    def split(self, t, count, dim):
        """``count`` equal views along ``dim``: two graph nodes however many parts, where
        a ``select``/``narrow`` per part would be one node each."""
        if count == 1:
            return [self.select(t, 0) if dim == 0 else t]
        op = "aten::unbind.int" if dim == 0 else "aten::chunk"
        args = [t, self.c(dim)] if dim == 0 else [t, self.c(count), self.c(dim)]
        return self.ctx.unpack_list(self.ctx.call(op, args, {}, 1)[0], count)

    def stack(self, items):
        return self.op("aten::stack", self.ctx.value_list(items), self.c(0))

    def cat(self, items, dim):
        if len(items) == 1:
            return items[0]
        return self.op("aten::cat", self.ctx.value_list(items), self.c(dim))

    def transpose01(self, t):
        return self.op("aten::transpose.int", t, self.c(0), self.c(1))

    def mm(self, a, b):
        return self.op("aten::mm", a, b)

    def t(self, a):
        return self.op("aten::t", a)

    def reshape(self, t, sizes):
        return self.op("aten::reshape", t, self.c(list(sizes)))


class Layout:
    """Sizes and operand positions shared by the forward and backward nodes."""

    def __init__(self, attrs, input_shape) -> None:
        self.num_layers, self.bidirectional, self.batch_first, self.has_biases = attrs[:4]
        self.directions = 2 if self.bidirectional else 1
        self.per_cell = 4 if self.has_biases else 2
        if self.batch_first:
            self.batch, self.steps = input_shape[0], input_shape[1]
        else:
            self.steps, self.batch = input_shape[0], input_shape[1]

    def cells(self):
        """``(layer, direction, index in h0/c0)`` in ATen's parameter order."""
        for layer in range(self.num_layers):
            for direction in range(self.directions):
                yield layer, direction, layer * self.directions + direction

    def order(self, direction):
        """The time indices a direction visits, in processing order."""
        steps = range(self.steps)
        return list(steps if direction == 0 else reversed(steps))


def previous_hidden(e, hs, h_start, direction, steps):
    """The hidden state each step of ``hs`` (time order) started from, in time order."""
    start = e.op("aten::unsqueeze", h_start, e.c(0))
    if steps == 1:
        return start
    if direction == 0:
        return e.cat([start, e.narrow(hs, 0, 0, steps - 1)], 0)
    return e.cat([e.narrow(hs, 0, 1, steps - 1), start], 0)


# Backward helpers shared by the LSTM and GRU nodes ------------------------------------------


def layer_input_of(e, layout, time_major_x, workspace, per_cell, layer):
    """What a layer's cells read, time-major: the input, or the hidden states of the layer
    below (both directions concatenated; each direction's are the first entry of its
    ``per_cell`` workspace tensors)."""
    if layer == 0:
        return time_major_x
    below = (layer - 1) * layout.directions
    return e.cat([workspace[per_cell * (below + d)] for d in range(layout.directions)], -1)


def backward_through_layers(e, layout, x, grad_output, workspace, per_cell, direction_backward):
    """Backpropagation through the layers, top layer first, shared by the LSTM and GRU
    backward nodes: ``direction_backward(layer_input, grad_layer_output, index,
    direction)`` runs one direction of one layer back through time (keeping its parameter
    and state gradients itself) and returns the gradient of the layer's input through that
    direction. Returns the gradient of ``x``, batch-first when the layout is."""
    grad_layer_output = e.transpose01(grad_output) if layout.batch_first else grad_output
    time_major_x = e.transpose01(x) if layout.batch_first else x
    for layer in reversed(range(layout.num_layers)):
        layer_input = layer_input_of(e, layout, time_major_x, workspace, per_cell, layer)
        grad_layer_input = None
        for direction in range(layout.directions):
            index = layer * layout.directions + direction
            through_input = direction_backward(layer_input, grad_layer_output, index, direction)
            grad_layer_input = accumulate(e, grad_layer_input, through_input)
        grad_layer_output = grad_layer_input
    return e.transpose01(grad_layer_output) if layout.batch_first else grad_layer_output


def step_output_grads(e, layout, grad_layer_output, direction, hidden):
    """The gradient of each step's output for one direction, in time order."""
    grads = grad_layer_output
    if layout.directions > 1:
        grads = e.narrow(grad_layer_output, -1, direction * hidden, hidden)
    return e.split(grads, layout.steps, 0)


def bias_grad(e, flat_gates):
    """A bias's gradient: the gates' gradient summed over steps and batch."""
    return e.keywords("aten::sum.dim_IntList", [flat_gates, e.c([0]), e.c(False)], dtype=None)


def accumulate(e, total, term):
    """``total + term``; ``term`` when nothing was accumulated yet."""
    return term if total is None else e.add(total, term)
