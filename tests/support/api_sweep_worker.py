"""One interpreter of the tensor-API sweep (see ``support.api_sweep``): it runs each case's
program eagerly on the CPU and then on the lazy device, compares the two outcomes and prints
one ``RESULT`` line per case.

It reads the cases as JSON from stdin (``[[name, code], ...]``) and prints ``CASE <name>``
before each, so a signal that kills it names the case that was running. A case's program
sees ``d`` (the device), ``F`` (the float dtype), ``R(*shape, dtype=None)`` (seeded random
data made on the CPU, then moved to ``d``: both runs see the same values) and the modules
below; what it leaves in ``out`` is compared, or else the value of its last line if that is
an expression (a lazy result nobody reads is never computed, so it must be kept). The lazy run ends with ``mark_step()`` inside
the case, so an error that only shows at execution belongs to it.

Tolerances follow ``support.training.assert_as_accurate_as_eager``: equal within 1e-6, or no
further from a float64 run of the same program (``F = torch.float64``) than 4 times eager's
own distance from it.
"""

from __future__ import annotations

import ast
import copy  # noqa: F401  (cases use it)
import io  # noqa: F401
import json
import math
import pickle  # noqa: F401
import sys
import traceback
import warnings

import numpy as np
import torch
import torch.autograd.forward_ad as fwAD  # noqa: F401

import lazygen.runtime as lr

ATOL = 1e-6
FACTOR = 4.0
#: Words that mark an error as an internal failure rather than one a user can act on.
INTERNAL_WORDS = ("INTERNAL ASSERT", "please report a bug", "Please report a bug")
#: Exception types that mean "a bug in the library" unless eager raised the same type.
INTERNAL_TYPES = (
    AssertionError,
    KeyError,
    AttributeError,
    NameError,
    UnboundLocalError,
    SystemError,
)


def _program_globals(device: str, float_dtype: torch.dtype) -> dict:
    torch.manual_seed(0)  # modules' initial weights: the same in both runs
    generator = torch.Generator().manual_seed(0)

    def rand(*shape, dtype=None):
        values = torch.randn(*shape, generator=generator)
        if dtype is not None and not dtype.is_floating_point and not dtype.is_complex:
            values = (values * 4).to(dtype)
        return values.to(dtype or float_dtype).to(device)

    return {
        "torch": torch,
        "np": np,
        "io": io,
        "copy": copy,
        "pickle": pickle,
        "math": math,
        "warnings": warnings,
        "fwAD": fwAD,
        "d": device,
        "F": float_dtype,
        "R": rand,
    }


def _host(value, device_type: str):
    """A device-free picture of ``value``: tensors on the CPU (detached), their device named
    ``"d"`` when they are on the device the program ran on."""
    if isinstance(value, torch.Tensor):
        if type(value) not in (torch.Tensor, torch.nn.Parameter):
            value = value.as_subclass(torch.Tensor)  # its type is the case's to compare
        where = "d" if value.device.type == device_type else value.device.type
        meta = (where, str(value.dtype), tuple(value.shape), value.requires_grad)
        if value.is_quantized:
            return ("qtensor", meta, value.detach().cpu().dequantize())
        if value.is_sparse or value.is_meta:
            return ("tensor", meta, None)
        return ("tensor", meta, value.detach().cpu().clone())
    if isinstance(value, (list, tuple)) and not isinstance(value, torch.Size):
        kind = "list" if isinstance(value, list) else "tuple"
        return (kind, [_host(v, device_type) for v in value])
    if isinstance(value, dict):
        return ("dict", {k: _host(v, device_type) for k, v in value.items()})
    if isinstance(value, torch.device):
        return ("device", "d" if value.type == device_type else value.type)
    if isinstance(value, np.ndarray):
        return ("ndarray", str(value.dtype), torch.from_numpy(value.copy()))
    if isinstance(value, (bool, int, float, complex, str, bytes, type(None), torch.dtype)):
        return ("value", value)
    if isinstance(value, torch.Size):
        return ("value", tuple(value))
    return ("object", type(value).__name__)


def _compiled(code: str):
    """``code`` with a last expression line assigned to ``out``."""
    tree = ast.parse(code)
    last = tree.body[-1] if tree.body else None
    if isinstance(last, ast.Expr):
        target = ast.Name(id="out", ctx=ast.Store())
        tree.body[-1] = ast.copy_location(ast.Assign(targets=[target], value=last.value), last)
        ast.fix_missing_locations(tree)
    return compile(tree, "<case>", "exec")


def _run(code: str, device: str, float_dtype: torch.dtype):
    """("value", host picture) or ("raised", type, message, traceback)."""
    program = _program_globals(device, float_dtype)
    device_type = torch.device(device).type
    try:
        exec(_compiled(code), program)
        if device_type != "cpu":
            lr.mark_step(wait=True)
        return ("value", _host(program.get("out"), device_type))
    except BaseException as error:  # noqa: BLE001 (a case's SystemExit is an outcome too)
        message = str(error)
        return ("raised", type(error), message.strip()[:600], traceback.format_exc()[-1500:])


