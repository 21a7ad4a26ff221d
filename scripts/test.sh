#!/usr/bin/env bash
# Install what the tests need (into .venv) and run every check: lint, format, types, tests.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
# Debian packages the tests start for real: Prometheus (promtool and a server), PostgreSQL,
# Chromium (the web pages' browser tests), docker-compose (its `config` checks
# deploy/compose.yaml; no Docker daemon needed), bubblewrap (the sandbox every bot the
# referee starts runs in, with util-linux's setpriv), gVisor's runsc (the stronger tier,
# tests/test_gvisor.py; on Debian 12 bookworm-backports' 20240729: scripts/runsc.sh), the
# C++ toolchain with gRPC's development files for the C++ sample bot, protoc plugins, Go with gRPC (the Go recipe of
# docs/protocol-reference.md), Java with grpc-java (the Java kit), and Debian Python's venv
# module.
need=()
command -v bwrap >/dev/null || need+=(bubblewrap)
command -v setpriv >/dev/null || need+=(util-linux)
source scripts/runsc.sh
if [ ! -x .venv/bin/python ] && ! "$PY" -c 'import ensurepip, venv' 2>/dev/null; then
  need+=(python3-venv)
fi
command -v docker-compose >/dev/null || need+=(docker-compose)
{ command -v cmake && command -v g++ && command -v protoc && command -v grpc_cpp_plugin; } >/dev/null \
  && [ -f /usr/include/grpcpp/grpcpp.h ] && [ -f /usr/include/openssl/sha.h ] \
  || need+=(cmake g++ libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc libssl-dev)
# The Go and Java protoc plugins, to run the stub lines of docs/protocol-reference.md.
{ command -v protoc-gen-go && command -v protoc-gen-go-grpc && command -v grpc_java_plugin; } >/dev/null \
  || need+=(protoc-gen-go protoc-gen-go-grpc protobuf-compiler-grpc-java-plugin)
# Go and Debian's Go packages, to build the Go bot of docs/protocol-reference.md offline as
# the page says and play it (its first build takes about a minute, later ones are cached).
# The 1.5 protobuf library by name: golang-google-grpc-dev alone pulls in 1.3, which cannot
# encode the messages protoc-gen-go writes.
{ command -v go && dpkg -s golang-google-grpc-dev golang-github-golang-protobuf-1-5-dev; } >/dev/null 2>&1 \
  || need+=(golang-go golang-google-grpc-dev golang-github-golang-protobuf-1-5-dev)
# Java and Debian's grpc-java, to build the Java kit (sample_bots/java) offline as a league
# does. libgrpc-java does not depend on the jars it runs with (Netty, protobuf, Guava,
# perfmark, gson): named here; the stubs need the geronimo annotation jar to compile.
java_pkgs=(openjdk-17-jdk-headless libgrpc-java libprotobuf-java libnetty-java libguava-java
  libperfmark-java libgoogle-gson-java libgeronimo-annotation-1.3-spec-java)
{ command -v javac && dpkg -s "${java_pkgs[@]}"; } >/dev/null 2>&1 || need+=("${java_pkgs[@]}")
{ command -v promtool && command -v prometheus; } >/dev/null || need+=(prometheus)
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need+=(postgresql)
# The web pages' browser tests drive Debian's Chromium (Playwright is pointed at it).
[ -x /usr/bin/chromium ] || need+=(chromium)
if [ ${#need[@]} -gt 0 ]; then
  SUDO=$([ "$(id -u)" -eq 0 ] || echo sudo)
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
# The C++ sample bot (incremental: quick when nothing changed), built while Python's
# packages install (the compiler's CPU beside pip's downloads).
echo "== C++ sample bot"
{
  cmake -S sample_bots/cpp -B sample_bots/cpp/build -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build sample_bots/cpp/build -j2 >/dev/null
} &
cpp_build=$!
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip >/dev/null
.venv/bin/python -m pip install -q --disable-pip-version-check -e '.[test]'
# The Node.js sample bot's packages (pinned by its package-lock.json), when Node is here;
# again when an older install left links in them (its .npmrc makes none: it is a kit to upload).
if command -v npm >/dev/null && { [ ! -d sample_bots/node/node_modules ] \
    || [ -n "$(find sample_bots/node/node_modules -type l -print -quit)" ]; }; then
  (cd sample_bots/node && npm ci --no-audit --no-fund --loglevel=error)
fi
wait "$cpp_build" || { echo "test.sh: the C++ sample bot did not build (above)" >&2; exit 1; }
export PATH="$PWD/.venv/bin:$PATH"
# The suite starts thousands of Python processes (referee commands, bots, its own four
# workers): with bytecode caching off (PYTHONDONTWRITEBYTECODE, set in some images) each
# compiles every module it imports again, and pytest rewrites every test file again in each
# worker, minutes of CPU in all. The caches go to the ignored __pycache__ folders.
unset PYTHONDONTWRITEBYTECODE
# Each on a line of its own: under set -e a failure left of && would not stop the script.
echo "== ruff"; ruff check .; ruff format --check .
echo "== mypy"; mypy
# Four test processes share the 2 cores (most tests wait on bot processes, servers and
# browsers; the longest start first, tests/conftest.py); the tests marked serial load the
# whole machine themselves or judge timing, and run alone, after. Each phase ends with its
# slowest tests (STICHELN_TEST_COSTS=FILE adds each test's CPU: tools/test_costs.py).
# A selection (-k, a file) that leaves either half empty is fine (pytest's status 5).
echo "== pytest"
status=0
pytest -n 4 --dist loadgroup -m "not serial" --durations=25 "$@" || status=$?
[ "$status" -eq 5 ] && status=0
[ "$status" -eq 0 ] || exit "$status"
echo "== pytest (serial)"
pytest -m serial --durations=10 "$@" || status=$?
[ "$status" -eq 5 ] && status=0
exit "$status"
