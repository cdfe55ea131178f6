"""torch_xla's op list generates the IR classes and kernels torchgen generates from it.

torchgen runs live (`run_gen_lazy_tensor` from the installed torch wheel, ~4 s) into a
temporary directory; its C++ is read for names only: the IR classes `LazyIr.h` declares
and, per generated kernel, the IR class it builds (`ReuseNode<Class>`). lazygen generates
from the same list with `--defer-hand-written` (the list's hand-written XLA kernels do
not exist here), which reports the missing pieces as warnings instead of failing.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from pathlib import Path

import pytest

from lazygen.pipeline import GenConfig, generate

REPO = Path(__file__).resolve().parents[2]
XLA_LIST = REPO / "tests" / "fixtures" / "op_lists" / "xla_native_functions.yaml"
#: What torchgen generates from this list on torch 2.13 (see shared/reference/README.md).
TORCHGEN_IR_CLASSES, TORCHGEN_KERNELS = 105, 95


@pytest.fixture(scope="module")
def torchgen_names(tmp_path_factory) -> tuple[set[str], Counter]:
    """(IR class names, Counter of the IR class each generated kernel builds)."""
    import torchgen
    from torchgen.gen_lazy_tensor import run_gen_lazy_tensor

    out = tmp_path_factory.mktemp("torchgen_xla")
    run_gen_lazy_tensor(
        aten_path=os.path.join(os.path.dirname(torchgen.__file__), "packaged", "ATen"),
        source_yaml=str(XLA_LIST),
        output_dir=str(out),
        dry_run=False,
        impl_path=None,
        shape_inference_hdr=None,  # lazygen checks shape functions its own way
    )
    ir = (out / "LazyIr.h").read_text()
    classes = set(re.findall(r"^class (\w+) : public", ir, re.MULTILINE))
    kernels_cpp = (out / "XLANativeFunctions.cpp").read_text()
    bodies = re.split(r"XLANativeFunctions::\w+\(", kernels_cpp)[1:]
    built = Counter(re.search(r"ReuseNode<(\w+)>", body).group(1) for body in bodies)
    return classes, built


@pytest.fixture(scope="module")
def lazygen_result(tmp_path_factory):
    out = tmp_path_factory.mktemp("lazygen_xla")
    config = GenConfig(XLA_LIST, out, defer_hand_written=True)
    return generate(config, worker=False)


def test_torchgen_baseline(torchgen_names):
    classes, built = torchgen_names
    assert (len(classes), sum(built.values())) == (TORCHGEN_IR_CLASSES, TORCHGEN_KERNELS)


def test_same_ir_classes_and_kernels_as_torchgen(torchgen_names, lazygen_result):
    classes, built = torchgen_names
    assert not lazygen_result.errors
    ir = lazygen_result.files["ir.py"]
    ours = set(re.findall(r"^class (\w+)\(Node\):", ir, re.MULTILINE))
    assert ours == classes
    kernels = lazygen_result.files["kernels.py"]
    our_built = Counter(re.findall(r"node = rt\.make_node\(\s*ir\.(\w+),", kernels))
    assert our_built == built
    assert lazygen_result.counts["nodes"] == TORCHGEN_IR_CLASSES
    assert lazygen_result.counts["kernels"] == TORCHGEN_KERNELS


def test_missing_hand_written_pieces_are_reported_not_fatal(lazygen_result):
    missing = [w for w in lazygen_result.warnings if "is missing" in w.message]
    assert any("_adaptive_avg_pool2d" in w.message for w in missing)  # ir_gen + supported
    assert all(
        w.location and w.location.file.endswith("xla_native_functions.yaml") for w in missing
    )
    assert all("lazygen/runtime" not in w.hint for w in lazygen_result.warnings)


def test_ir_gen_with_supported_means_generated_node_hand_written_kernel(lazygen_result):
    registration = lazygen_result.files["registration.py"]
    assert "aten._adaptive_avg_pool2d.default: handwritten._adaptive_avg_pool2d" in registration
    assert '"_adaptive_avg_pool2d": ir.AdaptiveAvgPool2d' in registration
    assert "def _adaptive_avg_pool2d(" not in lazygen_result.files["kernels.py"]
