#!/usr/bin/env bash
# Installs what is missing (Debian 12), builds attnscope and opens the desktop app.
# Extra arguments go to the app, e.g. scripts/run-app.sh path/to/bundle
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --gui
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
# Only the app and the layers it links: the tests build in scripts/run-tests.sh.
cmake --build build -j"$(nproc)" --target attnscope
exec build/attnscope "$@"
