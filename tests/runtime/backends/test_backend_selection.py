"""Choosing a backend and naming the device: by argument, environment, instance, entry
point; errors for unknown names and for changing either after init(). Each case runs in
its own process, since torch allows one PrivateUse1 device per process."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest


def _run(code: str, **env: str) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("LAZYGEN_")}
    environment.update(env)
    environment["LAZYGEN_GC_FREEZE"] = "0"  # start-up speed; unrelated to what is tested
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=240,
        env=environment,
    )


def _ok(code: str, **env: str) -> str:
    result = _run(code, **env)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def test_a_custom_device_name_is_used_everywhere():
    out = _ok("""
        import torch, lazygen.runtime as lr
        lr.init(device_name="mydev")
        x = torch.ones(2, 2, device="mydev")
        y = (x @ x + 1).relu()
        lr.mark_step()
        assert str(y.device) == "mydev:0", y.device
        assert repr(y).startswith("tensor([[3., 3.],"), repr(y)
        assert "device='mydev:0'" in repr(y)
        z = torch.nn.Linear(2, 2).to("mydev")(x).sum()
        z.backward()
        print(lr.device_name(), lr.backend().name, y.cpu().tolist())
        """)
    assert out.split()[:2] == ["mydev", "torchscript"]


def test_environment_chooses_backend_and_name():
    out = _ok(
        "import lazygen.runtime as lr; lr.init(); print(lr.device_name(), lr.backend().name)",
        LAZYGEN_BACKEND="ts",
        LAZYGEN_DEVICE_NAME="envdev",
    )
    assert out.split() == ["envdev", "torchscript"]


def test_available_backends_lists_the_built_in_ones():
    import lazygen.runtime as lr

    assert {"torchscript", "inductor", "fx"} <= set(lr.available_backends())


def test_a_backend_instance_registered_in_process():
    out = _ok("""
        import torch, lazygen.runtime as lr
        from lazygen.runtime.backends.torchscript.backend import TorchScriptBackend

        class Counting(TorchScriptBackend):
            name = "counting"
            compiled = 0
            def compile(self, order, outputs, device):
                Counting.compiled += 1
                return super().compile(order, outputs, device)

        lr.register_backend("counting", Counting)
        lr.init(backend="counting")
        x = torch.ones(3, device="lazygen")
        lr.mark_step()  # x's own graph: the first compile
        for step in range(3):  # one structure, changing scalars: one more
            y = x * (step + 0.5)
            lr.mark_step()
        assert y.cpu().tolist() == [2.5] * 3
        print(lr.backend().name, Counting.compiled)
        """)
    assert out.split() == ["counting", "2"]


def test_unknown_backend_names_the_available_ones():
    result = _run("import lazygen.runtime as lr; lr.init(backend='nosuch')")
    assert result.returncode != 0
    assert "no backend named 'nosuch'" in result.stderr
    assert "torchscript" in result.stderr and "lazygen.backends" in result.stderr


@pytest.mark.parametrize(
    "second, message",
    [
        ("lr.init(device_name='other')", "already named 'lazygen'"),
        ("lr.init(backend='fx')", "already initialised with backend 'torchscript'"),
    ],
)
def test_changing_backend_or_name_after_init_is_refused(second, message):
    result = _run(f"import lazygen.runtime as lr; lr.init(); lr.init(backend='ts'); {second}")
    assert result.returncode != 0
    assert message in result.stderr, result.stderr[-2000:]


def test_an_invalid_device_name_is_refused_before_anything_changes():
    result = _run("""
        import torch, lazygen.runtime as lr
        try:
            lr.init(device_name="My-Dev")
        except ValueError as error:
            print(error)
        assert torch._C._get_privateuse1_backend_name() == "privateuseone"
        lr.init(device_name="good")
        print(torch.ones(1, device="good").device)
        """)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "must be lowercase letters" in result.stdout and "good:0" in result.stdout


def test_a_backend_that_is_not_a_backend_is_refused():
    result = _run(
        "import lazygen.runtime as lr; lr.register_backend('bad', object); lr.init(backend='bad')"
    )
    assert result.returncode != 0 and "not a lazygen Backend" in result.stderr


def test_an_entry_point_that_does_not_load_names_itself_and_its_package(tmp_path):
    """A newcomer's misspelt entry point (`mine = mine_backend.backend:MineBacknd`) raised
    importlib's bare AttributeError from init(); now the error names the entry point, its
    distribution and what it points to, and where to fix it."""
    site = tmp_path / "site"
    (site / "typo_backend").mkdir(parents=True)
    (site / "typo_backend" / "__init__.py").write_text("class TypoBackend:\n    pass\n")
    dist_info = site / "typo_backend-0.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: typo-backend\nVersion: 0\n")
    (dist_info / "entry_points.txt").write_text(
        "[lazygen.backends]\n"
        "typo = typo_backend:TypoBacknd\n"
        "gone = no_such_module.backend:GoneBackend\n"
        "notone = typo_backend:TypoBackend\n"
    )
    path = os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))
    cases = {
        "typo": ["'typo' of distribution 'typo-backend'", "'typo_backend:TypoBacknd'",
                 "AttributeError", "did you mean 'TypoBackend'?"],
        "gone": ["'gone' of distribution 'typo-backend'", "ModuleNotFoundError"],
        "notone": ["made TypoBackend, not a lazygen Backend", "subclass of lazygen.runtime"],
    }  # fmt: skip
    for name, expected in cases.items():
        result = _run(
            "import lazygen.runtime as lr\n"
            f"print(sorted(lr.available_backends()))\nlr.init(backend={name!r})",
            PYTHONPATH=path,
        )
        assert result.returncode != 0 and name in result.stdout, result.stderr[-2000:]
        last = result.stderr.strip().splitlines()[-1]
        if name != "notone":
            assert last.startswith("lazygen.runtime.errors.LazygenRuntimeError: lazygen: the "
                                   "'lazygen.backends' entry point"), last  # fmt: skip
            assert "reinstall the package" in last
        for text in expected:
            assert text.lower() in last.lower(), last
