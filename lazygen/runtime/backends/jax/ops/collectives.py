"""torch's functional collectives inside a jax graph (``_c10d_functional::*``, recorded by
``lazygen.runtime.distributed``): each runs torch's own collective on the host, on the
process group the node names (the data device's: gloo for the jax backend's CPU data),
through ``jax.experimental.io_callback`` with ``ordered=True``, so the XLA program keeps
the collectives in the order the step traced them, the same on every rank.

Why on the host and not as XLA collectives: the ranks are separate processes, each with its
own JAX runtime and its own XLA program, joined only by torch's process groups (DDP,
FSDP2's device meshes, subgroups); XLA's collectives need one JAX program over all of them
(``lazygen.spmd`` is that path). A callback keeps the step one graph: the collective's
input is the program's value at that point, and the program goes on with the result, with
no graph cut (before, 189 cuts a run of GPT-2 under FSDP2).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import torch
from jax.experimental import io_callback

from .table import op


def _to_torch(array) -> torch.Tensor:
    # the callback's array is JAX's read-only buffer and torch's collectives write their
    # result in place: a writable copy, never a tensor over memory that must not change
    array = np.require(array, requirements=("C_CONTIGUOUS", "WRITEABLE"))
    if array.dtype == jnp.bfloat16:  # numpy has no bfloat16 of its own: through its bits
        return torch.from_numpy(array.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(array)


def _to_numpy(tensor: torch.Tensor):
    if tensor.dtype == torch.bfloat16:
        return tensor.view(torch.int16).numpy().view(jnp.bfloat16)
    return tensor.numpy()


def _on_host(run, x, sizes):
    """``run(functional collectives, tensor) -> tensor`` as an ordered host callback of the
    program, its result of ``sizes`` and ``x``'s dtype."""
    result = jax.ShapeDtypeStruct(tuple(sizes), x.dtype)

    def host(array):
        funcol = torch.ops._c10d_functional
        return _to_numpy(funcol.wait_tensor(run(funcol, _to_torch(array))).contiguous())

    return io_callback(host, result, x, ordered=True)


def _gathered(x, group_size: int):
    return (x.shape[0] * group_size, *x.shape[1:]) if x.ndim else (group_size,)


@op("_c10d_functional::all_reduce")
def _all_reduce(shapes, x, reduce_op, group_name):
    return _on_host(lambda f, t: f.all_reduce(t, reduce_op, group_name), x, x.shape)


@op("_c10d_functional::all_gather_into_tensor")
def _all_gather(shapes, x, group_size, group_name):
    run = lambda f, t: f.all_gather_into_tensor(t, group_size, group_name)  # noqa: E731
    return _on_host(run, x, _gathered(x, group_size))


@op("_c10d_functional::reduce_scatter_tensor")
def _reduce_scatter(shapes, x, reduce_op, group_size, group_name):
    run = lambda f, t: f.reduce_scatter_tensor(t, reduce_op, group_size, group_name)  # noqa: E731
    return _on_host(run, x, (x.shape[0] // group_size, *x.shape[1:]))


@op("_c10d_functional::broadcast")
def _broadcast(shapes, x, src, group_name):
    return _on_host(lambda f, t: f.broadcast(t, src, group_name), x, x.shape)


@op("_c10d_functional::wait_tensor")
def _wait(shapes, x):
    return x  # the callback returned the collective's result, waited for on the host
