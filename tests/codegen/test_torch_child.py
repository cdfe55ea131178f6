"""The torch child process (`lazygen.lazy.torch_child`) gives exactly the in-process results."""

from __future__ import annotations

import shutil
import sys
from dataclasses import replace
from pathlib import Path

import lazygen.lazy.torch_child as torch_child
from lazygen.lazy.meta import TorchFacts
from lazygen.lazy.plan import build_plan
from lazygen.lazy.torch_child import RecordingFacts, TorchChild
from lazygen.loaders.backend_yaml import load_backend
from lazygen.loaders.native_yaml import NativeSources, load_catalogue
from lazygen.pipeline import generate

REPO = Path(__file__).resolve().parents[2]
CASE = REPO / "tests" / "golden" / "basic"  # the case the `config` fixture generates


def _same(a, b) -> None:
    assert a.files == b.files
    assert a.warnings == b.warnings
    assert a.errors == b.errors
    assert a.counts == b.counts


def test_child_matches_in_process(config):
    _same(generate(config, torch_child=True), generate(config, torch_child=False))


def test_child_reports_hand_written_errors_like_in_process(config, tmp_path, monkeypatch):
    pkg = tmp_path / "hw_child"
    shutil.copytree(CASE / "golden_basic_hand_written", pkg)
    (pkg / "shape_functions.py").write_text("def compute_shape_topk(self):\n    return []\n")
    (pkg / "kernels.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    bad = replace(config, hand_written="hw_child")
    try:
        child = generate(bad, torch_child=True)
        assert child.errors and child.warnings
        _same(child, generate(bad, torch_child=False))
    finally:
        for name in list(sys.modules):
            if name.startswith("hw_child"):
                del sys.modules[name]


def test_dead_child_falls_back_to_in_process(config, monkeypatch):
    monkeypatch.setattr(torch_child, "_BOOT", "import sys")  # exits at once
    _same(generate(config, torch_child=True), generate(config, torch_child=False))


def test_child_answers_as_torch_facts_on_the_ts_op_list():
    catalogue = load_catalogue(NativeSources.default())
    ops = load_backend(REPO / "yaml" / "builtin.yaml", catalogue)
    recording = RecordingFacts()
    build_plan(ops, catalogue, recording)
    child = TorchChild.start(None)
    assert child is not None
    try:
        facts = child.facts(recording.request())
    finally:
        child.close()
    assert facts is not None
    torch = TorchFacts()
    for f in catalogue.functions:
        key = (f.name.name, f.name.overload)
        if key in facts.registered_a:
            assert facts.registered_a[key] == torch.registered(f)
        if str(f.name) in facts.meta_a:
            assert facts.meta_a[str(f.name)] == torch.has_meta(f)
    for (kind, types), answer in facts.builtin_a.items():
        assert answer == torch.has_builtin(kind, types)
    assert build_plan(ops, catalogue, facts) == build_plan(ops, catalogue, torch)
