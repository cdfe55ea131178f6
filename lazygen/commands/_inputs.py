"""Command-line options shared by sub-commands: the catalogue, and the generation options
`gen` and `validate` both take (so that `validate` checks exactly what `gen` would)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from lazygen import renamed
from lazygen.pipeline import DEFAULT_HAND_WRITTEN
from lazygen.release_trees import is_laid_out_per_release

if TYPE_CHECKING:  # imported lazily: `lazygen --version` and stamp-skipped gens stay fast
    from lazygen.diagnostics import Diagnostic
    from lazygen.loaders.native_yaml import NativeSources
    from lazygen.model.native_function import Catalogue
    from lazygen.pipeline import GenConfig

DEFAULT_BACKEND_YAML = Path("yaml/builtin.yaml")


def add_catalogue_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--native-functions",
        type=Path,
        metavar="PATH",
        help="native_functions.yaml to read (default: the installed torch's copy)",
    )
    parser.add_argument(
        "--tags", type=Path, metavar="PATH", help="tags.yaml to read (default: beside it)"
    )


def add_generation_arguments(parser: argparse.ArgumentParser) -> None:
    """The op list and every option that changes what `gen` generates or checks."""
    parser.add_argument(
        "backend_yaml",
        nargs="?",
        type=Path,
        default=DEFAULT_BACKEND_YAML,
        help=f"backend op list (default: {DEFAULT_BACKEND_YAML})",
    )
    add_catalogue_arguments(parser)
    parser.add_argument(
        "--templates", type=Path, help="directory of template overrides, searched first"
    )
    parser.add_argument(
        "--hand-written",
        default=DEFAULT_HAND_WRITTEN,
        metavar="PACKAGE",
        help="package with the hand-written kernels/shape functions/lowerings/autograd "
        f"(default: {DEFAULT_HAND_WRITTEN})",
    )
    parser.add_argument(
        "--no-check-hand-written",
        dest="check_hand_written",
        action="store_false",
        help="do not import and check the hand-written package",
    )
    parser.add_argument(
        "--defer-hand-written",
        action="store_true",
        help="report missing hand-written pieces as warnings and generate anyway",
    )
    add_skip_unknown_argument(parser)
    parser.add_argument(
        "--per-torch-release",
        action="store_true",
        help="keep one tree per supported torch release in the output directory "
        "(torch2_13/, torch2_14/; the installed torch's is written), chosen at import; "
        "implied when the output directory is laid out so already",
    )


def add_skip_unknown_argument(parser: argparse.ArgumentParser) -> None:
    """`--skip-unknown-ops`, for every command that reads an op list (the error for an
    operator this torch lacks offers it)."""
    parser.add_argument(
        "--skip-unknown-ops",
        action="store_true",
        help="leave out operators this torch does not have, with one warning listing them",
    )


def config_from_args(args: argparse.Namespace, output_dir: Path | None = None) -> GenConfig:
    """The `GenConfig` the generation options describe."""
    from lazygen.pipeline import GenConfig

    _working_directory_importable()
    renamed.check_hand_written_package(args.hand_written)
    output_dir = output_dir or Path("generated") / args.backend_yaml.name.removesuffix(".yaml")
    per_release = getattr(args, "per_torch_release", False) or is_laid_out_per_release(output_dir)
    return GenConfig(
        backend_yaml=args.backend_yaml,
        output_dir=output_dir,
        native_functions=args.native_functions,
        tags=args.tags,
        templates=args.templates,
        hand_written=args.hand_written,
        check_hand_written=args.check_hand_written,
        defer_hand_written=args.defer_hand_written,
        skip_unknown_ops=args.skip_unknown_ops,
        per_torch_release=per_release,
    )


def _working_directory_importable() -> None:
    """Put the working directory on `sys.path`, as `python -m lazygen` has it: the
    `lazygen` script's own directory is there instead, so `--hand-written my_pkg` run next
    to `my_pkg/` would otherwise not find it (and the build hook adds the source root the
    same way)."""
    cwd = os.getcwd()
    if not any(os.path.abspath(p or ".") == cwd for p in sys.path):
        sys.path.insert(0, cwd)


def print_warnings(diagnostics: Iterable[Diagnostic]) -> None:
    """One `file:line: warning: message (hint)` line each, on stderr."""
    for d in diagnostics:
        where = f"{d.location}: " if d.location else ""
        hint = f" ({d.hint})" if d.hint else ""
        print(f"{where}warning: {d.message}{hint}", file=sys.stderr)


def sources_from(args: argparse.Namespace) -> NativeSources:
    """The native_functions/tags pair the options name, defaulting to the installed torch."""
    from lazygen.loaders.native_yaml import NativeSources

    if args.native_functions is None and args.tags is None:
        return NativeSources.default()
    default = NativeSources.default() if args.native_functions is None else None
    native = args.native_functions or default.native_functions
    tags = args.tags or native.with_name("tags.yaml")
    return NativeSources(native, tags)


def catalogue_from(args: argparse.Namespace) -> Catalogue:
    from lazygen.loaders.native_yaml import load_catalogue

    return load_catalogue(sources_from(args))
