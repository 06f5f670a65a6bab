#!/usr/bin/env bash
# yt opens a snapshot written by banyan as GADGET HDF5 data, with the right
# particles (tests/yt_open.py). Skipped (77) where Debian's python3-yt is
# not installed for /usr/bin/python3.
set -u
banyan="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
py=/usr/bin/python3
here="$(cd "$(dirname "$0")" && pwd)"
if ! "$py" -c "import yt, h5py" 2>/dev/null; then
  echo "SKIP: $py cannot import yt and h5py (apt-get install python3-yt python3-h5py)"
  exit 77
fi
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
cd "$dir"
"$py" "$here/make_snapshots.py" . || exit 1
"$banyan" forces good.hdf5 -o out.hdf5 --method direct --eps 0.05 || exit 1
"$py" "$here/yt_open.py" out.hdf5 good.hdf5
