"""One rank of sharded training on the lazy device: DeviceMesh, DTensor, FSDP2 (run by
``launch.run``). ``python sharded_worker.py <scenario>[,<scenario>...]``.

Each scenario prints ``<scenario>: ok=<bool> ...`` with what it measured; the process exits
non-zero when one fails. Scenarios are combined into few processes because each start
costs seconds on 2 cores.
"""

from __future__ import annotations

import itertools
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.state_dict import (
    StateDictOptions,
    get_model_state_dict,
    get_state_dict,
    set_state_dict,
)
from torch.distributed.device_mesh import DeviceMesh, init_device_mesh
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
from torch.distributed.tensor import DTensor, Partial, Replicate, Shard, distribute_tensor
from torch.distributed.tensor.parallel import (
    ColwiseParallel,
    PrepareModuleInput,
    RowwiseParallel,
    SequenceParallel,
    parallelize_module,
)

import lazygen.runtime as lr

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "examples" / "fsdp")]  # support, the model

from llama import Config, Llama, batches, loss_of  # noqa: E402
from support.training import assert_as_accurate_as_eager  # noqa: E402

CONFIG = Config()
GLOBAL_BATCH = 4
COLLECTIVES = ("all_gather_into_tensor", "reduce_scatter_tensor", "all_reduce", "broadcast")


def rooted() -> bool:
    """scatter, gather and reduce of lazy tensors (DTensor and DCP call them) equal their
    definition; all-to-all and send of lazy tensors are refused with a clear error."""
    rank, size = dist.get_rank(), dist.get_world_size()
    dev = lr.device()
    checks = []
    out = torch.zeros(3, device=dev)
    parts = [torch.full((3,), float(i + 10), device=dev) for i in range(size)]
    dist.scatter(out, parts if rank == 0 else None, src=0)
    checks.append(out.cpu().tolist() == [float(rank + 10)] * 3)
    mine = torch.full((2,), float(rank + 1), device=dev)
    rows = [torch.zeros(2, device=dev) for _ in range(size)] if rank == 1 else None
    dist.gather(mine, rows, dst=1)
    if rank == 1:  # read on the root alone (this hung: see process_group._run_rooted)
        checks.append([r.cpu().tolist() for r in rows] == [[i + 1.0] * 2 for i in range(size)])
    total = torch.full((2,), float(rank + 1), device=dev)
    dist.reduce(total, dst=0)
    expected = size * (size + 1) / 2 if rank == 0 else float(rank + 1)
    checks.append(total.cpu().tolist() == [expected] * 2)
    try:
        dist.all_to_all_single(torch.zeros(size, device=dev), torch.ones(size, device=dev))
        checks.append(False)
    except RuntimeError as error:
        checks.append("move them to the CPU first" in str(error))
    return _report("rooted", all(checks), f"checks={checks}")


_GLOO: list = []  # one gloo group for the CPU runs, made once (a collective call)


def _mesh(device_type: str) -> DeviceMesh:
    """A 1-D mesh of every rank: on the lazy device, its c10d backend; on the CPU, a gloo
    group of its own (the lazy group's functional collectives serve lazy tensors)."""
    if device_type == lr.device().type:
        return init_device_mesh(device_type, (dist.get_world_size(),))
    if not _GLOO:
        _GLOO.append(dist.new_group(backend="gloo"))
    return DeviceMesh.from_group(_GLOO[0], "cpu")


def _report(name: str, ok: bool, detail: str = "") -> bool:
    print(f"rank {dist.get_rank()} {name}: ok={ok} {detail}".rstrip(), flush=True)
    return ok


