"""List operators of the catalogue (or of a backend op list) with their schemas."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from lazygen.commands._inputs import (
    add_catalogue_arguments,
    add_skip_unknown_argument,
    catalogue_from,
    print_warnings,
)
from lazygen.diagnostics import LazygenError

HELP = "list operators with their schemas"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--backend", type=Path, metavar="FILE", help="only the operators this op list names"
    )
    parser.add_argument(
        "--grep", metavar="PATTERN", help="only operators whose schema matches this regex"
    )
    add_catalogue_arguments(parser)
    add_skip_unknown_argument(parser)


def run(args: argparse.Namespace) -> int:
    catalogue = catalogue_from(args)
    try:
        pattern = re.compile(args.grep) if args.grep else None
    except re.error as exc:
        raise LazygenError.at(None, f"--grep pattern is not a valid regex: {exc}") from None
    if args.backend is not None:
        from lazygen.loaders.backend_yaml import load_backend

        ops = load_backend(args.backend, catalogue, skip_unknown=args.skip_unknown_ops)
        print_warnings(ops.notices)
        rows = [(section, str(catalogue[e.name].func)) for section, e in ops.entries()]
        rows += [("non_native", str(e.func)) for e in ops.non_native]
    else:
        rows = [("", str(f.func)) for f in catalogue]
    shown = 0
    for section, schema in sorted(rows, key=lambda r: r[1]):
        if pattern is None or pattern.search(schema):
            print(f"{section:<13} {schema}" if section else schema)
            shown += 1
    if shown == 0:
        print("no operator matches")
    return 0
