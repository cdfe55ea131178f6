"""torch's functions lazygen replaces go through one table (``privateuse1/patches.py``):
each is replaced once per process and its original stays reachable."""

from __future__ import annotations

import types

import torch

import lazygen.runtime as lr
from lazygen.runtime.privateuse1 import patches


def test_a_function_is_replaced_once_and_its_original_kept():
    owner = types.SimpleNamespace(f=lambda: "torch's")
    before = owner.f
    assert patches.wrap(owner, "f", lambda original: lambda: "lazygen's " + original())
    assert owner.f() == "lazygen's torch's"
    # A second install (a second init()) changes nothing: no wrapper wraps lazygen's own.
    assert not patches.wrap(owner, "f", lambda original: lambda: "again " + original())
    assert not patches.replace(owner, "f", lambda: "again")
    assert owner.f() == "lazygen's torch's"
    assert patches.original(owner, "f") is before and patches.replaced(owner, "f")
    assert not patches.replaced(owner, "g")


def test_init_replaces_torch_s_functions_through_the_table():
    lr.init()
    lr.init()
    assert patches.replaced(torch.nn.Module, "to")
    assert patches.replaced(torch.Tensor, "__dlpack__")
    assert patches.replaced(torch.accelerator, "synchronize")
    wrapped = torch.nn.Module.to
    assert wrapped is not patches.original(torch.nn.Module, "to")
    # Printing a lazy tensor reaches torch's own printer through the table.
    assert "device='lazygen:0'" in repr(torch.ones(2, device="lazygen"))
