"""``init()`` freezes the start-up heap (see lazygen.runtime._freeze_startup_objects)."""

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
