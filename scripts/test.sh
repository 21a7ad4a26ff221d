#!/usr/bin/env bash
# Install what the tests need (into .venv) and run every check: lint, format, types, tests.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
# Debian packages the tests start for real: Prometheus (promtool and a server), PostgreSQL,
# docker-compose (its `config` checks deploy/compose.yaml; no Docker daemon needed), and
# bubblewrap, the sandbox every bot the referee starts runs in.
need=()
command -v bwrap >/dev/null || need+=(bubblewrap)
command -v docker-compose >/dev/null || need+=(docker-compose)
{ command -v promtool && command -v prometheus; } >/dev/null || need+=(prometheus)
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need+=(postgresql)
if [ ${#need[@]} -gt 0 ]; then
  SUDO=$([ "$(id -u)" -eq 0 ] || echo sudo)
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip >/dev/null
.venv/bin/python -m pip install -q --disable-pip-version-check -e '.[test]'
# The Node.js sample bot's packages (pinned by its package-lock.json), when Node is here.
if command -v npm >/dev/null && [ ! -d sample_bots/node/node_modules ]; then
  (cd sample_bots/node && npm ci --no-audit --no-fund --loglevel=error)
fi
export PATH="$PWD/.venv/bin:$PATH"
echo "== ruff"; ruff check . && ruff format --check .
echo "== mypy"; mypy
echo "== pytest"; pytest "$@"
