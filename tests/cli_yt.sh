#!/usr/bin/env bash
# yt opens a snapshot written by banyan as GADGET HDF5 data, with the right
# particles (tests/yt_open.py), and, for a galaxy in kpc and Msun, the
# right grams and centimetres with the file's /Units as unit_base. Skipped
# (77) where Debian's python3-yt is
# not installed for /usr/bin/python3.
set -u
source "$(dirname "$0")/snapshot_test_setup.sh"
snapshot_test_setup "$1" "yt, h5py" "python3-yt python3-h5py"
"$banyan" forces good.hdf5 -o out.hdf5 --method direct --eps 0.05 || exit 1
"$py" "$here/yt_open.py" out.hdf5 good.hdf5 || exit 1
# a galaxy in kpc, Msun and km/s with three part types: the units through unit_base
"$banyan" ic galaxy --model m31 --n 4096 -o g.hdf5 >/dev/null || exit 1
"$py" "$here/yt_open.py" g.hdf5 g.hdf5
