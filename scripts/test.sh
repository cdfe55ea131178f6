#!/usr/bin/env bash
# The whole test suite: bootstraps .venv, lints, checks generated/ is current, runs pytest.
# Extra arguments go to pytest. Slow suites run when CI=true or LAZYGEN_SLOW=1.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/bootstrap.sh"
cd "$ROOT"
echo "[test] ruff"
ruff check lazygen tests bench
echo "[test] black --check"
black --check -q lazygen tests bench setup.py
if [ -f "$ROOT/lazygen/cli.py" ] && grep -q '"gen"' "$ROOT/lazygen/cli.py"; then
  echo "[test] lazygen gen --check"
  lazygen gen --check
fi
echo "[test] pytest"
python -m pytest -q -n "${LAZYGEN_TEST_WORKERS:-2}" --durations=25 "$@"
