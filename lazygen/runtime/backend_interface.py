"""The interface between lazygen's backend-neutral core and its backends, found by name.

A backend decides where device data lives, turns a post-ordered IR graph into something it
can run (through a ``LoweringContext`` that every generated ``lower()`` speaks), runs it,
and names the kernel tables (generated registration module, hand-written kernels) that
trace ops for it. The core calls nothing else; ``docs/backend-guide.md`` walks through
writing one.

Backends are found by name (``init(backend="inductor")``, ``LAZYGEN_BACKEND``): first the
ones registered in this process with ``register_backend``, then lazygen's built-in ones
(listed, not imported, by ``lazygen.runtime.backends``), then the ``lazygen.backends``
entry-point group of installed distributions. A name maps to a zero-argument factory
(usually the ``Backend`` subclass itself).
"""

from __future__ import annotations

import difflib
import functools
import importlib
import importlib.metadata
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import torch

from lazygen import renamed

from . import state
from .errors import LazygenRuntimeError
from .ir import Node, Value
from .lowering_context import LoweringContext
from .state import settings

ENTRY_POINT_GROUP = "lazygen.backends"


@dataclass(frozen=True)
class KernelTables:
    """What traces ops for a backend.

    Kernels by ``torch.ops`` overload (generated and hand-written ``supported`` ones),
    autograd kernels (the op list's ``autograd`` section), IR node classes by ``op_name``,
    and wrappers the runtime puts around whichever kernel an op ends up with (``op ->
    (kernel -> kernel)``).
    """

    kernels: dict = field(default_factory=dict)
    autograd_kernels: dict = field(default_factory=dict)
    node_classes: dict = field(default_factory=dict)
    wrappers: dict = field(default_factory=dict)
    #: Other names of counters (LTC's spellings) -> lazygen's, for ``metrics``.
    counter_aliases: dict = field(default_factory=dict)

    @classmethod
    def from_module(
        cls, module_name: str | ModuleType, wrappers: dict | None = None
    ) -> KernelTables:
        """The tables of a generated ``registration`` module, given by name or imported.

        The tables are ``KERNELS``, ``AUTOGRAD_KERNELS``, ``NODE_CLASSES`` and
        ``COUNTER_ALIASES``; an imported module (``from .generated import registration``) is
        one the import graph sees. A module that is not one is an error: read as empty
        tables, every op would silently run eagerly.
        """
        if isinstance(module_name, ModuleType):
            return cls._from_registration(module_name.__name__, module_name, wrappers)
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as error:
            if error.name is None or not module_name.startswith(error.name):
                raise  # the registration module imports, something it imports does not
            raise LazygenRuntimeError(
                f"lazygen: KernelTables.from_module({module_name!r}): no module "
                f"{error.name!r}. It takes the generated registration module "
                "(`<package>.generated.registration`), which `lazygen gen` or the "
                "package's build writes: check the name, and that the package is built"
                + renamed.generated_package_hint(module_name)
            ) from error
        return cls._from_registration(module_name, module, wrappers)

    @classmethod
    def _from_registration(
        cls, module_name: str, module: ModuleType, wrappers: dict | None
    ) -> KernelTables:
        if not hasattr(module, "KERNELS") and not hasattr(module, "NODE_CLASSES"):
            raise LazygenRuntimeError(
                f"lazygen: KernelTables.from_module({module_name!r}): {module_name} holds "
                "no KERNELS nor NODE_CLASSES; it takes the generated registration module "
                "(`<package>.generated.registration`)"
            )
        return cls(
            dict(getattr(module, "KERNELS", {})),
            dict(getattr(module, "AUTOGRAD_KERNELS", {})),
            dict(getattr(module, "NODE_CLASSES", {})),
            dict(wrappers or {}),
            dict(getattr(module, "COUNTER_ALIASES", {})),
        )


