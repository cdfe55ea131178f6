"""No op name in the core's modules (issue 42, item 2): the core knows no op.

Where the core must treat some ops apart, the fact is declared where the op lives (the
``runtime/ops`` package: ``ops/facts.py`` or the op's own module; the built-in op list's
``runtime/builtin``) and read through the one registry, ``runtime/op_facts.py``. The scan
covers every module of ``lazygen/runtime`` but the op homes: ``ops/``, ``builtin/``,
``backends/`` (a backend lowers ops by name) and ``privateuse1/`` (each of its modules is
one op's kernel at torch's dispatcher: ``resize_``, ``_pin_memory``, ``_to_copy`` at the
Functionalize key, autocast's CUDA policy). It flags

* a string constant that is an aten op's schema name (``"aten::mm"``, ``"aten::sort.stable"``);
* an attribute chain ``torch.ops.aten.<op>`` (or ``aten.<op>`` through an alias);
* a set, tuple, list or dict of two or more strings that are all aten op names (a table of
  bare names, ``{"ones_like", "zeros_like"}``).

Prose (docstrings, error messages) is not flagged: only whole strings that are a name.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
import torch

import lazygen.runtime  # noqa: F401  (the ops package declares the facts on import)
from lazygen.runtime import op_facts

ROOT = Path(__file__).resolve().parents[2]
RUNTIME = ROOT / "lazygen" / "runtime"
OP_HOMES = ("ops", "builtin", "backends", "privateuse1")
WHERE = (
    "declare the fact in lazygen/runtime/ops/facts.py (or the op's own runtime/ops/ module) "
    "with op_facts.declare, name it in op_facts.FACTS, and read it in the core with "
    "op_facts.get(<fact>)"
)

_SCHEMA = re.compile(r"aten::(\w+)(\.\w+)?")


def _aten_names() -> frozenset[str]:
    """Every aten op's name without overload, from the dispatcher."""
    names = torch._C._dispatch_get_all_op_names()
    return frozenset(n[6:].split(".")[0] for n in names if n.startswith("aten::"))


ATEN = _aten_names()


def _core_files() -> list[Path]:
    return [
        p for p in sorted(RUNTIME.rglob("*.py")) if p.relative_to(RUNTIME).parts[0] not in OP_HOMES
    ]


def _chain(node: ast.AST) -> list[str] | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return [node.id, *reversed(parts)]
    return None


def _strings(nodes) -> list[str] | None:
    values = [n.value for n in nodes if isinstance(n, ast.Constant)]
    if len(values) != len(nodes) or not all(isinstance(v, str) for v in values):
        return None
    return values


def op_names_in(source: str) -> list[tuple[int, str]]:
    """``(line, what)`` for each op name the rules above find in ``source``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            match = _SCHEMA.fullmatch(node.value)
            if match and match.group(1) in ATEN:
                found.append((node.lineno, repr(node.value)))
        elif isinstance(node, ast.Attribute):
            chain = _chain(node)
            # Each chain once: its torch.ops.aten.<op> (or aten.<op>) part.
            direct = chain and chain[:3] == ["torch", "ops", "aten"] and len(chain) == 4
            aliased = chain and chain[0] == "aten" and len(chain) == 2 and chain[1] in ATEN
            if direct or aliased:
                found.append((node.lineno, ".".join(chain)))
        elif isinstance(node, (ast.Set, ast.Tuple, ast.List, ast.Dict)):
            elts = node.keys if isinstance(node, ast.Dict) else node.elts
            names = _strings([e for e in elts if e is not None] if elts else [])
            if names and len(names) >= 2 and all(n in ATEN for n in names):
                found.append((node.lineno, f"a table of op names {names[:3]}..."))
    return found


@pytest.mark.parametrize("path", _core_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_op_name_in_the_core(path):
    found = op_names_in(path.read_text())
    rel = path.relative_to(ROOT)
    assert not found, "op names in a core module:\n" + "\n".join(
        f"{rel}:{line}: {what}: {WHERE}" for line, what in found
    )


@pytest.mark.parametrize(
    "source",
    [
        'X = "aten::mm"',
        'SLOW = frozenset({"aten::sort.stable"})',
        "OP = torch.ops.aten.reshape.default",
        "f = aten.zeros_like",
        'T = frozenset({"ones_like", "zeros_like"})',
        'M = {"norm": 1, "addmm": 2}',
    ],
)
def test_the_scan_finds_each_form(source):
    assert op_names_in(source), source


@pytest.mark.parametrize(
    "source",
    [
        '"""Lowered as ``aten::copy_``."""',
        "raise ValueError(\"pass torch.ops.aten.sort.stable or 'aten::sort'\")",
        'PREFIX = "aten::_foreach_"',
        'KINDS = ("data", "scalar")',
        "getattr(torch.ops, namespace)",
    ],
)
def test_the_scan_leaves_prose_and_rules_alone(source):
    assert not op_names_in(source), source


def test_every_fact_the_core_reads_is_declared_in_the_ops_package():
    for fact in op_facts.FACTS:
        assert op_facts.declared_by(fact) == "lazygen.runtime.ops.facts", fact
        assert op_facts.get(fact), fact


def test_a_fact_has_one_home_and_a_known_name():
    with pytest.raises(ValueError, match="declared by lazygen.runtime.ops.facts and again"):
        op_facts.declare("host_reads", frozenset(), "somewhere.else")
    with pytest.raises(ValueError, match="not one the core reads"):
        op_facts.declare("no_such_fact", frozenset(), "somewhere.else")
    with pytest.raises(LookupError, match="never declared"):
        op_facts.get("no_such_fact")
