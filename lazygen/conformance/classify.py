"""Run one entry's sample inputs lazily and eagerly in this process, and classify it.

Each sample runs twice: eagerly on CPU, and on the lazy device (inputs moved there,
outputs moved back). With ``grad`` what is compared is the gradient of every sample input
that requires one: the outputs that require a gradient (after the sample's
``output_process_fn_grad``, as PyTorch's gradient tests do) are back-propagated with fixed
random cotangents. Samples are built under a fixed seed, so a run is deterministic and
``max_samples`` (the first N samples that run eagerly) gives a subset of the full run. An
entry is classified by its worst sample:

* ``lazy``      correct, and no eager fallback ran (no ``aten::*`` counter moved);
* ``fallback``  correct, but at least one op went through the eager fallback (named);
* ``wrong``     the lazy result differs from eager (largest absolute/relative difference);
* ``error``     the lazy run raised where the eager run did not;
* ``no_sample`` no sample input ran eagerly (nothing to compare, so not counted as
  correct), or, with ``grad``, none had an output that requires a gradient.

(``crash`` and ``timeout`` are the runner's: a process cannot classify its own death.)

Random ops are compared with the same seed for both runs. On a backend that draws its own
numbers from seeds (``Backend.random_numbers = "seed"``), a sample that drew some and
differs from eager is not compared (an entry with no other sample is ``no_sample``). Ops that return uninitialised
memory (`empty`, `new_empty`, ...) are compared by shape and dtype only, as PyTorch's own
OpInfo tests do. A floating result outside `assert_close`'s tolerance for its dtype still
counts as correct when it is as accurate as eager's: both are measured against the op run
in a wider type (float32 samples against float64, bfloat16 ones against float32), and
lazy's largest error may be at most twice eager's plus the dtype's tolerance. Lazy graphs
may sum in another order than eager's kernels (a decomposed `matmul` runs `mm` where eager
runs `mv`; a bfloat16 chain may round between ops where eager's fused kernel does not), and
which order a BLAS call takes depends on the CPU. float64, int64 and bool results have no
wider reference: they must pass `assert_close` (exact for integers and bools).
"""

from __future__ import annotations

import functools
import math
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

import torch
from torch.utils._pytree import tree_flatten, tree_map

from .entries import UNINITIALISED, entry_name

#: The metrics counter of seeds a ``"seed"`` backend's random ops drew
#: (``lazygen.runtime.tracing.random_inputs.SEED_DRAWS``).
SEED_DRAWS = "RandomSeedDraw"

#: Outcomes of a classified entry, best first.
CLASSES = ("lazy", "fallback", "wrong", "error", "no_sample")
#: Outcomes the runner adds for entries whose process died or hung.
FAILURES = ("crash", "timeout")
OUTCOMES = CLASSES + FAILURES
CORRECT = frozenset({"lazy", "fallback"})
#: Sample dtype -> (the wider dtype of the reference run, relative tolerance against it).
REFERENCE = {torch.float32: (torch.float64, 1.3e-6), torch.bfloat16: (torch.float32, 1.6e-2)}
_WORST_FIRST = ("error", "wrong", "fallback", "lazy")


@dataclass(frozen=True)
class EntryResult:
    """One entry's classification. ``fallbacks`` are the ``aten::<op>`` counters the lazy
    run moved; ``max_abs``/``max_rel`` the largest differences of a ``wrong`` sample;
    ``signal`` the name of the signal that killed a ``crash``ed entry's process."""

    name: str
    outcome: str
    samples: int
    detail: str = ""
    fallbacks: tuple[str, ...] = ()
    max_abs: float | None = None
    max_rel: float | None = None
    signal: str | None = None
    seconds: float | None = None
    extra: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        data = asdict(self)
        data["fallbacks"] = list(self.fallbacks)
        return {k: v for k, v in data.items() if v not in (None, "", [], {})} | {
            "outcome": self.outcome,
            "samples": self.samples,
        }

    @classmethod
    def from_json(cls, data: dict) -> EntryResult:
        data = dict(data)
        data["fallbacks"] = tuple(data.get("fallbacks", ()))
        return cls(**data)


