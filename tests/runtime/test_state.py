"""``state.reset()`` puts every piece of the runtime's mutable state back as ``init()`` left
it: a new runtime object (each subsystem's state a part of it, the tracing hot path's
caches included), with what a part's ``on_reset`` keeps; no module registers a reset."""

import collections
import dataclasses
import inspect
import threading
import weakref

import pytest
import torch

import lazygen.runtime as lr
from lazygen.runtime import debug, devices, dispatch, metrics, state
from lazygen.runtime.execution import executor, step_closures
from lazygen.runtime.graph import dynamic
from lazygen.runtime.privateuse1 import streams

aten = torch.ops.aten


def _kernel(*args, **kwargs):  # never called: only registered
    raise AssertionError


def test_the_tracing_caches_are_parts_of_the_runtime_object():
    """The hot path's caches (shapes, size lists, scalar inputs' tensors) live on the
    runtime object: a reset drops them with it, and tracing makes new ones."""
    from lazygen.runtime.ir import ScalarTensors
    from lazygen.runtime.kernel_support.recording import SizeLists
    from lazygen.runtime.tracing.output_shapes import ShapeCache

    kinds = (ShapeCache, SizeLists, ScalarTensors)

    def step() -> None:
        x = torch.ones(2, 3, device=lr.device())
        assert (x * 2.5).view(3, 2).sum().item() == 15.0

    step()
    made = {kind: state.runtime.parts.get(kind) for kind in kinds}
    assert all(made.values()), made  # each made and filled
    state.reset()
    assert not set(kinds) & set(state.runtime.parts)
    step()
    again = {kind: state.runtime.parts.get(kind) for kind in kinds}
    assert all(again[kind] and again[kind] is not made[kind] for kind in kinds), again
    assert not any(hasattr(state, name) for name in ("register", "once_per_process"))


def test_a_full_bounded_memo_is_emptied_before_it_keeps_more():
    """The hot path's memos (size lists, scalar inputs' tensors) stay within their limit:
    values that change every step (Adam's bias correction) would otherwise grow them for
    as long as the run lasts."""
    from lazygen.runtime.ir import ScalarTensors

    class Small(state.BoundedMemo):
        __slots__ = ()
        limit = 3

    memo = Small()
    assert [memo.keep(i, str(i)) for i in range(3)] == ["0", "1", "2"]
    assert memo.keep(3, "3") == "3" and memo == {3: "3"}
    x = torch.ones(2, device=lr.device())
    for i in range(ScalarTensors.limit + 5):  # a new scalar input each time
        (x * (i + 0.5)).cpu()
    assert 0 < len(state.runtime.parts[ScalarTensors]) <= ScalarTensors.limit


def test_reset_makes_a_new_runtime_object():
    old = state.runtime
    tables = state.part(metrics.Tables)
    state.reset()
    assert state.runtime is not old
    assert state.part(metrics.Tables) is not tables
    assert state.part(state.Warned) == set()


class _Tally:
    """A subsystem's state class, as a module would write one."""

    def __init__(self) -> None:
        self.n = 0


class _Kept(_Tally):
    def on_reset(self):
        return self if self.n else None


def test_a_part_is_made_once_per_runtime_and_anew_after_a_reset():
    tally = state.part(_Tally)
    tally.n += 1
    assert state.part(_Tally) is tally and state.runtime.part(_Tally) is tally
    state.reset()
    assert state.part(_Tally) is not tally and state.part(_Tally).n == 0
    kept = state.part(_Kept)
    kept.n = 2
    state.reset()  # on_reset hands the new runtime what it keeps
    assert state.part(_Kept) is kept
    kept.n = 0
    state.reset()  # on_reset returned None: a fresh one on first use
    assert _Kept not in state.runtime.parts


def test_counts_of_every_thread_are_merged_and_a_reset_empties_them():
    worker = threading.Thread(target=metrics.count, args=("TestThreadCounter", 2))
    worker.start()
    worker.join()
    metrics.count("TestThreadCounter")
    assert metrics.counter_value("TestThreadCounter") == 3
    state.reset()
    assert metrics.counter_value("TestThreadCounter") is None
    metrics.count("TestThreadCounter")  # this thread's dict is the new runtime's
    assert metrics.counter_value("TestThreadCounter") == 1


