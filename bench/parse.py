"""Load + parse the installed native_functions.yaml: lazygen vs torchgen, fresh processes.

    python bench/parse.py [--repeats 5]

Each run is a fresh interpreter (imports included), the two tools alternate, and the
medians are compared. Goal: lazygen <= 0.6x torchgen's `parse_native_yaml`.
"""

from __future__ import annotations

import argparse

from _timing import alternate, print_table, python

LAZYGEN = "from lazygen.loaders.native_yaml import load_catalogue; c = load_catalogue(); assert len(c) > 3000"
TORCHGEN = (
    "import os, torchgen; from torchgen.gen import parse_native_yaml; "
    "d = os.path.join(os.path.dirname(torchgen.__file__), 'packaged', 'ATen', 'native'); "
    "r = parse_native_yaml(os.path.join(d, 'native_functions.yaml'), os.path.join(d, 'tags.yaml')); "
    "assert len(r.native_functions) > 2500"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    medians = alternate(
        {"lazygen": [python(), "-c", LAZYGEN], "torchgen": [python(), "-c", TORCHGEN]},
        args.repeats,
    )
    ratio = medians["lazygen"] / medians["torchgen"]
    print_table(
        f"parse native_functions.yaml (fresh process, median of {args.repeats})",
        [
            ("torchgen parse_native_yaml", medians["torchgen"], "anchor"),
            ("lazygen load_catalogue", medians["lazygen"], f"{ratio:.2f}x torchgen (goal <= 0.6x)"),
        ],
    )


if __name__ == "__main__":
    main()
