import shutil

import pytest
import torch

import lazygen.runtime as lr


def test_step_closures_run_after_mark_step():
    seen = []
    x = torch.ones(2, device="lazygen") * 3
    lr.add_step_closure(lambda t: seen.append(t.cpu().tolist()), (x,))
    assert seen == []
    lr.mark_step()
    assert seen == [[3.0, 3.0]]


def test_sync_and_to_cpu_and_wait():
    a = torch.ones(2, device="lazygen") + 1
    b = a * 2
    lr.sync([a, b])
    assert lr.inner(a).is_materialized and lr.inner(b).is_materialized
    lr.wait_device_ops()
    cpu = lr.to_cpu([a, b, 7])
    assert cpu[0].device.type == "cpu" and cpu[1].tolist() == [4.0, 4.0] and cpu[2] == 7


@pytest.mark.parametrize("kind", ["name", "index", "torch_device"])
def test_to_cpu_syncs_the_devices_it_is_given_together(kind, monkeypatch):
    devices = {"name": ["lazygen:1"], "index": [1], "torch_device": [lr.device(1)]}[kind]
    lr.mark_step()
    a = torch.ones(2, device=lr.device(0)) + 1
    b = torch.ones(2, device=lr.device(1)) + 2
    c = torch.ones(2, device=lr.device(1)) + 3
    synced = []
    sync = lr.executor.sync
    monkeypatch.setattr(lr.executor, "sync", lambda ts: synced.append(len(ts)) or sync(ts))
    cpu = lr.to_cpu([a, b, c, "x"], devices=devices)
    assert synced[0] == 2  # b and c together, first; a on its own when copied
    assert lr.inner(b).is_materialized and lr.inner(c).is_materialized
    assert [t.tolist() for t in cpu[:3]] == [[2.0, 2.0], [3.0, 3.0], [4.0, 4.0]]
    assert cpu[3] == "x"


def test_metrics_report_and_mark_step_counter(fresh_metrics):
    lr.config.set_force_fallback(["nonzero"])
    x = torch.ones(2, device="lazygen")
    (x.nonzero()).cpu()
    lr.mark_step()
    assert fresh_metrics.counter_value("MarkStep") == 1
    report = fresh_metrics.report()
    assert "Counter: aten::nonzero" in report and "Counter: MarkStep" in report
    fresh_metrics.reset()
    assert fresh_metrics.counter_names() == []


def test_auto_graph_cut(hand_written):
    lr.config.set_max_pending_nodes(50)
    try:
        x = torch.zeros(4, device="lazygen")
        one = torch.ones(4, device="lazygen")
        for _ in range(120):
            x = x + one
    finally:
        lr.config.set_max_pending_nodes(100_000)
    assert lr.metrics.counter_value("AutoGraphCut") == 2
    assert x.cpu().tolist() == [120.0] * 4


def test_reuse_ir_and_reset(hand_written):
    """Reuse is across steps (LTC's trie), not within one; ``ir_cache.reset`` forgets."""
    lr.config.set_reuse_ir(True)
    try:
        x = lr.inner(torch.ones(3, device="lazygen"))
        lr.mark_step()
        a, b = x * x, x * x
        first = a._value.node
        assert b._value.node is not first
        lr.mark_step()
        c = x * x
        assert c._value.node is first
        lr.mark_step()
        lr.ir_cache.reset()
        assert (x * x)._value.node is not c._value.node
    finally:
        lr.config.set_reuse_ir(False)
    assert (x * x).cpu().tolist() == [1.0] * 3


def test_force_fallback_accepts_names():
    lr.config.set_force_fallback("aten::add, mul.Tensor")
    try:
        assert lr.config.get_force_fallback() == frozenset({"add", "mul.Tensor"})
    finally:
        lr.config.set_force_fallback([])


def test_render_ir(tmp_path):
    x = torch.ones(2, device="lazygen") + 1
    path = tmp_path / "graph.svg"
    if shutil.which("dot") is None:
        with pytest.raises(RuntimeError, match="Graphviz"):
            lr.debug.render_ir([x], str(path))
    else:
        lr.debug.render_ir([x], str(path))
        assert path.read_text().lstrip().startswith("<")


def test_dump_ir_rejects_unknown_format():
    with pytest.raises(ValueError, match="unknown IR format"):
        lr.debug.dump_ir([torch.ones(1, device="lazygen")], "xml")


def test_device_mismatch_is_an_error(hand_written):
    with pytest.raises(RuntimeError, match="same device"):
        torch.ones(3, device="lazygen") + torch.ones(3)
    assert (torch.ones(3, device="lazygen") + torch.tensor(2.0)).cpu().tolist() == [3.0] * 3


def test_ltc_counter_spellings_answer_for_symint_kernels():
    """LTC counts its symint kernels as ``lazy::<op>_symint``; migrating users (and
    PyTorch's own LTC tests) read those names: they are aliases of lazygen's."""
    lr.mark_step()
    lr.metrics.reset()
    x = torch.randn(2, 3, device="lazygen")
    y = x.view(3, 2).expand(2, 3, 2) * 1
    lr.mark_step()
    expand = lr.metrics.counter_value("lazy::expand_copy")
    assert expand and lr.metrics.counter_value("lazy::expand_copy_symint") == expand
    names = lr.metrics.counter_names()
    assert "lazy::expand_copy_symint" in names and "lazy::expand_copy" in names
    assert "lazy::view_copy_symint" not in names or lr.metrics.counter_value("lazy::view_copy")
    assert lr.metrics.counter_value("lazy::slice_scatter_symint") is None  # never counted
    del y


def test_synced_tensors_with_ir_counts_the_tensors_a_sync_materialised():
    """LTC's ``SyncedTensorsWithIR`` is lazygen's ``SyncedTensors``: tensors with pending IR
    that a sync computed (not those already holding data)."""
    lr.mark_step()
    lr.metrics.reset()
    data = torch.ones(3, device="lazygen")
    lr.mark_step()
    lr.metrics.reset()
    a, b = data + 1, data * 2
    lr.mark_step()
    assert lr.metrics.counter_value("SyncedTensorsWithIR") == 2
    assert lr.metrics.counter_value("SyncedTensors") == 2
    assert "SyncedTensorsWithIR" in lr.metrics.counter_names()
    del a, b


def test_clamp_and_clamp_min_trace_lazily():
    """LTC runs ``clamp`` through its eager fallback (``aten::clamp``); lazygen traces the
    clamp family, so it never cuts a graph."""
    x = torch.randn(5)
    low = torch.zeros(5)
    lx, llow = x.to("lazygen"), low.to("lazygen")
    lr.mark_step()
    lr.metrics.reset()
    results = [lx.clamp(-0.5, 0.5), torch.clamp_min(lx, llow), lx.clamp_min(0.1), lx.clamp(llow)]
    lr.mark_step()
    names = lr.metrics.counter_names()
    assert not [n for n in names if n.startswith("aten::")]
    assert {"lazy::clamp", "lazy::clamp_min.Tensor", "lazy::clamp_min"} <= set(names)
    expected = [x.clamp(-0.5, 0.5), torch.clamp_min(x, low), x.clamp_min(0.1), x.clamp(low)]
    for got, want in zip(results, expected, strict=True):
        assert torch.equal(got.cpu(), want)
