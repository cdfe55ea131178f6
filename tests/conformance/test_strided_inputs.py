"""Every float32 OpInfo entry (its first sample) with each tensor input replaced by a strided
view made inside the graph (``stack([t, t], -1).select(-1, 0)``: the same values, stride 2).

A lazy tensor is contiguous by definition, so ``.contiguous()`` on it is a no-op; but a
backend may run views as views inside a graph (``lowering_context``, "Views may alias"), and
then a kernel whose eager caller made its input contiguous first sees a strided one. Such
kernels raised (``native_group_norm`` in diffusers' attention blocks, ``_pdist_forward``) or
read the view as contiguous without a word (``native_group_norm_backward``,
``_embedding_bag_forward_only``): ``CONTIGUOUS_INPUT_OPS`` (runtime/ops/facts.py) lists them. This sweep finds any
other, forward and backward: nothing may be wrong or fail but the entries below.

About a minute of CPU each (``slow``: CI runs it).
"""

from __future__ import annotations

import pytest
import torch

import lazygen.runtime as lr
from lazygen.conformance.classify import run_entry
from lazygen.conformance.entries import cpu_entries, entry_name, no_test_case_lookup

#: Entries that differ or fail for reasons that are not a strided input's:
EXPECTED = {
    # their result reads the input's strides, and a lazy tensor's are contiguous
    # (README, "Conformance": as_strided.partial_views is a known failure)
    "as_strided": "wrong",
    "as_strided.partial_views": "wrong",
    "as_strided_copy": "wrong",
    # eager's in-place normal_ draws its numbers in another order into a strided tensor than
    # into a contiguous one (the same distribution; a lazy tensor is contiguous)
    "normal.in_place": "wrong",
    # known failures of the plain conformance suites (README, "Conformance")
    "sparse.sampled_addmm": "error",
    "to_sparse": "error",
    "tensor_split": "error",
}


def _strided(t):
    if not isinstance(t, torch.Tensor) or t.dim() == 0 or t.numel() == 0 or t.is_sparse:
        return t
    return torch.stack([t, t], -1).select(-1, 0)


class _OnStridedViews:
    """An OpInfo entry whose call gets its tensor arguments as strided views (eagerly as
    well: eager's kernels take any layout, so it is the reference)."""

    def __init__(self, opinfo) -> None:
        self._opinfo = opinfo

    def __getattr__(self, name):
        return getattr(self._opinfo, name)

    def __call__(self, *args, **kwargs):
        args = [_strided(a) for a in args]
        kwargs = {k: _strided(v) for k, v in kwargs.items()}
        return self._opinfo(*args, **kwargs)


@pytest.mark.slow
@pytest.mark.parametrize("grad", [False, True], ids=["forward", "gradients"])
def test_every_entry_takes_strided_views(grad: bool) -> None:
    lr.init()
    found = {}
    with no_test_case_lookup():
        for opinfo in cpu_entries(torch.float32, grad):
            result = run_entry(_OnStridedViews(opinfo), lr.device(), lr.metrics, 1, grad=grad)
            if result.outcome in ("wrong", "error"):
                found[entry_name(opinfo)] = (result.outcome, result.detail[:300])
    unexpected = {n: r for n, r in found.items() if EXPECTED.get(n) != r[0]}
    assert not unexpected, "\n".join(f"{n}: {o} {d}" for n, (o, d) in unexpected.items())
