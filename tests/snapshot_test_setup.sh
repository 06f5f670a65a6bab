# Sourced by the snapshot shell tests (cli_io.sh, cli_yt.sh):
#   snapshot_test_setup BANYAN "python modules" "Debian packages"
# sets $banyan (absolute), $py (Debian's /usr/bin/python3: python3-yt and
# python3-h5py are built for it), $here (tests/), then works in a scratch
# directory (removed on exit) holding good.hdf5 and the bad files of
# make_snapshots.py. Exits 77 (skipped) when the modules are missing.
snapshot_test_setup() {
  banyan="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
  [ -x "$banyan" ] || { echo "FAIL: no banyan program at $1"; exit 1; }
  py=/usr/bin/python3
  here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
  if ! "$py" -c "import $2" 2>/dev/null; then
    echo "SKIP: $py cannot import $2 (apt-get install $3)"
    exit 77
  fi
  scratch="$(mktemp -d)"
  trap 'rm -rf "$scratch"' EXIT
  cd "$scratch" || exit 1
  "$py" "$here/make_snapshots.py" . || { echo "FAIL: cannot make the test snapshots"; exit 1; }
}