def _moved(t: torch.Tensor, device, dtype=None) -> torch.Tensor:
    """``t`` on ``device`` (in ``dtype``): a new leaf that requires a gradient if ``t`` does."""
    if not t.requires_grad:
        return t.to(device, dtype)
    return t.detach().to(device, dtype).requires_grad_()


def to_device(tree, device, dtype_map=None):
    """Tensors moved (and cast per ``dtype_map``); one tensor appearing twice stays one
    tensor, so gradients that eager accumulates in it are accumulated lazily too."""
    memo: dict[int, torch.Tensor] = {}

    def move(t):
        if not isinstance(t, torch.Tensor):
            return t
        if id(t) not in memo:
            memo[id(t)] = _moved(t, device, (dtype_map or {}).get(t.dtype))
        return memo[id(t)]

    return tree_map(move, tree)


def to_cpu(tree):
    leaves, _ = tree_flatten(tree)
    if not any(isinstance(t, torch.Tensor) for t in leaves):
        return tree  # keeps containers such as torch.Size as they are
    return tree_map(lambda t: t.cpu() if isinstance(t, torch.Tensor) else t, tree)


class NoGradient(Exception):
    """The sample has no input or no output that requires a gradient."""


def _cotangent(t: torch.Tensor, sample_dtype: torch.dtype) -> torch.Tensor:
    """Fixed random values shaped like ``t`` (drawn in the sample's dtype, so a wider
    reference run back-propagates the same values)."""
    generator = torch.Generator().manual_seed(t.numel())
    values = torch.randn(t.shape, generator=generator).to(sample_dtype)
    return values.to(t.device, t.dtype)


def gradients(opinfo, sample, args, kwargs, sample_dtype):
    """The gradients of the sample inputs that require one (None where unused)."""
    inputs = [
        t
        for t in tree_flatten((args, kwargs))[0]
        if isinstance(t, torch.Tensor) and t.requires_grad
    ]
    output = sample.output_process_fn_grad(opinfo.gradcheck_wrapper(opinfo, *args, **kwargs))
    outputs = [
        t for t in tree_flatten(output)[0] if isinstance(t, torch.Tensor) and t.requires_grad
    ]
    if not inputs or not outputs:
        raise NoGradient
    cotangents = [_cotangent(t, sample_dtype) for t in outputs]
    return torch.autograd.grad(outputs, inputs, cotangents, allow_unused=True)


def compare(lazy, eager, metadata_only: bool = False) -> str:
    """'' when equal, else a short description of the difference."""
    lazy_leaves, lazy_spec = tree_flatten(lazy)
    eager_leaves, eager_spec = tree_flatten(eager)
    if lazy_spec != eager_spec:
        return f"structure {lazy_spec} vs {eager_spec}"
    for got, want in zip(lazy_leaves, eager_leaves, strict=True):
        if isinstance(want, torch.Tensor):
            if not isinstance(got, torch.Tensor):
                return f"got {type(got).__name__}, expected a tensor"
            if metadata_only:
                if (got.shape, got.dtype) != (want.shape, want.dtype):
                    return f"{tuple(got.shape)}/{got.dtype} vs {tuple(want.shape)}/{want.dtype}"
                continue
            try:
                torch.testing.assert_close(
                    got, want, equal_nan=True, check_device=False, check_stride=False
                )
            except AssertionError as exc:
                return str(exc).splitlines()[0][:200]
        elif got != want and not (got != got and want != want):  # NaN == NaN here
            return f"{got!r} != {want!r}"
    return ""