class Backend(ABC):
    """A lazy backend.

    Subclasses implement the abstract methods; the others have defaults that suit backends
    whose device data are torch tensors eager ops can run on (the eager fallback runs ops on
    device data as it is).
    """

    #: The name it is registered under (``init(backend=name)``).
    name: str = ""
    #: The device type its users expect when ``init`` is given none (``None``: the
    #: default, ``lazygen``).
    device_name: str | None = None
    #: True when ``launch`` starts a run and returns at once (``mark_step`` then returns
    #: while the graph runs); False: every graph runs synchronously through ``execute``.
    asynchronous: bool = False
    #: True when graphs may hold torch's functional collectives
    #: (``_c10d_functional::all_reduce`` ... then ``wait_tensor``, lowered through ``ctx.call`` like any op) and
    #: run them; False: each collective on a lazy tensor cuts the graph and runs eagerly
    #: on the device data (see ``lazygen.runtime.distributed``).
    collectives_in_graph: bool = False
    #: True when a graph it compiled holds nothing about sizes beyond what its lowerings
    #: read (TorchScript and FX graphs are shape-polymorphic): with dynamic shapes, sizes
    #: are graph inputs, and one graph compiled from nodes whose sizes are hidden serves
    #: every size (``graph/dynamic.py``). False: each set of sizes compiles its own graph.
    size_generic: bool = False
    #: True when its graphs may write a graph input in place (``ir.InputWrite``, lowered
    #: as ``aten::copy_``) and that pays: a compiler that writes the new values where they
    #: go instead of into new buffers (Inductor; TorchScript, which computes the last
    #: pointwise op into the input). The Dynamo replay of an optimizer step then lets the
    #: graph write the caller's parameters; False: the graph returns the new values and
    #: the replay copies them into the parameters (one ``_foreach_copy_``).
    writes_inputs: bool = False
    #: True when its device data are torch tensors on ``data_device()`` that eager ops run
    #: on (every backend that executes with torch's kernels). False: device data is
    #: whatever ``to_data`` returns (a ``jax.Array``, a handle) and ``execute`` returns the
    #: same kind; the core never runs a torch op on it, and reads it (eager fallback, host
    #: reads, printing) only through ``from_data(data, "cpu", copy=False)``, once per tensor
    #: per step (docs/backend-guide.md, "Device data that is not a torch tensor").
    torch_data: bool = True
    #: How random ops reach its graphs (``lazygen.runtime.tracing.random_inputs``):
    #: ``"torch_generator"``, a ``torch.Generator`` per random op holding the state eager's
    #: call would start from (the graph draws eager's exact numbers; needs torch's
    #: kernels), or ``"seed"``, an int64 seed per random op as a graph input (fresh at
    #: every call of a graph replayed by ``torch.compile``), the backend drawing with its
    #: own counter-based generator (numbers differ from eager's, distributions do not).
    random_numbers: str = "torch_generator"
    #: Whether runs go through ``execute_donating``, which may take over the inputs nothing
    #: reads afterwards (``execution/liveness.py`` decides which; non-torch data only).
    donates_inputs: bool = False
    #: Whether compiled graphs are kept on disk for the next process (``save_executable``,
    #: ``load_executable``, ``cache_fingerprint``: ``execution/graph_store.py``).
    persistent_executables: bool = False
    # Scalars (wrapped Python numbers, ``ScalarData``) reach ``execute`` as 0-dim torch
    # tensors of torch's dtypes (float64, int64, bool, complex128) on torch-data backends,
    # and as the Python numbers themselves on the others, which cast them where a lowering
    # needs a dtype (``ctx.output_dtype()``, ``ctx.number_dtype(v)``).

    def refused_ops(self) -> dict:
        """Ops this backend cannot run inside a graph.

        Each is mapped to None (always) or to a predicate ``(op, args, kwargs) -> bool``
        (this call): on this backend's devices each such call cuts the graph and runs
        eagerly, counted and listed as refused in ``metrics.fallback_report()`` (see
        ``lazygen.runtime.dispatch.refusals`` for the keys). Read once, when the backend is
        installed; none by default.
        """
        return {}

    # Kernel tables ------------------------------------------------------------------------

    @abstractmethod
    def kernel_tables(self) -> KernelTables:
        """The kernels that trace ops for this backend (see ``KernelTables.from_module``)."""

    # Data ---------------------------------------------------------------------------------

    def data_device(self, index: int) -> torch.device:
        """Where device data of ``lazygen:<index>`` lives (a torch device eager ops run on)."""
        return torch.device(settings.backing_device)

    def to_data(self, tensor: torch.Tensor, device: torch.device) -> Any:
        """Device data for ``tensor`` on ``device`` (this backend's data device).

        The data are contiguous; they may be ``tensor`` itself, or share its memory, when it
        already is contiguous (callers copy what they must not share). With ``torch_data``
        false, they are the backend's own data object.
        """
        if tensor.device != device:
            tensor = tensor.to(device)
        return tensor if tensor.is_contiguous() else tensor.contiguous()

    def from_data(
        self, data: Any, device: torch.device | str = "cpu", copy: bool = True
    ) -> torch.Tensor:
        """Device data as a torch tensor on ``device`` (the host by default).

        A copy, or with ``copy=False`` a tensor that may share the data's memory (DLPack),
        which the core only reads (it asks so only of backends whose ``torch_data`` is
        false).
        """
        if not copy and data.device == torch.device(device):
            return data
        return data.to(device, copy=True)

    # Graphs -------------------------------------------------------------------------------

    @abstractmethod
    def lowering_context(self, device: torch.device) -> LoweringContext:
        """A fresh context for one graph whose data lives on ``device``."""

    def lower(self, order: list[Node], outputs: list[Value], device: torch.device):
        """Lower a post-ordered graph.

        Its inputs become parameters in order, every other node goes through its
        ``lower()``, ``outputs`` become the results.
        """
        ctx = self.lowering_context(device)
        ctx.lower_graph(order, outputs)
        return ctx

    @abstractmethod
    def compile(self, order: list[Node], outputs: list[Value], device: torch.device) -> Any:
        """An executable for the graph (kept in the compile cache, keyed by structure).

        Called wherever the program first needs the graph's results, which may be inside a
        lazy tensor's ``__torch_dispatch__`` (a host read): a backend that traces with torch
        while compiling does so under ``outside_dispatch()``.
        """

    def save_executable(self, executable: Any) -> bytes | None:
        """``executable`` as bytes for ``load_executable`` in another process, or None."""
        return None

    def load_executable(self, payload: bytes, order: list[Node], outputs, device) -> Any:
        """The executable saved as ``payload``, for ``order``: a graph of its structure."""
        raise NotImplementedError

    def cache_fingerprint(self) -> tuple[str, ...]:
        """What saved executables depend on beyond lazygen's key: compiler version, flags."""
        return ()

    @abstractmethod
    def execute(self, executable: Any, inputs: list) -> list:
        """Run ``executable`` on its inputs; one result per output.

        The inputs are device data, 0-dim scalar tensors, generators or seeds, in the order
        of ``LoweringContext.parameters``. Each result is a tensor, or with ``torch_data``
        false the backend's data object (of the output's dtype).
        """

    def execute_donating(self, executable: Any, inputs: list, dead: frozenset[int]) -> list:
        """``execute``, where ``inputs[i]`` for ``i`` in ``dead`` may hold the results.

        Called instead of ``execute`` when ``donates_inputs`` is set: the core guarantees
        that nothing reads a dead input after this run (the executable may reuse its
        buffer, as ``jax.jit``'s ``donate_argnums`` does). The default ignores ``dead``.
        """
        return self.execute(executable, inputs)

    def runner(self, executable: Any) -> Callable[[list], list]:
        """``run(inputs)``: what ``execute(executable, inputs)`` does.

        It serves callers that run one executable many times (the ``torch.compile`` replay
        asks once per graph). A backend whose executable has a shorter path than ``execute``
        returns that: each layer of Python calls costs about a microsecond, which a tiny
        graph's run feels.
        """
        return functools.partial(self.execute, executable)

    def launch(self, executable: Any, inputs: list) -> Any:
        """Start a run and return a handle whose ``wait()`` returns what ``execute`` would.

        Only called when ``asynchronous``. Never let the worker drop the last reference to a
        tensor that has a Python object (see ``launches.py``).
        """
        raise NotImplementedError(f"backend {self.name!r} runs graphs synchronously")

    # One program over many devices (single-controller SPMD, ``lazygen.spmd``) -------------

    def use_spmd(self) -> None:
        """Run every graph as one program over all devices (one device: refuse, the default)."""
        raise LazygenRuntimeError(
            f"lazygen: the {self.name!r} backend runs each graph on one device; "
            "single-controller SPMD (lazygen.spmd) needs a backend that spreads one program "
            "over several devices: init(backend='jax')"
        )

    def spmd_devices(self) -> tuple[int, ...]:
        """The global ids of the devices one SPMD program spans (every process's)."""
        return (0,)

    def place(self, data: Any, placement: Any) -> Any:
        """``data`` laid out as ``placement`` (a ``sharding.Placement``; None: replicated)."""
        return data

    def upload(self, tensor: torch.Tensor, placement: Any) -> Any:
        """Host ``tensor`` as device data laid out as ``placement``, each device sent its piece."""
        return self.place(self.to_data(tensor, self.data_device(0)), placement)

    def output_placements(self, executable: Any) -> tuple | None:
        """Each result's ``Placement`` (or None), in the graph's order; None: replicated."""
        return None

    def program_layout(self, executable: Any) -> Any:
        """A ``sharding.ProgramLayout`` of ``executable``; None for a program on one device."""
        return None

    def dump(self, order: list[Node], outputs: list[Value], device: torch.device) -> str:
        """The backend's text of a graph (``debug.dump_ir(..., "backend")``)."""
        return repr(self.lower(order, outputs, device))

    def describe(self, executable: Any) -> str:
        """The text of a compiled graph (``debug.last_graph()``): what the backend runs."""
        return repr(executable)

    def locate_failure(self, order: list[Node], inputs: list) -> tuple[Node, Exception] | None:
        """After a failed run: the node that fails and why, if the backend can tell."""
        return None

    def error_message(self, error: BaseException) -> str:
        """The text of a lowering, compile or run error as users should read it."""
        return str(error)

    def __repr__(self) -> str:
        """How dumps, errors and ``lr.backend()`` name the backend."""
        return f"<lazygen backend {self.name!r}>"


