"""Command-line options shared by sub-commands that read the operator catalogue."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported lazily: `lazygen --version` and stamp-skipped gens stay fast
    from lazygen.loaders.native_yaml import NativeSources
    from lazygen.model.native_function import Catalogue

DEFAULT_BACKEND_YAML = Path("yaml/ts_backend.yaml")


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
