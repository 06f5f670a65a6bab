#!/usr/bin/env bash
# Install the Debian packages banyan needs, only those missing. Does
# nothing (and needs no network) when everything is present.
set -euo pipefail
# `deps.sh test` adds what only the tests use: yt (Debian's python3-yt,
# for the check that yt opens our snapshots), h5dump, and numpy, pytest
# and matplotlib for the Python package's tests (tests/cli_python.sh), pip
# and wheel for its `pip install ./python` check.
pkgs=(cmake make gcc g++ pkg-config libhdf5-dev libyaml-dev libpng-dev libcmocka-dev libfftw3-dev
      libopenmpi-dev openmpi-bin)
if [ "${1:-}" = "test" ]; then
  pkgs+=(hdf5-tools python3-yt python3-h5py python3-numpy python3-pytest python3-matplotlib python3-pip python3-wheel)
fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "scripts/deps.sh: installing ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null; then sudo="sudo"; else
    echo "scripts/deps.sh: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; fi
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
