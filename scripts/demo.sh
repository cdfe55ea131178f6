#!/usr/bin/env bash
# The main job: bootstraps .venv, then runs `python -m lazygen.demo` (regenerate + train).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/bootstrap.sh"
cd "$ROOT"
python -m lazygen.demo "$@"
