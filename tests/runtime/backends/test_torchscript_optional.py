"""TorchScript is optional: where it does not work (torch deprecates it and plans builds
without it) the default backend gives way to ``fx`` with one warning, a backend the user
names is never replaced, and the default backend lets no torch deprecation warning reach
its user. Each case runs in its own process (one lazy device per process)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

#: Run before lazygen starts: TorchScript's graph compiler is gone, as in a torch built
#: without TorchScript, and scripting raises.
WITHOUT_TORCHSCRIPT = """
import torch

del torch._C._create_function_from_graph


def _refuse(*args, **kwargs):
    raise RuntimeError("this torch has no TorchScript")


torch.jit.script = torch.jit.trace = _refuse
"""

#: Two SGD steps of a small MLP on the lazy device; the first loss is checked against
#: eager's in float64 (lazygen's own graphs, not another backend's, computed it).
TRAIN_STEP = """
import torch
lr.init()
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
x, y = torch.randn(5, 4), torch.tensor([0, 1, 1, 0, 1])
expected = torch.nn.functional.cross_entropy(model.double()(x.double()), y).item()
model = model.float().to("lazygen")
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
losses = []
for _ in range(2):
    optimizer.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(x.to("lazygen")), y.to("lazygen"))
    loss.backward()
    optimizer.step()
    lr.mark_step()
    losses.append(loss.item())
# float32 against float64: eager's own float32 loss is within ~1e-7 relative; 1e-5 leaves
# room for a different summation order, not for a wrong op.
assert abs(losses[0] - expected) < 1e-5, (losses, expected)
assert losses[1] < losses[0], losses
"""


def _run(code: str, *python_options: str, **env: str) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("LAZYGEN_")}
    environment.update(env)
    environment["LAZYGEN_GC_FREEZE"] = "0"  # start-up speed; unrelated to what is tested
    result = subprocess.run(
        [sys.executable, *python_options, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=240,
        env=environment,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def test_without_torchscript_the_default_is_fx_said_once():
    result = _run(
        WITHOUT_TORCHSCRIPT
        + """
import warnings
import lazygen.runtime as lr
from lazygen.runtime.backends import DefaultBackendWarning

with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    lr.init()
    lr.init()
"""
        + TRAIN_STEP
        + """
said = [w for w in caught if issubclass(w.category, DefaultBackendWarning)]
assert len(said) == 1, [str(w.message) for w in caught]
print(said[0].message)
print(lr.backend().name)
"""
    )
    message, backend = result.stdout.strip().splitlines()[-2:]
    assert backend == "fx"
    assert "default backend 'torchscript' is unavailable" in message
    assert "_create_function_from_graph" in message  # the reason
    assert "using the 'fx' backend instead" in message


def test_without_torchscript_a_named_torchscript_is_an_error_not_a_fallback():
    for code, env in [
        ("lr.init(backend='torchscript')", {}),
        ("lr.init()", {"LAZYGEN_BACKEND": "ts"}),
    ]:
        result = _run(
            WITHOUT_TORCHSCRIPT + f"""
import lazygen.runtime as lr
try:
    {code}
except lr.LazygenRuntimeError as error:
    print(error)
else:
    raise SystemExit("torchscript was named and missing, yet init succeeded")
""",
            **env,
        )
        out = result.stdout
        assert "the torchscript backend needs TorchScript, which does not work" in out, out
        assert "init(backend='fx')" in out


def test_the_default_backend_raises_no_torch_deprecation_warning():
    """TorchScript's Python API (``torch.jit.script``, ``trace``, ``fork``) warns "switch
    to torch.compile"; the default backend builds graphs below it, so a user sees none,
    even with deprecation warnings as errors."""
    result = _run(
        """
import warnings
import lazygen.runtime as lr

with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
"""
        + textwrap.indent(TRAIN_STEP, "    ")
        + """
from_torch = [f"{w.filename}:{w.lineno}: {w.message}" for w in caught
              if issubclass(w.category, DeprecationWarning) or "torch.compile" in str(w.message)]
assert not from_torch, from_torch
print(lr.backend().name)
""",
        "-W",
        "error::DeprecationWarning",
    )
    assert result.stdout.strip().splitlines()[-1] == "torchscript"
