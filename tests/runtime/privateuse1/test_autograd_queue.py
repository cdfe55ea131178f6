"""The first backward() of a process fixes torch's autograd devices: a CPU backward before
lazygen is imported must not turn later lazy backward() calls into torch's INTERNAL ASSERT.
Each case needs a fresh process (the engine starts once per process)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

_EAGER_BACKWARD = "w = torch.ones(2, requires_grad=True); (w * 2).sum().backward()\n"
_LAZY_BACKWARD = """
y = torch.ones(2, device="lazygen", requires_grad=True)
(y * 3).sum().backward()
print("grad", y.grad.cpu().tolist())
"""


def _python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-W", "always", "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=240,
    )


def test_importing_lazygen_before_an_eager_backward_keeps_lazy_backward_working():
    done = _python(
        "import torch, lazygen.runtime as lr\n" + _EAGER_BACKWARD + "lr.init()\n" + _LAZY_BACKWARD
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "grad [3.0, 3.0]" in done.stdout
    assert "RuntimeWarning" not in done.stderr


def test_a_backward_before_import_gets_a_warning_and_a_clear_error_not_torchs_assert():
    done = _python(
        "import torch\n"
        + _EAGER_BACKWARD
        + "import lazygen.runtime as lr\nlr.init()\n"
        + "print('forward', (torch.ones(2, device='lazygen') + 1).cpu().tolist())\n"
        + "try:\n"
        + textwrap.indent(_LAZY_BACKWARD, "    ")
        + "except RuntimeError as error:\n    print('error:', error)\n"
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "RuntimeWarning: lazygen: backward() cannot run on 'lazygen'" in done.stderr
    assert "forward [2.0, 2.0]" in done.stdout
    error = done.stdout.split("error:", 1)[1]
    assert "a backward() ran before lazygen.runtime.init()" in error
    assert "INTERNAL ASSERT" not in error and "report a bug" not in error
