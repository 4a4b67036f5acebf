#!/usr/bin/env bash
# Installs the GGUF tests' references into BUILD/npm (never committed): npm's node-llama-cpp
# 3.22.1 with its prebuilt CPU binary (@node-llama-cpp/linux-x64: libllama, whose
# llama_model_quantize makes K-quants) and, cloned from the git bundle inside that package,
# llama.cpp's source of the same release (gguf-py, convert_hf_to_gguf.py). npm's cache is
# tried first (--prefer-offline); nothing is built or downloaded by the package's scripts.
# Usage: scripts/llama-cpp-reference.sh [BUILD_DIR]   (default: build). Prints the folder.
set -euo pipefail
build=${1:-build}
prefix="$build/npm/node-llama-cpp@3.22.1"
package="$prefix/node_modules/node-llama-cpp"
if [ ! -f "$prefix/node_modules/@node-llama-cpp/linux-x64/package.json" ]; then
  mkdir -p "$prefix"
  npm install --prefix "$prefix" --prefer-offline --ignore-scripts --omit=optional --no-audit --no-fund --no-save \
    --silent node-llama-cpp@3.22.1 @node-llama-cpp/linux-x64@3.22.1 >&2
fi
source_dir="$build/npm/llama.cpp-v0.5.0"
if [ ! -f "$source_dir/gguf-py/gguf/__init__.py" ]; then
  rm -rf "$source_dir"
  git clone --quiet "$package/llama/gitRelease.bundle" "$source_dir" 2>/dev/null
fi
echo "$prefix"
