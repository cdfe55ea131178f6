"""What lazygen changes in the process and in torch, beyond its own state: every effect in
one list (``EFFECTS``), each with the environment variable that turns it off. The README's
table is this list; ``tests/runtime/test_process.py`` keeps the two equal.

The lazy device itself (PrivateUse1 renamed to the device name, its device module, hooks,
guard and ``torch.library`` kernels) is what ``init()`` is for and has no opt-out but not
calling it. The modules that apply an effect ask ``enabled(name)`` first; the GC effects are
applied here, by ``apply_gc_effects()`` at the end of ``init()``.
"""

from __future__ import annotations

import contextlib
import gc
import os
from dataclasses import dataclass
from types import MappingProxyType


@dataclass(frozen=True, slots=True)
class Effect:
    """One change to the process: ``variable=0`` turns it off (read when it is applied)."""

    name: str
    variable: str
    what: str
    applied_by: str


EFFECTS: tuple[Effect, ...] = (
    Effect(
        "gc_freeze",
        "LAZYGEN_GC_FREEZE",
        "`gc.freeze()` of the start-up heap (torch, `torch._dynamo`, lazygen), so full "
        "collections no longer walk it",
        "`init()` (`process`)",
    ),
    Effect(
        "gc_gen0",
        "LAZYGEN_GC_GEN0",
        "the youngest GC generation's threshold raised to 20000 (`LAZYGEN_GC_GEN0=<n>` sets "
        "another)",
        "`init()` (`process`)",
    ),
    Effect(
        "malloc_tuning",
        "LAZYGEN_MALLOC_TUNING",
        "glibc's mmap and trim thresholds raised (`mallopt`), so graph results reuse freed "
        "buffers",
        "the TorchScript backend's first compile",
    ),
    Effect(
        "jit_executor",
        "LAZYGEN_JIT_EXECUTOR",
        "TorchScript's profiling executor and profiling mode turned off for the process",
        "the TorchScript backend's first compile",
    ),
    Effect(
        "backward_errors",
        "LAZYGEN_BACKWARD_ERRORS",
        "`torch.autograd.graph._engine_run_backward` wrapped, so an error raised on the "
        "engine's device thread is raised from `backward()` instead of aborting",
        "`import lazygen.runtime` (`privateuse1.backward_errors`)",
    ),
    Effect(
        "pinned_memory",
        "LAZYGEN_PINNED_MEMORY",
        "`pin_memory()` of CPU tensors (`DataLoader(pin_memory=True)`) gives an unpinned "
        "copy instead of torch's error about the accelerator's missing pinned allocator",
        "`init()` (`privateuse1.pinned_memory`)",
    ),
    Effect(
        "accelerator_api",
        "LAZYGEN_ACCELERATOR_API",
        "`torch.accelerator`'s `synchronize`, `empty_cache` and memory statistics wrapped, so "
        "with the lazy device as accelerator they wait for its graphs, do nothing, or answer "
        "for a CUDA backing device (else a clear error) instead of torch's internal assert",
        "`init()` (`privateuse1.accelerator_api`)",
    ),
    Effect(
        "compile_inputs",
        "LAZYGEN_COMPILE_INPUTS",
        "torch's meta converter (`MetaConverter.__call__`) wrapped, so a lazy tensor that "
        "requires grad given to `torch.compile` (a model moved to the lazy device, then "
        "compiled) raises lazygen's `CompileInputError` naming what to do instead of torch's "
        "bare `AssertionError: True != False`",
        "`init()` (`privateuse1.compile_inputs`)",
    ),
    Effect(
        "device_generators",
        "LAZYGEN_DEVICE_GENERATORS",
        "`torch.Generator` replaced by a class that makes a generator of the backing device for "
        "`torch.Generator(device=\"lazygen\")` (torch's Python hooks cannot) and torch's own "
        "generator otherwise; `isinstance` checks answer as before",
        "`init()` (`privateuse1.rng`)",
    ),
    Effect(
        "dlpack",
        "LAZYGEN_DLPACK",
        "`torch.utils.dlpack.to_dlpack`, `Tensor.__dlpack__` and `Tensor.__dlpack_device__` "
        "wrapped, so exporting a lazy tensor raises an error naming `t.cpu()` instead of "
        "giving a tensor without memory",
        "`init()` (`privateuse1.dlpack`)",
    ),
    Effect(
        "fsdp_storage",
        "LAZYGEN_FSDP_STORAGE",
        "FSDP2's storage helpers (`alloc_storage`, `free_storage`, the storage check of "
        "`FSDPParam.reset_sharded_param`) skip lazy tensors, which have no storage, and "
        "FSDP2's `fsdp::` ops get Functionalize kernels, so `fully_shard` runs lazily",
        "the first lazy process group (`distributed.fsdp`)",
    ),
    Effect(
        "state_dict_collectives",
        "LAZYGEN_STATE_DICT_COLLECTIVES",
        "`torch.distributed.checkpoint.state_dict`'s gather step wrapped: after a full state "
        "dict is gathered, every rank runs its traced all-gathers, so a rank that reads it "
        "alone (`cpu_offload=True` reads on rank 0) does not wait for ranks that never would",
        "the first lazy process group (`distributed.state_dicts`)",
    ),
    Effect(
        "printing",
        "LAZYGEN_PRINTING",
        "`torch._tensor_str._str` wrapped, so lazy tensors print as other devices' do",
        "`init()` (`privateuse1.printing`)",
    ),
    Effect(
        "profiler",
        "LAZYGEN_PROFILER",
        '`torch.autograd.profiler.profile.__init__` wrapped, so `use_device="lazygen"` '
        "profiles through Kineto instead of torch's legacy path, which needs native stubs "
        "(a C++ warning per op, negative times)",
        "`init()` (`privateuse1.profiler`)",
    ),
    Effect(
        "serialization",
        "LAZYGEN_SERIALIZATION",
        "tensor pickling, `torch.load` rebuilding and storage creation wrapped, so deepcopy, "
        "pickle and `torch.save` work as for CUDA tensors",
        "`init()` (`privateuse1.serialization`)",
    ),
    Effect(
        "tied_parameters",
        "LAZYGEN_TIED_PARAMETERS",
        "`nn.Module.to` and `nn.Module.<device>()` wrapped, so tied parameters stay tied",
        "`init()` (`privateuse1.tied_parameters`)",
    ),
)