def mesh() -> bool:
    """1-D and 2-D meshes on the lazy device, sub-meshes by name, a group per dimension."""
    rank, size = dist.get_rank(), dist.get_world_size()
    dev = lr.device()
    flat = init_device_mesh(lr.device().type, (size,))
    checks = [flat.device_type == dev.type, bool(flat.get_group().group_name)]
    x = torch.full((3,), float(rank + 1), device=dev)
    total = funcol.all_reduce(x, "sum", flat)
    checks.append(total.cpu().tolist() == [size * (size + 1) / 2] * 3)
    grid = init_device_mesh(dev.type, (1, size), mesh_dim_names=("dp", "tp"))
    tp, dp = grid["tp"], grid["dp"]
    checks += [tp.size() == size, dp.size() == 1, tp.get_local_rank() == rank]
    checks.append(grid.get_group("tp").size() == size and grid.get_group("dp").size() == 1)
    y = torch.full((2,), float(rank + 1), device=dev)
    checks.append(funcol.all_reduce(y, "sum", tp).cpu().tolist() == [size * (size + 1) / 2] * 2)
    checks.append(funcol.all_reduce(y, "sum", dp).cpu().tolist() == [float(rank + 1)] * 2)
    return _report("mesh", all(checks), f"checks={checks}")


def _dtensor_program(device_type: str) -> dict:
    """DTensor's API on ``device_type``: every result on the host, by name."""
    rank, size = dist.get_rank(), dist.get_world_size()
    device = lr.device() if device_type == lr.device().type else torch.device("cpu")
    mesh = _mesh(device_type)
    torch.manual_seed(0)
    a, b = torch.randn(4 * size, 6), torch.randn(6, 2 * size)
    out = {}
    rows = distribute_tensor(a.to(device), mesh, [Shard(0)])
    cols = distribute_tensor(b.to(device), mesh, [Shard(1)])
    same = distribute_tensor(b.to(device), mesh, [Replicate()])
    out["local"] = rows.to_local()
    out["full"] = rows.full_tensor()
    out["to_replicate"] = rows.redistribute(mesh, [Replicate()]).to_local()
    out["to_shard"] = same.redistribute(mesh, [Shard(0)]).to_local()
    out["shard_to_shard"] = rows.redistribute(mesh, [Shard(1)]).full_tensor()
    product = rows @ same  # Shard(0) @ Replicate: Shard(0)
    out["matmul"] = product.full_tensor()
    partial = rows.redistribute(mesh, [Shard(1)]) @ distribute_tensor(
        b.to(device), mesh, [Shard(0)]
    )  # contracting sharded dims: Partial
    out["partial_placement"] = torch.tensor(partial.placements[0].is_partial())
    out["partial_to_replicate"] = partial.redistribute(mesh, [Replicate()]).to_local()
    out["partial_to_shard"] = partial.redistribute(mesh, [Shard(0)]).to_local()
    local = torch.full((2, 3), float(rank + 1), device=device)
    built = DTensor.from_local(local, mesh, [Shard(0)])
    out["from_local"] = built.full_tensor()
    summed = DTensor.from_local(local, mesh, [Partial()]).full_tensor()
    out["from_local_partial"] = summed
    # autograd through sharded ops and a redistribution
    weight = distribute_tensor(b.to(device), mesh, [Shard(1)]).requires_grad_()
    loss = (rows.redistribute(mesh, [Replicate()]) @ weight).tanh().sum()
    loss.backward()
    out["loss"] = loss.full_tensor()
    out["grad"] = weight.grad.full_tensor()
    out["cols"] = cols.full_tensor()
    if device_type == lr.device().type:
        lr.mark_step()
    return {name: value.detach().cpu() for name, value in out.items()}


def dtensor() -> bool:
    """distribute_tensor, placements, redistribute, full_tensor, from_local/to_local, ops
    and autograd: lazy results equal CPU DTensor's over gloo; collectives in the graph."""
    lr.metrics.reset()
    lazy = _dtensor_program(lr.device().type)
    report = lr.metrics.fallback_report()
    graphs, cuts, collectives = _counters()
    cpu = _dtensor_program("cpu")
    wrong = [n for n in cpu if not torch.allclose(lazy[n], cpu[n], rtol=1e-5, atol=1e-6)]
    for name in wrong:
        print(f"rank {dist.get_rank()} dtensor {name}: {lazy[name]} != {cpu[name]}", flush=True)
    if report.fallbacks:
        print(report, flush=True)
    ok = not wrong and not report.fallbacks and cuts == 0 and collectives > 0
    return _report("dtensor", ok, f"cuts={cuts} collectives={collectives} graphs={graphs}")


