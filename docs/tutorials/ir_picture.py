"""Draw the IR picture of the lazy-device tutorial (docs/_static/tutorial-ir.svg).

    python docs/tutorials/ir_picture.py

The graph is the tutorial's forward pass (``model(x).sum()`` of its 8-16-2 MLP), drawn
by ``lazygen.runtime.debug.render_ir`` with Graphviz's ``dot``, which this script needs on
PATH. The picture is committed, so the docs build needs no Graphviz; rerun the script when
the IR's text changes.
"""

from __future__ import annotations

import re
from pathlib import Path

import torch

import lazygen.runtime as lr

OUT = Path(__file__).resolve().parent.parent / "_static" / "tutorial-ir.svg"


def main() -> None:
    lr.init()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
    model.to("lazygen")
    out = model(torch.randn(32, 8).to("lazygen")).sum()
    OUT.parent.mkdir(parents=True, exist_ok=True)
    lr.debug.render_ir([out], str(OUT))
    # Graphviz writes its version and the graph's name in comments: drop them, so that an
    # unchanged graph redraws the same file.
    text = re.sub(r"<!--.*?-->\n?", "", OUT.read_text(), flags=re.S)
    OUT.write_text(text)
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
