"""Op-specific IR nodes and kernels that every lazy device gets, whatever its backend and
op list: the device-level copies (``_to_copy``, ``_copy_from``, factories, conj/neg views),
scaled dot-product attention, the recurrent layers (LSTM, GRU and their fused cells),
``GradScaler``'s unscale and scale update (``grad_scaling``), torch.optim's ``fused=True``
steps (``fused_optimizers``: Adam, AdamW, SGD, Adagrad as lazy ops), ``multinomial``
(eager's draws as lazy ops: sampling ``generate`` stays in the graph), and the running
statistics' update around any backend's ``native_batch_norm`` kernel (``batch_norm``).

They sit beside the backend-neutral core, not in it: the core (IR, executor, dispatch)
knows no op. Their nodes lower through ``LoweringContext`` only. ``runtime_tables()`` hands
them to ``init()`` as one ``KernelTables``, installed ahead of the backend's own tables,
which may replace any of them. ``histc`` (integer ``histc`` with CUDA's semantics) is not
in the tables: an op list wraps its own ``histc`` kernel with it (``builtin`` does).
"""

from __future__ import annotations

from types import MappingProxyType

from .. import state
from ..backend_interface import KernelTables
from . import (
    attention_op,
    facts,  # noqa: F401  (declares the op facts the core reads)
)
from .attention import (
    ATTENTION_AUTOGRAD_KERNELS,
    ATTENTION_KERNELS,
    COUNTER_ALIASES,
    neutral_kernels,
)
from .batch_norm import KERNEL_WRAPPERS
from .device_copies import DEVICE_KERNELS
from .fused_optimizers import FUSED_OPTIMIZER_AUTOGRAD_KERNELS
from .grad_scaling import GRAD_SCALING_KERNELS
from .gru import GRU_AUTOGRAD_KERNELS
from .lstm import LSTM_AUTOGRAD_KERNELS
from .multinomial import MULTINOMIAL_KERNELS

__all__ = ["CORE_LOWERED_OPS", "define_ops", "kernel_tables"]


