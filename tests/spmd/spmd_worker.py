"""A child process of the SPMD tests: emulated CPU devices, the jax backend in SPMD mode.

``python spmd_worker.py <scenario> [--devices N]`` runs one scenario and prints one line
``RESULT <json>`` with what the test checks. The device count must be set before JAX
starts its backend, hence a process of its own. Under ``launch.run`` with several ranks
(``WORLD_SIZE`` > 1) it first joins them through ``lazygen.spmd.initialize`` (each rank
with ``--devices`` local devices).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import warnings

import jax

#: A tensor put on the lazy device before ``use_spmd()`` (``layouts`` reads it after).
EARLY: list = []


def _setup(devices: int, scenario: str) -> None:
    world = int(os.environ.get("WORLD_SIZE", "1"))
    import lazygen.spmd as xs

    if world > 1:
        xs.initialize(local_device_count=devices, timeout_seconds=60)
    else:
        jax.config.update("jax_num_cpu_devices", devices)
    if scenario == "layouts":
        import torch

        import lazygen.runtime as lr

        lr.init(backend="jax")
        EARLY.append(torch.arange(8.0).to("lazygen") * 2)  # pending, on one device
    xs.use_spmd()


def _compiles() -> int:
    from lazygen.runtime import metrics

    return metrics.counter_value("UncachedCompile") or 0


def _mlp():
    import torch

    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8))


def _unmixed_order() -> list[int]:
    """The devices in JAX's order (one process), or, across processes, alternating between
    them: the ("data", "model") mesh's data groups then lie in one process and its model
    pairs hold a device of each, never two devices of each of two processes (XLA:CPU's
    gloo aborts such programs now and then: ``sharding.mixed_axes``)."""
    count = jax.device_count()
    per_process: dict[int, list[int]] = {}
    for index, device in enumerate(jax.devices()):
        per_process.setdefault(device.process_index, []).append(index)
    if len(per_process) == 1:
        return list(range(count))
    return [i for group in zip(*per_process.values(), strict=True) for i in group]


def mlp(args) -> dict:
    """The issue's MLP: column-parallel first layer, row-parallel second, data-sharded
    batch, mesh (4, 2) ("data", "model"), 5 AdamW steps against eager on the CPU."""
    import torch

    import lazygen.runtime as lr
    import lazygen.spmd as xs
    from lazygen.runtime import devices

    mesh = xs.Mesh(_unmixed_order(), (xs.global_device_count() // 2, 2), ("data", "model"))
    eager, model = _mlp(), _mlp().to("lazygen")
    plan = {"0.weight": ("model", None), "0.bias": ("model",), "2.weight": (None, "model")}
    caught = _warnings()
    xs.shard_by_name(model, plan, mesh)
    eager_opt = torch.optim.AdamW(eager.parameters(), lr=1e-2)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    generator = torch.Generator().manual_seed(1)
    losses, eager_losses, compiles, specs = [], [], [], []
    for _ in range(5):
        x = torch.randn(32, 16, generator=generator)
        y = torch.randint(0, 8, (32,), generator=generator)
        loss = torch.nn.functional.cross_entropy(eager(x), y)
        loss.backward()
        eager_opt.step()
        eager_opt.zero_grad()
        eager_losses.append(loss.item())
        xl = xs.mark_sharding(x.to("lazygen"), mesh, ("data", None))
        yl = xs.mark_sharding(y.to("lazygen"), mesh, ("data",))
        loss = torch.nn.functional.cross_entropy(model(xl), yl)
        loss.backward()
        opt.step()
        opt.zero_grad()
        lr.mark_step()
        losses.append(loss.item())
        compiles.append(_compiles())
        specs.append({n: xs.sharding_of(p) for n, p in model.named_parameters()})
    state = opt.state[model[0].weight]
    executables = list(devices.get_device(0).cache.executables.values())
    return {
        "donated": [len(e.donated) for e in executables],
        "unusable_donations": [str(w.message) for w in caught if "donat" in str(w.message)],
        "mixed_groups": [str(w.message) for w in caught if "gloo" in str(w.message)],
        "losses": losses,
        "eager_losses": eager_losses,
        "compiles": compiles,
        "specs": specs,
        "state_specs": [xs.sharding_of(state["exp_avg"]), xs.sharding_of(state["exp_avg_sq"])],
        "params": {n: p.detach().cpu().tolist() for n, p in model.named_parameters()},
        "eager_params": {n: p.detach().tolist() for n, p in eager.named_parameters()},
        "programs": [str(p) for p in xs.programs()],
        "device_bytes": [p.device_bytes for p in xs.programs()],
        "collectives": _collectives(xs.programs()),
        "bytes": xs.parameter_bytes(model),
        "shard_bytes": _shard_bytes(model),
        "process": xs.process_index(),
    }


def _warnings() -> list:
    """The warnings given from now on (JAX warns when XLA cannot use a donated buffer)."""
    catcher = warnings.catch_warnings(record=True)
    caught = catcher.__enter__()
    warnings.simplefilter("always")
    return caught


def _collectives(programs) -> dict:
    total: dict = {}
    for program in programs:
        for kind, n in program.collectives.items():
            total[kind] = total.get(kind, 0) + n
    return total


def _shard_bytes(model) -> dict:
    """Bytes per device measured on the arrays themselves (this process's devices)."""
    from lazygen.runtime.tracing.tensor import inner

    position = {d: i for i, d in enumerate(jax.devices())}
    held: dict = {}
    for p in model.parameters():
        for shard in inner(p)._value.node.native.addressable_shards:
            i = position[shard.device]
            held[i] = held.get(i, 0) + shard.data.size * shard.data.dtype.itemsize
    return held


def layouts(args) -> dict:
    """Meshes (8,), (4, 2), (2, 2, 2); one normal form for replicated; a sharding change
    explained; random numbers drawn split; no host copy kept; errors."""
    import torch

    import lazygen.runtime as lr
    import lazygen.spmd as xs
    from lazygen.runtime.tracing.tensor import inner

    out: dict = {}
    for shape, names, spec in [
        ((8,), ("fsdp",), ("fsdp", None)),
        ((4, 2), ("data", "model"), ("data", "model")),
        ((2, 2, 2), ("a", "b", "c"), (("a", "c"), "b")),
    ]:
        mesh = xs.Mesh(range(8), shape, names)
        x = torch.arange(64.0).reshape(8, 8)
        t = xs.mark_sharding(x.to("lazygen"), mesh, spec)
        y = (t * 2 + 1).sum(0)
        lr.mark_step()
        node = inner(t)._value.node
        out[str(shape)] = {
            "spec": xs.sharding_of(t),
            "shard_shape": list(node.native.addressable_shards[0].data.shape),
            "result": y.cpu().tolist(),
            "host_kept": node._host is not None,
        }
    out["dtensor"] = _dtensor(xs, lr, torch)
    early = EARLY[0]
    split = xs.mark_sharding(torch.ones(8).to("lazygen"), xs.Mesh(range(8), (8,), ("x",)), ("x",))
    out["early"] = {"spec": xs.sharding_of(early), "sum": (early + split).sum().item()}
    out["to_device"] = _to_device(xs, torch)
    out["permuted"] = _permuted(xs, lr, torch)
    out["after_linear"] = _after_linear(xs, lr, torch)
    out["gradients"] = _with_gradients(xs, lr, torch)
    out["normal_form"] = _normal_form(xs, lr, torch)
    out["explained"] = _sharding_change(xs, lr, torch)
    out["random"] = _random(xs, lr, torch)
    out["errors"] = _errors(xs, torch)
    return out


def _dtensor(xs, lr, torch) -> dict:
    """torch's ColwiseParallel / RowwiseParallel on the issue's MLP: the same layouts as
    its name plan, and eager's first loss."""
    from torch.distributed.tensor import Replicate, Shard
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel

    from lazygen.spmd import dtensor

    mesh = xs.Mesh(range(8), (4, 2), ("data", "model"))
    eager, model = _mlp(), _mlp().to("lazygen")
    plan = {"0": ColwiseParallel(), "2": RowwiseParallel()}
    dtensor.parallelize_module(model, mesh, plan, axis="model")
    x = torch.randn(32, 16, generator=torch.Generator().manual_seed(3))
    batch = dtensor.distribute_tensor(x.to("lazygen"), mesh, [Shard(0), Replicate()])
    loss = model(batch).square().mean()
    lr.mark_step()
    return {
        "specs": {n: xs.sharding_of(p) for n, p in model.named_parameters()},
        "batch": xs.sharding_of(batch),
        "loss": loss.item(),
        "eager_loss": eager(x).square().mean().item(),
    }


def _to_device(xs, torch) -> dict:
    """A host batch sent in pieces (no replicated copy first), numpy's dtypes and others."""
    from lazygen.runtime.tracing.tensor import inner

    mesh = xs.Mesh(range(8), (4, 2), ("d", "m"))
    sent = xs.to_device(torch.arange(64.0).reshape(8, 8), mesh, ("d", "m"))
    half = xs.to_device(torch.ones(8, 2, dtype=torch.bfloat16), mesh, ("d", None))
    return {
        "spec": xs.sharding_of(sent),
        "shard_shape": list(inner(sent)._value.node.native.addressable_shards[0].data.shape),
        "sum": (sent * 2).sum().item(),
        "bf16": xs.sharding_of(half),
    }


def _permuted(xs, lr, torch) -> dict:
    """A mesh listing the devices in another order than JAX's: data is placed onto it
    (a jitted identity refused the move) and replicated inputs are laid out in its order."""
    mesh = xs.Mesh(list(reversed(range(8))), (4, 2), ("data", "model"))
    eager, model = _mlp(), _mlp().to("lazygen")
    xs.mark_sharding(model[0].weight, mesh, ("model", None))
    eager_opt = torch.optim.AdamW(eager.parameters(), lr=1e-2)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    generator = torch.Generator().manual_seed(2)
    losses, eager_losses = [], []
    for _ in range(3):
        x = torch.randn(8, 16, generator=generator)
        loss = eager(x).square().mean()
        loss.backward()
        eager_opt.step()
        eager_opt.zero_grad()
        eager_losses.append(loss.item())
        loss = model(xs.mark_sharding(x.to("lazygen"), mesh, ("data", None))).square().mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
        lr.mark_step()
        losses.append(loss.item())
    return {"losses": losses, "eager_losses": eager_losses, "spec": xs.sharding_of(model[0].weight)}


def _after_linear(xs, lr, torch) -> dict:
    """pytorch/xla#7846: a linear layer's output read as replicated. Here it is unknown
    while traced, and once its graph ran, the layout the partitioner gave it."""
    mesh = xs.Mesh(range(8), (8,), ("data",))
    layer = torch.nn.Linear(16, 32).to("lazygen")
    x = xs.mark_sharding(torch.randn(64, 16).to("lazygen"), mesh, ("data", None))
    h = layer(x)
    traced = xs.sharding_of(h)
    lr.mark_step()
    return {"traced": traced, "ran": xs.sharding_of(h)}


def _with_gradients(xs, lr, torch) -> dict:
    """mark_sharding_with_gradients: the gradient flowing back is laid out too."""
    mesh = xs.Mesh(range(8), (8,), ("data",))
    w = torch.ones(16, 4).to("lazygen").requires_grad_()
    plain = torch.ones(16, 4).to("lazygen").requires_grad_()
    y = xs.mark_sharding_with_gradients(w, mesh, ("data", None))
    ((y * 3).sum() + (plain * 3).sum()).backward()
    lr.mark_step()
    return {
        "output": xs.sharding_of(y),
        "grad": xs.sharding_of(w.grad),
        "plain_grad": xs.sharding_of(plain.grad),
        "values": w.grad.cpu().unique().tolist(),
    }


def _normal_form(xs, lr, torch) -> dict:
    """Replicated spelled four ways (no annotation, all None, an axis of size 1, cleared):
    one graph."""
    mesh = xs.Mesh(range(8), (8, 1), ("a", "b"))
    before = _compiles()
    results = []
    for way in range(4):
        t = torch.ones(8, 4).to("lazygen")
        if way == 1:
            xs.mark_sharding(t, mesh, (None, None))
        elif way == 2:
            xs.mark_sharding(t, mesh, (None, "b"))
        elif way == 3:
            xs.clear_sharding(xs.mark_sharding(t, mesh, ("a", None)))
        results.append(((t + 3) * t).sum().item())
    return {"compiles": _compiles() - before, "results": results}


def _sharding_change(xs, lr, torch) -> dict:
    lr.config.set_explain_recompiles(True)
    mesh = xs.Mesh(range(8), (8,), ("data",))
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        for split in (False, True):
            t = torch.ones(16, 4).to("lazygen")
            if split:
                xs.mark_sharding(t, mesh, ("data", None))
            (t.exp() - 5).abs().sum().item()
    lr.config.set_explain_recompiles(False)
    from lazygen.runtime import metrics

    return {"text": err.getvalue(), "counted": metrics.counter_value("Recompile_sharding")}


def _random(xs, lr, torch) -> dict:
    """Dropout of a batch split over 8 devices: the program draws each device's part on
    that device (the random bits at the shard's shape, no collective)."""
    from lazygen.runtime import debug

    mesh = xs.Mesh(range(8), (8,), ("data",))
    x = xs.mark_sharding(torch.ones(1024, 64).to("lazygen"), mesh, ("data", None))
    y = torch.nn.functional.dropout(x, 0.5, training=True)
    noise = xs.mark_sharding(torch.randn(1024, 64, device="lazygen"), mesh, ("data", None))
    total = (y + noise).sum()
    lr.mark_step()
    kept = total.item()
    text = debug.last_graph()
    return {
        "finite": kept == kept,
        "spec": xs.sharding_of(y),
        "program_shapes": sorted(set(_shapes(text))),
        "collectives": xs.programs()[-1].collectives,
    }


def _shapes(text: str) -> list[str]:
    import re

    return re.findall(r"f32\[(\d+,\d+)\]", text)


def _errors(xs, torch) -> dict:
    mesh = xs.Mesh(range(8), (4, 2), ("data", "model"))
    t = torch.ones(6, 4).to("lazygen")
    found = {}
    for name, call in {
        "indivisible": lambda: xs.mark_sharding(t, mesh, ("data", None)),
        "unknown_axis": lambda: xs.mark_sharding(t, mesh, ("rows", None)),
        "rank": lambda: xs.mark_sharding(t, mesh, ("model",)),
        "axis_twice": lambda: xs.mark_sharding(t, mesh, ("model", "model")),
        "cpu_tensor": lambda: xs.mark_sharding(torch.ones(4), mesh, ("data",)),
        "partial_mesh": lambda: xs.mark_sharding(t, xs.Mesh(range(4), (4,), ("x",)), (None, "x")),
        "two_meshes": lambda: _two_meshes(xs, torch, mesh),
    }.items():
        try:
            call()
            found[name] = None
        except Exception as error:  # noqa: BLE001 - the test reads the message
            found[name] = f"{type(error).__name__}: {error}"
    return found


#: Tensor parallelism for GPT-2 by name (its Conv1D weights are (in, out)): attention's
#: qkv and the MLP's first layer split by output, their second layers by input.
GPT2_PLAN = {
    "transformer.wte.weight": ("model", None),
    "transformer.wpe.weight": (None, "model"),
    "transformer.h.*.attn.c_attn.weight": (None, "model"),
    "transformer.h.*.attn.c_attn.bias": ("model",),
    "transformer.h.*.attn.c_proj.weight": ("model", None),
    "transformer.h.*.mlp.c_fc.weight": (None, "model"),
    "transformer.h.*.mlp.c_fc.bias": ("model",),
    "transformer.h.*.mlp.c_proj.weight": ("model", None),
}


def _gpt2():
    import torch
    import transformers

    config = transformers.GPT2Config(
        vocab_size=256, n_positions=32, n_embd=64, n_layer=2, n_head=4,
        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
    )  # fmt: skip
    torch.manual_seed(0)
    return transformers.GPT2LMHeadModel(config)


def gpt2(args) -> dict:
    """A small GPT-2 trained 4 AdamW steps against eager, under the FSDP-style wrapper
    (mesh (8,) "fsdp") or the tensor-parallel name plan (mesh (4, 2), batch on "data")."""
    import torch

    import lazygen.runtime as lr
    import lazygen.spmd as xs

    eager, model = _gpt2(), _gpt2().to("lazygen")
    if args.plan == "fsdp":
        mesh = xs.Mesh(range(8), (8,), ("fsdp",))
        wrapped = xs.SpmdFullyShardedDataParallel(model, mesh)
        batch_axis = "fsdp"
    else:
        mesh = xs.Mesh(range(8), (4, 2), ("data", "model"))
        xs.shard_by_name(model, GPT2_PLAN, mesh)
        wrapped, batch_axis = model, "data"
    eager_opt = torch.optim.AdamW(eager.parameters(), lr=1e-3)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    generator = torch.Generator().manual_seed(1)
    losses, eager_losses, compiles = [], [], []
    for _ in range(4):
        ids = torch.randint(0, 256, (8, 16), generator=generator)
        loss = eager(ids, labels=ids).loss
        loss.backward()
        eager_opt.step()
        eager_opt.zero_grad()
        eager_losses.append(loss.item())
        lazy_ids = xs.mark_sharding(ids.to("lazygen"), mesh, (batch_axis, None))
        loss = wrapped(lazy_ids, labels=lazy_ids).loss
        loss.backward()
        opt.step()
        opt.zero_grad()
        lr.mark_step()
        losses.append(loss.item())
        compiles.append(_compiles())
    whole = sum(p.numel() * p.element_size() for p in model.parameters())
    eager_params = {n: p.detach() for n, p in eager.named_parameters()}
    worst = max(
        float(
            (
                (p.detach().cpu() - eager_params[n]).abs() / (1e-4 + 1e-3 * eager_params[n].abs())
            ).max()
        )
        for n, p in model.named_parameters()
    )
    return {
        "losses": losses,
        "eager_losses": eager_losses,
        "compiles": compiles,
        "bytes": xs.parameter_bytes(model),
        "shard_bytes": _shard_bytes(model),
        "whole": whole,
        "worst": worst,
        "specs": {n: xs.sharding_of(p) for n, p in model.named_parameters()},
        "report": xs.report(model),
    }


def _two_meshes(xs, torch, mesh) -> None:
    other = xs.Mesh(range(8), (8,), ("rows",))
    a = xs.mark_sharding(torch.ones(8, 4).to("lazygen"), mesh, ("data", "model"))
    b = xs.mark_sharding(torch.ones(8, 4).to("lazygen"), other, ("rows", None))
    (a + b).sum().item()


SCENARIOS = {"mlp": mlp, "layouts": layouts, "gpt2": gpt2}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("scenario", choices=sorted(SCENARIOS))
    parser.add_argument("--devices", type=int, default=8)
    parser.add_argument("--plan", choices=("fsdp", "tp"), default="fsdp")
    args = parser.parse_args()
    _setup(args.devices, args.scenario)
    result = SCENARIOS[args.scenario](args)
    sys.stdout.write("RESULT " + json.dumps(result) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