def kernel_tables_of(backend: Backend) -> KernelTables:
    """``backend.kernel_tables()``, checked: what init and ``set_device_backend`` install."""
    tables = backend.kernel_tables()
    if not isinstance(tables, KernelTables):
        raise LazygenRuntimeError(
            f"lazygen: backend {backend.name!r}: kernel_tables() returned "
            f"{type(tables).__name__}, not a lazygen.runtime.KernelTables (return "
            "KernelTables.from_module('<package>.generated.registration'))"
        )
    return tables


# Finding backends by name -------------------------------------------------------------------


class _Registered(dict):
    """Backend name -> factory, as ``register_backend`` registered them.

    Held for the process (``state.for_process``): a program registers them once, as it
    imports once.
    """


def register_backend(name: str, factory: Callable[[], Backend]) -> None:
    """Make ``name`` usable in ``init(backend=name)`` and ``LAZYGEN_BACKEND``.

    The registration holds in this process, ahead of built-in and entry-point backends of the
    same name.
    """
    state.for_process(_Registered)[name] = factory


def _load(target: str) -> Callable[[], Backend]:
    module_name, _, attr = target.partition(":")
    obj: Any = importlib.import_module(module_name)
    for part in attr.split(".") if attr else ():
        obj = getattr(obj, part)
    return obj


