"""The eager fallback (``runtime/dispatch/fallback.py``) refuses a lazy tensor's storage with an
error that says what to do: run eagerly, torch's kernels met it beside host tensors and
said "Attempted to set the storage of a tensor on device "cpu" to a storage on different
device" (``set_(storage)``, typed storage element access)."""

from __future__ import annotations

import copy

import pytest
import torch
from support.training import assert_as_accurate_as_eager

from lazygen.runtime.devices import device_from
from lazygen.runtime.tracing.tensor import device_data

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


def test_packed_sequences_keep_their_batch_sizes_on_the_host():
    """``_pack_padded_sequence`` and ``_pad_packed_sequence`` run eagerly; their batch sizes
    and lengths went to the device, and ``PackedSequence`` refused them ("batch_sizes should
    always be on CPU"), so no packed sequence could be made on the lazy device."""
    rnn = torch.nn.LSTM(3, 4, batch_first=True)
    x, lengths = torch.randn(2, 5, 3), torch.tensor([5, 3])

    def run(device, dtype=torch.float32):
        packed = torch.nn.utils.rnn.pack_padded_sequence(
            x.to(device, dtype), lengths, batch_first=True
        )
        output, _ = copy.deepcopy(rnn).to(device, dtype)(packed)
        padded, out_lengths = torch.nn.utils.rnn.pad_packed_sequence(output, batch_first=True)
        return packed.batch_sizes, padded, out_lengths

    eager, lazy = run("cpu"), run("lazygen")
    assert lazy[0].device.type == "cpu" and lazy[2].device.type == "cpu"
    assert torch.equal(lazy[0], eager[0]) and torch.equal(lazy[2], eager[2])
    assert_as_accurate_as_eager([lazy[1].cpu()], [eager[1]], lambda: [run("cpu", torch.float64)[1]])


def test_device_data_materialises_zero_tensors_and_lazy_bits():
    """An eager result with no memory behind it (autograd's efficient zero gradient) or a
    lazy conj/neg bit becomes device data holding its values: a backend reading memory
    (DLPack, numpy: the jax backend) once read garbage for ``sgn``'s gradient."""
    device = device_from("lazygen")
    zero = torch._efficientzerotensor((2, 3))
    held = device_data(zero, device).node.data
    assert not held._is_zerotensor() and torch.equal(held.cpu(), torch.zeros(2, 3))
    conj = torch.tensor([1 + 2j, 3 - 1j]).conj()
    held = device_data(conj, device).node.data
    assert not held.is_conj() and torch.equal(held.cpu(), conj.resolve_conj())


def test_sgn_gradient_is_zero_on_the_lazy_device():
    x = torch.tensor([[-2.0, 0.0], [0.5, 3.0]])
    lazy = x.to("lazygen").requires_grad_()
    torch.sgn(lazy).backward(torch.ones(2, 2, device="lazygen"))
    assert torch.equal(lazy.grad.cpu(), torch.zeros(2, 2))
