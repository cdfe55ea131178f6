"""Single-controller SPMD on the jax backend (``lazygen.spmd``), on 8 emulated CPU devices.

Each scenario runs in a child process (``spmd_worker.py``): the device count must be set
before JAX starts, and this process runs the default backend. One child per scenario,
several checks per child (a JAX process costs ~15 s to start here).
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
from pathlib import Path

import numpy as np
import pytest
import torch
from distributed import launch  # tests/ is on sys.path (tests/README.md)
from filelock import FileLock

import lazygen.spmd as xs
from lazygen.runtime.errors import LazygenRuntimeError
from lazygen.runtime.sharding import MeshLayout, normal_form

# JAX runs in the children only (importing it here would start nothing, but costs seconds)
pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("jax") is None,
    reason="lazygen.spmd runs on the jax backend: pip install lazygen[jax]",
)

WORKER = str(Path(__file__).with_name("spmd_worker.py"))


def run_worker(
    scenario: str, nproc: int = 1, devices: int = 8, timeout: float = 600, extra: tuple = ()
) -> list:
    """Each rank's ``RESULT`` of ``scenario`` (bounded in time, nothing left running)."""
    argv = [WORKER, scenario, "--devices", str(devices), *extra]
    result = launch.run(argv, nproc, timeout)
    assert result.ok, result.report()
    found = []
    for output in result.outputs:
        lines = [line for line in output.splitlines() if line.startswith("RESULT ")]
        assert lines, output[-4000:]
        found.append(json.loads(lines[-1][len("RESULT ") :]))
    return found


def shared_result(tmp_path_factory, scenario: str) -> dict:
    """``scenario``'s result, run once per test session: pytest-xdist's workers share the
    session's base directory, and the first to ask runs the child while the others wait."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # the session's, above each worker's own (not pytest's root)
    path = base / f"spmd-{scenario}.json"
    with FileLock(str(path) + ".lock"):
        if not path.exists():
            path.write_text(json.dumps(run_worker(scenario)[0]))
        return json.loads(path.read_text())


@pytest.fixture(scope="module")
def mlp(tmp_path_factory):
    return shared_result(tmp_path_factory, "mlp")


@pytest.fixture(scope="module")
def layouts(tmp_path_factory):
    return shared_result(tmp_path_factory, "layouts")


def close_params(got: dict, want: dict) -> list[str]:
    """Names of parameters outside 1e-3 relative + 1e-4 absolute of eager's."""
    return [
        name
        for name in want
        if not np.allclose(np.array(got[name]), np.array(want[name]), rtol=1e-3, atol=1e-4)
    ]


# The MLP: mesh (4, 2) ("data", "model"), 5 AdamW steps -----------------------------


def test_the_tensor_parallel_mlp_trains_like_eager(mlp):
    for got, want in zip(mlp["losses"], mlp["eager_losses"], strict=True):
        assert math.isclose(got, want, rel_tol=1e-4), (mlp["losses"], mlp["eager_losses"])
    assert close_params(mlp["params"], mlp["eager_params"]) == []


def test_parameters_and_optimizer_state_keep_their_shardings(mlp):
    want = {
        "0.weight": ["model", None],
        "0.bias": ["model"],
        "2.weight": [None, "model"],
        "2.bias": [None],
    }
    assert all(specs == want for specs in mlp["specs"]), mlp["specs"]
    assert mlp["state_specs"] == [["model", None], ["model", None]]


def test_nothing_compiles_after_the_second_step(mlp):
    assert mlp["compiles"][1] == mlp["compiles"][-1], mlp["compiles"]


def test_updated_parameters_and_state_are_donated(mlp):
    # the steady step's graph donates the 4 parameters and their 8 AdamW states (and the
    # step counters); XLA could reuse every donated buffer (JAX warns otherwise)
    assert max(mlp["donated"]) >= 12, mlp["donated"]
    assert mlp["unusable_donations"] == []


def test_the_compiled_programs_report_their_collectives_and_parameter_bytes(mlp):
    # the data-parallel gradient sum and the row-parallel layer's partial sums
    assert mlp["collectives"].get("all-reduce", 0) >= 1, mlp["programs"]
    assert "split: " in mlp["programs"][-1]
    whole = (16 * 64 + 64 + 64 * 8 + 8) * 4
    per_device = (16 * 64 + 64 + 64 * 8) * 4 // 2 + 8 * 4  # the second bias replicated
    assert set(mlp["bytes"].values()) == {per_device}
    assert {int(k): v for k, v in mlp["shard_bytes"].items()} == dict.fromkeys(range(8), per_device)
    assert per_device < whole
    # XLA's own count for the steady step: a device holds its pieces of the parameters and
    # of their two AdamW states (and a piece of the batch), not the whole of them
    held = mlp["device_bytes"][-1]["arguments"]
    assert 3 * per_device <= held < 3 * whole, mlp["device_bytes"]
    assert "bytes per device: arguments" in mlp["programs"][-1]


# Slow: the same program on 2 processes x 4 devices; GPT-2 under both plans -----------------


