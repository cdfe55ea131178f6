"""The warning of meshes whose collective groups mix processes (``sharding.mixed_axes``).

Across processes on the CPU, XLA's collectives run through gloo, and programs whose groups
held two devices of each of two processes aborted both processes in about a third of fresh
runs (jax 0.10; the 2 x 4-device SPMD test of ``tests/spmd``). lazygen warns when a mesh
has such groups; these checks run on described devices, no second process needed.
"""

from __future__ import annotations

import types
import warnings

import numpy as np
import pytest

pytest.importorskip("jax", reason="the jax backend: pip install lazygen[jax]")

from lazygen.runtime.backends.jax import sharding  # noqa: E402


def _mesh(processes: list[int], shape: tuple[int, ...], names: tuple[str, ...]):
    """A stand-in for a ``jax.sharding.Mesh``: what ``mixed_axes`` reads of one."""
    devices = np.array([types.SimpleNamespace(process_index=p) for p in processes], dtype=object)
    return types.SimpleNamespace(devices=devices.reshape(shape), axis_names=names)


PROCESS_MAJOR = [0, 0, 0, 0, 1, 1, 1, 1]  # devices 0-3 in process 0, 4-7 in process 1


def test_groups_of_two_devices_of_each_process_are_mixed():
    # (4, 2) over devices 0..7: data groups {0, 2, 4, 6} hold two devices of each process
    assert sharding.mixed_axes(_mesh(PROCESS_MAJOR, (4, 2), ("data", "model"))) == ["data"]
    # every axis crossing processes does not help: {0, 1, 6, 7} is still mixed
    order = [0, 4, 1, 5, 6, 2, 7, 3]
    crossing = _mesh([PROCESS_MAJOR[i] for i in order], (4, 2), ("data", "model"))
    assert sharding.mixed_axes(crossing) == ["data"]


def test_groups_in_one_process_or_of_one_device_per_process_are_not():
    order = [0, 4, 1, 5, 2, 6, 3, 7]  # data groups in one process, model pairs across
    alternating = _mesh([PROCESS_MAJOR[i] for i in order], (4, 2), ("data", "model"))
    assert sharding.mixed_axes(alternating) == []
    assert sharding.mixed_axes(_mesh([0] * 8, (4, 2), ("data", "model"))) == []
    assert sharding.mixed_axes(_mesh(PROCESS_MAJOR, (2, 4), ("dcn", "ici"))) == []


def test_a_mixed_mesh_is_warned_of_with_what_to_do():
    with pytest.warns(RuntimeWarning, match=r"mesh axes \['data'\].*one device per process"):
        sharding._warn_mixed_groups(_mesh(PROCESS_MAJOR, (4, 2), ("data", "model")))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sharding._warn_mixed_groups(_mesh(PROCESS_MAJOR, (2, 4), ("dcn", "ici")))