@dataclass(frozen=True)
class Plan:
    """One FSDP2 configuration: what a training loop of ``steps`` steps does."""

    optimizer: str = "adamw"
    reshard: bool = True
    mixed: bool = False  # bf16 parameters, fp32 gradient reduction
    accumulate: int = 1  # micro-batches per step; gradients synced on the last only
    clip: float | None = None
    steps: int = 3


@dataclass
class Run:
    losses: list  # the global mean loss of each step
    params: list  # full parameters after the last step, float32 on the host
    graphs: int = 0  # graphs the last step ran (lazy only)
    cuts: int = 0
    collectives: int = 0


def _optimizer(plan: Plan, params):
    if plan.optimizer == "sgd":
        return torch.optim.SGD(params, lr=0.1, momentum=0.9)
    return torch.optim.AdamW(params, lr=0.01, weight_decay=0.1)


def _counters() -> tuple[int, int, int]:
    value = lr.metrics.counter_value
    graphs = (value("CachedCompile") or 0) + (value("UncachedCompile") or 0)
    collectives = sum(value(f"lazy::{name}") or 0 for name in COLLECTIVES)
    return graphs, value("DistributedGraphCut") or 0, collectives


def _micro_batches(tokens, targets, plan: Plan, rank: int, size: int):
    """This rank's rows of the global batch, split into the plan's micro-batches."""
    per = GLOBAL_BATCH // size
    tokens, targets = tokens[rank * per : (rank + 1) * per], targets[rank * per : (rank + 1) * per]
    return list(zip(tokens.chunk(plan.accumulate), targets.chunk(plan.accumulate), strict=True))


def _sharded(plan: Plan, device_type: str, seed: int = 0):
    """The model, built with ``seed``, sharded per block and at the root; its optimizer."""
    device = lr.device() if device_type == lr.device().type else torch.device("cpu")
    torch.manual_seed(seed)
    model = Llama(CONFIG).to(device)
    mesh = _mesh(device_type)
    policy = MixedPrecisionPolicy()
    if plan.mixed:
        policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    for layer in model.layers:
        fully_shard(layer, mesh=mesh, reshard_after_forward=plan.reshard, mp_policy=policy)
    fully_shard(model, mesh=mesh, reshard_after_forward=plan.reshard, mp_policy=policy)
    return model, _optimizer(plan, model.parameters())


def _train(model, optimizer, plan: Plan, steps: range, run: Run) -> Run:
    """Steps ``steps`` of the plan's batches; the global mean losses and the full
    parameters into ``run`` (and the last step's counters, on the lazy device)."""
    rank, size = dist.get_rank(), dist.get_world_size()
    device = next(model.parameters()).device
    lazy = device.type == lr.device().type
    losses = []
    every = batches(CONFIG, steps.stop, GLOBAL_BATCH)
    for step, (tokens, targets) in enumerate(itertools.islice(every, steps.start, None)):
        before = _counters() if lazy else None
        total = torch.zeros((), device=device)
        micro = _micro_batches(tokens, targets, plan, rank, size)
        for index, (x, y) in enumerate(micro):
            model.set_requires_gradient_sync(index == len(micro) - 1)
            loss = loss_of(model, x.to(device), y.to(device)) / len(micro)
            loss.backward()
            total = total + loss.detach()
        if plan.clip is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), plan.clip)
        optimizer.step()
        optimizer.zero_grad()
        if lazy:
            lr.mark_step()
            if step == len(steps) - 1:  # the steady state: compiled graphs replayed
                after = _counters()
                run.graphs, run.cuts, run.collectives = (
                    a - b for a, b in zip(after, before, strict=True)
                )
        losses.append(total)
    mean = torch.stack([loss.detach().float().cpu() for loss in losses])
    dist.all_reduce(mean)  # host tensors: gloo
    run.losses = [mean / size]
    run.params = _full_params(model)
    return run


