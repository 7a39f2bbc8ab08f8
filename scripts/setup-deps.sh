#!/bin/sh
# Installs the Debian packages the build and the tests need, when missing.
# As root it runs apt-get; otherwise it prints the exact command and fails.
set -eu
pkgs="build-essential pkg-config sqlite3 libsqlite3-dev libcjson-dev libpcre2-dev libcunit1-dev zlib1g-dev libdw-dev clang libclang-rt-dev"
# the browser test of the flamegraph needs a real browser
[ "${WITH_TEST_TOOLS:-0}" = 1 ] && pkgs="$pkgs chromium"
# the benchmark's PyTorch 1.13 pipeline runs on Debian's own PyTorch
[ "${WITH_BENCH_TOOLS:-0}" = 1 ] && pkgs="$pkgs python3-torch"
missing=""
for p in $pkgs; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = 0 ]; then
    echo "setup: installing$missing" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq --no-install-recommends $missing >&2
else
    echo "setup: missing Debian packages:$missing" >&2
    echo "setup: run: sudo apt-get install -y$missing" >&2
    exit 1
fi
