"""Generate a lazy backend's Python modules from its op list.

Run without arguments in the repository root, regenerates the installed torch's tree of
generated/builtin/ (one tree per supported torch release, `lazygen.release_trees`) from
yaml/builtin.yaml. Output is black-formatted, deterministic, and written only when it
changed; an unchanged rerun is skipped by a content hash of every input.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from lazygen.commands._inputs import add_generation_arguments, config_from_args, print_warnings

HELP = "generate (or check) a backend's lazy kernels, IR nodes and registration"

EXIT_OK, EXIT_STALE, EXIT_USER_ERROR = 0, 1, 2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_generation_arguments(parser)
    parser.add_argument(
        "-o",
        "--output-dir",
        type=Path,
        default=None,
        help="output directory (default: generated/<op list name without .yaml>)",
    )
    parser.add_argument("--dry-run", action="store_true", help="show what would change")
    parser.add_argument(
        "--check", action="store_true", help="exit 1 with a diff if the output is stale"
    )
    parser.add_argument("--force", action="store_true", help="ignore the input-hash stamp")
    parser.add_argument("-q", "--quiet", action="store_true")


def run(args: argparse.Namespace) -> int:
    from lazygen import release_trees
    from lazygen.pipeline import STAMP, run

    config = config_from_args(args, args.output_dir)
    if args.force:
        (config.output_dir / STAMP).unlink(missing_ok=True)
        for tree in config.output_dir.glob("torch*_*"):
            (tree / STAMP).unlink(missing_ok=True)
    if config.per_torch_release:
        result = release_trees.run(config, check=args.check, dry_run=args.dry_run)
    else:
        result = run(config, check=args.check, dry_run=args.dry_run)
    if result.status == "skipped":
        if not args.quiet:
            print(f"lazygen gen: {config.output_dir} is up to date (inputs unchanged)")
        return EXIT_OK
    print_warnings(result.warnings)
    for change in result.changes:
        if not args.quiet or args.check:
            verb = "would " + change.action if (args.check or args.dry_run) else change.action + "d"
            print(f"{verb} {config.output_dir / change.name}")
    if args.check and result.status == "stale":
        print(result.diff, end="")
        print(f"lazygen gen --check: {config.output_dir} is stale; run `lazygen gen`")
        return EXIT_STALE
    if args.dry_run and result.diff:
        print(result.diff, end="")
    if not args.quiet:
        counts = ", ".join(f"{k} {v}" for k, v in result.counts.items())
        print(
            f"lazygen gen: {config.output_dir}: {result.status}" + (f" ({counts})" * bool(counts))
        )
    return EXIT_OK
