"""torch_xla's op list generates the IR classes and kernels torchgen generates from it
(today's list, and September 2023's: tests/fixtures/op_lists/README.md).

torchgen runs live (`support.torchgen_run`: the installed wheel's, in a child, ~4 s) and
its C++ is read for names only: the IR classes and the class each kernel builds. lazygen generates
from the same list with `--defer-hand-written` (the list's hand-written XLA kernels do
not exist here), which reports the missing pieces as warnings instead of failing.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from support import torchgen_run

from lazygen.pipeline import GenConfig, generate
from lazygen.runtime import torch_compat

REPO = Path(__file__).resolve().parents[2]
LISTS = REPO / "tests" / "fixtures" / "op_lists"
XLA_LIST = LISTS / "xla_native_functions.yaml"
#: Each list, with what torchgen generates from it on torch 2.13: (IR classes, kernels).
#: torch 2.14 removed ``cholesky`` (a ``full_codegen`` entry of both) and ``qr``: the list
#: as torch_xla writes it for 2.14 leaves them out, and one IR class and kernel fewer.
TORCHGEN_COUNTS = {XLA_LIST: (105, 95), LISTS / "xla_native_functions_2023.yaml": (97, 87)}
REMOVED_FROM_FULL_CODEGEN = {(2, 13): 0, (2, 14): 1}


@pytest.fixture(scope="module", params=sorted(TORCHGEN_COUNTS), ids=lambda p: p.stem)
def xla_list(request, tmp_path_factory) -> Path:
    """The list, without what the installed torch removed."""
    path, _ = torchgen_run.for_installed_torch(request.param, tmp_path_factory.mktemp("list"))
    return path


def _expected(xla_list: Path) -> tuple[int, int]:
    classes, kernels = TORCHGEN_COUNTS[LISTS / xla_list.name]
    fewer = REMOVED_FROM_FULL_CODEGEN[torch_compat.RELEASE]
    return classes - fewer, kernels - fewer


@pytest.fixture(scope="module")
def torchgen_names(tmp_path_factory, xla_list) -> tuple[set[str], Counter]:
    """(IR class names, Counter of the IR class each generated kernel builds)."""
    return torchgen_run.torchgen_names(xla_list, tmp_path_factory.mktemp("torchgen_xla"))


@pytest.fixture(scope="module")
def lazygen_result(tmp_path_factory, xla_list):
    out = tmp_path_factory.mktemp("lazygen_xla")
    config = GenConfig(xla_list, out, defer_hand_written=True)
    return generate(config, torch_child=False)


def test_torchgen_baseline(torchgen_names, xla_list):
    classes, built = torchgen_names
    assert (len(classes), sum(built.values())) == _expected(xla_list)


def test_same_ir_classes_and_kernels_as_torchgen(torchgen_names, lazygen_result, xla_list):
    classes, built = torchgen_names
    assert not lazygen_result.errors
    assert torchgen_run.lazygen_names(lazygen_result.files) == (classes, built)
    assert (lazygen_result.counts["nodes"], lazygen_result.counts["kernels"]) == (
        _expected(xla_list)
    )


def test_missing_hand_written_pieces_are_reported_not_fatal(lazygen_result, xla_list):
    missing = [w for w in lazygen_result.warnings if "is missing" in w.message]
    assert any("_adaptive_avg_pool2d" in w.message for w in missing)  # ir_gen + supported
    assert all(w.location and w.location.file == str(xla_list) for w in missing)
    assert all("lazygen/runtime" not in w.hint for w in lazygen_result.warnings)


def test_ir_gen_with_supported_means_generated_node_hand_written_kernel(lazygen_result):
    registration = lazygen_result.files["registration.py"]
    assert "aten._adaptive_avg_pool2d.default: hand_written._adaptive_avg_pool2d" in registration
    assert '"_adaptive_avg_pool2d": ir.AdaptiveAvgPool2d' in registration
    assert "def _adaptive_avg_pool2d(" not in lazygen_result.files["kernels.py"]
