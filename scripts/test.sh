#!/usr/bin/env bash
# The whole test suite. Installs what the tests need first (Debian's redis-server and
# redis-tools 7.0.15, a Python venv with redis-py + hiredis + pytest), then runs the Rust
# tests and the tests against real servers over real sockets.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v redis-server >/dev/null 2>&1 || need_apt+=(redis-server)
command -v redis-cli >/dev/null 2>&1 || need_apt+=(redis-tools)
if [ ${#need_apt[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi
# skein-bench's report test renders its HTML in headless Chromium (Debian's package).
if ! command -v chromium >/dev/null 2>&1; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null; } \
    || echo "chromium could not be installed: the report rendering test will be skipped"
fi
# Go, for the linearizability checker (tests/linearizability, built by its pytest wrapper;
# its module dependencies come through the Go module proxy).
if ! command -v go >/dev/null 2>&1 && [ ! -x /usr/local/go/bin/go ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq golang-go >/dev/null
fi
redis-server --version | grep -q "v=7.0.15" || { echo "need redis-server 7.0.15"; redis-server --version; exit 1; }

if [ ! -x .venv/bin/pytest ]; then
  python3 -m venv .venv
fi
# Every run: a venv made before a requirement was added gets it (a no-op, without the
# network, when everything is there already).
.venv/bin/pip install -q --disable-pip-version-check -r tests/requirements.txt

cargo fmt --all -- --check
cargo clippy --workspace --all-targets -- -D warnings
cargo build --workspace --all-targets
cargo test --workspace
# skein-bench is compared with redis-benchmark's throughput: test an optimized build.
cargo build --release -p skein-bench
export SKEIN_BENCH_BIN="$PWD/target/release/skein-bench"
export SKEIN_BIN="$PWD/target/debug/skein-server"
.venv/bin/pytest -q tests "$@"