def _full_params(model) -> list:
    return [p.full_tensor().detach().float().cpu() for p in model.parameters()]


def train_fsdp(plan: Plan, device_type: str) -> Run:
    """``plan`` with FSDP2 on ``device_type`` (the lazy device or ``cpu`` over gloo)."""
    model, optimizer = _sharded(plan, device_type)
    return _train(model, optimizer, plan, range(plan.steps), Run([], []))


def train_eager(plan: Plan, dtype: torch.dtype) -> Run:
    """``plan`` in one process on the whole batch (float32: eager; float64: the reference)."""
    torch.manual_seed(0)
    model = Llama(CONFIG).to(dtype)
    optimizer = _optimizer(plan, model.parameters())
    losses = []
    for tokens, targets in batches(CONFIG, plan.steps, GLOBAL_BATCH):
        total = 0.0
        for x, y in zip(tokens.chunk(plan.accumulate), targets.chunk(plan.accumulate), strict=True):
            loss = loss_of(model, x, y) / plan.accumulate
            loss.backward()
            total += loss.item()
        if plan.clip is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), plan.clip)
        optimizer.step()
        optimizer.zero_grad()
        losses.append(total)
    return Run([torch.tensor(losses)], [p.detach().float() for p in model.parameters()])


def _compare(name: str, lazy: Run, cpu: Run, plan: Plan) -> bool:
    """Lazy FSDP2 against CPU FSDP2 over gloo and, in float32, single-process eager: each
    as accurate as eager's own float32 (or, with bf16 parameters, CPU FSDP2's bf16) run."""
    try:
        if plan.mixed:  # bf16: no eager float32 twin; CPU FSDP2's distance from float32 sets it
            reference = train_eager(plan, torch.float32)
            assert_as_accurate_as_eager(lazy.params, cpu.params, reference.params, atol=1e-3)
            assert_as_accurate_as_eager(lazy.losses, cpu.losses, reference.losses, atol=1e-3)
        else:
            eager = train_eager(plan, torch.float32)
            exact = train_eager(plan, torch.float64)
            for run in (lazy, cpu):
                assert_as_accurate_as_eager(run.params, eager.params, exact.params)
                assert_as_accurate_as_eager(run.losses, eager.losses, exact.losses)
        ok = True
    except AssertionError as error:
        print(f"rank {dist.get_rank()} {name}: {error}", flush=True)
        ok = False
    detail = f"graphs/step={lazy.graphs} cuts/step={lazy.cuts} collectives/step={lazy.collectives}"
    return _report(name, ok and lazy.cuts == 0, detail)


def fsdp(name: str, plan: Plan):
    def scenario() -> bool:
        lazy = train_fsdp(plan, lr.device().type)
        cpu = train_fsdp(plan, "cpu")
        return _compare(name, lazy, cpu, plan)

    return scenario


def _checkpoint_dir() -> Path:
    """Where the DCP scenarios keep their checkpoint (``SHARDED_CHECKPOINT``, set by the
    test: a temporary directory every rank sees)."""
    return Path(os.environ["SHARDED_CHECKPOINT"])


def _resume(model, optimizer, path: Path) -> None:
    """DCP load of ``path`` into the sharded model and optimizer, as torchtitan resumes."""
    model_state, optim_state = get_state_dict(model, optimizer)
    state = {"model": model_state, "optim": optim_state}
    dcp.load(state, checkpoint_id=str(path))
    set_state_dict(
        model, optimizer, model_state_dict=state["model"], optim_state_dict=state["optim"]
    )