@pytest.mark.slow
@pytest.mark.multiprocess
def test_two_processes_of_four_devices_give_the_single_process_losses(mlp):
    ranks = run_worker("mlp", nproc=2, devices=4)
    for rank, got in enumerate(ranks):
        assert got["process"] == rank
        assert got["mixed_groups"] == []  # the worker's mesh alternates between processes
        for loss, single in zip(got["losses"], mlp["losses"], strict=True):
            assert math.isclose(loss, single, rel_tol=1e-6), (got["losses"], mlp["losses"])
        assert close_params(got["params"], mlp["params"]) == []
        assert got["compiles"][1] == got["compiles"][-1]
    # each process holds the shards of its own four devices
    held = [{int(k) for k in got["shard_bytes"]} for got in ranks]
    assert held == [{0, 1, 2, 3}, {4, 5, 6, 7}]


@pytest.mark.slow
@pytest.mark.parametrize("plan, share", [("fsdp", 1 / 8), ("tp", 1 / 2)])
def test_gpt2_trains_like_eager_under_a_plan(plan, share):
    got = run_worker("gpt2", extra=("--plan", plan))[0]
    for loss, want in zip(got["losses"], got["eager_losses"], strict=True):
        assert math.isclose(loss, want, rel_tol=1e-4), (got["losses"], got["eager_losses"])
    assert got["worst"] <= 1.0, got["worst"]  # |lazy - eager| <= 1e-4 + 1e-3 |eager|
    assert got["compiles"][1] == got["compiles"][-1], got["compiles"]
    most = max(got["shard_bytes"].values())
    assert most == max(got["bytes"].values())  # what the arrays hold, as the plan says
    assert share <= most / got["whole"] <= share * 1.1, (most, got["whole"], got["report"])


# Meshes, the normal form, explanations, random numbers, host copies, errors --------------


@pytest.mark.parametrize(
    "mesh, spec, shard",
    [("(8,)", ["fsdp", None], [1, 8]), ("(4, 2)", ["data", "model"], [2, 4])]
    + [("(2, 2, 2)", [["a", "c"], "b"], [2, 4])],
)
def test_each_mesh_splits_the_data_and_computes_like_eager(layouts, mesh, spec, shard):
    got = layouts[mesh]
    assert got["spec"] == spec
    assert got["shard_shape"] == shard
    want = (np.arange(64.0).reshape(8, 8) * 2 + 1).sum(0).tolist()
    assert got["result"] == want
    assert not got["host_kept"]  # a host read of a split value keeps no copy


def test_tensors_made_before_use_spmd_are_replicated_on_every_device(layouts):
    assert layouts["early"] == {"spec": [None], "sum": 2 * 28.0 + 8}


def test_a_mesh_in_another_device_order_trains_like_eager(layouts):
    got = layouts["permuted"]
    assert got["spec"] == ["model", None]
    for loss, want in zip(got["losses"], got["eager_losses"], strict=True):
        assert math.isclose(loss, want, rel_tol=1e-4), got


def test_to_device_sends_each_device_its_piece(layouts):
    assert layouts["to_device"] == {
        "spec": ["d", "m"],
        "shard_shape": [2, 4],
        "sum": 2 * sum(range(64)),
        "bf16": ["d", None],
    }


def test_replicated_has_one_normal_form(layouts):
    # no annotation, all None, an axis of size 1, a cleared annotation: one graph
    assert layouts["normal_form"]["compiles"] == 1
    assert layouts["normal_form"]["results"] == [128.0] * 4


def test_a_recompile_explanation_names_the_sharding_change(layouts):
    text = layouts["explained"]["text"]
    assert "reason: sharding" in text
    assert "sharding ('data', None) over mesh(data=8)" in text
    assert "cached: sharding replicated" in text
    assert layouts["explained"]["counted"] == 1


def test_random_numbers_are_drawn_split(layouts):
    random = layouts["random"]
    assert random["finite"] and random["spec"] == ["data", None]
    # dropout's mask and randn at each device's shard (1024 / 8 rows), never whole
    assert random["program_shapes"] == ["128,64"]
    assert set(random["collectives"]) <= {"all-reduce"}  # the sum only


def test_a_linear_layers_output_reports_the_partitioners_layout(layouts):
    # unknown while traced (not "replicated"); once run, the batch split it was given
    assert layouts["after_linear"] == {"traced": None, "ran": ["data", None]}


def test_gradients_can_be_laid_out_with_their_values(layouts):
    got = layouts["gradients"]
    assert got["output"] == ["data", None] and got["grad"] == ["data", None]
    assert got["plain_grad"] == [None, None]
    assert got["values"] == [3.0]


def test_torch_parallel_styles_split_parameters_as_torch_would(layouts):
    got = layouts["dtensor"]
    assert got["specs"] == {
        "0.weight": ["model", None],
        "0.bias": ["model"],
        "2.weight": [None, "model"],
        "2.bias": [None],
    }
    assert got["batch"] == ["data", None]
    assert math.isclose(got["loss"], got["eager_loss"], rel_tol=1e-5)


