"""Ask the installed torch in a child process, while the parent loads the catalogue.

`import torch` is most of a cold `lazygen gen`. `TorchChild.start()` launches a child
that imports torch at once; meanwhile the parent loads the catalogue and the op list, and
records which questions the planner will ask (`RecordingFacts`: a planning pass with
optimistic answers, which asks every question the real pass can ask). The child answers
them in one batch (`PrefetchedFacts`, a `Facts` like `TorchFacts`), then imports the
hand-written package and checks the pieces the plan needs (`check_hand_written`).

The answers are those of the same functions run in-process (`lazygen.lazy.meta`,
`lazygen.lazy.hand_written`). Whenever the child cannot answer (it died, torch failed to
import, a hand-written module raised), the parent asks in-process instead, so results,
diagnostics and exceptions are exactly those of the in-process path.

Protocol: JSON lines on the child's stdin (setup, facts request, hand-written request);
one JSON line per request back on a dedicated pipe (stdout stays the user's).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from typing import Any

from lazygen.diagnostics import Diagnostic, Location
from lazygen.lazy.hand_written import Needs
from lazygen.lazy.plan import BackendPlan, HandWritten, Param, ShapeFunction
from lazygen.model.native_function import NativeFunction

#: The child's program: torch first (the long part), this module after.
_BOOT = """\
import json, os, sys
out = os.fdopen(int(sys.argv[1]), "w")
setup = json.loads(sys.stdin.readline() or "null")
if setup is not None:
    sys.path[:] = setup["path"]
    try:
        import torch
        from lazygen.lazy.torch_child import serve
    except BaseException:
        out.write('{"failed": true}\\n')
        out.flush()
    else:
        serve(setup, sys.stdin, out)
"""


@dataclass
class RecordingFacts:
    """Optimistic answers (the op exists, matches, has a meta kernel and a builtin); records
    every question, so the child can answer them all in one batch."""

    registered_q: dict[str, tuple[str, str]] = field(default_factory=dict)
    normalised_q: set[str] = field(default_factory=set)
    meta_q: set[str] = field(default_factory=set)
    builtin_q: set[tuple[str, tuple[str, ...]]] = field(default_factory=set)

    def registered(self, f: NativeFunction) -> str | None:
        self.registered_q[str(f.name)] = (f.name.name, f.name.overload)
        return ""

    def normalised(self, f: NativeFunction) -> str:
        self.normalised_q.add(str(f.func))
        return ""

    def has_meta(self, f: NativeFunction) -> bool:
        self.meta_q.add(str(f.name))
        return True

    def has_builtin(self, kind: str, argument_types: tuple[str, ...]) -> bool:
        self.builtin_q.add((kind, tuple(argument_types)))
        return True

    def request(self) -> dict[str, list]:
        return {
            "registered": sorted(self.registered_q.values()),
            "normalised": sorted(self.normalised_q),
            "has_meta": sorted(self.meta_q),
            "has_builtin": sorted([k, list(t)] for k, t in self.builtin_q),
        }


@dataclass(frozen=True)
class PrefetchedFacts:
    """Answers from the child; a question it was not asked goes to the running torch."""

    registered_a: dict[tuple[str, str], str | None]
    normalised_a: dict[str, str]
    meta_a: dict[str, bool]
    builtin_a: dict[tuple[str, tuple[str, ...]], bool]

    @classmethod
    def from_answer(cls, request: dict[str, list], answer: dict[str, list]) -> PrefetchedFacts:
        return cls(
            {tuple(q): a for q, a in zip(request["registered"], answer["registered"], strict=True)},
            dict(zip(request["normalised"], answer["normalised"], strict=True)),
            dict(zip(request["has_meta"], answer["has_meta"], strict=True)),
            {
                (k, tuple(t)): a
                for (k, t), a in zip(request["has_builtin"], answer["has_builtin"], strict=True)
            },
        )

    def registered(self, f: NativeFunction) -> str | None:
        key = (f.name.name, f.name.overload)
        if key in self.registered_a:
            return self.registered_a[key]
        from lazygen.lazy.meta import registered_schema

        return registered_schema(f)

    def normalised(self, f: NativeFunction) -> str:
        text = str(f.func)
        if text in self.normalised_a:
            return self.normalised_a[text]
        from lazygen.lazy.meta import normalised_schema

        return normalised_schema(f)

    def has_meta(self, f: NativeFunction) -> bool:
        name = str(f.name)
        if name in self.meta_a:
            return self.meta_a[name]
        from lazygen.lazy.meta import has_meta_kernel

        return has_meta_kernel(f)

    def has_builtin(self, kind: str, argument_types: tuple[str, ...]) -> bool:
        key = (kind, tuple(argument_types))
        if key in self.builtin_a:
            return self.builtin_a[key]
        from lazygen.lazy.meta import has_torchscript_builtin

        return has_torchscript_builtin(kind, argument_types)


class TorchChild:
    """The parent's handle on the child; every method returns None when the child cannot
    answer, and the caller then asks in-process."""

    def __init__(self, proc: subprocess.Popen, answers: Any):
        self._proc = proc
        self._answers = answers

    @classmethod
    def start(cls, hand_written: str | None) -> TorchChild | None:
        """Launch the child (it starts importing torch at once), or None where unsupported."""
        if os.name != "posix":
            return None
        read_fd, write_fd = os.pipe()
        try:
            proc = subprocess.Popen(
                [sys.executable, "-c", _BOOT, str(write_fd)],
                stdin=subprocess.PIPE,
                pass_fds=(write_fd,),
                text=True,
            )
        except OSError:
            os.close(read_fd)
            return None
        finally:
            os.close(write_fd)
        child = cls(proc, os.fdopen(read_fd, "r"))
        child._send({"path": list(sys.path), "hand_written": hand_written})
        return child

    def _send(self, message: object) -> bool:
        try:
            self._proc.stdin.write(json.dumps(message) + "\n")  # type: ignore[union-attr]
            self._proc.stdin.flush()  # type: ignore[union-attr]
            return True
        except (OSError, ValueError):
            return False

    def _receive(self) -> dict | None:
        try:
            answer = json.loads(self._answers.readline() or "null")
        except (OSError, ValueError):
            return None
        if not isinstance(answer, dict) or answer.get("failed"):
            return None
        return answer

    def facts(self, request: dict[str, list]) -> PrefetchedFacts | None:
        """Answers to a `RecordingFacts.request()`."""
        if not self._send({"facts": request}):
            return None
        answer = self._receive()
        if answer is None:
            return None
        try:
            return PrefetchedFacts.from_answer(request, answer)
        except (KeyError, TypeError, ValueError):
            return None

    def ask_hand_written(self, plan: BackendPlan, *, defer: bool = False) -> bool:
        """Send the plan's hand-written needs; `hand_written_result` collects the answer."""
        return self._send({"hand_written": _encode_needs(plan), "defer": defer})

    def hand_written_result(self) -> tuple[list[Diagnostic], list[Diagnostic]] | None:
        answer = self._receive()
        if answer is None:
            return None
        return _decode_diagnostics(answer["errors"]), _decode_diagnostics(answer["warnings"])

    def close(self) -> None:
        """Stop the child (it may still be importing torch when the parent fails early)."""
        with contextlib.suppress(OSError):
            self._proc.stdin.close()  # type: ignore[union-attr]
        if self._proc.poll() is None:
            self._proc.kill()
        self._proc.wait()
        self._answers.close()


