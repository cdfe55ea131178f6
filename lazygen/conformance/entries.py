"""The entries a conformance run can name: torch's OpInfo database (``op_db``) filtered by
dtype and autograd support on CPU, and lazygen's own conversion cases.

Importing ``op_db`` takes seconds, so nothing here imports it at module level.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch

#: ``--dtype`` names of the sample dtypes a run supports.
DTYPES: dict[str, torch.dtype] = {
    "float32": torch.float32,
    "float64": torch.float64,
    "bfloat16": torch.bfloat16,
    "int64": torch.int64,
    "bool": torch.bool,
}

#: Entries whose values are uninitialised memory: only metadata is comparable.
UNINITIALISED = frozenset(
    {"empty", "empty_like", "new_empty", "new_empty_strided", "empty_permuted", "empty_strided"}
)


def entry_name(opinfo: Any) -> str:
    """``name.variant`` as PyTorch's tests name an OpInfo entry (``name`` alone without a
    variant)."""
    return f"{opinfo.name}.{opinfo.variant_test_name}" if opinfo.variant_test_name else opinfo.name


def cpu_entries(dtype: torch.dtype = torch.float32, grad: bool = False) -> list[Any]:
    """The `op_db` entries that support ``dtype`` on CPU (and its backward, with ``grad``)."""
    from torch.testing._internal.common_methods_invocations import op_db

    return [
        o
        for o in op_db
        if dtype in o.supported_dtypes("cpu")
        and (not grad or (o.supports_autograd and dtype in o.supported_backward_dtypes("cpu")))
    ]


def entries_by_name(
    dtype: torch.dtype = torch.float32, grad: bool = False, conversions: bool = False
) -> dict[str, Any]:
    """Entry name -> runnable entry (an OpInfo, or a conversion case with ``conversions``),
    in ``op_db`` order, conversion cases last."""
    named = {entry_name(o): o for o in cpu_entries(dtype, grad)}
    if conversions:
        from .conversions import conversion_cases

        named.update((case.name, case) for case in conversion_cases(grad))
    return named


@contextlib.contextmanager
def no_test_case_lookup() -> Iterator[None]:
    """Sample generation without OpInfo's search for the running ``unittest`` test.

    ``sample_inputs`` calls ``extract_test_fn`` (twice per entry, and per sample), which
    walks ``inspect.stack()`` with source context to find a ``TestCase`` frame, ~40 ms per
    call in a process with lazygen loaded. Outside a TestCase it finds none and returns
    None, which is what this substitute returns at once: samples are unchanged.
    """
    from torch.testing._internal import common_utils
    from torch.testing._internal.opinfo import core

    saved = common_utils.extract_test_fn, core.extract_test_fn
    common_utils.extract_test_fn = core.extract_test_fn = _no_test_fn
    try:
        yield
    finally:
        common_utils.extract_test_fn, core.extract_test_fn = saved


def _no_test_fn() -> None:
    return None