@pytest.mark.parametrize(
    "case, words",
    [
        ("indivisible", "dimension 0 of size 6 cannot be split into 4"),
        ("unknown_axis", "'rows', is not an axis of the mesh"),
        ("rank", "has 1 entries for a tensor of 2 dimensions"),
        ("axis_twice", "mesh axis 'model' splits two dimensions"),
        ("cpu_tensor", "move it to the lazy device first"),
        ("partial_mesh", "must hold each of the 8 devices"),
        ("two_meshes", "one graph lays values out over several meshes"),
    ],
)
def test_bad_annotations_are_named(layouts, case, words):
    assert layouts["errors"][case] is not None and words in layouts["errors"][case]


# In this process: meshes and specs need no devices ---------------------------------------


def test_mesh_reads_torch_xla_partition_specs():
    mesh = xs.Mesh(np.arange(8), (2, 2, 2), ("a", "b", "c"))
    assert mesh.dims((0, None, ("b", 2))) == (("a",), (), ("b", "c"))
    assert list(mesh.shape().items()) == [("a", 2), ("b", 2), ("c", 2)]
    assert mesh.get_logical_mesh().shape == (2, 2, 2)
    unnamed = xs.Mesh(range(4), (2, 2))
    assert unnamed.dims((1, None)) == (("#1",), ())


def test_a_hybrid_mesh_keeps_each_process_devices_on_its_fast_axes():
    mesh = xs.HybridMesh(ici_mesh_shape=(2, 2), dcn_mesh_shape=(2, 1), axis_names=("data", "model"))
    # data = 2 processes x 2 devices, model within a process (devices 0-3 and 4-7)
    assert mesh.get_logical_mesh().tolist() == [[0, 1], [2, 3], [4, 5], [6, 7]]
    assert xs.HybridMesh(ici_mesh_shape=(8,)).get_logical_mesh().tolist() == list(range(8))


@pytest.mark.parametrize(
    "args, words",
    [
        (([0, 1, 1, 2], (4,)), "device ids repeat"),
        ((range(8), (4, 3)), "holds 12 devices"),
        ((range(8), (4, 2), ("x",)), "must name each of the 2"),
    ],
)
def test_bad_meshes_are_named(args, words):
    with pytest.raises(LazygenRuntimeError, match=words):
        xs.Mesh(*args)


def test_the_normal_form_drops_axes_that_split_nothing():
    layout = MeshLayout(tuple(range(8)), (8, 1), ("a", "b"))
    assert normal_form(layout, ((), ("b",)), (8, 4)) is None
    assert normal_form(layout, ((), ()), (8, 4)) is None
    placement = normal_form(layout, (("a", "b"), ()), (8, 4))
    assert placement.dims == (("a",), ())
    assert placement == normal_form(layout, (("a",), ()), (8, 4))


def test_fsdp_splits_the_largest_dimension_the_axis_divides():
    assert xs.fsdp_spec((768, 2304), 8, "fsdp") == (None, "fsdp")
    assert xs.fsdp_spec((50, 16), 8, "fsdp") == (None, "fsdp")  # 50 is not a multiple
    assert xs.fsdp_spec((6,), 8, "fsdp") == (None,)
    assert xs.fsdp_spec((16, 16), 8, "fsdp") == ("fsdp", None)


def test_dtensor_placements_read_as_partition_specs():
    from torch.distributed.tensor import Partial, Replicate, Shard

    from lazygen.spmd.dtensor import spec_from_placements

    mesh = xs.Mesh(range(8), (4, 2), ("data", "model"))
    assert spec_from_placements(mesh, [Shard(0), Replicate()], 2) == ("data", None)
    assert spec_from_placements(mesh, [Shard(1), Shard(1)], 2) == (None, ("data", "model"))
    assert spec_from_placements(mesh, [Replicate(), Shard(-1)], 3) == (None, None, "model")
    with pytest.raises(LazygenRuntimeError, match="no single-controller meaning"):
        spec_from_placements(mesh, [Partial(), Replicate()], 2)
    with pytest.raises(LazygenRuntimeError, match="one per mesh dimension"):
        spec_from_placements(mesh, [Shard(0)], 2)


def test_torch_device_meshes_need_a_process_per_device():
    """Why DTensor's own API does not run on a single controller (docs/spmd.md): a mesh of
    8 devices needs a world of 8 ranks."""
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh

    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        with pytest.raises(RuntimeError, match="world"):
            init_device_mesh("cpu", (4, 2), mesh_dim_names=("data", "model"))
    finally:
        dist.destroy_process_group()


def test_a_torch_device_mesh_is_read_for_its_ranks_and_names():
    from torch.distributed.device_mesh import DeviceMesh

    from lazygen.spmd.dtensor import as_mesh

    ranks = torch.arange(8).reshape(4, 2)
    device_mesh = DeviceMesh(
        "cpu", ranks, mesh_dim_names=("data", "model"), _init_backend=False, _rank=0
    )
    mesh = as_mesh(device_mesh)
    assert mesh.axis_names == ("data", "model")
    assert mesh.get_logical_mesh().tolist() == ranks.tolist()
