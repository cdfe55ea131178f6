"""The one registry through which the core reads facts about particular ops.

The core (IR, shape inference, fallback, executor, lowering context) knows no op: where it
must treat some ops apart (normalisations whose CPU kernels keep another dtype, random ops
it may replay on stand-ins, reads of device data by the host), it asks this registry for
the fact by name. The ops package declares each fact where the op lives
(``runtime/ops/facts.py`` and the ``ops/`` module of the op), at import, before the first
op runs: ``import lazygen.runtime`` imports it. ``tests/architecture/test_op_names.py``
keeps op names out of the core's modules.

A fact is keyed by the op (``identity``): a ``frozenset`` of ``OpOverloadPacket``s (every
overload of each), a read-only mapping from them, or one ``OpOverload``; it is immutable
and declared once per process: what it says never depends on what ran, so the registry is
not state that ``reset()`` puts back.

Near the bottom of the runtime: it imports only ``identity`` (beside it) and ``state``.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from . import identity as op_identity

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
    }
)

Fact = frozenset | Mapping[Any, Any] | Any

_declared: dict[str, Fact] = {}
_where: dict[str, str] = {}


def _key(op, fact: str, where: str):
    """The packet (every overload) an entry of a fact names, whatever its spelling."""
    packet = op_identity.packet_of(op)
    if packet is None:
        raise ValueError(f"lazygen: op fact {fact!r} (declared by {where}) names {op!r}, no op")
    return packet


def declare(fact: str, value, where: str) -> None:
    """Declare ``fact`` (a name of ``FACTS``) from module ``where``: a collection of ops, a
    mapping from ops, or one op, each op in any spelling ``op_identity`` knows (a packet
    ``torch.ops.aten.mm`` stands for every overload). Stored keyed by the op: a frozenset of
    ``OpOverloadPacket``s, a read-only mapping from them, or one ``OpOverload``. A fact has
    one home: declaring it again from another module is an error."""
    if fact not in FACTS:
        raise ValueError(
            f"lazygen: op fact {fact!r} (declared by {where}) is not one the core reads; "
            f"add it to op_facts.FACTS with what the core does with it, or use one of "
            f"{sorted(FACTS)}"
        )
    if fact in _where and _where[fact] != where:
        raise ValueError(
            f"lazygen: op fact {fact!r} is declared by {_where[fact]} and again by {where}; "
            f"declare it in one place"
        )
    if isinstance(value, Mapping):
        value = MappingProxyType({_key(k, fact, where): v for k, v in value.items()})
    elif isinstance(value, (str, op_identity.OpOverload)):
        value = op_identity.overload_of(value)
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
    return op_identity.packet_of(op) in get(fact)


def of(fact: str, op, default=None):
    """What the mapping ``fact`` says of ``op`` (any spelling), or ``default``."""
    return get(fact).get(op_identity.packet_of(op), default)


def declared_by(fact: str) -> str | None:
    """The module that declared ``fact``, or None."""
    return _where.get(fact)
