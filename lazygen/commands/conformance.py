"""Run PyTorch's OpInfo tests of an op list's ops on a backend's lazy device.

For every OpInfo entry (torch.testing._internal's ``op_db``) that exercises an op of the
list, the entry's sample inputs run eagerly on CPU and on the lazy device, and the entry
is classified: lazy (correct, traced), fallback (correct, but these ops ran eagerly),
wrong (largest absolute/relative difference), error (the lazy run raised), crash (the
process died: the signal and where) or timeout. Entries run in worker processes, in
chunks; a chunk whose worker dies is re-run so that the crash names its entry. One line
per entry is printed as it finishes.

Exit status: 0, or 1 when an entry crashed or timed out (with --strict: or was wrong);
2 for a mistake in the arguments.
"""

from __future__ import annotations

import argparse
import functools
import os
import shlex
import sys
import time
from collections import Counter
from pathlib import Path

from lazygen.commands._inputs import (
    DEFAULT_BACKEND_YAML,
    add_catalogue_arguments,
    add_skip_unknown_argument,
    catalogue_from,
    print_warnings,
)
from lazygen.diagnostics import Diagnostic, LazygenError

HELP = "run PyTorch's OpInfo tests of an op list's ops on a backend and classify each entry"
EXIT_FAILED = 1
#: Op-list sections whose ops have aten overloads that OpInfo samples can reach.
TESTED_SECTIONS = ("full_codegen", "ir_gen", "supported", "autograd")


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0, got {text}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    _add_target_arguments(parser)
    _add_entry_arguments(parser)
    add_catalogue_arguments(parser)
    add_skip_unknown_argument(parser)


def _add_target_arguments(parser: argparse.ArgumentParser) -> None:
    """What to test and how: the op list, the backend, gradients or outputs, the dtype,
    where the matrix goes, how many workers."""
    from lazygen.conformance.entries import DTYPES

    parser.add_argument(
        "backend_yaml",
        nargs="?",
        type=Path,
        default=DEFAULT_BACKEND_YAML,
        metavar="OPLIST",
        help=f"backend op list whose ops to test (default: {DEFAULT_BACKEND_YAML})",
    )
    parser.add_argument(
        "--backend",
        metavar="NAME",
        help="backend to run on: torchscript, fx, inductor or an installed one "
        "(default: LAZYGEN_BACKEND, else torchscript)",
    )
    parser.add_argument("--grad", action="store_true", help="compare gradients, not outputs")
    parser.add_argument(
        "--dtype", choices=sorted(DTYPES), default="float32", help="sample dtype (float32)"
    )
    parser.add_argument("--json", type=Path, metavar="FILE", help="write the result matrix here")
    parser.add_argument(
        "--jobs", type=_positive_int, default=1, metavar="N", help="worker processes at a time"
    )


def _add_entry_arguments(parser: argparse.ArgumentParser) -> None:
    """Which entries run, how many samples each, how long each may take, how strict
    the exit status is."""
    parser.add_argument(
        "--only",
        nargs="+",
        metavar="NAME",
        help="run only these: entry names (div.no_rounding_mode), OpInfo names (div), "
        "op-list names (add.Tensor: the entries exercising it) or conversion cases",
    )
    parser.add_argument(
        "--strict", action="store_true", help="exit 1 when an entry is wrong, not only on crashes"
    )
    parser.add_argument(
        "--all",
        dest="every_entry",
        action="store_true",
        help="run every entry of the dtype, not only those exercising the list's ops",
    )
    parser.add_argument(
        "--conversions",
        action="store_true",
        help="also run dtype/memory-format conversions followed by views and in-place ops",
    )
    parser.add_argument(
        "--list",
        dest="list_only",
        action="store_true",
        help="print the entries that would run, with the list's ops each exercises, and stop",
    )
    parser.add_argument(
        "--samples",
        type=_positive_int,
        metavar="N",
        help="at most N sample inputs per entry (default: all)",
    )
    parser.add_argument(
        "--timeout",
        type=_positive_float,
        default=None,
        metavar="SECONDS",
        help="kill an entry running longer (default: 900)",
    )
    parser.add_argument(
        "--chunk-size",
        type=_positive_int,
        metavar="N",
        help="entries per worker process (default: balanced over --jobs, at most 40)",
    )


