"""An op's spellings are converted in one module (issue 52 item 1), which the op-name scan
(``test_op_names.py``) alone does not hold: it flags names, not the code that builds or reads
them. This scan covers every module of ``lazygen/runtime`` and ``lazygen/dynamo``, op modules
included, except the converter ``runtime/op_registry.py``, and flags

* a read of an op's raw name: ``op._schema.name``, ``op._overloadname``,
  ``packet._qualified_op_name``, ``op.name()``, ``op.overloadpacket.__name__`` (and the same
  through ``getattr``): each is a spelling built by hand, which the converter names
  (``op_string``, ``fallback_counter``, ``library_name``, ``base_name``, ``overload_name``,
  ``namespace_of``);
* a comparison with a namespaced op name (``name == "aten::div"``): compare the op itself
  (``op.overloadpacket is aten.div``), which no spelling can miss;

and, in the core modules (those ``test_op_names.py`` scans), a whole string that is an op
namespace's prefix (``"aten::_foreach_"``, ``"aten::"``): a family of ops matched by name,
which the converter answers (``is_foreach``, ``DEFAULT_NAMESPACE``).

Each miss it was written for is kept below as a snippet the scan must flag.
"""

from __future__ import annotations

import ast
import re

import pytest
import torch

from .test_op_names import ROOT, RUNTIME, _core_files, _rel, _runtime_files

CONVERTER = RUNTIME / "op_registry.py"
#: Private attributes of ``OpOverload``/``OpOverloadPacket`` that hold a raw name.
RAW_ATTRIBUTES = {"_overloadname", "_qualified_op_name"}
#: Modules whose ops are strings by nature, with why: the comparison rule leaves them alone.
STRING_KINDED = {
    "backends/torchscript/passes.py": "TorchScript's IR names a node by its kind string",
    "backends/torchscript/lowering.py": "TorchScript's IR names a node by its kind string",
}
WHERE = "convert the op with lazygen/runtime/op_registry.py (or add the converter there)"


def _namespaces() -> frozenset[str]:
    """Every namespace of torch's registered ops, and the traced-op counter's ``lazy``."""
    names = torch._C._dispatch_get_all_op_names()
    return frozenset(n.partition("::")[0] for n in names if "::" in n) | {"lazy"}


NAMESPACES = _namespaces()
_NAMESPACED = re.compile(r"(\w+)::([\w.]*)")


def _namespaced(value) -> bool:
    if not isinstance(value, str):
        return False
    match = _NAMESPACED.fullmatch(value)
    return bool(match) and match.group(1) in NAMESPACES


def _is_getattr_of(node: ast.AST, names) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("getattr", "hasattr")
        and len(node.args) >= 2
        and isinstance(node.args[1], ast.Constant)
        and node.args[1].value in names
    )


#: ``(attribute, attribute of its owner)`` pairs that read a raw name.
RAW_CHAINS = {("name", "_schema"), ("__name__", "overloadpacket")}


def _raw_read(node: ast.AST) -> str | None:
    if isinstance(node, ast.Attribute):
        if node.attr in RAW_ATTRIBUTES:
            return f".{node.attr}"
        owner = node.value.attr if isinstance(node.value, ast.Attribute) else None
        if (node.attr, owner) in RAW_CHAINS:
            return f".{owner}.{node.attr}"
    elif isinstance(node, ast.Call):
        func, args = node.func, node.args
        if isinstance(func, ast.Attribute) and func.attr == "name" and not args:
            return ".name()"
        if _is_getattr_of(node, RAW_ATTRIBUTES):
            return f"getattr(..., {args[1].value!r})"
        packet = isinstance(args[0], ast.Name) and "packet" in args[0].id if args else False
        if packet and _is_getattr_of(node, {"__name__"}):
            return "getattr(packet, '__name__')"
    return None


def spellings_in(source: str, core: bool, kinds_are_strings=False) -> list[tuple[int, str]]:
    """``(line, what)`` for each spelling built outside the converter (``core``: the rules
    for core modules too; ``kinds_are_strings``: a module of ``STRING_KINDED``)."""
    found = []
    tree = ast.parse(source)
    for node in ast.walk(tree):
        raw = _raw_read(node)
        if raw:
            found.append((node.lineno, f"a raw op name read ({raw})"))
        elif isinstance(node, ast.Compare) and not kinds_are_strings:
            operands = [node.left, *node.comparators]
            for operand in operands:
                if isinstance(operand, ast.Constant) and _namespaced(operand.value):
                    found.append((node.lineno, f"a comparison with {operand.value!r}"))
        elif core and isinstance(node, ast.Constant) and _namespaced(node.value):
            name = node.value.partition("::")[2]
            if not name or not name[-1].isalnum():  # "aten::", "aten::_foreach_"
                found.append((node.lineno, f"an op family matched by name {node.value!r}"))
    return found


