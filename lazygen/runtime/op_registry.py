"""What the runtime knows of an op, keyed by the op itself: one record per op.

Two parts, side by side because each needs the other (a fact is keyed by the op's identity):

* **Identity.** An op is its ``torch._ops.OpOverload`` (``torch.ops.aten.add.Tensor``).
  Everything else is a spelling of it, and this module is the only one that converts
  between them:

  =================================  ==============================================  ==========
  spelling                           who writes it                                   function
  =================================  ==============================================  ==========
  ``torch.ops.aten.add.Tensor``      the dispatcher, hand-written lowerings          the op
  ``"aten::add.Tensor"``,            generated ``lower()`` (``ctx.call``), dumps;    ``op_string``
  ``"aten::relu"`` (default)         **the canonical name**
  ``"add.Tensor"``, ``"relu"``       op lists, ``torch.library``, force-fallback     ``library_name``
                                     lists, the jax backend's op table
  ``"lazy::add.Tensor"``             the counter of a traced op (LTC's spelling)     ``counter_name``
  ``"aten::add"``                    the counter of an eager fallback (LTC's)        ``fallback_counter``
  ``"aten::add"`` (a packet)         facts about every overload of an op             ``packet_of``
  ``AddTensor`` (a node class)       the generated IR (``op_kind`` + ``op_name``)    ``overload_of``
  =================================  ==============================================  ==========

  ``overload_of`` turns any of them back into the ``OpOverload`` (None for a name torch does not
  know: a non-native ``opkind`` such as ``"ltc_cast"``). The answers are pure functions of
  torch's op registry, so the memo below is kept for the process. It stays in this module's
  globals, not on the runtime object (``state.memo``): ``packet_of`` is asked twice per traced
  op, and ``state.memo``'s lookup costs ~100 ns more per call (~3% of tracing an op;
  docs/architecture.md, "Module-level state").

* **Facts.** The one registry through which the core reads facts about particular ops.
  The core (IR, shape inference, fallback, executor, lowering context) knows no op: where it
  must treat some ops apart (normalisations whose CPU kernels keep another dtype, random ops
  it may replay on stand-ins, reads of device data by the host), it asks this registry for
  the fact by name. The ops package declares each fact where the op lives
  (``runtime/ops/facts.py`` and the ``ops/`` module of the op), at import, before the first
  op runs: ``import lazygen.runtime`` imports it. ``tests/architecture/test_op_names.py``
  keeps op names out of the core's modules.

  A fact is keyed by the op (its identity, above): a ``frozenset`` of ``OpOverloadPacket``s (every
  overload of each), a read-only mapping from them, or one ``OpOverload``; it is immutable
  and declared once per process: what it says never depends on what ran, so the registry is
  not state that ``reset()`` puts back.

Near the bottom of the runtime: it imports nothing of lazygen. Nothing here names an op.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import torch

# Identity: an op's spellings -----------------------------------------------------------

OpOverload = torch._ops.OpOverload
OpOverloadPacket = torch._ops.OpOverloadPacket

#: The prefix of a traced op's counter (``lazy::add.Tensor``), as torch._lazy names it.
TRACED = "lazy::"
#: The namespace of the ops an op list names without one (``add.Tensor``).
DEFAULT_NAMESPACE = "aten"

#: The schema-name prefix of aten's list ops (``aten::_foreach_add``).
_FOREACH = DEFAULT_NAMESPACE + "::_foreach_"
#: The suffix of a view op's copying form (``t_copy``).
_COPY = "_copy"
_BACKWARD = "_backward"

#: name -> OpOverload (or None): a memo of ``overload_of`` for strings.
_overloads: dict[str, Any] = {}
#: name without overload -> OpOverloadPacket (or None): a memo of ``packet_of`` for strings.
_packets: dict[str, Any] = {}


def _not_an_op(op) -> TypeError:
    return TypeError(
        f"lazygen: an op is a torch.ops overload (torch.ops.aten.add.Tensor) or its string "
        f"('aten::add.Tensor'), not {type(op).__name__} {op!r}"
        + (": name the overload (.default, .Tensor...)" if isinstance(op, OpOverloadPacket) else "")
    )


def op_string(op) -> str:
    """The canonical name: ``"aten::add.Tensor"``, ``"aten::relu"`` for a default overload.

    What ``ctx.call`` takes; a string is returned as it is (a non-native ``opkind`` too).
    """
    if type(op) is str:
        return op
    if isinstance(op, OpOverload):
        return op.name()
    if isinstance(op, type) and getattr(op, "op_kind", None) is not None:
        found = overload_of(op)
        return op_string(found) if found is not None else op.op_kind
    raise _not_an_op(op)


def overload_of(op):
    """The ``OpOverload`` an op's spelling names, or None when torch has no such op.

    Takes an ``OpOverload`` (returned as it is), ``"ns::name.overload"`` (``"ns::name"``: the
    default overload), ``"lazy::name.overload"`` (a traced op's counter: aten's op),
    ``"name.overload"`` (an op list's or ``torch.library``'s name: aten's op) or an IR node
    class (its ``op_kind`` and ``op_name``).
    """
    if type(op) is str:
        found = _overloads.get(op)
        if found is None and op not in _overloads:
            found = _overloads[op] = _resolve(op)
        return found
    if isinstance(op, OpOverload):
        return op
    if isinstance(op, type) and getattr(op, "op_kind", None) is not None:
        namespace, sep, _ = op.op_kind.partition("::")
        if not sep or not op.op_name:
            return None
        return overload_of(f"{namespace}::{op.op_name}")
    raise _not_an_op(op)


def _resolve(name: str):
    namespace, sep, rest = name.partition("::")
    if not sep:
        namespace, rest = DEFAULT_NAMESPACE, name
    elif namespace == TRACED[:-2]:
        namespace = DEFAULT_NAMESPACE
    base, _, overload = rest.partition(".")
    try:
        packet = getattr(getattr(torch.ops, namespace), base)
        return getattr(packet, overload or "default")
    except (AttributeError, RuntimeError):
        return None


def packet_of(op):
    """The ``OpOverloadPacket`` (every overload of the op) of any spelling, or None; a packet
    is returned as it is. Facts about ops (below) are keyed by it."""
    if isinstance(op, OpOverloadPacket):
        return op
    if type(op) is str and "." not in op:  # "aten::normal": a packet without a default
        found = _packets.get(op)
        if found is None and op not in _packets:
            found = _packets[op] = _resolve_packet(op)
        return found
    found = overload_of(op)
    return None if found is None else found.overloadpacket


def _resolve_packet(name: str):
    namespace, sep, base = name.partition("::")
    if not sep:
        namespace, base = DEFAULT_NAMESPACE, name
    if not base or not namespace.isidentifier():  # "" (an IR node without an op)
        return None
    try:
        found = getattr(getattr(torch.ops, namespace), base, None)
    except (AttributeError, RuntimeError):
        return None
    return found if isinstance(found, OpOverloadPacket) else None


def library_name(op) -> str:
    """``"add.Tensor"`` (``"relu"`` for a default overload): how an op list, ``torch.library``
    and ``config.set_force_fallback`` name an overload of its namespace."""
    op = _overload(op)
    name = op._schema.name.partition("::")[2]
    return name if op._overloadname == "default" else f"{name}.{op._overloadname}"


def base_name(op) -> str:
    """``"add"``: the op's name without namespace or overload (every overload's)."""
    if isinstance(op, OpOverloadPacket):
        return op._qualified_op_name.partition("::")[2]
    return _overload(op)._schema.name.partition("::")[2]


def overload_name(op) -> str:
    """``"Tensor"``, ``"default"``: the overload's own name (a keyword for ``random.from``)."""
    return _overload(op)._overloadname