def _close(name: str, got: Run, want: Run) -> bool:
    """Equal within eager's float32 sensitivity (single-process eager, float64 reference)."""
    plan = Plan(steps=4)
    eager, exact = train_eager(plan, torch.float32), train_eager(plan, torch.float64)
    try:
        assert_as_accurate_as_eager(got.params, eager.params, exact.params)
        assert_as_accurate_as_eager(got.params, want.params, exact.params)
        return True
    except AssertionError as error:
        print(f"rank {dist.get_rank()} {name}: {error}", flush=True)
        return False


def dcp_resume() -> bool:
    """4 AdamW steps uninterrupted; 2 steps, DCP save (sharded model and optimizer state),
    a differently initialised model loaded from it, 2 more steps: the same losses and
    parameters. Rank 0 keeps what the uninterrupted run reached for ``dcp_reshard``."""
    plan, path = Plan(steps=4), _checkpoint_dir()
    model, optimizer = _sharded(plan, lr.device().type)
    whole = _train(model, optimizer, plan, range(4), Run([], []))
    model, optimizer = _sharded(plan, lr.device().type)
    first = _train(model, optimizer, plan, range(2), Run([], []))
    model_state, optim_state = get_state_dict(model, optimizer)
    dcp.save({"model": model_state, "optim": optim_state}, checkpoint_id=str(path / "step2"))
    if dist.get_rank() == 0:  # what a process without lazygen must read from the checkpoint
        names = [name for name, _ in model.named_parameters()]
        torch.save(dict(zip(names, first.params, strict=True)), path / "step2_params.pt")
    model, optimizer = _sharded(plan, lr.device().type, seed=1)
    _resume(model, optimizer, path / "step2")
    loaded = _full_params(model)
    then = _train(model, optimizer, plan, range(2, 4), Run([], []))
    losses = torch.cat([first.losses[0], then.losses[0]])
    same_state = all(torch.equal(a, b) for a, b in zip(loaded, first.params, strict=True))
    same_losses = torch.allclose(losses, whole.losses[0], rtol=0, atol=1e-6)
    ok = same_state and same_losses and _close("dcp_resume", then, whole)
    if dist.get_rank() == 0:
        torch.save({"params": whole.params, "losses": whole.losses[0]}, path / "whole.pt")
    dist.barrier()
    detail = f"state={same_state} losses={same_losses} cuts/step={then.cuts}"
    return _report("dcp_resume", ok and then.cuts == 0, detail)


def dcp_reshard() -> bool:
    """The checkpoint ``dcp_resume`` saved, loaded at another world size, then trained on:
    parameters as the uninterrupted run's (within eager's float32 sensitivity)."""
    plan, path = Plan(steps=4), _checkpoint_dir()
    model, optimizer = _sharded(plan, lr.device().type, seed=1)
    _resume(model, optimizer, path / "step2")
    then = _train(model, optimizer, plan, range(2, 4), Run([], []))
    saved = torch.load(path / "whole.pt")
    ok = _close("dcp_reshard", then, Run([saved["losses"]], saved["params"]))
    size = dist.get_world_size()
    return _report("dcp_reshard", ok and then.cuts == 0, f"world={size} cuts/step={then.cuts}")


