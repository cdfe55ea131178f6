"""Start a new lazygen backend: an installable project with an op list, a hand-written
package, a `Backend` and a `LoweringContext` of its own, and `compare.py`.

The op list covers a training step of an MLP, a CNN and a small transformer (so each step
is one graph); the lowering is a small interpreter running aten's eager kernels, a
stand-in to replace with the device's kernels. `compare.py` trains the three models on
the new device against eager (float64 reference) and fails on a mismatch or a fallback.
The project's README says how to install and run it.
"""

from __future__ import annotations

import argparse
from pathlib import Path

HELP = "create an installable backend project (op list, Backend, LoweringContext, compare.py)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", help="the backend's name: init(backend=NAME), NAME.yaml")
    parser.add_argument(
        "--device-name",
        metavar="D",
        help="the torch device type of its lazy device (default: NAME)",
    )
    parser.add_argument(
        "-o",
        "--output-dir",
        type=Path,
        metavar="DIR",
        help="a new or empty folder for the project (default: ./NAME)",
    )


def run(args: argparse.Namespace) -> int:
    from lazygen.scaffold import ScaffoldSpec, check_name, write

    check_name("backend", args.name)
    device_name = args.device_name or args.name
    check_name("device", device_name)
    spec = ScaffoldSpec(args.name, device_name)
    output_dir = args.output_dir or Path(args.name)
    written = write(spec, output_dir)
    print(f"lazygen new-backend: wrote {len(written)} files to {output_dir}/")
    for path in written:
        print(f"  {path.relative_to(output_dir)}")
    print(
        f"next: pip install --no-build-isolation {pip_path(output_dir)}   "
        f"(see {output_dir}/README.md)\n"
        f"      python {output_dir / 'compare.py'}"
    )
    return 0


def pip_path(folder: Path) -> str:
    """`folder` as pip reads a local project: a bare name (`acme`) is a requirement that pip
    looks up on PyPI (where an unrelated `acme` exists), so a relative folder gets `./`."""
    text = folder.as_posix()
    if folder.is_absolute() or text.startswith(("./", "../")):
        return text
    return "./" + text
