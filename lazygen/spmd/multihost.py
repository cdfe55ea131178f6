"""Several processes, one program: ``initialize`` joins this process to a global mesh.

Each process runs the same Python program on its own devices; ``jax.distributed`` makes
their devices one global list (``lazygen.spmd.global_device_count()``), and every graph is
one XLA program over all of them, each process running its part. Call ``initialize``
before ``use_spmd()`` and before anything starts JAX's backend. On the CPU the processes
exchange data through gloo (``jax_cpu_collectives_implementation``), which this sets.

Host reads are the same on every process: a replicated value is read from a local copy, a
split one is gathered from every process (a collective: every process must read it, as
they all run the same program).
"""

from __future__ import annotations

import os

from lazygen.runtime.errors import LazygenRuntimeError


def initialize(
    coordinator_address: str | None = None,
    num_processes: int | None = None,
    process_id: int | None = None,
    local_device_count: int | None = None,
    timeout_seconds: int = 120,
) -> None:
    """Join the program of ``num_processes`` processes whose process 0 listens at
    ``coordinator_address`` (``host:port``); by default from torchrun's variables
    (``MASTER_ADDR``:``MASTER_PORT``, ``WORLD_SIZE``, ``RANK``). ``local_device_count``
    emulates that many CPU devices in this process (tests). Gives up after
    ``timeout_seconds`` when the others do not come."""
    import jax  # the jax extra: lazygen.spmd imports without it

    env = os.environ
    if coordinator_address is None:
        if "MASTER_ADDR" not in env or "MASTER_PORT" not in env:
            raise LazygenRuntimeError(
                "lazygen.spmd.initialize: pass coordinator_address='host:port' (or set "
                "MASTER_ADDR and MASTER_PORT, as torchrun does)"
            )
        coordinator_address = f"{env['MASTER_ADDR']}:{env['MASTER_PORT']}"
    num_processes = int(env.get("WORLD_SIZE", 1)) if num_processes is None else num_processes
    process_id = int(env.get("RANK", 0)) if process_id is None else process_id
    try:
        if local_device_count is not None:
            jax.config.update("jax_num_cpu_devices", int(local_device_count))
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
    except RuntimeError as error:  # JAX's backend already started
        raise LazygenRuntimeError(
            "lazygen.spmd.initialize must run before JAX starts its backend (before "
            f"lazygen.spmd.use_spmd() and any jax.devices()): {error}"
        ) from error
    jax.distributed.initialize(
        coordinator_address,
        num_processes,
        process_id,
        initialization_timeout=timeout_seconds,
    )


def process_index() -> int:
    """This process's index in the program (0 alone)."""
    import jax

    return jax.process_index()