def full_state_dict() -> bool:
    """FSDP2's usual export after training, called the same way on every rank and read on
    rank 0 alone: ``get_state_dict`` / ``get_model_state_dict`` with ``full_state_dict``
    and ``cpu_offload`` (rank 0 gets CPU tensors, the others an empty dict). torch copies
    to the CPU on rank 0 only, so the other ranks never ran their all-gathers: rank 1 went
    on and exited, and rank 0 died in gloo's "Connection closed by peer". Here rank 1 does
    nothing after the export but leave. Rank 0's parameters equal one CPU process's
    training within eager's float32 sensitivity, and the optimizer's full state is there.
    The sharded default (DTensors of lazy shards) and its ``cpu_offload`` (DTensors of CPU
    shards) hold the same values."""
    plan = Plan(steps=2)
    model, optimizer = _sharded(plan, lr.device().type)
    lazy = _train(model, optimizer, plan, range(plan.steps), Run([], []))
    rank, checks = dist.get_rank(), []
    names = [name for name, _ in model.named_parameters()]
    sharded = get_model_state_dict(model)
    offloaded = get_model_state_dict(model, options=StateDictOptions(cpu_offload=True))
    for name in names:  # every rank: the shards, lazy and offloaded, agree
        shard, host = sharded[name], offloaded[name]
        checks.append(isinstance(shard, DTensor) and shard.to_local().device.type != "cpu")
        checks.append(host.to_local().device.type == "cpu")
        checks.append(torch.equal(shard.to_local().cpu(), host.to_local()))
    full = StateDictOptions(full_state_dict=True, cpu_offload=True)
    both_model, both_optim = get_state_dict(model, optimizer, options=full)
    model_state = get_model_state_dict(model, options=full)
    if rank != 0:  # nothing read, nothing synced: the export alone must serve rank 0
        checks.append(model_state == {} and both_model == {})
        return _report("full_state_dict", all(checks), f"checks={checks}")
    params = [model_state[name] for name in names]
    checks.append(all(p.device.type == "cpu" and not isinstance(p, DTensor) for p in params))
    checks.append(all(torch.equal(a, b) for a, b in zip(params, lazy.params, strict=True)))
    checks.append(all(torch.equal(both_model[n], model_state[n]) for n in names))
    states = both_optim["state"]
    checks.append(sorted(states) == sorted(names) and "exp_avg" in states[names[0]])
    checks.append(states[names[0]]["exp_avg"].device.type == "cpu")
    checks.append(_as_one_process("full_state_dict", params, plan))
    return _report("full_state_dict", all(checks), f"checks={checks}")


def _as_one_process(name: str, params: list, plan: Plan) -> bool:
    """``params`` equal one CPU process's training of ``plan`` within eager's float32
    sensitivity (the float64 run is the reference)."""
    eager, exact = train_eager(plan, torch.float32), train_eager(plan, torch.float64)
    try:
        assert_as_accurate_as_eager(params, eager.params, exact.params)
        return True
    except AssertionError as error:
        print(f"rank {dist.get_rank()} {name}: {error}", flush=True)
        return False


def _tensor_parallel(model, tp_mesh) -> None:
    """torchtitan's Llama plan: attention and MLP projections column/row-wise, norms
    sequence-parallel (activations sharded along the sequence between blocks)."""
    parallelize_module(
        model,
        tp_mesh,
        {
            "tok_embeddings": RowwiseParallel(input_layouts=Replicate(), output_layouts=Shard(1)),
            "norm": SequenceParallel(),
            "output": ColwiseParallel(input_layouts=Shard(1), output_layouts=Replicate()),
        },
    )
    for layer in model.layers:
        parallelize_module(
            layer,
            tp_mesh,
            {
                "attention_norm": SequenceParallel(),
                "attention": PrepareModuleInput(
                    input_layouts=(Shard(1), None, None),
                    desired_input_layouts=(Replicate(), None, None),
                ),
                "attention.wq": ColwiseParallel(),
                "attention.wk": ColwiseParallel(),
                "attention.wv": ColwiseParallel(),
                "attention.wo": RowwiseParallel(output_layouts=Shard(1)),
                "ffn_norm": SequenceParallel(),
                "feed_forward": PrepareModuleInput(
                    input_layouts=(Shard(1),), desired_input_layouts=(Replicate(),)
                ),
                "feed_forward.w1": ColwiseParallel(),
                "feed_forward.w2": RowwiseParallel(output_layouts=Shard(1)),
                "feed_forward.w3": ColwiseParallel(),
            },
        )