#: Every op the runtime itself hands a backend through ``ctx.call``, whatever the op list
#: says (the nodes above, and the core's own in ``ir.py`` and ``distributed/``), with where
#: it comes from and how a backend declines it (``Backend.refused_ops``). A backend lowers
#: each of these or declines it; ``tests/runtime/ops/test_core_lowered_ops.py`` keeps the
#: list complete. The built-in op list's hand-written lowerings (``builtin/hand_written/lowerings.py``)
#: are the op list's, not the core's.
CORE_LOWERED_OPS: dict[str, str] = MappingProxyType(
    {
        "aten::_to_copy": "dtype casts of lazy tensors (device_copies.ToCopy); refusing "
        "_to_copy runs the cast eagerly",
        "aten::conj_physical": "a conjugate view of a complex tensor materialised "
        "(device_copies); refusing conj_physical runs it eagerly",
        "lazygen::attention": "attention's forward node (attention.Attention: output and "
        "logsumexp; schema and meaning in attention_op); lower it, decompose it "
        "(LoweringContext.decomposed_ops: attention_reference) or refuse it (then also "
        "scaled_dot_product_attention takes ATen's math path: plain ops)",
        "lazygen::attention_backward": "attention's backward node (attention."
        "AttentionBackward); lowered, decomposed or declined as the forward",
        # Torch's CPU flash kernels: only in graphs of backends whose contexts lower the
        # neutral nodes with attention_op.TORCH_CPU_LOWERINGS (torchscript, fx, inductor).
        "aten::_scaled_dot_product_flash_attention_for_cpu": "lazygen::attention on torch's "
        "CPU kernels (attention_op.TORCH_CPU_LOWERINGS); no other backend sees it",
        "aten::_scaled_dot_product_flash_attention_for_cpu_backward": "as the forward",
        "aten::_native_batch_norm_legit_functional": "native_batch_norm in training mode with "
        "its running statistics' update (batch_norm.NativeBatchNormUpdate); lower it where "
        "native_batch_norm is in the op list",
        # The recurrent layers' nodes (lstm, gru, recurrent_lowering: a layer stack's whole
        # recurrence as one node each way) and the fused cells' (recurrent_cells), lowered
        # as these plain ops. Refusing lstm (aten::lstm.input) or gru (aten::gru.input)
        # declines the layer nodes: ATen's per-cell path, traced op by op. Refusing a fused
        # cell (_thnn_fused_lstm_cell, _thnn_fused_lstm_cell_backward_impl,
        # _thnn_fused_gru_cell, _thnn_fused_gru_cell_backward) declines the layer nodes
        # and traces the cell's ops one by one (recurrent_tracing.declined,
        # refusals.declines; listed in fallback_report().declined).
        **{
        f"aten::{name}": "a recurrent layer's or cell's lowering (recurrent_lowering, "
        "recurrent_cells); refusing lstm, gru or a fused cell declines the node"
        for name in (
            "add.Tensor", "addcmul", "addmm", "cat", "chunk", "linear", "matmul", "mm",
            "mul.Tensor", "narrow", "reshape", "select.int", "sigmoid", "sigmoid_backward",
            "stack", "sub.Tensor", "sum.dim_IntList", "t", "tanh", "tanh_backward",
            "transpose.int", "unbind.int", "unsqueeze", "zeros_like",
        )
    },  # fmt: skip
        # attention_reference: the neutral attention nodes as plain ops, only for contexts
        # that list them in LoweringContext.decomposed_ops (it also emits _to_copy and
        # recurrent layers' ops above: add, sub and mul.Tensor, matmul, sum.dim_IntList).
        **{
        f"aten::{name}": "attention's reference decomposition (attention_reference), for "
        "contexts that decompose lazygen::attention"
        for name in (
            "full", "logsumexp", "mul.Scalar", "_softmax", "transpose_copy.int",
            "triu",
        )
    },  # fmt: skip
        "aten::copy_": "ir.InputWrite: a torch.compile replay writing an optimizer's "
        "parameters in place; only made for backends with writes_inputs = True",
        "_c10d_functional::all_reduce": "a collective in the graph; only made for backends "
        "with collectives_in_graph = True (the others run collectives eagerly)",
        "_c10d_functional::all_gather_into_tensor": "as all_reduce",
        "_c10d_functional::reduce_scatter_tensor": "as all_reduce",
        "_c10d_functional::broadcast": "as all_reduce",
        "_c10d_functional::wait_tensor": "as all_reduce",
    }
)


def define_ops() -> None:
    """Define the neutral ops in torch (``attention_op.define``), once per process; ``init()``
    calls it before any table is installed, so refusals and lowerings find them by name."""
    _neutral_library()


@state.process_memo
def _neutral_library():
    """The ``torch.library`` defining the neutral ops: torch holds its ops for the process."""
    return attention_op.define()


@state.process_memo
def runtime_tables() -> KernelTables:
    """The kernels of this package: ``DEVICE_KERNELS``, attention's, GradScaler's and
    ``multinomial`` below functionalization; attention's, the recurrent layers' and the
    fused optimizer steps' at the autograd key; and the wrappers of ops whose kernels any backend brings
    (``batch_norm``). The neutral ops' kernels need them defined (``define_ops``)."""
    define_ops()
    return KernelTables(
        kernels={
            **DEVICE_KERNELS,
            **ATTENTION_KERNELS,
            **neutral_kernels(),
            **GRAD_SCALING_KERNELS,
            **MULTINOMIAL_KERNELS,
        },
        autograd_kernels={
            **ATTENTION_AUTOGRAD_KERNELS,
            **LSTM_AUTOGRAD_KERNELS,
            **GRU_AUTOGRAD_KERNELS,
            **FUSED_OPTIMIZER_AUTOGRAD_KERNELS,
        },
        wrappers=KERNEL_WRAPPERS,
        counter_aliases=dict(COUNTER_ALIASES),
    )
