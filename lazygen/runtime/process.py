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
import importlib
import os
import sys
import warnings
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
        "deferred_imports",
        "LAZYGEN_DEFERRED_IMPORTS",
        "a finder first in `sys.meta_path` that, once the program or torch imports "
        "`torch._dynamo` (torch does at the first optimizer step), registers the lazy "
        "device's Dynamo interface and freezes the new objects (`gc_freeze`); `=0` imports "
        "`torch._dynamo` in `init()` instead (~1.2 s)",
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
        "backward_thread",
        "LAZYGEN_BACKWARD_THREAD",
        "`torch.autograd.graph._engine_run_backward` wrapped, so a backward whose roots are "
        "all tensors of the lazy device's index 0 runs its nodes on the calling thread "
        "(`torch.autograd.set_multithreading_enabled(False)` for the call) instead of "
        "waiting for the engine's device thread",
        "`import lazygen.runtime` (`privateuse1.backward_thread`)",
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
        "torch's meta describer (`MetaTensorDescriber.describe_tensor`) wrapped, so Dynamo "
        "fakes lazy tensors as plain tensors of the lazy device, as it fakes XLA's (a model "
        "moved to the lazy device compiles; a view raises lazygen's `CompileInputError`), "
        "and lazygen's own code put on Dynamo's skip list",
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
        gc.freeze()
        when_imported("torch._dynamo", _freeze_after_import)
    _raise_young_generation_threshold()


def _freeze_after_import(module) -> None:
    """``gc_freeze`` again once ``torch._dynamo`` is imported (by torch itself, at the first
    optimizer step or random op: their ``_disable_dynamo`` wrappers; or by the program)."""
    gc.freeze()


# The start-up heap is frozen with ``gc.freeze()`` (``gc_freeze``): every object alive
# at the end of ``init()`` (torch's and lazygen's modules, the generated kernels), and again
# every object alive when ``torch._dynamo`` has been imported (sympy, mpmath: ~120k objects),
# so full collections no longer walk them. Each traced op leaves a few GC-tracked objects
# (node, value, tensors) alive until the sync, so tracing triggers full collections; each
# one walked the whole heap, nearly all of it import-time objects, a pause of several times
# an op's own cost (docs/benchmarks.md). Frozen objects are never collected: nothing for
# modules, but cyclic garbage among the objects alive at those two moments stays for good
# (``LAZYGEN_GC_FREEZE=0`` turns this off; ML servers such as vLLM freeze their start-up
# heap for the same reason). No ``gc.collect()`` runs first: after ``init()`` it found no
# garbage and cost a full walk (~0.1 s), and ``init()`` itself runs with the collector
# paused (``collector_paused``). ``torch._dynamo`` is no longer imported by ``init()``
# (~1.2 s): programs that never import it do not pay for it.


@contextlib.contextmanager
def collector_paused():
    """The cyclic GC off for a block of imports (``init()``'s): module objects live for the
    process, so full collections while importing walk a growing heap for nothing (one
    fired inside the generated modules' import: ~0.1 s of ~0.2 s)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def when_imported(name: str, callback) -> None:
    """Call ``callback(module)`` once module ``name`` is imported: now if it is, else right
    after its import completes (``deferred_imports``; with it off, ``name`` is imported now).

    What lazygen registers with a module torch imports lazily (``torch._dynamo``: ~1.2 s,
    imported by torch at the first optimizer step) waits for that import instead of paying
    it in ``init()``. A callback's failure is a warning: the program's import goes on. The
    waiting callbacks live on the finder in ``sys.meta_path``, the import system's own
    list, for the process's life (an import happens once)."""
    module = sys.modules.get(name)
    if module is None and not enabled("deferred_imports"):
        module = importlib.import_module(name)
    if module is not None:
        _call(callback, module)
        return
    finder = next((f for f in sys.meta_path if isinstance(f, _AfterImportFinder)), None)
    if finder is None:
        finder = _AfterImportFinder()
        sys.meta_path.insert(0, finder)
    finder.waiting.setdefault(name, []).append(callback)


def _call(callback, module) -> None:
    try:
        callback(module)
    except Exception as error:  # noqa: BLE001 - the program's import must go on
        warnings.warn(
            f"lazygen: setting up after the import of {module.__name__} failed "
            f"({type(error).__name__}: {error}); lazygen goes on without it",
            RuntimeWarning,
            stacklevel=2,
        )


class _AfterImportFinder:
    """A ``sys.meta_path`` finder that finds nothing itself: for a module with callbacks
    waiting (``waiting``: module name -> callbacks) it asks the finders after it, and gives
    their spec a loader that runs the callbacks once the module's code has run."""

    def __init__(self) -> None:
        self.waiting: dict[str, list] = {}

    def find_spec(self, name, path, target=None):
        if name not in self.waiting:
            return None
        for finder in sys.meta_path[sys.meta_path.index(self) + 1 :]:
            find = getattr(finder, "find_spec", None)
            spec = find(name, path, target) if find is not None else None
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _ThenCall(spec.loader, self.waiting.pop(name))
                return spec
        return None


class _ThenCall:
    """A module's own loader, then the callbacks waiting for it; anything else (resource
    readers, ``get_data``) is the loader's own."""

    def __init__(self, loader, callbacks: list) -> None:
        self._loader = loader
        self._callbacks = callbacks

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module) -> None:
        self._loader.exec_module(module)
        for callback in self._callbacks:
            _call(callback, module)

    def __getattr__(self, attribute):
        return getattr(self._loader, attribute)


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
