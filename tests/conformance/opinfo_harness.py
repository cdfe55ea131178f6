"""OpInfo conformance of the repository's baselines: run torch's `op_db` lazily and
eagerly in this one process, and classify every entry.

    python tests/conformance/opinfo_harness.py [--dtype D] [--grad] [--samples N]
        [--only NAME ...] [--json FILE] [--backend NAME] [--subset inductor]

The lazy device runs on the backend ``--backend`` names, else ``LAZYGEN_BACKEND``, else the
default (torchscript). ``--subset inductor`` runs ``INDUCTOR_SUBSET`` only: every sample
is a graph Inductor compiles (seconds each here), so the whole suite would take hours.

Every `op_db` entry that supports the dtype (``--dtype``: float32 by default, float64,
bfloat16, int64, bool) on CPU is classified by ``lazygen.conformance.classify`` (lazy,
fallback, wrong, error, no_sample; its docstring says how samples are compared). This is
the stored baselines' runner (``test_opinfo.py`` runs it in a subprocess); backend authors
run ``lazygen conformance``, which classifies with the same code in crash-isolated worker
processes and names the entry of any crash.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from collections import Counter

import torch

from lazygen.conformance.classify import CLASSES, CORRECT, EntryResult, run_entry, summarise
from lazygen.conformance.entries import DTYPES, cpu_entries, entry_name

__all__ = [
    "CLASSES",
    "CORRECT",
    "DTYPES",
    "INDUCTOR_SUBSET",
    "EntryResult",
    "cpu_entries",
    "float32_cpu_entries",
    "main",
    "run_suite",
]


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


def float32_cpu_entries():
    return cpu_entries(torch.float32)


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
