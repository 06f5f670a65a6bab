# Sourced by session scripts run on a device machine as SCRIPT DIR OUT
# (DIR: a carried build, banyan and lib/; or CARRY.tar.xz, which is
# unpacked beside itself: CARRY, its path): D, O (made), here (scripts/),
# B (banyan), the carried libraries on the path, device-mpi-env.sh's
# settings (Open MPI as root, NVLink multicast off, TUNED).
set -u
if [[ $1 == *.tar.xz ]]; then
    CARRY=$1
    tar xJf "$CARRY" -C "$(dirname "$CARRY")"
    D=$(cd "${CARRY%.tar.xz}" && pwd)
else
    D=$(cd "$1" && pwd)
fi
O=$(mkdir -p "$2" && cd "$2" && pwd)
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export LD_LIBRARY_PATH=$D/lib:${LD_LIBRARY_PATH:-}
source "$here/device-mpi-env.sh"
B=$D/banyan