def test_reset_restores_kernels_settings_and_empties_counters():
    lr.mark_step()
    installed = dict(dispatch.installed().kernels)
    name = lr.device_name()
    dispatch.register_kernels({aten.neg.default: _kernel})
    lr.config.set_force_fallback("add.Tensor")
    lr.config.set_reuse_ir(True)
    lr.add_step_closure(_kernel)
    metrics.count("TestCounter")
    assert state.kernel_table.get(aten.neg.default) is _kernel
    assert aten.add.Tensor not in state.kernel_table

    state.reset()

    assert installed == dispatch.installed().kernels
    assert state.kernel_table[aten.add.Tensor] is installed[aten.add.Tensor]
    assert state.kernel_table.get(aten.neg.default) is installed.get(aten.neg.default)
    assert lr.config.get_force_fallback() == frozenset()
    assert not lr.config.get_reuse_ir()
    assert "TestCounter" not in lr.metrics.counter_names()
    assert executor.compile_cache_size() == 0
    lr.mark_step()  # the closure was dropped: running it would raise
    assert lr.device_name() == name  # fixed for the process


def test_tensors_trace_after_reset():
    x = torch.ones(3, device=lr.device())
    state.reset()
    assert (x + 1).sum().item() == 6.0


def _snapshot(value, depth: int = 0):
    """What ``reset()`` must put back of a global: containers by content (two levels deep,
    then by size), a dataclass by its fields, numbers and strings by value, a kernel by what
    it wraps, anything else by identity."""
    if isinstance(value, (int, float, str, bytes, bool, type(None))):
        return value
    if isinstance(value, (dict, weakref.WeakKeyDictionary, weakref.WeakValueDictionary)):
        items = list(value.items())
        if depth >= 2:
            return ("mapping", len(items))
        return {key: _snapshot(item, depth + 1) for key, item in items}
    if isinstance(value, (set, frozenset, weakref.WeakSet)):
        return ("set", frozenset(value) if depth < 2 else len(list(value)))
    if isinstance(value, (list, tuple, collections.deque)):
        if depth >= 2:
            return ("sequence", len(value))
        return [_snapshot(item, depth + 1) for item in list(value)]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):  # by its fields
        return {f.name: _snapshot(getattr(value, f.name), depth) for f in dataclasses.fields(value)}
    if hasattr(value, "__len__") and not isinstance(value, torch.Tensor):
        return (type(value), id(value), len(value))
    if callable(value):  # a kernel: refusals.guard wraps it anew at each refresh
        return ("callable", id(inspect.unwrap(value)))
    return ("object", id(value))


def _parts() -> dict[str, object]:
    """The runtime object's parts, each by its attributes (a container part by content)."""
    found = {}
    for kind, held in state.runtime.parts.items():
        name = f"{kind.__module__}.{kind.__qualname__}"
        fields = getattr(held, "__dict__", None)
        found[name] = _snapshot(dict(fields) if fields else held)
    return found