def _scanned():
    return [p for p in _runtime_files() if p != CONVERTER]


CORE = set(_core_files())


@pytest.mark.parametrize("path", _scanned(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_op_spelling_is_built_outside_the_converter(path):
    relative = _rel(path)
    found = spellings_in(path.read_text(), path in CORE, relative in STRING_KINDED)
    rel = path.relative_to(ROOT)
    assert not found, "op spellings built by hand:\n" + "\n".join(
        f"{rel}:{line}: {what}: {WHERE}" for line, what in found
    )


#: The misses issue 52 found, as they were written (each flagged, whatever module it is in).
MISSES = {
    "dispatch/refusals.py": "record_declined(op._schema.name, user_source)",
    "dispatch/refusals.py (2)": "has_kernel(op.name(), 'CompositeImplicitAutograd')",
    "backends/fx/lowering.py": (
        "name = f\"{overload._schema.name.partition('::')[2]}_{overload._overloadname}_x\""
    ),
    "backends/fx/lowering.py (2)": "if keyword.iskeyword(target._overloadname):\n    pass",
    "tracing/output_shapes.py": 'raise E(f"lazygen: {op._schema.name} needs one dtype")',
    "backends/jax/refusals.py": 'if name == "aten::div":\n    pass',
    "backends/jax/refusals.py (2)": 'x = a < 0 if name == "aten::pow" else a == 0',
    "backends/inductor/random_draws.py": "m = getattr(torch.Tensor, fill.overloadpacket.__name__)",
    "backends/inductor/culprits.py": 'n = getattr(packet, "__name__", "")',
    "dynamo/streams.py": 'n = getattr(target, "_qualified_op_name", "")',
}
#: Misses that only the core rules flag.
CORE_MISSES = {
    "dispatch/decompositions.py": '_FOREACH = "aten::_foreach_"\nif name.startswith(_FOREACH):\n'
    "    pass",
    "capture_interface.py": 'FALLBACK_COUNTER = "aten::"',
    "config.py": 'name = name[len("aten::") :] if name.startswith("aten::") else name',
    "distributed/collectives.py": 'rt.count(f"lazy::{cls.op_name}")',
}


@pytest.mark.parametrize("where", sorted(MISSES))
def test_the_scan_flags_each_miss(where):
    assert spellings_in(MISSES[where], core=False), where


@pytest.mark.parametrize("where", sorted(CORE_MISSES))
def test_the_core_scan_flags_each_family_match(where):
    source = CORE_MISSES[where]
    assert spellings_in(source, core=True) and not spellings_in(source, core=False), where


@pytest.mark.parametrize(
    "source",
    [
        "name = op_registry.fallback_counter(op)",
        "if packet is aten.div:\n    pass",
        'if overload_name(op) == "to":\n    pass',
        "backend.name",
        'device.type == "lazygen"',
        'raise ValueError("name it as aten::sort.stable or sort")',
        'KIND = "aten::mm"',  # a name, not a family: test_op_names.py's rule
        'x = getattr(kind, "__name__", "")',
        'log(f"{kind.__name__}")',
    ],
)
def test_the_scan_leaves_converted_spellings_alone(source):
    assert not spellings_in(source, core=True), source


@pytest.mark.parametrize("relative", sorted(STRING_KINDED))
def test_every_string_kinded_module_compares_kinds(relative):
    """The list stays honest: a module that no longer compares kind strings leaves it."""
    source = (RUNTIME / relative).read_text()
    assert spellings_in(source, False) and not spellings_in(source, False, True), relative


def test_the_converter_is_the_one_module_left_out():
    assert CONVERTER.is_file()
    assert spellings_in(CONVERTER.read_text(), core=True), "the converter reads raw names"
    assert {_rel(p) for p in _scanned()} == {_rel(p) for p in _runtime_files()} - {_rel(CONVERTER)}
