"""Differences between supported torch releases go through one module: the runtime reads
torch's version only in ``lazygen/runtime/torch_compat.py``, which refuses an unsupported
torch at import and answers each difference by release (no ``torch.__version__`` test
scattered over the runtime)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RUNTIME = ROOT / "lazygen" / "runtime"
COMPAT = RUNTIME / "torch_compat.py"
VERSION_READS = {"__version__", "version", "TorchVersion"}


def _reads_torch_version(tree: ast.AST) -> list[int]:
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in VERSION_READS:
            base = node.value
            if isinstance(base, ast.Name) and base.id == "torch":
                lines.append(node.lineno)
        elif (
            isinstance(node, ast.ImportFrom)
            and node.module in ("torch", "torch.version")
            and any(alias.name in VERSION_READS for alias in node.names)
        ):
            lines.append(node.lineno)
    return lines


def test_only_torch_compat_reads_torch_s_version():
    wrong = []
    for path in sorted(RUNTIME.rglob("*.py")):
        if path == COMPAT:
            continue
        lines = _reads_torch_version(ast.parse(path.read_text(), str(path)))
        wrong += [f"{path.relative_to(ROOT)}:{line}" for line in lines]
    assert not wrong, "ask lazygen.runtime.torch_compat instead:\n" + "\n".join(wrong)


def test_the_scan_sees_a_version_test():
    assert _reads_torch_version(ast.parse("import torch\nif torch.__version__ >= '2.14': pass"))
    assert _reads_torch_version(ast.parse(COMPAT.read_text()))
