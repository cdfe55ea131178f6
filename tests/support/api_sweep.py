"""The tensor-API sweep's runner: cases run crash-isolated, each compared with eager.

A case is a small program (see ``api_sweep_worker``: it runs once on the CPU and once on the
lazy device in the same interpreter). Cases run in turn in one child interpreter; when a
signal or a hang ends it, the case that was running is recorded as a crash and the rest go on
in a fresh one, so one crash never hides another.

A case's expectation is what eager does, unless it says otherwise (``Case.lazy_raises``):
the lazy device behaves like an accelerator where the CPU does not (``numpy()`` of a device
tensor, ``pin_memory``), and such cases name the words of the clear error it must raise.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

WORKER = Path(__file__).with_name("api_sweep_worker.py")
REPO = Path(__file__).resolve().parents[2]
#: Seconds one interpreter may take for its batch before its running case counts as a hang.
TIMEOUT = 240.0


@dataclass(frozen=True)
class Case:
    """A program and, where the lazy device must differ from eager CPU, how."""

    code: str
    #: Words lazy's error must contain where eager CPU returns (an accelerator's behaviour).
    lazy_raises: str | None = None
    #: Why the lazy device differs from eager CPU here.
    why: str = ""
    #: A documented difference of lazy tensors (README "Known failures", "Tensor API"): the
    #: results may differ, but lazy must still not crash, and an error must be clear.
    documented: str = ""
    #: A known bug of lazygen, not fixed yet: the case is an expected failure (strict: it
    #: fails once the bug is gone, so the mark is removed with the fix).
    bug: str = ""


@dataclass(frozen=True)
class Outcome:
    returncode: int  # of the interpreter that ran the case: < 0 is a signal
    verdict: dict | None  # the worker's verdict; None if the case never finished
    output: str  # stderr of a crashed interpreter


def run(cases: dict[str, Case], backend: str | None = None) -> dict[str, Outcome]:
    """name -> Outcome, every case run once in a child interpreter (on ``backend``, else
    the one ``LAZYGEN_BACKEND`` names or the default)."""
    pending = sorted(cases)
    outcomes: dict[str, Outcome] = {}
    env = dict(os.environ)
    if backend is not None:
        env["LAZYGEN_BACKEND"] = backend
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH", "")]))
    while pending:
        payload = json.dumps([[name, cases[name].code] for name in pending])
        try:
            result = subprocess.run(
                [sys.executable, str(WORKER)],
                input=payload,
                capture_output=True,
                text=True,
                timeout=TIMEOUT,
                env=env,
            )
            stdout, stderr, returncode = result.stdout, result.stderr, result.returncode
        except subprocess.TimeoutExpired as expired:
            stdout = _text(expired.stdout)
            stderr = _text(expired.stderr) + f"\n(hung: killed after {TIMEOUT:.0f} s)"
            returncode = -9
        started = None
        for line in stdout.splitlines():
            if line.startswith("CASE "):
                started = line[5:]
            elif line.startswith("RESULT "):
                name, verdict = json.loads(line[7:])
                outcomes[name] = Outcome(0, verdict, "")
                started = None
        if started is None and returncode != 0:
            raise AssertionError(
                f"the sweep's interpreter failed outside a case:\n{stderr[-3000:]}"
            )
        if started is not None:
            outcomes[started] = Outcome(returncode or -1, None, stderr[-3000:])
        pending = [name for name in pending if name not in outcomes]
    return outcomes


def _text(data) -> str:
    if data is None:
        return ""
    return data.decode(errors="replace") if isinstance(data, bytes) else data


def problem(case: Case, outcome: Outcome) -> str | None:
    """Why the case fails, or None."""
    if outcome.verdict is None:
        how = (
            f"signal {-outcome.returncode}"
            if outcome.returncode < 0
            else f"exit {outcome.returncode}"
        )
        return f"the interpreter died ({how}):\n{outcome.output}"
    verdict = outcome.verdict
    if case.lazy_raises is not None:
        if verdict["lazy_error"] is None:
            return f"lazy returned; expected an error with {case.lazy_raises!r} ({case.why})"
        if case.lazy_raises not in f"{verdict['lazy_error_type']}: {verdict['lazy_error']}":
            return (
                f"lazy raised {verdict['lazy_error_type']}: {verdict['lazy_error']}; expected "
                f"{case.lazy_raises!r} ({case.why})"
            )
        return None
    if verdict["problem"]:
        error = verdict.get("lazy_error") or ""
        internal = any(word in error for word in ("INTERNAL ASSERT", "report a bug"))
        if (
            case.documented
            and not internal
            and not verdict["problem"].startswith(("internal", "the sweep"))
        ):
            return None
        return f"{verdict['problem']}\n{verdict.get('traceback', '')}"
    return None
