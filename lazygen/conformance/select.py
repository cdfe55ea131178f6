"""Which entries a run names: those exercising an op list's ops, every entry, or the ones
``--only`` asks for by entry name, OpInfo name, op-list name or conversion-case name."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .entries import entry_name


class SelectionError(Exception):
    """Names that match nothing; ``hints`` suggest the closest known names."""

    def __init__(self, message: str, hints: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.hints = list(hints)


@dataclass
class Selection:
    """The entries to run, in ``op_db`` order (conversion cases last), and per op of the
    list the entries exercising it (``unreached``: ops no entry exercises)."""

    entries: list[str]
    ops: dict[str, list[str]] = field(default_factory=dict)

    @property
    def unreached(self) -> list[str]:
        return [op for op, names in self.ops.items() if not names]


def select(
    opinfos: Sequence[Any],
    ops: dict[str, list[str]],
    *,
    only: Iterable[str] | None = None,
    every_entry: bool = False,
    cases: Sequence[str] = (),
) -> Selection:
    """The entries to run. ``ops`` maps the op list's names to the entries exercising them
    (``opmap.entries_for_ops``); ``cases`` are the conversion cases' names (run unless
    ``only`` picks among them). ``only`` names may be entry names (``div.no_rounding_mode``),
    OpInfo names (``div``: every variant), op-list names (``add.Tensor``: the entries
    exercising it) or case names; an unknown one raises ``SelectionError``."""
    order = [entry_name(o) for o in opinfos] + list(cases)
    by_opinfo: dict[str, list[str]] = {}
    for o in opinfos:
        by_opinfo.setdefault(o.name, []).append(entry_name(o))
    known = set(order)
    if only:
        only = list(only)
        unknown = [n for n in only if n not in known and n not in by_opinfo and n not in ops]
        if unknown:
            vocabulary = sorted(known | set(by_opinfo) | set(ops))
            hints = [
                f"{name!r}: did you mean {', '.join(close)}?"
                for name in unknown
                if (close := difflib.get_close_matches(name, vocabulary, n=3))
            ]
            raise SelectionError(
                "--only names no entry, OpInfo or op of the list: " + ", ".join(unknown), hints
            )
        wanted: set[str] = set()
        for name in only:
            if name in known:
                wanted.add(name)
            elif name in by_opinfo:
                wanted.update(by_opinfo[name])
            elif not ops[name]:
                raise SelectionError(
                    f"no OpInfo entry exercises {name!r} of the op list in this dtype "
                    "(nothing to run for it)"
                )
            else:
                wanted.update(ops[name])
        return Selection([n for n in order if n in wanted], ops)
    if every_entry:
        return Selection(order, ops)
    reached = {n for names in ops.values() for n in names} | set(cases)
    return Selection([n for n in order if n in reached], ops)
