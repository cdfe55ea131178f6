"""Which OpInfo entries exercise the ops of a backend op list.

An op list names aten overloads (``add.Tensor``, ``mm``, ``relu``, ``t_copy``); OpInfo
entries are named after Python functions (``add``, ``matmul``, ``nn.functional.relu``).
An entry exercises an op when

* its first sample that runs eagerly on CPU calls the op: a dispatch recorder sees the aten
  overloads below composite decompositions (``kron`` reaches ``mul.Tensor``; views are
  matched to the op list's ``*_copy`` names, in-place overloads to their functional ones,
  since functionalization turns one into the other on a lazy device); with ``grad`` the
  backward of that sample is recorded too; or
* its OpInfo names the op (``aten_name``, ``name`` or an alias equal to the op's base
  name), which catches composite ops a backend lists to keep them whole.

Recording every entry's first sample takes about a second on CPU.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from .classify import gradients
from .entries import entry_name, no_test_case_lookup


class _Recorder(TorchDispatchMode):
    """Collects the ``name.overload`` of every aten op dispatched under it."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: set[str] = set()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        schema = func._schema
        if schema.name.startswith("aten::"):
            name = schema.name[len("aten::") :]
            overload = func._overloadname
            self.ops.add(name if overload == "default" else f"{name}.{overload}")
        return func(*args, **(kwargs or {}))


def recorded_ops(opinfo: Any, dtype: torch.dtype, grad: bool = False) -> frozenset[str]:
    """The aten ops the first sample of ``opinfo`` that runs eagerly calls (and, with
    ``grad``, its backward); empty when no sample runs."""
    try:
        torch.manual_seed(0)
        samples = opinfo.sample_inputs("cpu", dtype, requires_grad=grad)
        for sample in samples:
            recorder = _Recorder()
            args = (sample.input, *sample.args)
            try:
                with recorder:
                    if grad:
                        gradients(opinfo, sample, args, sample.kwargs, dtype)
                    else:
                        opinfo(*args, **sample.kwargs)
            except Exception:
                continue
            return frozenset(recorder.ops)
    except Exception:  # the OpInfo cannot build samples here
        pass
    return frozenset()


def list_names(recorded: str) -> set[str]:
    """The op-list names a recorded overload stands for: itself, its functional form
    (``add_.Tensor`` -> ``add.Tensor``) and its ``*_copy`` form (``t`` -> ``t_copy``)."""
    base, dot, overload = recorded.partition(".")
    names = {recorded}
    if base.endswith("_") and not base.endswith("__"):
        names.add(base[:-1] + dot + overload)
    for name in list(names):
        b, d, o = name.partition(".")
        names.add(f"{b}_copy{d}{o}")
    return names


def base_name(op: str) -> str:
    """``transpose_copy.int`` -> ``transpose``: the Python-level name an OpInfo may carry."""
    base = op.partition(".")[0]
    return base[: -len("_copy")] if base.endswith("_copy") else base


def _opinfo_names(opinfo: Any) -> set[str]:
    names = {opinfo.name, getattr(opinfo, "aten_name", None) or opinfo.name}
    names.update(alias.name for alias in getattr(opinfo, "aliases", ()) or ())
    names |= {n.rpartition(".")[2] for n in list(names)}  # nn.functional.relu -> relu
    return names


def entries_for_ops(
    ops: Iterable[str], opinfos: Iterable[Any], dtype: torch.dtype, grad: bool = False
) -> dict[str, list[str]]:
    """Op-list name -> the names of the entries (in ``opinfos`` order) that exercise it
    (an empty list for an op no entry reaches)."""
    ops = list(dict.fromkeys(ops))
    by_base: dict[str, list[str]] = {}
    for op in ops:
        by_base.setdefault(base_name(op), []).append(op)
    found: dict[str, list[str]] = {op: [] for op in ops}
    wanted = set(ops)
    with warnings.catch_warnings(), no_test_case_lookup():
        warnings.simplefilter("ignore")
        for opinfo in opinfos:
            name = entry_name(opinfo)
            hits: set[str] = set()
            for recorded in recorded_ops(opinfo, dtype, grad):
                hits |= list_names(recorded) & wanted
            for candidate in _opinfo_names(opinfo):
                hits.update(by_base.get(candidate, ()))
            for op in hits:
                found[op].append(name)
    return found
