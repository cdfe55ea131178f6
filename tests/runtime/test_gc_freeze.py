"""``init()`` freezes the start-up heap and raises the youngest GC generation's threshold
(see ``lazygen.runtime.process``)."""

import subprocess
import sys

import pytest

_PROBE = """
import gc, torch
import lazygen.runtime as lr
lr.init()
print(gc.get_freeze_count(), 'torch._dynamo' in __import__('sys').modules)
"""


@pytest.mark.parametrize("setting, frozen", [(None, True), ("0", False)])
def test_start_up_objects_are_frozen_unless_turned_off(setting, frozen, monkeypatch):
    if setting is None:
        monkeypatch.delenv("LAZYGEN_GC_FREEZE", raising=False)
    else:
        monkeypatch.setenv("LAZYGEN_GC_FREEZE", setting)
    out = subprocess.run(
        [sys.executable, "-c", _PROBE], capture_output=True, text=True, check=True
    ).stdout.split()
    count, dynamo = int(out[0]), out[1] == "True"
    if frozen:
        assert count > 100_000 and dynamo  # torch, lazygen and torch._dynamo's objects
    else:
        assert count == 0


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
