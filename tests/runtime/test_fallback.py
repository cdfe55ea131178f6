"""The eager fallback (``runtime/fallback.py``) refuses a lazy tensor's storage with an
error that says what to do: run eagerly, torch's kernels met it beside host tensors and
said "Attempted to set the storage of a tensor on device "cpu" to a storage on different
device" (``set_(storage)``, typed storage element access)."""

from __future__ import annotations

import pytest
import torch

NO_DATA = r"storage holds no data .* copy it to the CPU first"


@pytest.mark.parametrize(
    "use",
    [
        lambda x: torch.empty(0, device="lazygen").set_(x.untyped_storage(), 0, (4,)),
        lambda x: x.storage()[1],
        lambda x: x.untyped_storage()[0],
        lambda x: x.storage().tolist(),
        lambda x: x.storage().float(),
        lambda x: bytes(x.untyped_storage()),
    ],
    ids=["set_", "typed_getitem", "untyped_getitem", "tolist", "float", "bytes"],
)
def test_a_lazy_storage_is_a_clear_error(use):
    x = torch.arange(4.0, device="lazygen")
    with pytest.raises(RuntimeError, match=NO_DATA):
        use(x)


def test_host_storages_still_pass():
    host = torch.arange(4.0)
    y = torch.empty(0).set_(host.untyped_storage(), 0, (2,))
    assert y.tolist() == [0.0, 1.0]
    assert torch.arange(4.0, device="lazygen").cpu().storage()[2] == 2.0
