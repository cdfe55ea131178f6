"""Op-specific IR nodes and kernels that every lazy device gets, whatever its backend and
op list: the device-level copies (``_to_copy``, ``_copy_from``, factories, conj/neg views),
scaled dot-product attention, the recurrent layers (LSTM, GRU and their fused cells),
``GradScaler``'s unscale and scale update (``grad_scaling``), torch.optim's ``fused=True``
steps (``fused_optimizers``: Adam, AdamW, SGD, Adagrad as lazy ops), ``multinomial``
(eager's draws as lazy ops: sampling ``generate`` stays in the graph), and the running
statistics' update around any backend's ``native_batch_norm`` kernel (``batch_norm``).

They sit beside the backend-neutral core, not in it: the core (IR, executor, dispatch)
knows no op. Their nodes lower through ``LoweringContext`` only. ``kernel_tables()`` hands
them to ``init()`` as one ``KernelTables``, installed ahead of the backend's own tables,
which may replace any of them. ``histc`` (integer ``histc`` with CUDA's semantics) is not
in the tables: an op list wraps its own ``histc`` kernel with it (``builtin`` does).
"""

from __future__ import annotations

import functools

from ..backend_interface import KernelTables
from .attention import ATTENTION_AUTOGRAD_KERNELS, ATTENTION_KERNELS
from .batch_norm import KERNEL_WRAPPERS
from .device_copies import DEVICE_KERNELS
from .fused_optimizers import FUSED_OPTIMIZER_AUTOGRAD_KERNELS
from .grad_scaling import GRAD_SCALING_KERNELS
from .gru import GRU_AUTOGRAD_KERNELS
from .lstm import LSTM_AUTOGRAD_KERNELS
from .multinomial import MULTINOMIAL_KERNELS

__all__ = ["kernel_tables"]


@functools.cache
def kernel_tables() -> KernelTables:
    """The kernels of this package: ``DEVICE_KERNELS``, attention's, GradScaler's and
    ``multinomial`` below functionalization; attention's, the recurrent layers' and the
    fused optimizer steps' at the autograd key; and the wrappers of ops whose kernels any backend brings
    (``batch_norm``)."""
    return KernelTables(
        kernels={
            **DEVICE_KERNELS,
            **ATTENTION_KERNELS,
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
    )