def _error(message: str, hint: str = "") -> LazygenError:
    return LazygenError.at(None, message, hint)


@functools.cache
def _backend_name(name: str | None) -> str:
    """The backend the workers will run: ``--backend``, else as ``init()`` chooses (the
    default, or its stand-in where TorchScript does not work: the report names the one
    that ran)."""
    from lazygen.runtime.backends import default_backend

    return name or os.environ.get("LAZYGEN_BACKEND") or default_backend().name


def _check_backend(name: str | None) -> None:
    """An unknown backend name fails here, before any worker starts."""
    if name is None:
        return
    from lazygen.runtime import available_backends

    available = available_backends()
    if name not in available:
        raise _error(
            f"no backend named {name!r}; available: {', '.join(available)}",
            "a third-party backend must be installed in this environment with an entry point "
            "in the 'lazygen.backends' group",
        )


def _entry_vocabulary(opinfos, cases) -> set[str]:
    """Names ``--only`` can give without consulting the op list: entries, OpInfo names,
    conversion cases."""
    from lazygen.conformance.entries import entry_name

    return {entry_name(o) for o in opinfos} | {o.name for o in opinfos} | set(cases)


def _selection(args: argparse.Namespace, ops: list[str], opinfos, cases: list[str], dtype):
    """The entries to run, and per op of the list the entries exercising it. Recording
    which ops an entry calls runs its first sample: done for every entry only when the
    op view or ``--only``'s op-list names need it."""
    from lazygen.conformance.entries import entry_name
    from lazygen.conformance.opmap import entries_for_ops
    from lazygen.conformance.select import SelectionError, select

    try:
        if args.only:  # unknown names fail before anything is recorded
            select(opinfos, dict.fromkeys(ops, ["?"]), only=args.only, cases=cases)
        if args.only and set(args.only) <= _entry_vocabulary(opinfos, cases):
            selection = select(opinfos, {}, only=args.only, cases=cases)
            chosen = set(selection.entries)
            selected = [o for o in opinfos if entry_name(o) in chosen]
            selection.ops = entries_for_ops(ops, selected, dtype, args.grad)
            return selection
        exercised = entries_for_ops(ops, opinfos, dtype, args.grad)
        return select(opinfos, exercised, only=args.only, every_entry=args.every_entry, cases=cases)
    except SelectionError as exc:
        raise LazygenError(
            [Diagnostic(None, str(exc)), *(Diagnostic(None, h) for h in exc.hints)]
        ) from None


def run(args: argparse.Namespace) -> int:
    from lazygen.conformance import report
    from lazygen.conformance.runner import (
        DEFAULT_TIMEOUT,
        ConformanceSetupError,
        RunConfig,
        Runner,
    )
    from lazygen.loaders.backend_yaml import load_backend

    if args.json is not None and not args.json.parent.is_dir():
        raise _error(f"--json {args.json}: directory {args.json.parent} does not exist")
    _check_backend(args.backend)
    op_list = load_backend(
        args.backend_yaml, catalogue_from(args), skip_unknown=args.skip_unknown_ops
    )
    print_warnings(op_list.notices)
    ops = [str(e.name) for section in TESTED_SECTIONS for e in op_list.section(section)]
    selection = _selected(args, ops)
    if args.list_only:
        _print_selection(selection)
        return 0
    total = len(selection.entries)
    _announce(args, op_list.backend, ops, selection)
    done = 0

    def on_result(result) -> None:
        nonlocal done
        done += 1
        print(report.line(result, done, total), flush=True)

    config = RunConfig(
        backend=args.backend,
        dtype=args.dtype,
        grad=args.grad,
        samples=args.samples or 100_000,
        conversions=args.conversions,
        jobs=args.jobs,
        chunk_size=args.chunk_size,
        timeout=args.timeout or DEFAULT_TIMEOUT,
    )
    runner = Runner(config, on_result)
    started = time.perf_counter()
    try:
        results = runner.run(selection.entries)
    except ConformanceSetupError as exc:
        raise _error(f"the conformance workers cannot run: {exc}") from None
    elapsed = time.perf_counter() - started
    _print_summary(results, runner, elapsed, report, args)
    if args.json is not None:
        _write_matrix(args, results, runner, config.samples, selection, report)
    return exit_status(results, bool(runner.failures), args.strict)


