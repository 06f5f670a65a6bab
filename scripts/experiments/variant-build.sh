#!/usr/bin/env bash
# A variant of build-cuda's banyan with one CUDA source compiled with extra
# flags (compile-time tuning constants: an A/B on the device without a
# second build tree). Compiles SRC as build-cuda compiles it plus FLAGS,
# swaps the object into a copy of libbanyan_static.a and links the CLI.
#   scripts/experiments/variant-build.sh OUT SRC [FLAGS...]
#   e.g. variant-build.sh .carry/v/banyan-b5 src/gravity/walk_cuda.cu -DBN_WALK_REMOTE_MIN_BLOCKS=5
set -eu
out=$(realpath -m "$1")
src=$(realpath "$2")
shift 2
cd "$(dirname "$0")/../../build-cuda"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
obj=$(basename "$src").o
eval "$(sed -n 's/^\(CUDA_[A-Z]*\) = \(.*\)$/\1='"'"'\2'"'"'/p' CMakeFiles/banyan_objs.dir/flags.make)"
# shellcheck disable=SC2086
eval nvcc $CUDA_DEFINES $CUDA_INCLUDES $CUDA_FLAGS "$@" -c "$src" -o "$tmp/$obj"
cp libbanyan_static.a "$tmp/lib.a"
ar r "$tmp/lib.a" "$tmp/$obj"
sed "s#libbanyan_static.a#$tmp/lib.a#" CMakeFiles/banyan_cli.dir/linkLibs.rsp >"$tmp/libs.rsp"
mkdir -p "$(dirname "$out")"
/usr/bin/g++ @CMakeFiles/banyan_cli.dir/objects1 -o "$out" @"$tmp/libs.rsp" \
    -L/usr/local/cuda/targets/x86_64-linux/lib/stubs -L/usr/local/cuda/targets/x86_64-linux/lib
echo "$out: $(basename "$src") with $*"
