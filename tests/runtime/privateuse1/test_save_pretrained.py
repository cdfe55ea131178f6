"""The ecosystem's checkpoint habits with a model on the lazy device: transformers'
``save_pretrained`` (safetensors) and a ``torch.save`` of the state dict (the torch
format ``from_pretrained`` also reads) are loaded by a plain process, without lazygen,
with the lazy model's logits exactly.

``save_pretrained`` failed with "Attempted to access the data pointer on an invalid python
storage": safetensors and transformers identify storages by ``storage.data_ptr()``
(``privateuse1/serialization.py``)."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

import lazygen.runtime as lr

transformers = pytest.importorskip("transformers")

#: Run by a plain interpreter: loads both checkpoints and compares logits with the lazy
#: model's, which the test saved beside them. lazygen is never imported there.
PLAIN = """
import sys, torch
from transformers import GPT2LMHeadModel
ids, expected = torch.load(sys.argv[1] + "/expected.pt")
for folder in ("safetensors", "torch"):
    model = GPT2LMHeadModel.from_pretrained(sys.argv[1] + "/" + folder).eval()
    with torch.no_grad():
        torch.testing.assert_close(model(ids).logits, expected, rtol=0, atol=0)
assert not any(name.startswith("lazygen") for name in sys.modules)
print("equal")
"""


def _trained_gpt2():
    config = transformers.GPT2Config(
        n_layer=2,
        n_embd=32,
        n_head=2,
        vocab_size=64,
        n_positions=16,
        bos_token_id=0,
        eos_token_id=0,
    )
    model = transformers.GPT2LMHeadModel(config).to("lazygen")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    ids = torch.randint(0, 64, (2, 8))
    model(ids.to("lazygen"), labels=ids.to("lazygen")).loss.backward()
    opt.step()
    lr.mark_step()
    return model.eval(), ids


def test_storage_data_ptr_is_a_stable_identity_shared_by_views():
    x = torch.randn(4, 4, device="lazygen")
    y = torch.randn(4, 4, device="lazygen")
    ptr = x.untyped_storage().data_ptr()
    assert ptr != 0 and ptr == x[1].untyped_storage().data_ptr()
    assert ptr != y.untyped_storage().data_ptr()
    x.add_(1)
    lr.mark_step()
    assert x.untyped_storage().data_ptr() == ptr


def test_save_pretrained_loads_in_plain_torch_with_equal_logits(tmp_path):
    model, ids = _trained_gpt2()
    model.save_pretrained(tmp_path / "safetensors")
    assert (tmp_path / "safetensors" / "model.safetensors").is_file()
    model.config.save_pretrained(tmp_path / "torch")
    torch.save(model.state_dict(), tmp_path / "torch" / "pytorch_model.bin")
    with torch.no_grad():
        logits = model(ids.to("lazygen")).logits.cpu()
    torch.save((ids, logits), tmp_path / "expected.pt")
    plain = subprocess.run(
        [sys.executable, "-c", PLAIN, str(tmp_path)], capture_output=True, text=True, timeout=300
    )
    assert plain.returncode == 0 and "equal" in plain.stdout, plain.stderr[-3000:]
    # And back onto the lazy device (from_pretrained, then .to()), with the same logits.
    for folder in ("safetensors", "torch"):
        back = transformers.GPT2LMHeadModel.from_pretrained(tmp_path / folder).to("lazygen")
        with torch.no_grad():
            again = back.eval()(ids.to("lazygen")).logits.cpu()
        torch.testing.assert_close(again, logits, rtol=0, atol=0)