_BY_NAME = MappingProxyType({effect.name: effect for effect in EFFECTS})


def enabled(name: str) -> bool:
    """Whether effect ``name`` is wanted: unless its variable is ``0``."""
    return os.environ.get(_BY_NAME[name].variable, "1").strip() != "0"


def apply_gc_effects() -> None:
    """The GC effects (``gc_freeze``, ``gc_gen0``), once ``init()`` has imported everything."""
    if enabled("gc_freeze"):
        _freeze_startup_objects()
    _raise_young_generation_threshold()


def _freeze_startup_objects() -> None:
    """Move every object alive now (torch's and lazygen's modules, the generated kernels)
    out of the cyclic GC's reach with ``gc.freeze()``.

    Each traced op leaves a few GC-tracked objects (node, value, tensors) alive until the
    sync, so tracing triggers full collections; each full collection walks the whole heap,
    nearly all of it torch's import-time objects, which made a pause of several times an
    op's own cost (docs/benchmarks.md). Frozen objects are never collected, which costs
    nothing for modules but would keep cyclic garbage made of objects that were alive
    before ``init()`` for good: ``LAZYGEN_GC_FREEZE=0`` turns this off (ML servers such as
    vLLM freeze their start-up heap for the same reason).

    ``torch._dynamo`` is imported first: torch imports it on the first optimizer step or
    random op (their ``_disable_dynamo`` wrappers), and its objects (sympy, mpmath, ...)
    would otherwise stay in every full collection. Training programs pay that import
    anyway; others pay it here."""
    with contextlib.suppress(ImportError):
        import torch._dynamo  # noqa: F401
    gc.collect()  # what is garbage already is freed, not frozen
    gc.freeze()


#: Youngest-generation threshold set by ``init()`` (``LAZYGEN_GC_GEN0``; 0 keeps Python's).
GC_GEN0_THRESHOLD = 20_000


def _raise_young_generation_threshold() -> None:
    """Collect the youngest generation after 20,000 net new GC-tracked objects instead of
    Python's 700.

    A traced op leaves a node, its value, an inner and an outer tensor alive until the step
    is synced, so a step of a thousand ops counts a few thousand survivors: with 700, a small
    transformer's step ran several fruitless collections (docs/benchmarks.md): the IR dies
    by reference counting at the sync. What it costs: cyclic garbage waits for up to 20,000
    new objects (a few MB) before it is collected. ``LAZYGEN_GC_GEN0=<n>`` sets another
    threshold; ``0`` leaves Python's alone; a threshold already above it (set by the
    program) is kept."""
    try:
        wanted = int(os.environ.get("LAZYGEN_GC_GEN0", GC_GEN0_THRESHOLD))
    except ValueError:
        raise ValueError(
            f"lazygen: LAZYGEN_GC_GEN0={os.environ['LAZYGEN_GC_GEN0']!r} is not an integer; "
            "set a number of objects (0 keeps Python's threshold)"
        ) from None
    young, *older = gc.get_threshold()
    if wanted > young:
        gc.set_threshold(wanted, *older)
