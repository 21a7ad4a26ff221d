#!/usr/bin/env bash
# Install the referee (into .venv) and run the demo: a short round robin of the sample bots.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip >/dev/null
.venv/bin/python -m pip install -q --disable-pip-version-check -e .
exec .venv/bin/referee tournament examples/demo.toml "$@"
