"""OpInfo conformance: run torch's `op_db` lazily and eagerly, and classify every entry.

    python tests/conformance/opinfo_harness.py [--dtype D] [--grad] [--samples N]
        [--only NAME ...] [--json FILE] [--backend NAME] [--subset inductor]

The lazy device runs on the backend ``--backend`` names, else ``LAZYGEN_BACKEND``, else the
default (torchscript). ``--subset inductor`` runs ``INDUCTOR_SUBSET`` only: every sample
is a graph Inductor compiles (seconds each here), so the whole suite would take hours.

Every `op_db` entry that supports the dtype (``--dtype``: float32 by default, float64,
bfloat16, int64, bool) on CPU runs its sample inputs twice: eagerly on CPU, and on the
`lazygen` device (inputs moved there, outputs moved back). With ``--grad`` the entries are
those that support autograd in that dtype, and what is compared is the gradient of every
sample input that requires one: the outputs that require a gradient (after the sample's
``output_process_fn_grad``, as PyTorch's gradient tests do) are back-propagated with fixed
random cotangents. Samples are built under a fixed seed, so a run is deterministic and
``--samples N`` (the first N samples of each entry that run eagerly) is a subset of the
full run. Each entry is classified by its worst sample:

* ``lazy``      correct, and no eager fallback ran (no ``aten::*`` counter moved);
* ``fallback``  correct, but at least one op went through the eager fallback;
* ``wrong``     the lazy result differs from eager;
* ``error``     the lazy run raised where the eager run did not;
* ``no_sample`` no sample input ran eagerly (nothing to compare, so not counted as
  correct; on this CPU-only machine that is the CUDA-only jiterator entries), or, with
  ``--grad``, none had an output that requires a gradient.

Random ops are compared with the same seed for both runs. Ops that return uninitialised
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

import argparse
import json
import sys
import warnings
from collections import Counter
from dataclasses import dataclass

import torch
from torch.utils._pytree import tree_flatten, tree_map

CLASSES = ("lazy", "fallback", "wrong", "error", "no_sample")
DTYPES = {
    "float32": torch.float32,
    "float64": torch.float64,
    "bfloat16": torch.bfloat16,
    "int64": torch.int64,
    "bool": torch.bool,
}
#: Sample dtype -> (the wider dtype of the reference run, relative tolerance against it).
REFERENCE = {torch.float32: (torch.float64, 1.3e-6), torch.bfloat16: (torch.float32, 1.6e-2)}
CORRECT = frozenset({"lazy", "fallback"})
_WORST_FIRST = ("error", "wrong", "fallback", "lazy")
#: Entries whose values are uninitialised memory: only metadata is comparable.
UNINITIALISED = frozenset(
    {"empty", "empty_like", "new_empty", "new_empty_strided", "empty_permuted", "empty_strided"}
)


@dataclass(frozen=True)
class EntryResult:
    name: str
    outcome: str
    samples: int
    detail: str = ""
    fallbacks: tuple[str, ...] = ()


#: A representative slice of op_db for compiling backends: elementwise ops with wrapped
#: Scalar arguments (the values Inductor must keep as runtime inputs), promotion of int
#: tensors by float scalars, reductions, matmuls, softmax, views and indexing.
INDUCTOR_SUBSET = frozenset(
    {
        "add",
        "sub",
        "mul",
        "div.no_rounding_mode",
        "pow",
        "clamp",
        "lerp",
        "addcdiv",
        "addmm",
        "sum",
        "mean",
        "amax",
        "softmax",
        "nn.functional.gelu",
        "where",
        "cat",
        "transpose",
        "index_select",
    }
)


def entry_name(opinfo) -> str:
    return f"{opinfo.name}.{opinfo.variant_test_name}" if opinfo.variant_test_name else opinfo.name


def cpu_entries(dtype: torch.dtype = torch.float32, grad: bool = False):
    """The `op_db` entries that support ``dtype`` on CPU (and its backward, with ``grad``)."""
    from torch.testing._internal.common_methods_invocations import op_db

    return [
        o
        for o in op_db
        if dtype in o.supported_dtypes("cpu")
        and (not grad or (o.supports_autograd and dtype in o.supported_backward_dtypes("cpu")))
    ]


def float32_cpu_entries():
    return cpu_entries(torch.float32)


def _moved(t: torch.Tensor, device, dtype=None) -> torch.Tensor:
    """``t`` on ``device`` (in ``dtype``): a new leaf that requires a gradient if ``t`` does."""
    if not t.requires_grad:
        return t.to(device, dtype)
    return t.detach().to(device, dtype).requires_grad_()


def _to_device(tree, device, dtype_map=None):
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


def _to_cpu(tree):
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


def _compare(lazy, eager, metadata_only: bool = False) -> str:
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


def _as_accurate_as_eager(compute, args, kwargs, lazy, eager, dtype) -> bool:
    """Lazy's float results are no further from a wider run than eager's (see above)."""
    if dtype not in REFERENCE:
        return False
    wide, rtol = REFERENCE[dtype]
    try:
        wide_args, wide_kwargs = _to_device((args, kwargs), "cpu", {dtype: wide})
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
            if _compare(got, want):
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


def run_entry(
    opinfo, device, metrics, max_samples: int, dtype=torch.float32, grad: bool = False
) -> EntryResult:
    name = entry_name(opinfo)
    outcomes: list[str] = []
    details: list[str] = []
    fallbacks: set[str] = set()
    try:
        torch.manual_seed(0)
        samples = list(opinfo.sample_inputs("cpu", dtype, requires_grad=grad))
    except Exception as exc:  # the OpInfo itself cannot build samples here
        return EntryResult(name, "no_sample", 0, f"sample_inputs failed: {exc}")
    ran = 0
    for sample in samples:
        if ran >= max_samples:
            break
        args = (sample.input, *sample.args)

        def compute(args, kwargs, sample=sample):
            if grad:
                return gradients(opinfo, sample, args, kwargs, dtype)
            return opinfo(*args, **kwargs)

        try:
            torch.manual_seed(0)
            eager = compute(args, sample.kwargs)
        except Exception:
            continue
        ran += 1
        try:
            lazy_args, lazy_kwargs = _to_device((args, sample.kwargs), device)
            metrics.reset()
            torch.manual_seed(0)
            lazy = _to_cpu(compute(lazy_args, lazy_kwargs))
            used = [n for n in metrics.counter_names() if n.startswith("aten::")]
        except Exception as exc:
            outcomes.append("error")
            details.append(
                f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"
            )
            continue
        difference = _compare(lazy, eager, opinfo.name in UNINITIALISED)
        if difference and _as_accurate_as_eager(compute, args, sample.kwargs, lazy, eager, dtype):
            difference = ""
        if difference:
            outcomes.append("wrong")
            details.append(difference)
        else:
            outcomes.append("fallback" if used else "lazy")
            fallbacks.update(used)
    if not outcomes:
        return EntryResult(name, "no_sample", 0, "no sample ran eagerly")
    outcome = next(o for o in _WORST_FIRST if o in outcomes)
    detail = details[0] if details else ""
    return EntryResult(name, outcome, ran, detail, tuple(sorted(fallbacks)))


def run_suite(
    max_samples: int = 100_000,
    only: set[str] | None = None,
    dtype: torch.dtype = torch.float32,
    grad: bool = False,
    backend: str | None = None,
) -> list[EntryResult]:
    import lazygen.runtime as lr

    lr.init(backend)
    device = lr.device()
    results = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for opinfo in cpu_entries(dtype, grad):
            name = entry_name(opinfo)
            if only and name not in only and opinfo.name not in only:
                continue
            results.append(run_entry(opinfo, device, lr.metrics, max_samples, dtype, grad))
            lr.mark_step()
    return results


def summarise(results: list[EntryResult]) -> dict:
    counts = Counter(r.outcome for r in results)
    correct = sum(counts[c] for c in CORRECT)
    return {
        "entries": len(results),
        "correct": correct,
        "correct_pct": round(100.0 * correct / max(len(results), 1), 2),
        **{c: counts[c] for c in CLASSES},
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="OpInfo conformance of the lazygen device")
    parser.add_argument("--samples", type=int, default=100_000, help="max sample inputs per entry")
    parser.add_argument("--dtype", choices=sorted(DTYPES), default="float32", help="sample dtype")
    parser.add_argument("--grad", action="store_true", help="compare gradients, not outputs")
    parser.add_argument("--only", nargs="*", help="entry names to run")
    parser.add_argument("--json", help="write per-entry results here")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every entry")
    parser.add_argument("--backend", help="the backend to run on (default: LAZYGEN_BACKEND)")
    parser.add_argument("--subset", choices=["inductor"], help="run INDUCTOR_SUBSET only")
    args = parser.parse_args(argv)
    only = set(args.only) if args.only else None
    if args.subset == "inductor":
        only = (only or set()) | INDUCTOR_SUBSET
    results = run_suite(args.samples, only, DTYPES[args.dtype], args.grad, args.backend)
    for r in results:
        if args.verbose or r.outcome in ("wrong", "error"):
            print(f"{r.outcome:<9} {r.name:<40} {r.detail}")
    summary = summarise(results)
    import lazygen.runtime as lr

    print(json.dumps({"backend": lr.backend().name, **summary}))
    fallback_ops = Counter(op for r in results for op in r.fallbacks)
    print(
        "most common fallbacks:", ", ".join(f"{op} ({n})" for op, n in fallback_ops.most_common(25))
    )
    if args.json:
        with open(args.json, "w") as f:
            json.dump({r.name: r.outcome for r in results}, f, indent=1, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
