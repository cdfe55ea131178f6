"""Output shapes of an op: a cache keyed on the op and its arguments' metadata; meta kernels
(or a hand-written ``compute_shape_*``) only on a miss.

A miss first consults the shapes an earlier process computed (``StoredShapes``, read from
lazygen's persistent cache at ``init()`` by ``execution/shape_store.py``): a warm process's
first steps ran the meta kernels of every op signature again (111 of them in an encoder +
AdamW step, a quarter of its first two steps). Kept there by construction only what a
stored file cannot get wrong: torch's own ops (``aten``, ``prims``) whose shapes come from
torch's meta kernels or lazygen's hand-written functions (the cache folder is per torch
version and lazygen source), keyed by ``persistent_name``, which names the op, the shape
function, the default dtype and the backing device's kind besides the arguments, and
refuses what means nothing in another process (a symbolic size, any object without a
stable encoding).
"""

from __future__ import annotations

import threading

import torch

from .. import metrics, op_registry, state
from ..errors import LazygenRuntimeError
from ..graph import stable_key
from ..ir import Shape, call_shape_function, scalar_dtype, wrapped_number_dtype
from ..op_registry import op_string
from ..state import settings
from .tensor import LazyTensor


class _KEYWORDS:  # noqa: N801 - a marker: a class hashes as fast as object() and has a name
    """Separates positional from keyword arguments in a key (a class: ``stable_key`` names
    it the same in every process)."""


_META = torch.device("meta")
#: The element types of a list of plain ints (sizes, dims: most list arguments), whose key
#: is the list as a tuple (an int is its own key): ``set(map(type, ...))`` checks that in C
#: where a call per element cost ~0.1 us each (a 3-4 size list 0.58-0.67 -> 0.35 us).
_INTS = frozenset({int})
_default_dtype = torch.get_default_dtype  # read at each cache hit (see ``ShapeCache``)


class ShapeCache(dict):
    """The shape cache of this run (a part of the runtime object: a reset empties it by
    making a new one): key -> shapes. Two generations approximate an LRU without
    bookkeeping on hits: a miss puts an entry in this dict, the recent generation; once that
    holds half the bound it becomes ``old`` (and the previous ``old``, whatever was not used
    since, goes).

    The hot path (``kernel_support.recording.trace``, ``cached_shapes``) reaches it as
    ``state.runtime.parts[ShapeCache]``: a subscript, no Python frame and no call, its hit
    one ``dict.get``; a ``KeyError`` (a new runtime) makes it through ``state.part``.

    Its entries hold for one default dtype (``torch.set_default_dtype``), which decides
    results a key cannot see (``int / int``, ``full(size, 1.5)``): each hit compares
    ``default_dtype`` with torch's by identity, and the miss on another one (``_miss``) starts
    the cache again under it."""

    __slots__ = ("old", "default_dtype")

    def __init__(self) -> None:
        super().__init__()
        self.restart()

    def restart(self) -> None:
        """Empty, holding entries for torch's current default dtype."""
        self.clear()
        self.old: dict = {}
        self.default_dtype: torch.dtype = _default_dtype()


def shape_cache() -> ShapeCache:
    """This run's shape cache (made on first use)."""
    return state.part(ShapeCache)