def is_foreach(op) -> bool:
    """Whether ``op`` is one of aten's ``_foreach_*`` ops (a list form of an element op)."""
    found = overload_of(op)
    return found is not None and found._schema.name.startswith(_FOREACH)


def view_of_copy(op):
    """The view overload a ``*_copy`` op copies (``aten::t_copy`` -> ``aten.t.default``,
    same overload), or None when torch has none by that name."""
    return _same_overload_without(op, _COPY)


def forward_of(op):
    """The op whose gradient a ``*_backward`` op computes (``aten::upsample_nearest2d_backward``
    -> ``aten.upsample_nearest2d.default``, same overload), or None when torch has none by
    that name."""
    return _same_overload_without(op, _BACKWARD)


def _same_overload_without(op, suffix: str):
    """The overload of the same name as ``op``'s, of the op named ``op``'s name less
    ``suffix``; None when the name does not end so, or torch has no such op."""
    found = _overload(op)
    schema_name = found._schema.name
    if not schema_name.endswith(suffix):
        return None
    packet = packet_of(schema_name.removesuffix(suffix))
    return getattr(packet, found._overloadname, None) if packet is not None else None


def namespace_of(op) -> str:
    """``"aten"``: the namespace of an op or a packet."""
    if isinstance(op, OpOverloadPacket):
        return op._qualified_op_name.partition("::")[0]
    return _overload(op).namespace


