"""Small uploads kept by content: the same few bytes become one ``jax.Array``, made once.

Models upload the same tiny tensors at every step: a transformers model's cache makes empty
tensors and its position ids (``arange``), attention hands each call a zero seed and
offset. Each upload through DLPack costs 30-280 us (jax's ``from_dlpack`` in Python, while
XLA runs), 13 of them 1.4 ms of a GPT-2 step, where the torchscript backend keeps the
tensor as it is. A ``jax.Array`` is immutable, so one array can serve every upload of the
same dtype, shape and bytes: it is a copy (never the caller's memory, which may change),
and no run may consume it: a graph may be compiled to donate such an input (a first
training step reads its small parameters as kept uploads, the steps after read its
results in the same places), and each run copies a kept array passed where the graph
donates (``JaxBackend.execute_donating``), as it copies any input still in use.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import torch

from .dtypes import to_jax

#: Uploads of at most this many bytes are kept (a few dozen int64 position ids).
SMALL_BYTES = 256
#: Kept arrays at most (512 x 256 bytes); once full, further contents upload as usual.
MAX_KEPT = 512


class SmallUploads:
    """The kept arrays of one backend, by ``(dtype, shape, bytes)``."""

    __slots__ = ("_kept", "ids", "place")

    def __init__(self, place=None) -> None:
        self._kept: dict[tuple, object] = {}
        #: Under SPMD, what lays a new array out on every device (``sharding.Spmd.upload``).
        self.place = place
        #: ``id()`` of every kept array (valid for good: the table never lets one go).
        self.ids: set[int] = set()

    def holds(self, array) -> bool:
        """Whether ``array`` is a kept upload (which no graph may donate)."""
        return id(array) in self.ids

    def get(self, tensor: torch.Tensor):
        """The kept array of ``tensor``'s values (made now on a miss); None when
        ``tensor`` is larger than ``SMALL_BYTES``, of a dtype numpy does not hold, or new
        while ``MAX_KEPT`` arrays are kept."""
        if tensor.numel() * tensor.element_size() > SMALL_BYTES:
            return None
        try:
            values = tensor.detach().numpy()
        except (TypeError, RuntimeError):  # bfloat16 and other dtypes numpy lacks
            return None
        key = (tensor.dtype, values.shape, values.tobytes())
        array = self._kept.get(key)
        if array is None:
            if len(self._kept) >= MAX_KEPT:
                # full (values that change every step): uploaded as any other. Never
                # emptied: an array handed out stays known, so no graph donates it while
                # several tensors may hold it
                return None
            # np.array copies: the kept array must never share the caller's memory
            array = jnp.asarray(np.array(values), dtype=to_jax(tensor.dtype))
            if self.place is not None:
                array = self.place(array)
            self._kept[key] = array
            self.ids.add(id(array))
        return array