def shape_key(arg, value_dependent: bool = False):
    """What of an argument the shapes may depend on (its part of a cache key)."""
    kind = type(arg)
    if kind is LazyTensor:
        return arg._shape
    if kind is float or kind is complex:
        return arg if value_dependent else kind
    if kind is int or arg is None or kind is str:
        return arg
    if kind is bool:
        return (bool, arg)
    if kind is list or kind is tuple:
        if not arg:
            return ()
        if set(map(type, arg)) == _INTS:
            return tuple(arg)
        return tuple([shape_key(a, value_dependent) for a in arg])
    if isinstance(arg, torch.Tensor):
        return ("tensor", arg.device.type, arg.dtype, tuple(arg.shape))
    if isinstance(arg, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        return (type(arg), str(arg))
    if isinstance(arg, torch.Generator):  # draws no shape; a key must not keep it alive
        return torch.Generator
    return arg


def cached_shapes(key: tuple, op, args, kwargs, compute_fn=None) -> tuple[Shape, ...]:
    """The shapes cached under ``key`` (built by the caller from the op and its arguments'
    metadata, as ``infer_shapes`` builds its own); computed and cached on a miss."""
    try:
        cache = state.runtime.parts[ShapeCache]
        shapes = cache.get(key) if cache.default_dtype is _default_dtype() else None
    except KeyError:
        shapes = None
    if shapes is None:
        shapes = _miss(key, op, args, kwargs, compute_fn)
    return shapes


def _to_meta(arg):
    """A meta kernel's argument for ``arg``: tensors and the lazy device become meta ones,
    and a generator None. No shape depends on a generator, and the meta kernels of several
    random ops (``exponential``, ``cauchy``, ``log_normal``, ``geometric``: torch's
    reference implementations) refuse one with an internal ``AssertionError``."""
    if isinstance(arg, torch.Generator):
        return None
    if isinstance(arg, torch.Tensor):
        return torch.empty(arg.shape, dtype=arg.dtype, device=_META)
    if type(arg) in (list, tuple):
        return type(arg)(_to_meta(a) for a in arg)
    if isinstance(arg, torch.device) and arg.type == settings.device_type:
        return _META
    return arg


def _shapes_of(result, top: bool = True) -> tuple[Shape | None, ...]:
    """One shape per tensor output; ``None`` where a multi-output op left an output undefined
    (``convolution_backward`` with an ``output_mask`` entry off)."""
    if isinstance(result, torch.Tensor):
        return (Shape(result.dtype, tuple(result.shape)),)
    if isinstance(result, (tuple, list)):
        shapes = []
        for item in result:
            if item is None and top and type(result) is tuple:
                shapes.append(None)
            else:
                shapes.extend(_shapes_of(item, False))
        return tuple(shapes)
    return ()


def infer_shapes(op, args, kwargs, compute_fn=None, value_dependent=False) -> tuple[Shape, ...]:
    if compute_fn is not None and getattr(compute_fn, "data_dependent", False):
        return compute_shapes(op, args, kwargs, compute_fn)
    # A flat tuple: the op, then one entry per argument (a lazy tensor's (dtype, sizes)).
    parts = [id(op), value_dependent]  # OpOverload hashes in Python; torch keeps ops alive
    for arg in args:
        parts.append(arg._shape if type(arg) is LazyTensor else shape_key(arg, value_dependent))
    if kwargs:
        parts.append(_KEYWORDS)
        for name, arg in kwargs.items():
            parts.append(name)
            parts.append(shape_key(arg, value_dependent))
    return cached_shapes(tuple(parts), op, args, kwargs, compute_fn)


def _miss(key, op, args, kwargs, compute_fn) -> tuple[Shape, ...]:
    cache = shape_cache()
    if cache.default_dtype is not _default_dtype():  # what it holds is for another one
        cache.restart()
    shapes = cache.old.get(key)
    if shapes is None:
        stored = state.runtime.parts.get(StoredShapes)
        if stored is None:
            shapes = compute_shapes(op, args, kwargs, compute_fn)
        else:
            shapes = stored.shapes(key, op, args, kwargs, compute_fn)
    cache[key] = shapes
    if len(cache) >= max(1, settings.shape_cache_size // 2):
        cache.old = dict(cache)
        cache.clear()
    return shapes


class StoredShapes:
    """The output shapes read from the persistent cache (``table``: ``persistent_name`` ->
    shapes) and those computed since (``fresh``, which ``execution/shape_store.py`` writes
    back); a part of the runtime, present only where that store is open."""

    __slots__ = ("table", "fresh", "_lock")

    def __init__(self, table: dict | None = None) -> None:
        self.table: dict = table or {}
        self.fresh: dict = {}
        self._lock = threading.Lock()  # tracing threads add while a save takes them

    def take_fresh(self) -> dict:
        """The shapes computed since the last call (for the store to write)."""
        with self._lock:
            fresh, self.fresh = self.fresh, {}
        return fresh

    def on_reset(self) -> StoredShapes:
        """Kept by ``state.reset()``, which puts the runtime back as ``init()`` left it (with
        the table read, and what was computed since still to be written)."""
        return self

    def shapes(self, key: tuple, op, args, kwargs, compute_fn) -> tuple[Shape, ...]:
        """The stored shapes of ``key``, else computed (and kept for the store)."""
        name = persistent_name(key, op, compute_fn)
        shapes = None if name is None else self.table.get(name)
        if shapes is not None:
            metrics.count("StoredShapesRead")
            return shapes
        shapes = compute_shapes(op, args, kwargs, compute_fn)
        if name is not None and all(
            s is None or all(type(n) is int for n in s.sizes) for s in shapes
        ):
            with self._lock:
                self.fresh[name] = self.table[name] = shapes
        return shapes


_STORED_NAMESPACES = ("aten", "prims")


def persistent_name(key: tuple, op, compute_fn=None) -> str | None:
    """``key`` (an in-process key: ``id(op)`` or a ``TracedOp`` first) as text that means the
    same in another process, or None where a stored answer could be wrong there: an op
    outside torch's own namespaces (a user's library registers its own meta kernels), a
    shape function outside lazygen (a backend's own: not in the cache's fingerprint), or a
    part without a stable encoding. The default dtype and the backing device's kind are
    part of it (factory ops and wrapped numbers read the one, CPU statistics the other)."""
    if getattr(op, "namespace", None) not in _STORED_NAMESPACES:
        return None
    function = ""
    if compute_fn is not None:  # a function of lazygen's, by name (not a partial, a lambda)
        module = getattr(compute_fn, "__module__", None) or ""
        function = f"{module}.{getattr(compute_fn, '__qualname__', '<none>')}"
        if not function.startswith("lazygen.") or "<" in function:
            return None
    arguments = stable_key.encode(key[1:])
    if arguments is None:
        return None
    layout = "call" if type(key[0]) is int else type(key[0]).__name__
    backing = "cpu" if _backing_is_cpu() else "other"
    return "\x1d".join(
        (layout, str(op), function, str(torch.get_default_dtype()), backing, arguments)
    )


def compute_shapes(op, args, kwargs, compute_fn=None) -> tuple[Shape, ...]:
    """Shapes without the cache: ``compute_fn`` when given, else the meta kernel."""
    if compute_fn is not None:
        return call_shape_function(compute_fn, *args, **kwargs)
    meta_args = list(_to_meta(tuple(args)))
    meta_kwargs = {k: _to_meta(v) for k, v in kwargs.items()}
    _numbers_to_tensors(op, meta_args, meta_kwargs)
    if op_registry.has("same_dtype", op):
        _check_same_dtype(op, meta_args, meta_kwargs)
    with torch.utils._python_dispatch._disable_current_modes():
        result = op(*meta_args, **meta_kwargs)
    shapes = _shapes_of(result)
    if op_registry.has("cpu_statistics", op) and _backing_is_cpu():
        shapes = _cpu_statistics(shapes, meta_args, meta_kwargs)
        if op_registry.has("cpu_eval_statistics", op):
            shapes = _cpu_eval_statistics(op, shapes, meta_args, meta_kwargs)
    return shapes


def _backing_is_cpu() -> bool:
    return torch.device(settings.backing_device).type == "cpu"


def _cpu_statistics(shapes: tuple, args: list, kwargs: dict) -> tuple:
    """``shapes`` with the floating outputs after the first in the CPU kernels' dtype."""
    tensors = [t for t in list(args) + list(kwargs.values()) if isinstance(t, torch.Tensor)]
    input_dtype = tensors[0].dtype
    if input_dtype not in (torch.float16, torch.bfloat16):
        return shapes  # CPU and meta kernels agree
    mixed = [t.dtype for t in tensors[1:] if t.is_floating_point() and t.dtype != input_dtype]
    dtype = mixed[0] if mixed else input_dtype
    return shapes[:1] + tuple(
        Shape(dtype, s.sizes) if s is not None and s.dtype.is_floating_point else s
        for s in shapes[1:]
    )


def _cpu_eval_statistics(op, shapes: tuple, args: list, kwargs: dict) -> tuple:
    """``shapes`` with the saved statistics (results 1 and 2) empty where the call
    evaluates: the CPU kernel gives them no elements (meta kernels give one per channel)."""
    flag = op_registry.of("cpu_eval_statistics", op)
    if flag is not None:
        names = [argument.name for argument in op._schema.arguments]
        if flag not in names:  # an overload without the flag (``.no_stats``) trains
            return shapes
        position = names.index(flag)
        training = kwargs[flag] if flag in kwargs else args[position]
        if training:
            return shapes
    return shapes[:1] + tuple(Shape(s.dtype, (0,)) for s in shapes[1:3]) + shapes[3:]


def _check_same_dtype(op, args, kwargs) -> None:
    dtypes = [
        t.dtype
        for t in list(args) + list(kwargs.values())
        if isinstance(t, torch.Tensor) and t.dim() > 0  # 0-dim: wrapped numbers
    ]
    if len(set(dtypes)) > 1:
        listed = ", ".join(str(d).removeprefix("torch.") for d in dtypes)
        raise LazygenRuntimeError(
            f"lazygen: {op_string(op)} needs tensors of one dtype, as in eager, but got "
            f"{listed}; convert them first (e.g. model.to(dtype) or x.to(weight.dtype))"
        )


_NUMBER_TYPES = (bool, int, float, complex)


@state.memo
def _tensor_slots(op) -> tuple[tuple[int, ...], tuple[str, ...]]:
    """The positions and names of ``op``'s ``Tensor`` arguments."""
    tensor_args = [
        (i, a.name) for i, a in enumerate(op._schema.arguments) if str(a.type) == "Tensor"
    ]
    return tuple(i for i, _ in tensor_args), tuple(n for _, n in tensor_args)


def _numbers_to_tensors(op, args: list, kwargs: dict) -> None:
    """A wrapped number reaches ``__torch_dispatch__`` as a Python number, which most ops do
    not accept for a ``Tensor``: give it the 0-dim dtype with which promotion treats it as
    eager treats a wrapped number."""
    positions, names = _tensor_slots(op)
    numbers = [i for i in positions if i < len(args) and type(args[i]) in _NUMBER_TYPES]
    named = [n for n in names if type(kwargs.get(n)) in _NUMBER_TYPES]
    if not numbers and not named:
        return
    others = [
        (t.dtype, t.dim())
        for t in list(args) + list(kwargs.values())
        if isinstance(t, torch.Tensor)
    ]

    def as_tensor(value):
        dtype = wrapped_number_dtype(scalar_dtype(value), others)
        return torch.empty((), dtype=dtype, device=_META)

    for i in numbers:
        args[i] = as_tensor(args[i])
    for name in named:
        kwargs[name] = as_tensor(kwargs[name])


def clear_cache() -> None:
    """Empty the shape cache (``ir_cache.reset``)."""
    shape_cache().restart()


def trim_cache() -> None:
    """Drop entries beyond ``config.set_shape_cache_size``, least recently used first."""
    cache = shape_cache()
    bound = max(1, settings.shape_cache_size)
    if len(cache) + len(cache.old) > bound:
        cache.old = {}
        if len(cache) > bound // 2:
            cache.old = dict(list(cache.items())[-(bound // 2 or 1) :])
            cache.clear()


def cache_size() -> int:
    cache = shape_cache()
    return len(cache) + len(cache.old)
