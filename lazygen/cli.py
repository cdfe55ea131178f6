"""The `lazygen` command line: one sub-command per module in `lazygen.commands`.

User mistakes arrive as `LazygenError` and are printed one diagnostic per line with exit
code 2; a traceback means a bug in lazygen, never a mistake in the user's input.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import sys
from collections.abc import Sequence

from lazygen import __version__
from lazygen.diagnostics import LazygenError

#: Sub-command name -> module in lazygen.commands providing `add_arguments` and `run`.
COMMANDS = {
    "validate": "lazygen.commands.validate",
    "ops": "lazygen.commands.ops",
    "gen": "lazygen.commands.gen",
    "conformance": "lazygen.commands.conformance",
    "new-backend": "lazygen.commands.new_backend",
}

EXIT_OK, EXIT_STALE, EXIT_USER_ERROR = 0, 1, 2


def build_parser() -> argparse.ArgumentParser:
    """The ``lazygen`` argument parser: one sub-command per module of ``COMMANDS``.

    The documentation's CLI reference is rendered from it.
    """
    parser = argparse.ArgumentParser(
        prog="lazygen",
        description="Generate and check lazy-tensor backends from PyTorch's operator catalogue.",
    )
    parser.add_argument("--version", action="version", version=f"lazygen {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module_name in COMMANDS.items():
        if importlib.util.find_spec(module_name) is None:  # a command not built yet
            continue
        module = importlib.import_module(module_name)
        command = sub.add_parser(name, help=module.HELP, description=module.__doc__)
        module.add_arguments(command)
        command.set_defaults(run=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line ``argv`` (default: ``sys.argv[1:]``).

    Returns:
        The exit status: 0, 1 (stale, for ``gen --check``), 2 (a user mistake, printed
        one diagnostic per line) or 130 (interrupted).
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "run", None):
        parser.print_help()
        return EXIT_USER_ERROR
    try:
        return int(args.run(args) or 0)
    except LazygenError as exc:
        for diagnostic in exc.diagnostics:
            print(diagnostic, file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        print("lazygen: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader of our output stopped reading (`lazygen ops | head`): not an error.
        # Point stdout at /dev/null, so that the interpreter's final flush does not raise
        # it again on exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
