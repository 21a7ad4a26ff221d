#!/usr/bin/env bash
# Install the referee (into .venv) and run the demo: a short round robin of the sample bots.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
# Debian packages the demo needs at run time: bubblewrap (the sandbox every started bot
# runs in), gVisor's runsc (the stronger tier, an application kernel per bot, where the
# referee runs as root: docs/security.md; on Debian 12 bookworm-backports' 20240729:
# scripts/runsc.sh), util-linux (setpriv: a referee run as root drops each bot to its own
# user) and, for Debian's own Python, its venv module.
need=()
command -v bwrap >/dev/null || need+=(bubblewrap)
command -v setpriv >/dev/null || need+=(util-linux)
source scripts/runsc.sh
if [ ! -x .venv/bin/python ] && ! "$PY" -c 'import ensurepip, venv' 2>/dev/null; then
  need+=(python3-venv)
fi
if [ ${#need[@]} -gt 0 ]; then
  echo "installing Debian packages: ${need[*]}" >&2
  SUDO=$([ "$(id -u)" -eq 0 ] || echo sudo)
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
# Install only when something the installed package depends on has changed: the package
# metadata, the build hook, and the engine modules it compiles (the rest of the package is
# installed in place, -e, and needs no reinstall). A second run starts in seconds.
stamp=.venv/.sticheln-demo-install
want=$(cat pyproject.toml setup.py referee/rules/*.py | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "installing the referee into .venv (a few minutes the first time: it compiles the rules engine)" >&2
  .venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip >/dev/null
  .venv/bin/python -m pip install -q --disable-pip-version-check -e .
  echo "$want" >"$stamp"
fi
exec .venv/bin/referee tournament examples/demo.toml "$@"
