"""``torch.distributed.checkpoint.state_dict`` with lazy models: every rank issues the
collectives of a full state dict before the call returns (the ``state_dict_collectives``
effect of ``process.EFFECTS``).

``get_model_state_dict`` / ``get_state_dict`` with ``full_state_dict=True`` all-gather
each DTensor (FSDP2's shards) on every rank; with ``cpu_offload=True`` torch then copies
the result to the CPU on rank 0 only and hands the other ranks an empty dict. On the lazy
device an all-gather is a traced node that runs when a graph runs: rank 0's copy ran it,
and waited for the other ranks' all-gathers, which nothing on those ranks would ever run
(a rank that exits after the export closed the connection, and rank 0 died in gloo's
"Connection closed by peer"). The same holds without ``cpu_offload`` whenever one rank
reads the full state dict and another does not.

So the step of ``state_dict.py`` that gathers a state dict is wrapped: once it returns,
every rank runs its traced collectives (``executor.run_must_run``), in trace order, as
rank 0's reads do. The gathered tensors are then device data on every rank: reading them
later costs nothing, and a rank that drops them leaves nothing pending. The sharded default
(``full_state_dict=False``) gathers nothing and is left alone.
"""

from __future__ import annotations

import functools
import importlib

from .. import process, state
from ..execution import executor

#: torch's module and the step of it that gathers (and offloads) a state dict.
_STATE_DICT = "torch.distributed.checkpoint.state_dict"
_GATHER_STEP = "_maybe_full_or_cpu_state_dict"


class _Installed(list):
    """The torch module whose gather step lazygen wrapped: torch holds the wrapper for the
    process (``state.for_process``)."""


def _issued_on_every_rank(gather):
    """``gather`` (torch's step), then the collectives it traced, run on this rank."""

    @functools.wraps(gather)
    def gathered(state_dict, info):
        result = gather(state_dict, info)
        if info.full_state_dict:
            executor.run_must_run()
        return result

    return gathered


def install() -> None:
    """Wrap torch's gather step (once per process; nothing when the effect is off). The
    module is imported here: it costs what FSDP2's import does, paid by programs with a lazy
    process group only."""
    installed = state.for_process(_Installed)
    if installed or not process.enabled("state_dict_collectives"):
        return
    module = importlib.import_module(_STATE_DICT)
    setattr(module, _GATHER_STEP, _issued_on_every_rank(getattr(module, _GATHER_STEP)))
    installed.append(module)
