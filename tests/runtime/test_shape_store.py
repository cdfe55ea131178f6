"""lazygen's store of output shapes (``execution/shape_store.py``): a warm process reads
what an earlier one's meta kernels answered instead of running them again; a corrupt,
unexpected or other-version table is ignored (one warning where it is damaged), and the
store can be turned off. "A new process" is simulated in-process (the shape cache emptied,
the table read again); ``test_graph_store.py`` runs two real processes."""

from __future__ import annotations

import functools
import json
import warnings
from types import SimpleNamespace

import pytest
import torch

import lazygen.runtime as lr
from lazygen.runtime import metrics, state, torch_compat
from lazygen.runtime.execution import persistent_cache, shape_store
from lazygen.runtime.execution.persistent_cache import PersistentCacheWarning
from lazygen.runtime.tracing import output_shapes
from lazygen.runtime.tracing.output_shapes import StoredShapes, persistent_name


@pytest.fixture
def stored(tmp_path, monkeypatch):
    """The store on, in a directory of its own; meta-kernel runs on a miss counted."""
    monkeypatch.setenv("LAZYGEN_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("LAZYGEN_SHAPE_CACHE", "1")
    monkeypatch.delenv("LAZYGEN_CACHE", raising=False)
    computed = []
    compute = output_shapes.compute_shapes
    monkeypatch.setattr(
        output_shapes, "compute_shapes", lambda *a, **k: computed.append(1) or compute(*a, **k)
    )
    lr.mark_step()
    state.part(state.Warned).clear()
    yield computed
    lr.mark_step()
    state.runtime.parts.pop(StoredShapes, None)
    state.runtime.parts.pop(shape_store._Opened, None)
    output_shapes.clear_cache()
    state.part(state.Warned).clear()


def _new_process() -> None:
    """What a new process starts with: no shape cached, the stored table read at init."""
    lr.mark_step()
    output_shapes.clear_cache()
    state.runtime.parts.pop(StoredShapes, None)
    shape_store.load()
    metrics.reset()


def _step() -> list[float]:
    torch.manual_seed(0)
    w = torch.randn(6, 5).to("lazygen").requires_grad_()
    x = torch.randn(3, 6).to("lazygen")
    loss = torch.nn.functional.softmax(x @ w * 0.5, dim=-1).sum(dim=0).logsumexp(0)
    loss.backward()
    lr.mark_step()
    return [loss.item(), *w.grad.cpu().flatten().tolist()]


def _table_file(directory):
    (folder,) = (directory / "shapes").iterdir()
    (entry,) = [p for p in folder.iterdir() if p.is_file()]
    return entry


def test_a_warm_process_reads_the_stored_shapes(stored, tmp_path):
    _new_process()
    cold = _step()
    assert stored and not metrics.counter_value("StoredShapesRead")
    shape_store.save()
    stored.clear()
    _new_process()
    warm = _step()
    assert metrics.counter_value("StoredShapesRead") >= 5
    assert not stored  # no meta kernel ran
    assert warm == cold
    shape_store.save()  # nothing new: the table stays as it was
    assert len(json.loads(_table_file(tmp_path).read_bytes()[48:])["shapes"]) >= 5


def test_a_corrupt_or_unexpected_table_is_ignored_with_a_warning(stored, tmp_path):
    _new_process()
    expected = _step()
    shape_store.save()
    table = _table_file(tmp_path)
    table.write_bytes(table.read_bytes()[:-5])  # torn: its checksum fails
    stored.clear()
    with pytest.warns(PersistentCacheWarning, match="corrupt"):
        _new_process()
    assert _step() == expected and stored and not metrics.counter_value("StoredShapesRead")
    store = persistent_cache.store("shapes", lr.state.settings.device_type)
    for document in (
        b"not json",
        b'{"format": 0, "shapes": {}}',  # another format
        b'{"format": 1, "shapes": {"name": [["no_dtype", [2]]]}}',
        b'{"format": 1, "shapes": {"name": [["float32", [2.5]]]}}',
    ):
        store.put("table", document)
        state.part(state.Warned).clear()
        stored.clear()
        with pytest.warns(PersistentCacheWarning, match="output shapes .* could not be read"):
            _new_process()
        assert _step() == expected and stored


def test_a_table_of_another_torch_version_is_not_read(stored, monkeypatch):
    _new_process()
    _step()
    shape_store.save()
    monkeypatch.setattr(torch_compat, "VERSION", torch_compat.VERSION + "-other")
    stored.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _new_process()
    _step()
    assert stored and not metrics.counter_value("StoredShapesRead")


@pytest.mark.parametrize("variable", ["LAZYGEN_SHAPE_CACHE", "LAZYGEN_CACHE"])
def test_turned_off_nothing_is_read_or_written(stored, tmp_path, monkeypatch, variable):
    monkeypatch.setenv(variable, "0")
    _new_process()
    assert StoredShapes not in state.runtime.parts
    expected = _step()
    shape_store.save()
    assert not (tmp_path / "shapes").exists()
    assert _step() == expected


def test_only_what_another_process_computes_alike_has_a_name():
    aten = torch.ops.aten
    shape = lr.ir.Shape(torch.float32, (2, 3))
    key = (id(aten.relu.default), False, shape)
    name = persistent_name(key, aten.relu.default)
    assert name is not None and "aten.relu.default" in name
    assert persistent_name((id(aten.add.Tensor), False, shape, shape, 1), aten.add.Tensor) != (
        persistent_name((id(aten.add.Tensor), False, shape, shape, 1.0), aten.add.Tensor)
    )
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        assert persistent_name(key, aten.relu.default) != name  # factories read it
    finally:
        torch.set_default_dtype(previous)

    def local_shapes(*args):
        return [shape]

    assert persistent_name(key, aten.relu.default, local_shapes) is None  # not lazygen's
    partial = functools.partial(output_shapes.compute_shapes)  # no name of its own
    assert persistent_name(key, aten.relu.default, partial) is None
    library_op = SimpleNamespace(namespace="mylib")  # its meta kernel is the library's
    assert persistent_name(key, library_op) is None
    symbolic = (id(aten.relu.default), False, (torch.SymInt, "s0"))
    assert persistent_name(symbolic, aten.relu.default) is None
    assert persistent_name((id(aten.relu.default), False, object()), aten.relu.default) is None


def _stored_names(directory) -> set:
    return set(json.loads(_table_file(directory).read_bytes()[48:])["shapes"])


def test_compiles_write_the_table_at_most_every_interval_and_it_is_bounded(
    stored, tmp_path, monkeypatch
):
    _new_process()
    _step()
    shape_store.compiled()  # the first compile writes
    first = _stored_names(tmp_path)
    torch.randn(7, 2).to("lazygen").exp()  # a new signature
    shape_store.compiled()  # too soon after the last write: kept for later
    assert _stored_names(tmp_path) == first
    monkeypatch.setattr(shape_store, "SAVE_INTERVAL", 0.0)
    shape_store.compiled()
    assert len(_stored_names(tmp_path)) == len(first) + 1
    monkeypatch.setattr(shape_store, "MAX_SHAPES", 3)
    torch.randn(7, 3).to("lazygen").exp()
    shape_store.save()
    names = _stored_names(tmp_path)
    assert len(names) == 3 and any("int:7\x1fint:3" in name for name in names)  # the newest kept