def max_difference(lazy, eager) -> tuple[float | None, float | None]:
    """The largest absolute and relative differences between same-shaped tensor leaves
    (NaN where both are NaN counts as equal; None when no pair of tensors is comparable)."""
    lazy_leaves, _ = tree_flatten(lazy)
    eager_leaves, _ = tree_flatten(eager)
    worst_abs: float | None = None
    worst_rel: float | None = None
    for got, want in zip(lazy_leaves, eager_leaves, strict=False):
        if not (isinstance(got, torch.Tensor) and isinstance(want, torch.Tensor)):
            continue
        if got.shape != want.shape or got.is_complex() != want.is_complex():
            continue
        if not got.numel():
            continue
        cast = torch.complex128 if want.is_complex() else torch.float64
        g, w = got.detach().to(cast), want.detach().to(cast)
        both_nan = g.isnan() & w.isnan()
        diff = (g - w).abs().masked_fill(both_nan, 0.0)
        rel = (diff / w.abs()).masked_fill(both_nan | (diff == 0), 0.0)
        a, r = diff.max().item(), rel.max().item()
        worst_abs = a if worst_abs is None or _greater(a, worst_abs) else worst_abs
        worst_rel = r if worst_rel is None or _greater(r, worst_rel) else worst_rel
    return worst_abs, worst_rel


def _greater(a: float, b: float) -> bool:
    return math.isnan(a) or (not math.isnan(b) and a > b)


def _as_accurate_as_eager(compute, args, kwargs, lazy, eager, dtype) -> bool:
    """Lazy's float results are no further from a wider run than eager's (see above)."""
    if dtype not in REFERENCE:
        return False
    wide, rtol = REFERENCE[dtype]
    try:
        wide_args, wide_kwargs = to_device((args, kwargs), "cpu", {dtype: wide})
        torch.manual_seed(0)
        reference = compute(wide_args, wide_kwargs)
    except Exception:
        return False
    lazy_leaves, _ = tree_flatten(lazy)
    eager_leaves, _ = tree_flatten(eager)
    reference_leaves, _ = tree_flatten(reference)
    if not len(lazy_leaves) == len(eager_leaves) == len(reference_leaves):
        return False
    for got, want, ref in zip(lazy_leaves, eager_leaves, reference_leaves, strict=True):
        if not isinstance(want, torch.Tensor) or not want.dtype.is_floating_point:
            if compare(got, want):
                return False
            continue
        if not isinstance(ref, torch.Tensor):
            return False
        if not isinstance(got, torch.Tensor) or got.shape != want.shape:
            return False
        ref = ref.to(torch.float64)
        lazy_error = (got.double() - ref).abs().nan_to_num(0.0).max().item() if got.numel() else 0
        eager_error = (
            (want.double() - ref).abs().nan_to_num(0.0).max().item() if want.numel() else 0
        )
        tolerance = 1e-5 + rtol * (ref.abs().max().item() if ref.numel() else 0.0)
        if not lazy_error <= 2 * eager_error + tolerance:
            return False
        if not torch.equal(got.isnan(), want.isnan()):
            return False
    return True


def _message(exc: BaseException) -> str:
    text = str(exc).splitlines()[0][:200] if str(exc) else ""
    return f"{type(exc).__name__}: {text}"


