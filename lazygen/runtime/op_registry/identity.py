"""One identity per op: every spelling of an op the runtime meets, converted in one place.

An op is its ``torch._ops.OpOverload`` (``torch.ops.aten.add.Tensor``). Everything else is a
spelling of it, and this module is the only one that converts between them:

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

Near the bottom of the runtime: it imports nothing of lazygen.
"""

from __future__ import annotations

from typing import Any

import torch

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
    is returned as it is. Facts about ops (``op_facts``) are keyed by it."""
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