def _selected(args: argparse.Namespace, ops: list[str]):
    """The entries to run for the list's ``ops`` (``--only``, ``--all``, conversions), or
    a clear error when none exercises them."""
    from lazygen.conformance.entries import DTYPES, cpu_entries

    dtype = DTYPES[args.dtype]
    opinfos = cpu_entries(dtype, args.grad)
    cases: list[str] = []
    if args.conversions:
        from lazygen.conformance.conversions import conversion_cases

        cases = [case.name for case in conversion_cases(args.grad)]
    selection = _selection(args, ops, opinfos, cases, dtype)
    if not selection.entries:
        raise _error(
            f"no OpInfo entry exercises the ops of {args.backend_yaml} in {args.dtype}",
            "run them all with --all",
        )
    return selection


def _announce(args: argparse.Namespace, list_backend: str, ops: list[str], selection) -> None:
    """The run's first lines: what runs where, and the list's ops no entry exercises."""
    print(
        f"conformance: {args.backend_yaml} (backend {list_backend}, {len(ops)} ops), "
        f"{len(selection.entries)} entries, {args.dtype}{' gradients' if args.grad else ''}, "
        f"backend {_backend_name(args.backend)}, {args.jobs} job(s)",
        flush=True,
    )
    if selection.unreached and not args.only:
        print(
            f"  no OpInfo entry exercises {len(selection.unreached)} op(s): "
            + ", ".join(selection.unreached),
            flush=True,
        )


def _write_matrix(args, results, runner, samples: int, selection, report) -> None:
    """``--json``: the result matrix, with what the run compared."""
    data = report.matrix(
        results,
        backend=runner.backend_name or args.backend,
        op_list=str(args.backend_yaml),
        dtype=args.dtype,
        grad=args.grad,
        samples=samples,
        ops={op: names for op, names in selection.ops.items()},
        failures=runner.failures,
    )
    report.write_matrix(args.json, data)
    print(f"wrote {args.json}")


def exit_status(results, worker_failed: bool, strict: bool) -> int:
    """1 when an entry crashed or timed out, or a worker died (``strict``: or an entry
    was wrong), else 0."""
    failed = {"crash", "timeout"} | ({"wrong"} if strict else set())
    if worker_failed or any(r.outcome in failed for r in results):
        return EXIT_FAILED
    return 0


def _print_selection(selection) -> None:
    """``--list``: each entry with the list's ops it exercises, then the ops none does."""
    exercised: dict[str, list[str]] = {}
    for op, names in selection.ops.items():
        for name in names:
            exercised.setdefault(name, []).append(op)
    for name in selection.entries:
        ops = exercised.get(name)
        print(f"{name}  ({', '.join(ops)})" if ops else name)
    print(f"{len(selection.entries)} entries")
    if selection.unreached:
        print("no entry exercises: " + ", ".join(selection.unreached))


def _repro(args: argparse.Namespace, name: str) -> str:
    """The command that runs entry ``name`` alone with this run's settings."""
    words = ["lazygen conformance", shlex.quote(str(args.backend_yaml))]
    words += [f"--backend {shlex.quote(_backend_name(args.backend))}"]
    words += [f"--dtype {args.dtype}"] if args.dtype != "float32" else []
    words += ["--grad"] if args.grad else []
    words += [f"--samples {args.samples}"] if args.samples else []
    words += ["--conversions"] if name.startswith("to.") and args.conversions else []
    return " ".join([*words, "--only", shlex.quote(name)])


def _print_summary(results, runner, elapsed: float, report, args) -> None:
    print(f"{report.summary_line(results)} in {elapsed:.0f} s on {runner.backend_name}")
    fallbacks = Counter(op for r in results for op in r.fallbacks)
    if fallbacks:
        print(
            "most common fallbacks: "
            + ", ".join(f"{op.removeprefix('aten::')} ({n})" for op, n in fallbacks.most_common(15))
        )
    crashed = [r for r in results if r.outcome in ("crash", "timeout")]
    for r in crashed:
        print(f"{r.outcome.upper()}: {r.name}: {r.detail}", file=sys.stderr)
        print(f"    repro: {_repro(args, r.name)}", file=sys.stderr)
    for failure in runner.failures:
        print(
            f"CRASH: a worker died ({failure.how}) after finishing "
            f"{', '.join(failure.entries)}:\n{failure.stderr_tail}",
            file=sys.stderr,
        )
