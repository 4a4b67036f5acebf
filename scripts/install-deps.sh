#!/usr/bin/env bash
# Installs the Debian 12 packages attnscope needs (only those missing).
# Usage: scripts/install-deps.sh [--gui] [--test] [--fuzz]
set -euo pipefail

packages=(cmake g++ make pkg-config libeigen3-dev libopenblas-openmp-dev libhwy-dev nlohmann-json3-dev libcli11-dev libzip-dev zlib1g-dev libxxhash-dev
          libpcre2-dev libutf8proc-dev
          libstb-dev libcairo2-dev fonts-dejavu-core fonts-wqy-microhei fonts-symbola fonts-lohit-deva
          libimgui-dev libglfw3-dev python3-glad libgl1-mesa-dev libgl1-mesa-dri)
for arg in "$@"; do
  case "$arg" in
    --gui) packages+=(xdg-user-dirs) ;;
    --test) packages+=(libgtest-dev libgmock-dev libbenchmark-dev xvfb xauth mesa-utils
                       xdotool imagemagick libxml2-utils poppler-utils python3-numpy python3-pil python3-torch python3-sentencepiece
                       python3-networkx chromium nodejs)
            # npm installs the tests' JS references into the build folder (puppeteer-core for the
            # HTML export's browser test, the tokenizer references); a Node.js that ships its own
            # npm (NodeSource) conflicts with Debian's npm package, so npm only when missing.
            command -v npm >/dev/null 2>&1 || packages+=(npm) ;;
    --fuzz) packages+=(clang libclang-rt-14-dev libomp-dev) ;;
    *) echo "install-deps.sh: unknown option '$arg'" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
echo "attnscope: installing ${missing[*]}"
# apt can meet a dpkg lock held by another apt run; retry a few times.
for attempt in 1 2 3 4 5; do
  if $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"; then
    exit 0
  fi
  echo "attnscope: apt-get failed (attempt $attempt), retrying in 5 s" >&2
  sleep 5
done
exit 1
