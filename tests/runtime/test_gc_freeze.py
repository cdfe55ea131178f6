"""``init()`` freezes the start-up heap and raises the youngest GC generation's threshold
(see ``lazygen.runtime.process``)."""

import subprocess
import sys

import pytest

_PROBE = """
import gc, sys, torch
import lazygen.runtime as lr
lr.init()
at_init = gc.get_freeze_count()
dynamo_at_init = 'torch._dynamo' in sys.modules
import torch._dynamo
print(at_init, dynamo_at_init, gc.get_freeze_count())
"""


@pytest.mark.parametrize("setting, frozen", [(None, True), ("0", False)])
def test_start_up_objects_are_frozen_unless_turned_off(setting, frozen, monkeypatch):
    """At ``init()`` (torch, lazygen), and again once torch._dynamo is imported later
    (by torch at the first optimizer step), without ``init()`` importing it."""
    if setting is None:
        monkeypatch.delenv("LAZYGEN_GC_FREEZE", raising=False)
    else:
        monkeypatch.setenv("LAZYGEN_GC_FREEZE", setting)
    out = subprocess.run(
        [sys.executable, "-c", _PROBE], capture_output=True, text=True, check=True
    ).stdout.split()
    at_init, dynamo_at_init, after_dynamo = int(out[0]), out[1] == "True", int(out[2])
    assert not dynamo_at_init
    if frozen:
        assert at_init > 100_000 and after_dynamo > at_init + 50_000  # torch._dynamo's objects
    else:
        assert at_init == after_dynamo == 0


_THRESHOLD_PROBE = """
import gc
import lazygen.runtime as lr
gc.set_threshold(PROGRAM, 10, 10)
lr.init()
print(gc.get_threshold()[0])
"""


@pytest.mark.parametrize(
    "setting, program, expected",
    [(None, 700, 20_000), ("0", 700, 700), ("5000", 700, 5000), (None, 50_000, 50_000)],
    ids=["default", "off", "chosen", "program's higher threshold kept"],
)
def test_init_raises_the_young_generation_threshold(setting, program, expected, monkeypatch):
    monkeypatch.setenv("LAZYGEN_GC_FREEZE", "0")  # start-up speed; unrelated
    if setting is None:
        monkeypatch.delenv("LAZYGEN_GC_GEN0", raising=False)
    else:
        monkeypatch.setenv("LAZYGEN_GC_GEN0", setting)
    probe = _THRESHOLD_PROBE.replace("PROGRAM", str(program))
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    assert int(out.split()[-1]) == expected


def test_a_bad_threshold_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("LAZYGEN_GC_FREEZE", "0")
    monkeypatch.setenv("LAZYGEN_GC_GEN0", "lots")
    done = subprocess.run(
        [sys.executable, "-c", "import lazygen.runtime as lr; lr.init()"],
        capture_output=True,
        text=True,
    )
    assert done.returncode != 0 and "LAZYGEN_GC_GEN0='lots' is not an integer" in done.stderr