def table_key(op) -> str:
    """The key of an op table keyed by names (the jax backend's): ``"add.Tensor"``,
    ``"relu"`` for a default overload (``"aten::relu.default"`` too); a name outside aten
    (a non-native ``opkind``) as it is."""
    name = op_string(op)
    namespace, _, rest = name.partition("::")
    if namespace != DEFAULT_NAMESPACE:
        return name
    return rest.removesuffix(".default")


def counter_name(op) -> str:
    """The counter of a traced op: ``"lazy::add.Tensor"``, ``"lazy::relu"`` (torch._lazy's);
    of a packet (every overload counted together): ``"lazy::add"``."""
    if isinstance(op, OpOverloadPacket):
        return TRACED + base_name(op)
    return TRACED + library_name(op)


def kind_counter(kind: str) -> str:
    """The counter of a traced node of a non-native kind (``"lstm_layers"``, a collective's
    ``op_name``): ``"lazy::lstm_layers"``, beside the traced ops' counters."""
    return TRACED + kind


def fallback_counter(op) -> str:
    """The counter of an op run by the eager fallback: ``"aten::add"`` (the schema name,
    every overload together, as torch._lazy counts them)."""
    if isinstance(op, OpOverloadPacket):
        return op._qualified_op_name
    return _overload(op)._schema.name


def names_match(op, names) -> bool:
    """Whether ``names`` (op-list spellings: ``"div"`` for every overload, ``"div.Tensor"``)
    names ``op``."""
    return base_name(op) in names or library_name(op) in names


def is_traced_counter(name: str) -> bool:
    """Whether a counter name is a traced op's (``lazy::...``)."""
    return name.startswith(TRACED)


def _overload(op) -> OpOverload:
    found = overload_of(op)
    if found is None:
        raise ValueError(f"lazygen: {op!r} names no op torch knows")
    return found


#: The prefix of the counter of a random op replayed on its inputs' values (a sync).
RANDOM_SYNC = "RandomSync::"


def random_sync_counter(op) -> str:
    """``"RandomSync::aten::bernoulli"``: a random op whose draws read its inputs' values."""
    return RANDOM_SYNC + fallback_counter(op)


def op_list_name(op) -> str:
    """How an op list names the overload: ``"div.Tensor"``, ``"relu"`` for a default one
    (a bare name means it), namespace-qualified outside aten (``"c10d::all_reduce"``)."""
    op = _overload(op)
    namespace = op.namespace
    name = library_name(op)
    return name if namespace == DEFAULT_NAMESPACE else f"{namespace}::{name}"


# Facts: what the core reads about particular ops, keyed by the op -----------------------