def run_entry(
    opinfo: Any,
    device: torch.device | str,
    metrics: Any,
    max_samples: int,
    dtype: torch.dtype = torch.float32,
    grad: bool = False,
) -> EntryResult:
    """Classify ``opinfo`` (an OpInfo or alike: ``name``, ``variant_test_name``, ``sample_inputs``,
    ``__call__``, ``gradcheck_wrapper``) on lazy ``device``, whose fallbacks ``metrics`` counts."""
    name = entry_name(opinfo)
    outcomes: list[str] = []
    details: list[str] = []
    differences: list[tuple[float | None, float | None]] = []
    fallbacks: set[str] = set()
    try:
        torch.manual_seed(0)
        samples = list(opinfo.sample_inputs("cpu", dtype, requires_grad=grad))
    except Exception as exc:  # the OpInfo itself cannot build samples here
        return EntryResult(name, "no_sample", 0, f"sample_inputs failed: {exc}")
    ran, random_only = 0, False
    for sample in samples:
        if ran >= max_samples:
            break
        args = (sample.input, *sample.args)
        compute = functools.partial(_compute, opinfo, sample, dtype if grad else None)
        try:
            torch.manual_seed(0)
            eager = compute(args, sample.kwargs)
        except Exception:
            continue
        ran += 1
        try:
            lazy, used = _run_lazily(compute, args, sample.kwargs, device, metrics)
        except Exception as exc:
            outcomes.append("error")
            details.append(_message(exc))
            continue
        difference = _difference(opinfo.name, compute, args, sample.kwargs, lazy, eager, dtype)
        if difference and metrics.counter_value(SEED_DRAWS):
            # The backend draws its own random numbers (``Backend.random_numbers = "seed"``):
            # nothing to compare with eager's, so the sample does not count as run.
            ran -= 1
            random_only = True
            continue
        if difference:
            outcomes.append("wrong")
            details.append(difference)
            differences.append(max_difference(lazy, eager))
        else:
            outcomes.append("fallback" if used else "lazy")
            fallbacks.update(used)
    if not outcomes:
        why = (
            "random: the backend draws its own numbers (seeds), not eager's"
            if random_only
            else "no sample ran eagerly"
        )
        return EntryResult(name, "no_sample", 0, why)
    return _entry_result(name, outcomes, details, differences, fallbacks, ran)


def _compute(opinfo, sample, grad_dtype, args, kwargs):
    """The sample's outputs (``grad_dtype`` None), or its gradients in ``grad_dtype``."""
    if grad_dtype is not None:
        return gradients(opinfo, sample, args, kwargs, grad_dtype)
    return opinfo(*args, **kwargs)


def _difference(name: str, compute, args, kwargs, lazy, eager, dtype) -> str:
    """How the lazy results differ from eager's ('' when they agree, or when eager's own
    numerics would differ as much)."""
    difference = compare(lazy, eager, name in UNINITIALISED)
    if difference and _as_accurate_as_eager(compute, args, kwargs, lazy, eager, dtype):
        return ""
    return difference


def _run_lazily(compute, args, kwargs, device, metrics) -> tuple[Any, list[str]]:
    """The sample computed on the lazy ``device`` (its results back on the CPU), and the
    ops that went through the eager fallback meanwhile."""
    lazy_args, lazy_kwargs = to_device((args, kwargs), device)
    metrics.reset()
    torch.manual_seed(0)
    lazy = to_cpu(compute(lazy_args, lazy_kwargs))
    return lazy, [n for n in metrics.counter_names() if n.startswith("aten::")]


def _entry_result(name, outcomes, details, differences, fallbacks, ran: int) -> EntryResult:
    """The entry's outcome: its worst sample's, with the first detail and the largest
    differences."""
    outcome = next(o for o in _WORST_FIRST if o in outcomes)
    detail = details[0] if details else ""
    max_abs = max_rel = None
    if differences:
        max_abs = max((d[0] for d in differences if d[0] is not None), default=None, key=_key)
        max_rel = max((d[1] for d in differences if d[1] is not None), default=None, key=_key)
    return EntryResult(name, outcome, ran, detail, tuple(sorted(fallbacks)), max_abs, max_rel)


def _key(value: float) -> float:
    return math.inf if math.isnan(value) else value


def summarise(results: list[EntryResult]) -> dict:
    """Counts per outcome, and how many entries (and which share) are correct."""
    counts = Counter(r.outcome for r in results)
    correct = sum(counts[c] for c in CORRECT)
    summary = {
        "entries": len(results),
        "correct": correct,
        "correct_pct": round(100.0 * correct / max(len(results), 1), 2),
        **{c: counts[c] for c in CLASSES},
    }
    summary.update({c: counts[c] for c in FAILURES if counts[c]})
    return summary