# --- the child side -----------------------------------------------------------------------


def serve(setup: dict, requests: Any, out: Any) -> None:
    """Answer requests until stdin closes (runs in the child, torch already imported)."""
    for line in requests:
        request = json.loads(line)
        try:
            if "facts" in request:
                answer = _answer_facts(request["facts"])
            else:
                answer = _answer_hand_written(
                    request["hand_written"], setup["hand_written"], request.get("defer", False)
                )
        except BaseException:  # noqa: BLE001 - the parent redoes it in-process and reports
            answer = {"failed": True}
        out.write(json.dumps(answer) + "\n")
        out.flush()


def _answer_facts(request: dict[str, list]) -> dict[str, list]:
    from lazygen.lazy import meta

    return {
        "registered": [meta.registered_schema_named(n, o) for n, o in request["registered"]],
        "normalised": [meta.normalised_schema_of_text(t) for t in request["normalised"]],
        "has_meta": [meta.has_meta_kernel_named(n) for n in request["has_meta"]],
        "has_builtin": [
            meta.has_torchscript_builtin(k, tuple(t)) for k, t in request["has_builtin"]
        ],
    }


def _answer_hand_written(needs: dict, package: str, defer: bool) -> dict[str, list]:
    from lazygen.lazy.hand_written import check_hand_written

    errors, warnings = check_hand_written(_decode_needs(needs), package, defer=defer)
    return {"errors": _encode_diagnostics(errors), "warnings": _encode_diagnostics(warnings)}


# --- encoding -----------------------------------------------------------------------------


def _loc(location: Location | None) -> list | None:
    return None if location is None else [location.file, location.line, location.column]


def _unloc(data: list | None) -> Location | None:
    return None if data is None else Location(*data)


def _params(params: tuple[Param, ...] | None) -> list | None:
    return None if params is None else [[p.name, p.keyword_only, p.default] for p in params]


def _unparams(data: list | None) -> tuple[Param, ...] | None:
    return None if data is None else tuple(Param(*p) for p in data)


def _encode_needs(plan: BackendPlan) -> dict[str, list]:
    def hand(items: tuple[HandWritten, ...]) -> list:
        return [
            [h.name, h.op_name, _loc(h.location), h.params, _params(h.signature), h.reason]
            for h in items
        ]

    return {
        "supported": hand(plan.supported),
        "autograd": hand(plan.autograd),
        "lowerings": hand(plan.lowerings),
        "reuse_checks": hand(plan.reuse_checks),
        "creators": hand(plan.creators),
        "node_shape_functions": hand(plan.node_shape_functions),
        "shape_functions": [
            [
                s.name,
                s.op_name,
                [[p.name, p.keyword_only, p.default] for p in s.params],
                _loc(s.location),
            ]
            for s in plan.shape_functions
        ],
    }


def _decode_needs(data: dict[str, list]) -> Needs:
    def hand(items: list) -> tuple[HandWritten, ...]:
        return tuple(
            HandWritten(
                n,
                op,
                _unloc(loc),
                None if params is None else tuple(params),
                _unparams(signature),
                reason,
            )
            for n, op, loc, params, signature, reason in items
        )

    return Needs(
        hand(data["supported"]),
        hand(data["autograd"]),
        hand(data["lowerings"]),
        hand(data["reuse_checks"]),
        hand(data["creators"]),
        hand(data["node_shape_functions"]),
        tuple(
            ShapeFunction(n, op, tuple(Param(*p) for p in params), _unloc(loc))  # type: ignore[arg-type]
            for n, op, params, loc in data["shape_functions"]
        ),
    )


def _encode_diagnostics(items: list[Diagnostic]) -> list:
    return [[_loc(d.location), d.message, d.hint] for d in items]


def _decode_diagnostics(items: list) -> list[Diagnostic]:
    return [Diagnostic(_unloc(loc), message, hint) for loc, message, hint in items]
