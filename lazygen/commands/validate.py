"""Check a backend op list against native_functions.yaml and summarise it.

Exit code 0 when the op list is valid, 2 when it is not (every problem is printed with
its file and line).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from lazygen.commands._inputs import (
    DEFAULT_BACKEND_YAML,
    add_catalogue_arguments,
    catalogue_from,
)

HELP = "validate a backend op list and print a summary"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "backend_yaml",
        nargs="?",
        type=Path,
        default=DEFAULT_BACKEND_YAML,
        help=f"the backend op list (default: {DEFAULT_BACKEND_YAML})",
    )
    add_catalogue_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from lazygen.loaders.backend_yaml import load_backend

    catalogue = catalogue_from(args)
    ops = load_backend(args.backend_yaml, catalogue)
    print(f"{args.backend_yaml}: backend {ops.backend} is valid")
    print(f"  catalogue: {len(catalogue)} operators from {catalogue.source}")
    for section, count in ops.counts().items():
        print(f"  {section:<13} {count:>5}")
    return 0