def _close(got, want, ref) -> str | None:
    """None if ``got`` (lazy) is as good as ``want`` (eager), else why not."""
    if got[0] != want[0]:
        return f"lazy gives {got[0]}, eager {want[0]}"
    kind = got[0]
    if kind in ("tensor", "qtensor"):
        if got[1][0] == "cpu" and want[1][0] == "d":
            # Eager ran on the CPU: its "d" and "cpu" are one device.
            got = (kind, ("d", *got[1][1:]), got[2])
        if got[1] != want[1]:
            return f"tensor (device, dtype, shape, requires_grad): lazy {got[1]}, eager {want[1]}"
        return _close_values(got[2], want[2], ref[2] if ref and ref[0] == kind else None)
    if kind in ("list", "tuple"):
        if len(got[1]) != len(want[1]):
            return f"{kind} of {len(got[1])} vs {len(want[1])}"
        refs = (
            ref[1]
            if ref and ref[0] == kind and len(ref[1]) == len(want[1])
            else [None] * len(want[1])
        )
        for i, (g, w, r) in enumerate(zip(got[1], want[1], refs, strict=True)):
            why = _close(g, w, r)
            if why:
                return f"[{i}]: {why}"
        return None
    if kind == "dict":
        if got[1].keys() != want[1].keys():
            return f"keys {sorted(got[1])} vs {sorted(want[1])}"
        for key in want[1]:
            r = ref[1].get(key) if ref and ref[0] == "dict" else None
            why = _close(got[1][key], want[1][key], r)
            if why:
                return f"[{key!r}]: {why}"
        return None
    if kind == "ndarray":
        if got[1] != want[1]:
            return f"ndarray dtype {got[1]} vs {want[1]}"
        return _close_values(got[2], want[2], ref[2] if ref and ref[0] == "ndarray" else None)
    if kind == "device" and want[1] == "d" and got[1] == "cpu":
        return None
    if kind == "value" and isinstance(want[1], float) and isinstance(got[1], float):
        r = torch.tensor(ref[1]) if ref and isinstance(ref[1], float) else None
        return _close_values(torch.tensor(got[1]), torch.tensor(want[1]), r)
    return None if got[1] == want[1] else f"lazy {got[1]!r}, eager {want[1]!r}"


def _close_values(got, want, ref) -> str | None:
    if got is None or want is None:
        return None if got is None and want is None else "one has no values"
    if got.shape != want.shape:
        return f"shape {tuple(got.shape)} vs {tuple(want.shape)}"
    if not (got.is_floating_point() or got.is_complex()):
        return None if torch.equal(got, want) else f"values differ: lazy {got}, eager {want}"
    g, w = got.to(torch.complex128 if got.is_complex() else torch.float64), want.to(
        torch.complex128 if want.is_complex() else torch.float64
    )
    if torch.equal(g.isnan(), w.isnan()) and torch.allclose(
        g.nan_to_num(0), w.nan_to_num(0), atol=ATOL, rtol=0
    ):
        return None
    if ref is None or ref.shape != want.shape:
        return f"values differ beyond {ATOL} (no float64 run to compare): lazy {got}, eager {want}"
    r = ref.to(g.dtype)
    lazy_error = (g - r).abs().nan_to_num(0).max().item() if r.numel() else 0.0
    eager_error = (w - r).abs().nan_to_num(0).max().item() if r.numel() else 0.0
    if lazy_error <= FACTOR * eager_error + ATOL:
        return None
    return f"lazy is {lazy_error:.3g} from the float64 run, eager {eager_error:.3g}"


def compare(code: str, lazy_device: str) -> dict:
    """Run ``code`` eagerly and lazily; the verdict as a JSON-ready dict."""
    eager = _run(code, "cpu", torch.float32)
    lazy = _run(code, lazy_device, torch.float32)
    verdict = {
        "eager": _describe(eager),
        "lazy": _describe(lazy),
        "lazy_error_type": lazy[1].__name__ if lazy[0] == "raised" else None,
        "lazy_error": lazy[2] if lazy[0] == "raised" else None,
        "eager_error_type": eager[1].__name__ if eager[0] == "raised" else None,
    }
    if eager[0] == "raised" and lazy[0] == "raised":
        verdict["problem"] = _unclear(lazy, eager)
        if verdict["problem"]:
            verdict["traceback"] = lazy[3]
    elif lazy[0] == "raised":
        verdict["problem"] = f"lazy raised where eager returned {_describe(eager)}"
        verdict["traceback"] = lazy[3]
    elif eager[0] == "raised":
        verdict["problem"] = f"eager raised {eager[1].__name__}: {eager[2][:300]}; lazy returned"
    else:
        why = _close(lazy[1], eager[1], None)
        if why and "float64" in why:
            reference = _run(code, "cpu", torch.float64)
            why = _close(lazy[1], eager[1], reference[1] if reference[0] == "value" else None)
        verdict["problem"] = why
    return verdict


def _unclear(lazy, eager) -> str | None:
    """Why lazy's error is not one a user can act on, or None."""
    error_type, message = lazy[1], lazy[2]
    if any(word in message for word in INTERNAL_WORDS):
        return f"internal error: {error_type.__name__}: {message[:300]}"
    if issubclass(error_type, INTERNAL_TYPES) and not issubclass(eager[1], error_type):
        return f"internal error type {error_type.__name__}: {message[:300]}"
    if not message and eager[2]:  # eager's has words (a bare KeyboardInterrupt has none)
        return f"{error_type.__name__} without a message"
    return None


def _describe(outcome) -> str:
    if outcome[0] == "raised":
        return f"raised {outcome[1].__name__}: {outcome[2][:200]}"
    return "returned"


def main() -> None:
    lr.init()
    lazy_device = lr.device_name()
    cases = json.load(sys.stdin)
    for name, code in cases:
        print(f"CASE {name}", flush=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                verdict = compare(code, lazy_device)
            except Exception:  # noqa: BLE001 (a case the harness cannot compare fails, named)
                verdict = {"problem": f"the sweep could not compare:\n{traceback.format_exc()}"}
                verdict.update(lazy_error=None, lazy_error_type=None)
        print(f"RESULT {json.dumps([name, verdict])}", flush=True)


if __name__ == "__main__":
    main()