def _train_2d(device_type: str, plan: Plan) -> Run:
    """TP on the mesh's "tp" dimension, FSDP2 on "dp" (2 x 2): each dp rank trains on its
    rows of the global batch; tp ranks see the same rows."""
    lazy = device_type == lr.device().type
    device = lr.device() if lazy else torch.device("cpu")
    size = dist.get_world_size()
    if lazy:
        mesh = init_device_mesh(device_type, (2, size // 2), mesh_dim_names=("dp", "tp"))
    else:  # gloo groups of their own, one per mesh dimension (every rank makes each)
        grid = torch.arange(size).view(2, -1)
        rank = dist.get_rank()
        dp = [dist.new_group(c.tolist(), backend="gloo") for c in grid.t()]
        tp = [dist.new_group(r.tolist(), backend="gloo") for r in grid]
        row, column = divmod(rank, grid.shape[1])
        mesh = DeviceMesh.from_group(
            [dp[column], tp[row]], "cpu", mesh=grid, mesh_dim_names=("dp", "tp")
        )
    torch.manual_seed(0)
    model = Llama(CONFIG).to(device)
    _tensor_parallel(model, mesh["tp"])
    for layer in model.layers:
        fully_shard(layer, mesh=mesh["dp"])
    fully_shard(model, mesh=mesh["dp"])
    optimizer = _optimizer(plan, model.parameters())
    dp_rank, dp_size = mesh["dp"].get_local_rank(), mesh["dp"].size()
    run, losses = Run([], []), []
    for step, (tokens, targets) in enumerate(batches(CONFIG, plan.steps, GLOBAL_BATCH)):
        before = _counters() if lazy else None
        ((x, y),) = _micro_batches(tokens, targets, plan, dp_rank, dp_size)
        loss = loss_of(model, x.to(device), y.to(device))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        if lazy:
            lr.mark_step()
            if step == plan.steps - 1:
                after = _counters()
                run.graphs, run.cuts, run.collectives = (
                    a - b for a, b in zip(after, before, strict=True)
                )
        losses.append(loss.detach())
    mean = torch.stack([loss.float().cpu() for loss in losses])
    dist.all_reduce(mean)  # every rank's loss: each dp rank's, counted tp times
    run.losses = [mean / size]
    run.params = _full_params(model)
    return run


def tp_fsdp() -> bool:
    """Tensor parallel x FSDP2 on a 2 x 2 mesh (4 processes), AdamW: lazy equals CPU over
    gloo and single-process eager (the graph cut it reports: see the test)."""
    plan = Plan()
    lazy = _train_2d(lr.device().type, plan)
    cpu = _train_2d("cpu", plan)
    return _compare("tp_fsdp", lazy, cpu, plan)


SCENARIOS = {
    "mesh": mesh,
    "rooted": rooted,
    "dtensor": dtensor,
    # per block and root, resharded after forward, AdamW
    "fsdp_adamw": fsdp("fsdp_adamw", Plan()),
    # kept unsharded after forward, SGD with momentum, gradients clipped (DTensor norms)
    "fsdp_sgd_clip": fsdp("fsdp_sgd_clip", Plan("sgd", reshard=False, clip=0.5)),
    # two micro-batches, gradients synced on the second only
    "fsdp_accumulate": fsdp("fsdp_accumulate", Plan(accumulate=2)),
    # bf16 parameters, fp32 reduction
    "fsdp_mixed": fsdp("fsdp_mixed", Plan(mixed=True)),
    "tp_fsdp": tp_fsdp,
    "dcp_resume": dcp_resume,
    "dcp_reshard": dcp_reshard,
    "full_state_dict": full_state_dict,
}


def main(names: str) -> int:
    lr.init()
    dist.init_process_group("cpu:gloo,lazygen:lazygen")
    failed = [name for name in names.split(",") if not SCENARIOS[name]()]
    dist.destroy_process_group()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
