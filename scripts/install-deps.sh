#!/usr/bin/env bash
# Installs the Debian packages ordo needs, only those missing.
set -euo pipefail
packages=(g++ cmake ninja-build libgtest-dev python3-dev python3-numpy python3-pytest pybind11-dev libopenblas-dev libsleef-dev libdnnl-dev "$@")
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "installing: ${missing[*]}"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
