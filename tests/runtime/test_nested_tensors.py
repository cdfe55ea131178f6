"""Nested tensors on the lazy device (``tensor.from_data``): refused with an error that says
what to do. torch takes ``nn.TransformerEncoder``'s inference fast path on every PrivateUse1
device, and with a padding mask that path packs the batch into a nested tensor: it failed
with torch's "Internal error: NestedTensorImpl doesn't support sizes"."""

from __future__ import annotations

import pytest
import torch

import lazygen.runtime as lr


def _encoder(enable_nested_tensor: bool = True):
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True)
    return torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=enable_nested_tensor).eval()


_X = torch.randn(2, 5, 8, generator=torch.Generator().manual_seed(1))
_PADDING = torch.tensor([[False] * 5, [False] * 3 + [True] * 2])


@pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors")
def test_the_encoders_nested_fast_path_names_what_to_do():
    encoder = _encoder().to(lr.device())
    with torch.no_grad(), pytest.raises(lr.LazygenRuntimeError, match="enable_nested_tensor=False"):
        encoder(_X.to(lr.device()), src_key_padding_mask=_PADDING.to(lr.device()))
    lr.mark_step()


def test_nested_tensors_made_elsewhere_are_refused():
    nested = torch.nested.nested_tensor([torch.ones(2), torch.ones(3)])
    with pytest.raises(lr.LazygenRuntimeError, match="nested tensors cannot live"):
        nested.to(lr.device())


def test_without_the_nested_fast_path_the_encoder_matches_eager():
    encoder = _encoder(enable_nested_tensor=False)
    with torch.no_grad():
        expected = encoder(_X, src_key_padding_mask=_PADDING)
        got = encoder.to(lr.device())(
            _X.to(lr.device()), src_key_padding_mask=_PADDING.to(lr.device())
        )
        torch.testing.assert_close(got.cpu(), expected)
