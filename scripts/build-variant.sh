#!/usr/bin/env bash
# A variant of the CLI for A/B benchmarks on the device: one source file
# of the CUDA build (build-cuda/, configured and built) recompiled with
# extra flags, put into a copy of the static library, and the CLI linked
# against it. The variant lands in OUTDIR/banyan (debug info stripped).
#
#   scripts/build-variant.sh OUTDIR SOURCE[:AS] [NVCC FLAGS...]
#   e.g. scripts/build-variant.sh .carry/v2 src/gravity/walk_cuda.cu -DBN_WALK_PP_UNROLL=1
#        scripts/build-variant.sh .carry/old old_walk.cu:src/gravity/walk_cuda.cu
# AS: the build's source that SOURCE stands in for (default SOURCE itself);
# its object is the one replaced in the library.
set -euo pipefail
OUTDIR=$1 SRC=${2%%:*} AS=${2#*:}
shift 2
B=$(pwd)/build-cuda
mkdir -p "$OUTDIR"
OUTDIR=$(cd "$OUTDIR" && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
obj=$(basename "$AS").o
(cd "$B" && /usr/local/cuda/bin/nvcc -forward-unknown-to-host-compiler -DBANYAN_HAVE_CUDA=1 \
    --options-file CMakeFiles/banyan_objs.dir/includes_CUDA.rsp -O3 -DNDEBUG \
    --generate-code=arch=compute_90,code=[compute_90,sm_90] -Xcompiler=-fPIC --expt-relaxed-constexpr -lineinfo \
    "$@" -x cu -c "$OLDPWD/$SRC" -o "$TMP/$obj")
cp "$B/libbanyan_static.a" "$TMP/lib.a"
# the archive names the object after the source (walk_cuda.cu.o); a new
# name would be added beside the old object, and the linker would take
# the old one
ar t "$TMP/lib.a" | grep -qx "$obj" || { echo "build-variant: no $obj in the library (use SOURCE:AS)" >&2; exit 1; }
ar r "$TMP/lib.a" "$TMP/$obj"
(cd "$B" && sed "s#libbanyan_static.a#$TMP/lib.a#" CMakeFiles/banyan_cli.dir/linkLibs.rsp >"$TMP/libs.rsp" &&
    g++ @CMakeFiles/banyan_cli.dir/objects1 -o "$OUTDIR/banyan" @"$TMP/libs.rsp" \
        -L/usr/local/cuda/targets/x86_64-linux/lib/stubs -L/usr/local/cuda/targets/x86_64-linux/lib)
strip --strip-debug "$OUTDIR/banyan"
echo "$OUTDIR/banyan: $SRC $*"