def available_backends(builtin: dict[str, str]) -> list[str]:
    """Names of every backend ``init`` can take: registered, built in or installed."""
    names = set(state.for_process(_Registered)) | set(builtin)
    names |= {ep.name for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)}
    return sorted(names)


def make_backend(spec: str | Backend, builtin: dict[str, str]) -> Backend:
    """A backend instance from a name (see the module docstring) or an instance."""
    if isinstance(spec, Backend):
        return spec
    factory = state.for_process(_Registered).get(spec)
    if factory is None and spec in builtin:
        factory = _load_builtin(spec, builtin)
    if factory is None:
        points = importlib.metadata.entry_points(group=ENTRY_POINT_GROUP, name=spec)
        for point in points:
            factory = _load_entry_point(point)
            break
    if factory is None:
        raise ValueError(
            f"lazygen: no backend named {spec!r}; available: "
            f"{', '.join(available_backends(builtin))}. A third-party backend registers "
            f"with register_backend() or an entry point in the {ENTRY_POINT_GROUP!r} group"
        )
    backend = factory()
    if not isinstance(backend, Backend):
        raise TypeError(
            f"lazygen: backend {spec!r} made {type(backend).__name__}, not a lazygen Backend "
            "(register a subclass of lazygen.runtime.Backend, or a function returning an "
            "instance of one)"
        )
    return backend


def _load_builtin(name: str, builtin: dict[str, str]) -> Callable[[], Backend]:
    """A built-in backend's class.

    One that does not import in this environment (its library missing, a torch built without
    what it needs) is named with the reason and the other choices, instead of a bare
    ImportError from deep inside it.
    """
    try:
        return _load(builtin[name])
    except (ImportError, AttributeError) as error:
        others = [n for n in available_backends(builtin) if builtin.get(n) != builtin[name]]
        raise LazygenRuntimeError(
            f"lazygen: the built-in backend {name!r} does not import here "
            f"({type(error).__name__}: {error}); choose another: {', '.join(others)}"
        ) from error


def _load_entry_point(point: importlib.metadata.EntryPoint) -> Callable[[], Backend]:
    """What an installed backend's entry point names.

    A target that does not import (a misspelt class, a module that fails to import) is the
    backend package's mistake: say which entry point of which distribution, and where it is
    fixed, not only importlib's bare AttributeError.
    """
    try:
        return point.load()
    except Exception as error:
        dist = getattr(point, "dist", None)
        package = f"distribution {dist.name!r}" if dist is not None else "an installed package"
        close = []
        if isinstance(error, AttributeError) and getattr(error, "name", None):
            close = difflib.get_close_matches(error.name, dir(error.obj), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise LazygenRuntimeError(
            f"lazygen: the {ENTRY_POINT_GROUP!r} entry point {point.name!r} of {package} "
            f"names {point.value!r}, which cannot be loaded: {type(error).__name__}: "
            f"{error}{hint} "
            "(fix the entry point, in the package's pyproject.toml or setup.py, or the module "
            "it names, then reinstall the package)"
        ) from error