#: Every fact the core reads: its name -> what the core does with it (and who reads it).
FACTS: Mapping[str, str] = MappingProxyType(
    {
        "cpu_statistics": "normalisations whose CPU kernels give their "
        "statistics in the input's dtype (tracing.output_shapes declares the CPU dtypes)",
        "cpu_eval_statistics": "batch norms whose CPU kernels give empty saved "
        "statistics in evaluation: op -> its training flag's argument name, or None "
        "(tracing.output_shapes declares the empty results)",
        "same_dtype": "ops whose eager kernels need one dtype across their "
        "tensors (tracing.output_shapes raises the user's error at trace time)",
        "value_independent_random": "random ops whose draws depend on "
        "their inputs' metadata only (kernel_support replays them on zero stand-ins)",
        "host_reads": "ops whose eager run is the host reading device data, "
        "not a missing kernel (fallback, metrics' report, dynamo's capture)",
        "host_results": "op -> positions of results that stay host tensors "
        "(fallback leaves them on the CPU)",
        "metadata_only": "ops reading only their tensor argument's dtype and "
        "sizes (decompositions run them on a stand-in; the jax backend's SPMD lays out a "
        "result made from one like its argument)",
        "foreach_element": "a _foreach_ op -> its element op, where the name is not the "
        "_foreach_ op's without '_foreach_' (decompositions)",
        "view_copies": "functionalization's view copies, which a lowering may "
        "run as views (lowering_context)",
        "view_copy_views": "a view copy -> the view it runs as, where that is "
        "not the name without '_copy' (lowering_context.view_of)",
        "may_alias": "ops whose lowered result may share its input's storage "
        "(lowering_context, dynamo's capture)",
        "stride_reading": "ops whose result depends on their input's strides (lowering_context)",
        "contiguous_inputs": "ops whose CPU kernels need contiguous inputs (lowering_context)",
        "input_write": "the op an in-place write of a graph input lowers as (ir.InputWrite)",
        "count_increment": "the op a captured optimizer's host step count update "
        "(count + n) is: dynamo's host writes run such updates as one in-place add",
    }
)

Fact = frozenset | Mapping[Any, Any] | Any

_declared: dict[str, Fact] = {}
_where: dict[str, str] = {}


def _key(op, fact: str, where: str):
    """The packet (every overload) an entry of a fact names, whatever its spelling."""
    packet = packet_of(op)
    if packet is None:
        raise ValueError(f"lazygen: op fact {fact!r} (declared by {where}) names {op!r}, no op")
    return packet


def declare(fact: str, value, where: str) -> None:
    """Declare ``fact`` (a name of ``FACTS``) from module ``where``: a collection of ops, a
    mapping from ops, or one op, each op in any spelling this module converts (a packet
    ``torch.ops.aten.mm`` stands for every overload). Stored keyed by the op: a frozenset of
    ``OpOverloadPacket``s, a read-only mapping from them, or one ``OpOverload``. A fact has
    one home: declaring it again from another module is an error."""
    if fact not in FACTS:
        raise ValueError(
            f"lazygen: op fact {fact!r} (declared by {where}) is not one the core reads; "
            f"add it to op_registry.FACTS with what the core does with it, or use one of "
            f"{sorted(FACTS)}"
        )
    if fact in _where and _where[fact] != where:
        raise ValueError(
            f"lazygen: op fact {fact!r} is declared by {_where[fact]} and again by {where}; "
            f"declare it in one place"
        )
    if isinstance(value, Mapping):
        value = MappingProxyType({_key(k, fact, where): v for k, v in value.items()})
    elif isinstance(value, (str, OpOverload)):
        value = overload_of(value)
    else:
        value = frozenset(_key(op, fact, where) for op in value)
    _declared[fact] = value
    _where[fact] = where


def get(fact: str) -> Any:
    """The value of ``fact``; a clear error if the ops package has not declared it."""
    try:
        return _declared[fact]
    except KeyError:
        raise LookupError(
            f"lazygen: op fact {fact!r} was never declared; the ops package declares it when "
            f"lazygen.runtime is imported (runtime/ops/facts.py), so import lazygen.runtime "
            f"rather than one core module alone"
        ) from None


def has(fact: str, op) -> bool:
    """Whether ``op`` (any spelling; every overload of a packet the fact names) has ``fact``."""
    return packet_of(op) in get(fact)


def of(fact: str, op, default=None):
    """What the mapping ``fact`` says of ``op`` (any spelling), or ``default``."""
    return get(fact).get(packet_of(op), default)


def declared_by(fact: str) -> str | None:
    """The module that declared ``fact``, or None."""
    return _where.get(fact)
