#!/usr/bin/env bash
# Create (or reuse) the project's virtual environment at .venv and install lazygen into it.
# Sourced by scripts/demo.sh and scripts/test.sh; idempotent and registry-only.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
PY="${PYTHON:-python3}"

if [ ! -x "$VENV/bin/python" ]; then
  echo "[bootstrap] creating $VENV"
  "$PY" -m venv "$VENV"
fi
VPY="$VENV/bin/python"
pip_q() { "$VPY" -m pip install --disable-pip-version-check -q "$@" 2>&1 | grep -v '^WARNING: Location' || true; }

# torch first, pinned: an unpinned torch pulls a multi-GB CUDA build.
if ! "$VPY" -c 'import torch, sys; sys.exit(torch.__version__.split("+")[0] != "2.13.0")' 2>/dev/null; then
  echo "[bootstrap] installing torch==2.13.0"
  pip_q torch==2.13.0
fi
# The project itself, editable, with its test, docs (the site's strict build is a test) and JAX (the jax backend's tests). Re-run only when pyproject changes.
stamp="$VENV/.lazygen-installed"
if [ ! -f "$stamp" ] || [ "$ROOT/pyproject.toml" -nt "$stamp" ] || [ "$ROOT/setup.py" -nt "$stamp" ] \
   || ! "$VPY" -c 'import lazygen' 2>/dev/null; then
  echo "[bootstrap] installing lazygen (editable) and its test, docs and jax extras"
  pip_q -e "$ROOT[test,docs,jax]"
  "$VPY" -c 'import lazygen, pytest, yaml, jinja2, black, sphinx, myst_parser, matplotlib' && touch "$stamp"
fi
export PATH="$VENV/bin:$PATH"
