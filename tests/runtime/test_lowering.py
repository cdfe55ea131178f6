import torch
from support.training import OPTIMIZERS, compare_training

import lazygen.runtime as lr


def _lazy(t):
    return t.to("lazygen")


def test_results_equal_eager(hand_written):
    a, b = torch.randn(4, 3), torch.randn(3, 5)
    la, lb = _lazy(a), _lazy(b)
    out = torch.relu(la @ lb) * 2.5 + la.sum()
    values, indices = torch.max(out, dim=1)
    joined = torch.cat([out, out * out], dim=0)
    parts = torch.split(joined, 3)
    eager = torch.relu(a @ b) * 2.5 + a.sum()
    ev, ei = torch.max(eager, dim=1)
    ej = torch.cat([eager, eager * eager], dim=0)
    cpu = lr.to_cpu([out, values, indices, joined, *parts])
    torch.testing.assert_close(cpu[0], eager)
    torch.testing.assert_close(cpu[1], ev)
    assert cpu[2].tolist() == ei.tolist()
    torch.testing.assert_close(cpu[3], ej)
    for got, want in zip(cpu[4:], torch.split(ej, 3), strict=True):
        torch.testing.assert_close(got, want)
    names = lr.metrics.counter_names()
    for name in ("lazy::mm", "lazy::relu", "lazy::max.dim", "lazy::cat", "lazy::split_copy.Tensor"):
        assert name in names, name
    assert lr.metrics.counter_value("UncachedCompile") == 1


def _step(x, w, scale):
    y = torch.relu(x @ w) * scale
    return y.add(x @ w, alpha=scale)


def test_second_step_is_cached_and_scalars_do_not_recompile(hand_written):
    x, w = _lazy(torch.randn(2, 3)), _lazy(torch.randn(3, 3))
    results = []
    for step in range(4):
        results.append(_step(x, w, 0.5 + step))
        lr.mark_step()
    assert lr.metrics.counter_value("UncachedCompile") == 1
    assert lr.metrics.counter_value("CachedCompile") == 3
    for step, result in enumerate(results):
        want = _step(x.cpu(), w.cpu(), 0.5 + step)
        torch.testing.assert_close(result.cpu(), want)


def test_graph_key_distinguishes_shared_inputs(hand_written):
    x, y = _lazy(torch.ones(3)), _lazy(torch.full((3,), 2.0))
    first = (x + x).cpu()
    second = (x + y).cpu()
    assert first.tolist() == [2.0] * 3
    assert second.tolist() == [3.0] * 3
    assert lr.metrics.counter_value("UncachedCompile") == 2


def test_forced_fallback_counts_aten(hand_written):
    lr.config.set_force_fallback(["add.Tensor"])
    x = _lazy(torch.ones(3))
    assert (x + x).cpu().tolist() == [2.0] * 3
    assert lr.metrics.counter_value("aten::add") == 1
    assert lr.metrics.counter_value("lazy::add.Tensor") is None
    lr.config.set_force_fallback([])
    assert (x + x).cpu().tolist() == [2.0] * 3
    assert lr.metrics.counter_value("lazy::add.Tensor") == 1


def test_mark_step_preserves_aliasing_with_ir(hand_written):
    x = _lazy(torch.zeros(4))
    view = x.view(2, 2)
    view.add_(torch.ones(2, 2, device="lazygen"))
    lr.mark_step()
    view.add_(view)
    lr.mark_step()
    assert x.cpu().tolist() == [2.0] * 4


def test_dump_ir_formats(hand_written):
    x = _lazy(torch.ones(2, 2))
    y = torch.relu(x @ x) + x
    text = lr.debug.dump_ir([y], "text")
    assert "aten::mm" in text and "aten::relu" in text and "ROOT" in text
    assert "digraph" in lr.debug.dump_ir([y], "dot")
    assert "aten::mm" in lr.debug.dump_ir([y], "backend")


def test_source_location_when_debugging(hand_written):
    lr.config.set_debug(1)
    try:
        x = _lazy(torch.ones(2))
        y = x + x  # the line recorded
    finally:
        lr.config.set_debug(0)
    assert "test_lowering.py" in lr.debug.dump_ir([y], "text")


def test_training_with_lazy_kernels(hand_written):
    for optimizer in sorted(OPTIMIZERS):
        compare_training(optimizer, steps=5)
    assert lr.metrics.counter_value("lazy::mm")
