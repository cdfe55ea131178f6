"""Check a backend op list as `lazygen gen` would, short of writing, and summarise it.

Runs every check `gen` runs with the same options (loading, planning against the running
torch, the hand-written package, template overrides), so a list that validates also
generates. Exit code 0 when valid, 2 when not (every problem is printed with its file and
line); warnings are printed as `gen` prints them.
"""

from __future__ import annotations

import argparse

from lazygen.commands._inputs import add_generation_arguments, config_from_args, print_warnings

HELP = "check a backend op list as `gen` would, without writing, and print a summary"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_generation_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from lazygen.pipeline import validate

    config = config_from_args(args)
    generated = validate(config)
    print_warnings(generated.warnings)
    print(f"{args.backend_yaml}: backend {generated.backend} is valid")
    for section, count in generated.sections.items():
        print(f"  {section:<13} {count:>5}")
    print("  generates: " + ", ".join(f"{k} {v}" for k, v in generated.counts.items()))
    return 0
