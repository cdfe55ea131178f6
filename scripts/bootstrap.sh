#!/usr/bin/env bash
# Create (or reuse) the project's virtual environment and install lazygen into it.
# Sourced by scripts/demo.sh and scripts/test.sh; idempotent and registry-only.
#
# The environment is .venv with torch 2.13.0 (the default), or, with LAZYGEN_TORCH set to a
# supported torch release (2.14.1), .venv-torch<that version> with that torch: each torch
# gets an environment of its own, so switching never reinstalls ~GBs. The index serves
# torch 2.14.1 only as its CUDA build (~6 GB with the NVIDIA packages it needs to import;
# it runs on the CPU), so it is installed only when asked for.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DEFAULT_TORCH="2.13.0"
SUPPORTED_TORCH="2.13.0 2.14.1"  # the releases the scripts install; lazygen accepts >=2.13,<2.15
TORCH_VERSION="${LAZYGEN_TORCH:-$DEFAULT_TORCH}"
case " $SUPPORTED_TORCH " in
  *" $TORCH_VERSION "*) ;;
  *) echo "[bootstrap] LAZYGEN_TORCH=$TORCH_VERSION is not a release these scripts install;" \
          "use one of: $SUPPORTED_TORCH" >&2
     exit 2 ;;
esac
if [ "$TORCH_VERSION" = "$DEFAULT_TORCH" ]; then
  VENV="$ROOT/.venv"
else
  VENV="$ROOT/.venv-torch$TORCH_VERSION"
fi
PY="${PYTHON:-python3}"

if [ ! -x "$VENV/bin/python" ]; then
  echo "[bootstrap] creating $VENV"
  "$PY" -m venv "$VENV"
fi
VPY="$VENV/bin/python"
pip_q() { "$VPY" -m pip install --disable-pip-version-check -q "$@" 2>&1 | grep -v '^WARNING: Location' || true; }

# torch first, pinned: an unpinned torch pulls a multi-GB CUDA build (and pip would pick the
# newest release the range allows).
if ! "$VPY" -c 'import sys, torch; sys.exit(torch.__version__.split("+")[0] != sys.argv[1])' \
     "$TORCH_VERSION" 2>/dev/null; then
  echo "[bootstrap] installing torch==$TORCH_VERSION into $VENV"
  pip_q "torch==$TORCH_VERSION"
fi
# The project itself, editable, with its test, docs (the site's strict build is a test) and JAX
# (the jax backend's tests), torch held at the version above. Re-run only when pyproject
# changes.
stamp="$VENV/.lazygen-installed"
if [ ! -f "$stamp" ] || [ "$ROOT/pyproject.toml" -nt "$stamp" ] || [ "$ROOT/setup.py" -nt "$stamp" ] \
   || ! "$VPY" -c 'import lazygen' 2>/dev/null; then
  echo "[bootstrap] installing lazygen (editable) and its test, docs and jax extras"
  pip_q -e "$ROOT[test,docs,jax]" "torch==$TORCH_VERSION"
  "$VPY" -c 'import lazygen, pytest, yaml, jinja2, black, sphinx, myst_parser, matplotlib' && touch "$stamp"
fi
export PATH="$VENV/bin:$PATH"
