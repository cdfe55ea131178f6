"""Tracing a whole recurrent layer stack (``lstm.py``, ``gru.py``) as one node each way.

What the two layers share: the autograd ``Function`` that records the forward node and, in
its backward, the backward node; the shapes of the forward node's outputs; and the
recomputation through ATen's composite that a backward with ``create_graph=True`` needs.
What differs is described by a ``RecurrentLayers``: the ATen op, the node classes, the
number of state tensors (``h0, c0`` or ``h0``), the widths of the workspace and the fused
cells ATen's per-cell path calls instead.

A backend declines the node pair by refusing the layer's op (``aten::lstm.input``,
``aten::gru.input``) or its fused cells (``Backend.refused_ops``): its devices then take
ATen's composite, per cell, whose ops are traced and refused one by one (``declined``).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .. import devices
from .. import kernel_support as rt
from ..dispatch import refusals
from ..ir import Node, Shape
from ..op_registry import kind_counter
from ..tracing.tensor import inner, to_functional
from .recurrent_lowering import Layout

#: ATen's C++ composite, which the lazy device ran before (per cell, dropout from its own
#: random ops). Not ``op.decompose``: that prefers torch's Python decomposition
#: (``torch._decomp``), which has no fused cells and never draws dropout here.
COMPOSITE = torch._C.DispatchKey.CompositeImplicitAutograd
FLOATS = (torch.float32, torch.float64)


@dataclass(frozen=True)
class RecurrentLayers:
    """One recurrent layer kind the lazy device records as a node pair.

    ``widths``: per layer and direction, the workspace tensors the forward node returns for
    the backward (each ``steps x batch x width * hidden``, in time order)."""

    name: str  # counters: lazy::<name>_layers, lazy::<name>_layers_backward
    op: torch._ops.OpOverload
    forward_node: type[Node]
    backward_node: type[Node]
    states: int  # state tensors, h0 (and c0) of shape layers*directions x batch x hidden
    widths: tuple[int, ...]
    #: The fused cell ops ATen's per-cell path calls (forward and backward): refusing one
    #: declines the whole-layer node too (it does their work).
    cells: tuple[torch._ops.OpOverload, ...] = ()

    def hx(self, states) -> torch.Tensor | list[torch.Tensor]:
        """The op's ``hx`` argument: a list of the states, or the single state."""
        return list(states) if self.states > 1 else states[0]

    def composite(self, input, states, params, arguments):
        """ATen's composite on ``(input, hx, params, *arguments)``."""
        return self.op._op_dk(COMPOSITE, input, self.hx(states), params, *arguments)


def declined(kind: RecurrentLayers, input, args: tuple) -> bool:
    """Whether the backend of ``input``'s device declines the node pair for this call
    (``args``: the op's arguments), which then takes ATen's per-cell path."""
    backend = devices.device_from(input.device).backend
    return refusals.declines(backend, kind.op, args, {}, also=kind.cells)


def trace_layers(kind: RecurrentLayers, input, states, params, arguments, batch_first: bool):
    """The node pair for a call ``_supported`` accepted: with autograd when a gradient may
    be wanted (the forward then also returns the workspace), else the forward node alone.
    ``arguments``: ``(has_biases, num_layers, dropout, train, bidirectional)``."""
    has_biases, num_layers, dropout, train, bidirectional = arguments
    tensors = (input, *states, *params)
    wants_grad = torch.is_grad_enabled() and any(t.requires_grad for t in tensors)
    attrs = (num_layers, bidirectional, batch_first, has_biases, wants_grad)
    if not wants_grad:
        return tuple(_trace_forward(kind, input, states, params, attrs))
    options = (dropout, train)
    return _LayersFunction.apply(kind, attrs, options, input, *states, *params)


def _shapes(kind: RecurrentLayers, input, h0, attrs) -> tuple[Shape, ...]:
    """The forward node's output shapes: output, final states, workspace if asked for."""
    layout = Layout(attrs, tuple(input.shape))
    dtype, hidden = input.dtype, h0.shape[-1]
    steps, batch = layout.steps, layout.batch
    out = (batch, steps) if layout.batch_first else (steps, batch)
    shapes = [Shape(dtype, (*out, layout.directions * hidden))]
    shapes += [Shape(dtype, tuple(h0.shape))] * kind.states
    if attrs[4]:
        for _ in layout.cells():
            shapes += [Shape(dtype, (steps, batch, n * hidden)) for n in kind.widths]
    return tuple(shapes)


def _trace_forward(kind: RecurrentLayers, input, states, params, attrs):
    """Record the forward node; the user-facing (functional) tensors of its outputs."""
    rt.count(kind_counter(f"{kind.name}_layers"))
    tensors = [inner(t) for t in (input, *states, *params)]
    device = tensors[0]._device
    operands = tuple(t._value for t in tensors)
    node = rt.make_node(kind.forward_node, operands, attrs, _shapes(kind, input, states[0], attrs))
    return [to_functional(t) for t in rt.wrap_tuple(node, device)]


class _LayersFunction(torch.autograd.Function):
    """Autograd for the node pair; the workspace is saved, never differentiated."""

    @staticmethod
    def forward(ctx, kind, attrs, options, input, *tensors):
        states, params = tensors[: kind.states], tensors[kind.states :]
        outputs = _trace_forward(kind, input, states, params, attrs)
        ctx.kind, ctx.attrs, ctx.options = kind, attrs[:4], options
        returned = 1 + kind.states  # output and final states; then the workspace
        ctx.save_for_backward(input, *tensors, *outputs[returned:])
        return tuple(outputs[:returned])

    @staticmethod
    def backward(ctx, grad_output, *grad_states):
        kind, saved = ctx.kind, ctx.saved_tensors
        cells = len(saved[1])  # layers x directions: h0's first dimension
        inputs = saved[: len(saved) - len(kind.widths) * cells]  # then the workspace
        if torch.is_grad_enabled():  # create_graph: a gradient autograd can differentiate
            grads = _recomputed_gradients(ctx, inputs, [grad_output, *grad_states])
            return (None, None, None, *grads)
        rt.count(kind_counter(f"{kind.name}_layers_backward"))
        tensors = [inner(t) for t in (grad_output, *grad_states, *saved)]
        device = tensors[1 + kind.states]._device  # the input's
        operands = tuple(rt.tensor(t, device) for t in tensors)
        shapes = tuple(Shape(t.dtype, tuple(t.shape)) for t in inputs)
        node = rt.make_node(kind.backward_node, operands, ctx.attrs, shapes)
        grads = [to_functional(t) for t in rt.wrap_tuple(node, device)]
        return (None, None, None, *grads)


def _recomputed_gradients(ctx, inputs, grads):
    """The inputs' gradients through ATen's composite, recomputed from the saved inputs with
    a graph (as activation checkpointing does): only for ``create_graph=True``, whose
    gradients must themselves be differentiable, which the backward node's are not."""
    kind = ctx.kind
    num_layers, bidirectional, batch_first, has_biases = ctx.attrs
    dropout, train = ctx.options
    input, states, params = inputs[0], inputs[1 : 1 + kind.states], inputs[1 + kind.states :]
    arguments = (has_biases, num_layers, dropout, train, bidirectional, batch_first)
    outputs = kind.composite(input, states, params, arguments)
    wanted = [t for t in inputs if t.requires_grad]
    found = iter(torch.autograd.grad(outputs, wanted, grads, create_graph=True, allow_unused=True))
    return [next(found) if t.requires_grad else None for t in inputs]
