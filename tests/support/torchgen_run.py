"""Run torchgen's lazy codegen (`run_gen_lazy_tensor`, from the installed torch wheel) on an
op list, in a child process (it registers the list's dispatch key process-wide, once), and
read its C++ for names only: the IR classes `LazyIr.h` declares and, per generated kernel,
the IR class it builds (`ReuseNode<Class>`). The reference for what lazygen generates."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

SCRIPT = textwrap.dedent("""
    import os, sys
    import torchgen
    from torchgen.gen_lazy_tensor import run_gen_lazy_tensor

    run_gen_lazy_tensor(
        aten_path=os.path.join(os.path.dirname(torchgen.__file__), "packaged", "ATen"),
        source_yaml=sys.argv[1],
        output_dir=sys.argv[2],
        dry_run=False,
        impl_path=None,
        shape_inference_hdr=None,  # lazygen checks shape functions its own way
    )
    """)


def torchgen_names(op_list: Path, out: Path) -> tuple[set[str], Counter]:
    """(IR class names, Counter of the IR class each generated kernel builds)."""
    subprocess.run([sys.executable, "-c", SCRIPT, str(op_list), str(out)], check=True)
    ir = (out / "LazyIr.h").read_text()
    classes = set(re.findall(r"^class (\w+) : public", ir, re.MULTILINE))
    (kernels,) = out.glob("*NativeFunctions.cpp")
    bodies = re.split(r"NativeFunctions::\w+\(", kernels.read_text())[1:]
    built = Counter(m.group(1) for b in bodies if (m := re.search(r"ReuseNode<(\w+)>", b)))
    return classes, built


def lazygen_names(files: dict[str, str]) -> tuple[set[str], Counter]:
    """The same names in lazygen's generated `ir.py` and `kernels.py`."""
    classes = set(re.findall(r"^class (\w+)\(Node\):", files["ir.py"], re.MULTILINE))
    built = Counter(re.findall(r"node = rt\.make_node\(\s*ir\.(\w+),", files["kernels.py"]))
    return classes, built


def for_installed_torch(op_list: Path, out: Path) -> tuple[Path, list[str]]:
    """``op_list`` as its project would write it for the installed torch: without the
    entries naming operators that torch removed (2.14 removed ``cholesky`` and ``qr``,
    which torch_xla's lists name), which torchgen refuses outright ("Found an invalid
    operator name"). Returns the list to use (a copy in ``out`` when entries were dropped)
    and the names dropped."""
    from lazygen.loaders.native_yaml import load_catalogue

    catalogue = load_catalogue()
    kept, dropped = [], []
    for line in op_list.read_text().splitlines(keepends=True):
        entry = re.fullmatch(r"\s+- ([\w.]+)\s*", line)
        if entry and not catalogue.overloads(entry[1].split(".")[0]):
            dropped.append(entry[1])
            continue
        kept.append(line)
    if not dropped:
        return op_list, []
    copy = out / op_list.name
    copy.write_text("".join(kept))
    return copy, dropped