def _small_training_step(device) -> None:
    """A few steps of a tiny model: kernels, shapes, graphs compiled and run, metrics,
    a graph cut (``.item()``), an eager fallback, a step closure, a marked dynamic dim, IR reuse."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
    model = model.to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    ran = []
    lr.config.set_reuse_ir(True)  # the IR reuse trie's paths and slots
    for _ in range(3):
        x = torch.randn(3, 4, device=device)
        loss = model(x).square().mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        lr.add_step_closure(ran.append, (1,))
        lr.mark_step()
    loss.item()
    torch.linalg.eigvalsh(torch.eye(2, device=device)).cpu()  # eager fallback
    y = torch.ones(5, device=device)
    lr.mark_dynamic(y, 0)
    (y * 2).sum().item()
    lr.wait_device_ops()
    assert ran == [1, 1, 1]


def test_reset_leaves_no_state_behind():
    """After a small training step, a reset leaves the runtime object's parts as the
    reset before it did, however the step changed them (issue 42 item 5, issue 52 item 3)."""
    import lazygen.dynamo  # noqa: F401  (the front end's modules imported too)

    lr.mark_step()
    state.reset()
    parts = _parts()

    _small_training_step(lr.device())
    after_step = _parts()
    # The step reached the state (else this test could not fail).
    made = {"metrics.Tables", "execution.step_closures.Closures", "debug.Synced"}
    made |= {"devices.Devices", "graph.dynamic.Marks", "tracing.output_shapes.ShapeCache"}
    made |= {"kernel_support.recording.SizeLists", "ir.ScalarTensors"}
    assert {f"lazygen.runtime.{name}" for name in made} <= set(after_step), after_step
    assert after_step != parts

    state.reset()
    left = {name: value for name, value in _parts().items() if parts.get(name) != value}
    assert not left, f"state.reset() left state behind in: {sorted(left)}"
    assert _parts() == parts, "a reset after a training step kept more than the one before"
    assert lr.metrics.counter_names() == []


def test_what_a_reset_keeps():
    """The parts that keep something through a reset: the devices (live tensors hold
    them), the counter aliases the installed tables brought, the number of the last graph
    appended to LAZYGEN_SAVE_TENSORS_FILE."""
    device = lr.device()
    table = devices.get_device(device.index or 0)
    metrics.add_counter_aliases({"test::alias": "lazy::test"})
    state.part(debug.Synced).saved = 7
    try:
        state.reset()
        assert devices.get_device(device.index or 0) is table
        assert state.part(metrics.Tables).aliases["test::alias"] == "lazy::test"
        assert state.part(debug.Synced).saved == 7 and debug.last_graph() == ""
    finally:
        state.part(metrics.Tables).aliases.pop("test::alias", None)
        state.part(debug.Synced).saved = 0


def test_a_reset_ends_the_old_closure_thread():
    """The asynchronous step closures' thread belongs to its runtime: after a reset it
    ends (no thread left behind per reset) and the next closure starts a new one."""
    ran = []
    lr.add_step_closure(ran.append, (1,), run_async=True)
    lr.mark_step()
    lr.wait_device_ops()
    worker = state.part(step_closures.Closures).worker
    assert isinstance(worker, threading.Thread) and ran == [1]
    state.reset()
    worker.join(timeout=10)
    assert not worker.is_alive()
    lr.add_step_closure(ran.append, (2,), run_async=True)
    lr.mark_step()
    lr.wait_device_ops()
    assert ran == [1, 2] and state.part(step_closures.Closures).worker is not worker


def test_the_budget_switch_and_marks_go_with_a_reset():
    dynamic.switch_on()
    assert dynamic.on()
    state.reset()
    assert not state.part(dynamic.Marks).switched_on
    assert dynamic.on() == state.settings.dynamic_shapes


def test_lr_reset_keeps_tensor_values_and_empties_counters():
    """The public reset runs pending IR first, so a tensor traced before it keeps its value;
    counters empty and a setting changed through ``config`` goes back."""
    lr.init()
    default = lr.config.get_async_execution()
    lr.config.set_async_execution(not default)
    x = torch.arange(6.0).to(lr.device())
    lr.mark_step()
    y = (x * 2 + 1).sum()  # pending IR at the reset
    assert metrics.counters()
    lr.reset()
    assert metrics.counters() == {}
    assert lr.config.get_async_execution() == default
    assert y.item() == 36.0
    torch.testing.assert_close((x * 3).cpu(), torch.arange(6.0) * 3)


def test_a_reset_makes_the_default_stream_current_again():
    """The current stream is per thread on the runtime object: a reset forgets it."""
    chosen = streams.Stream()
    streams.set_stream(chosen)
    assert streams.current_stream().stream_id == chosen.stream_id != 0
    state.reset()
    assert streams.current_stream().stream_id == 0
    assert streams.Stream().stream_id > chosen.stream_id  # ids stay unique for the process


def test_a_memo_is_kept_on_the_runtime_object_and_a_reset_forgets_it():
    calls = []

    @state.memo
    def square(n):
        calls.append(n)
        return n * n

    assert square(3) == square(3) == 9 and calls == [3]
    assert state.runtime.answers(square) == {(3,): 9}
    state.reset()
    assert square(3) == 9 and calls == [3, 3]


def test_a_process_memo_outlives_a_reset():
    made = []

    @state.process_memo
    def table(name):
        made.append(name)
        return {"name": name}

    first = table("a")
    state.reset()
    assert table("a") is first and made == ["a"]
    assert state.runtime.answers(table) == {}


def test_what_the_process_holds_outlives_a_reset():
    class Held(list):
        pass

    held = state.for_process(Held)
    held.append(1)
    state.reset()
    assert state.for_process(Held) is held and state.part(Held) is not held


def test_ir_reuse_and_refusals_are_parts_of_the_runtime_object():
    from lazygen.runtime.dispatch import refusals
    from lazygen.runtime.tracing import ir_reuse

    path = state.part(ir_reuse.ReusePath)
    path.current.append(object())
    kept = state.part(refusals.Refusals)
    state.reset()
    assert state.part(ir_reuse.ReusePath) is not path
    assert state.part(ir_reuse.ReusePath).current == []
    assert state.part(refusals.Refusals) is kept  # init()'s backends' refusals stay


def test_an_op_without_a_kernel_before_init_wires_the_fallback_is_a_clear_error():
    """The dispatch table carries what runs an op it has no kernel for (``missing``, which
    ``init()`` sets); unset, such an op names itself and ``init()``."""
    from lazygen.runtime.tracing.tensor import LazyTensor

    class _Op:  # an op no table holds
        def __str__(self) -> str:
            return "aten::made_up"

    assert state.kernel_table.missing is dispatch.dispatch_missing
    state.kernel_table.missing = None
    try:
        with pytest.raises(
            lr.LazygenRuntimeError,
            match=r"aten::made_up reached a lazy tensor before lazygen\.runtime\.init",
        ):
            LazyTensor.__torch_dispatch__(_Op(), (), ())
    finally:
        state.kernel_table.missing = dispatch.dispatch_missing
