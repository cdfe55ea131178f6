"""Op lists other projects wrote for torchgen's lazy codegen (`tests/fixtures/op_lists/`,
sources in its README): torch_xla's from 2021 to today, PyTorch's own (2022 and today),
lazy_tensor_core's, and torch-mlir's generator input.

Each one either generates a backend that imports and runs ops on the lazy device, or is
refused with `file:line: error: ... (what to do)` lines and nothing written; never a
traceback. Lists whose hand-written C++ kernels lazygen cannot have are generated with
`--defer-hand-written` (their ops run through the eager fallback until written), lists
naming operators the installed torch removed with `--skip-unknown-ops` as well: the error without
it says so. One backend per process, so each generated list runs in its own subprocess.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from support import torchgen_run

from lazygen.cli import main
from lazygen.pipeline import GenConfig, generate
from lazygen.runtime import torch_compat

REPO = Path(__file__).resolve().parents[2]
LISTS = REPO / "tests" / "fixtures" / "op_lists"
DEFER = ["--defer-hand-written"]
OLD_TORCH = ["--skip-unknown-ops", "--defer-hand-written"]
#: torch_xla's lists of today and 2023 name `cholesky` and `qr`, which torch 2.14 removed.
SKIP_REMOVED = [] if torch_compat.RELEASE < (2, 14) else ["--skip-unknown-ops"]
XLA_TODAY = [*SKIP_REMOVED, *DEFER]
TORCH = torch_compat.torch.__version__.split("+")[0]

#: (fixture, gen options, what the error lines must say, each somewhere).
REFUSED = [
    (
        "xla_native_functions_2021.yaml",
        DEFER,
        [f":227: error: unknown operator 'symeig' (not in torch {TORCH}", "--skip-unknown-ops"],
    ),
    (
        "xla_native_functions_2022.yaml",
        DEFER,
        [f"error: unknown operator 'symeig' (not in torch {TORCH}", "--skip-unknown-ops"],
    ),
    (
        "pytorch_ts_native_functions_2022.yaml",
        OLD_TORCH,
        [
            ":187: error: 'cache_shape' is a key of torchgen's early (2022) non_native entries",
            "std::vector<int64_t> -> int[]",
            "at::Scalar -> Scalar",
            "leave the entry out",  # device_data(std::shared_ptr<BackendData>)
        ],
    ),
    (
        "torch_mlir_autogen_ltc_backend.yaml",
        DEFER,
        [
            ":6: error: 'blacklist' is a key of torch-mlir's autogen_ltc_backend.yaml",
            "error: 'additional_ops' is a key of torch-mlir's",
            "list these operators under 'supported'",
        ],
    ),
]

XLA_LAZY = ("lazy::abs", "lazy::relu")  # full_codegen; its mm, add, gelu are C++ kernels
SLOW = pytest.mark.slow  # the same paths as today's lists; run with --slow / in CI
#: (fixture, gen options, the driver's ops that must run lazily): generated, then run. The
#: others run through the eager fallback (a hand-written kernel not written, or no entry).
GENERATED = [
    pytest.param("xla_native_functions.yaml", XLA_TODAY, XLA_LAZY),
    pytest.param("xla_native_functions_2023.yaml", XLA_TODAY, XLA_LAZY, marks=SLOW),
    pytest.param("xla_native_functions_2022.yaml", OLD_TORCH, XLA_LAZY, marks=SLOW),
    pytest.param("xla_native_functions_2021.yaml", OLD_TORCH, (), marks=SLOW),  # all C++
    pytest.param(
        "pytorch_ts_native_functions.yaml",
        DEFER,
        ("lazy::mm", "lazy::relu", "lazy::add.Tensor", "lazy::abs", "lazy::gelu"),
    ),
    pytest.param(
        "pytorch_ts_native_functions_mid.yaml",
        DEFER,
        ("lazy::mm", "lazy::relu", "lazy::native_batch_norm", "lazy::gelu"),
        marks=SLOW,
    ),
    pytest.param("lazy_tensor_core_ts_native_functions.yaml", DEFER, (), marks=SLOW),
    pytest.param(
        "torch_mlir_generated_native_functions.yaml",
        DEFER,
        ("lazy::mm", "lazy::relu", "lazy::native_batch_norm", "lazy::gelu", "lazy::_softmax"),
    ),
]

#: Runs a few ops of a generated list on the fx backend's lowering, against eager.
DRIVER = textwrap.dedent("""
    import importlib, sys, warnings
    import torch
    import lazygen.runtime as lr
    from lazygen.runtime import KernelTables
    from lazygen.runtime.backends import BUILTIN

    module, _, name = BUILTIN["fx"].partition(":")
    FxBackend = getattr(importlib.import_module(module), name)

    class ListBackend(FxBackend):
        name = "oplist"

        def kernel_tables(self):
            return KernelTables.from_module(sys.argv[1])

    lr.init(backend=ListBackend())
    d = lr.device()
    x, w = torch.randn(4, 4), torch.randn(4, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # graph cuts by fallbacks: expected here
        y = ((x.to(d) @ w.to(d)).relu() + 1).abs().sum(0)
        z = torch.nn.functional.gelu(x.to(d)).softmax(-1)
        lr.mark_step()
    torch.testing.assert_close(y.cpu(), ((x @ w).relu() + 1).abs().sum(0))
    torch.testing.assert_close(z.cpu(), torch.nn.functional.gelu(x).softmax(-1))

    def two_batch_norms(device):  # both update the same running statistics in one step
        images = torch.randn(4, 3, 5, 5, generator=torch.Generator().manual_seed(0))
        mean, var = torch.zeros(3).to(device), torch.ones(3).to(device)
        for scale in (1.0, 2.0):
            torch.nn.functional.batch_norm(images.to(device) * scale, mean, var, training=True)
        return mean, var

    lazy_stats = two_batch_norms(d)
    lr.mark_step()
    for got, want in zip(lazy_stats, two_batch_norms("cpu")):
        torch.testing.assert_close(got.cpu(), want)
    lazy = sorted(k for k in lr.metrics.counter_names() if k.startswith("lazy::"))
    print("RAN", lazy)
    """)


def _gen(capsys, op_list: Path, out: Path, options: list[str]) -> tuple[int, str]:
    code = main(["gen", str(op_list), "-o", str(out), "-q", *options])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


@pytest.mark.parametrize(
    "name, options, expected", REFUSED, ids=[name.removesuffix(".yaml") for name, *_ in REFUSED]
)
def test_refused_with_what_to_do(name, options, expected, tmp_path, capsys):
    out = tmp_path / "out"
    code, output = _gen(capsys, LISTS / name, out, options)
    assert code == 2, output
    assert "Traceback" not in output
    errors = [line for line in output.splitlines() if " error: " in line]
    assert errors and all(line.startswith(f"{LISTS / name}:") for line in errors), output
    assert all(line.rstrip().endswith(")") for line in errors), "an error without a hint"
    for text in expected:
        assert any(text in line for line in errors), (text, output)
    assert not out.exists()


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The directory the lists of `GENERATED` are generated into, a package each."""
    return tmp_path_factory.mktemp("lists")


@pytest.mark.parametrize(
    "name, options, lazy", GENERATED, ids=[p.values[0].removesuffix(".yaml") for p in GENERATED]
)
def test_generates_a_backend_that_runs(name, options, lazy, site, capsys):
    package = "list_" + name.removesuffix(".yaml")
    (site / package).mkdir()
    (site / package / "__init__.py").write_text("")
    code, output = _gen(capsys, LISTS / name, site / package / "generated", options)
    assert code == 0, output
    assert "Traceback" not in output
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(site), str(REPO), env.get("PYTHONPATH", "")) if p
    )
    result = subprocess.run(
        [sys.executable, "-c", DRIVER, f"{package}.generated.registration"],
        cwd=site,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    ran = result.stdout.split("RAN", 1)[1]
    assert all(repr(op) in ran for op in lazy), (lazy, ran)


SCAFFOLD_DRIVER = textwrap.dedent("""
    import warnings
    import torch
    import lazygen.runtime as lr
    from mine_backend.backend import MineBackend

    lr.init(backend=MineBackend())
    d = lr.device()
    x, w = torch.randn(4, 4), torch.randn(4, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        y = ((x.to(d) @ w.to(d)).relu() + 1).abs().sum(0)
        lr.mark_step()
    torch.testing.assert_close(y.cpu(), ((x @ w).relu() + 1).abs().sum(0))
    assert lr.metrics.counter_value("lazy::relu"), lr.metrics.counter_names()
    print("RAN", d)
    """)


def test_new_backend_project_takes_a_real_list(tmp_path, monkeypatch, capsys):
    """`lazygen new-backend`'s project with torch_xla's list as its op list: refused with
    the def of every missing hand-written piece, then, deferred, generated and run by the
    project's own Backend and LoweringContext."""
    project = tmp_path / "mine"
    assert main(["new-backend", "mine", "-o", str(project)]) == 0
    (project / "mine.yaml").write_text((LISTS / "xla_native_functions_2023.yaml").read_text())
    monkeypatch.chdir(project)
    monkeypatch.syspath_prepend(str(project))
    out = project / "mine_backend" / "generated"
    hand = ["--hand-written", "mine_backend.hand_written", *SKIP_REMOVED]
    try:
        code, output = _gen(capsys, Path("mine.yaml"), out, hand)
        assert code == 2 and "Traceback" not in output, output
        assert (
            "mine.yaml:416: error: autograd kernel max_pool3d for max_pool3d is missing" in output
        )
        assert "in mine_backend.hand_written.autograd)" in output
        assert not out.exists()
        code, output = _gen(capsys, Path("mine.yaml"), out, [*hand, *DEFER])
        assert code == 0, output
    finally:
        for module in [m for m in sys.modules if m.split(".")[0] == "mine_backend"]:
            del sys.modules[module]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(project), str(REPO), env.get("PYTHONPATH", "")) if p
    )
    result = subprocess.run(
        [sys.executable, "-c", SCAFFOLD_DRIVER],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "RAN mine:0" in result.stdout


def test_torch_mlir_list_generates_what_torchgen_does_but_its_views(tmp_path):
    """torch-mlir's generated list (derived, see the fixtures' README) puts `alias`,
    `view_as_real` and `view_as_complex` in `full_codegen`: torchgen generates them,
    lazygen leaves them out with a warning (it functionalizes views); all else is equal."""
    op_list = LISTS / "torch_mlir_generated_native_functions.yaml"
    classes, built = torchgen_run.torchgen_names(op_list, tmp_path / "torchgen")
    result = generate(GenConfig(op_list, tmp_path / "lazygen", defer_hand_written=True))
    views = {"Alias", "ViewAsReal", "ViewAsComplex"}
    assert views <= classes and len(classes) == 245
    ours, our_built = torchgen_run.lazygen_names(result.files)
    assert ours == classes - views
    assert our_built == {k: n for k, n in built.items() if k not in views}
    left_out = [w for w in result.warnings if "is a view: left out" in w.message]
    assert sorted(w.message.split()[0] for w in left_out) == [
        "alias",
        "view_as_complex",
        "view_as_real",
    ]
    assert all(w.location.line > 5 for w in left_out)
