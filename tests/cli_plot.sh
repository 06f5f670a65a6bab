#!/usr/bin/env bash
# banyan plot (issue 20): a run's energy.txt and a benchmark's JSON drawn
# as PNGs by the Python package (Debian's python3 with numpy and
# matplotlib; skipped without them or for the sanitizer build, whose
# library python cannot load); refusals: a missing input, the output
# onto the input, a file of the other kind; nothing written then.
# Without -o the PNG goes next to the input (energy.txt -> energy.png,
# --errors bench.json -> bench-errors.png), never onto the input; the
# PNGs get mode 0666 less the umask, as `banyan run`'s outputs do.
set -u
banyan="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
export BANYAN_PYTHON=/usr/bin/python3
"$BANYAN_PYTHON" -c "import numpy, matplotlib" 2>/dev/null || { echo "SKIP: no numpy or matplotlib"; exit 77; }
ldd "$(dirname "$banyan")/libbanyan.so" 2>/dev/null | grep -q libasan && { echo "SKIP: the sanitizer build"; exit 77; }
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
cd "$scratch" || exit 1
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
png() { [ "$(head -c 8 "$1" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ]; }

"$banyan" run -P InitialConditions:n:1024 -P Gravity:backend:cpu -P Snapshots:render:no \
  -P TimeIntegration:t_end:0.125 -q -o run || fail "run"
"$banyan" plot run/energy.txt -o energy.png >out.txt 2>err.txt || fail "plot energy.txt: $(cat err.txt)"
png energy.png || fail "energy.png is not a PNG"
grep -q "wrote energy.png" out.txt || fail "no 'wrote' line: $(cat out.txt)"
for theta in 0.5 0.9; do
  "$banyan" bench --backend cpu --n 2048 --repeat 1 --check --json --theta $theta >>bench.json 2>/dev/null ||
    fail "bench theta $theta"
done
"$banyan" plot --errors bench.json -o errors.png 2>err.txt || fail "plot --errors: $(cat err.txt)"
png errors.png || fail "errors.png is not a PNG"
# refusals, each naming the file, writing nothing
"$banyan" plot missing.txt -o m.png 2>err.txt && fail "a missing input was plotted"
grep -q "missing.txt: no such file" err.txt || fail "missing input: $(cat err.txt)"
cp run/energy.txt e.txt
"$banyan" plot e.txt -o e.txt 2>err.txt && fail "the output onto the input"
grep -q "is the input" err.txt || fail "output onto input: $(cat err.txt)"
cmp -s e.txt run/energy.txt || fail "the input was changed"
mkdir -p pd
for o in pd pd/; do
  "$banyan" plot e.txt -o $o 2>err.txt && fail "-o $o (a directory) accepted"
  grep -q "is a directory" err.txt || fail "-o $o: not the directory's message: $(cat err.txt)"
done
[ -z "$(ls -A pd)" ] || fail "-o pd/: something was written into it: $(ls -A pd)"
"$banyan" plot --errors run/energy.txt -o x.png 2>err.txt && fail "an energy log taken as bench JSON"
grep -q "energy.txt" err.txt || fail "wrong kind: $(cat err.txt)"
"$banyan" plot bench.json -o y.png 2>err.txt && fail "bench JSON taken as an energy log"
"$banyan" plot run/energy.txt -o no/such/dir/e.png 2>err.txt && fail "an output in a missing folder"
grep -q "no/such/dir/e.png" err.txt || fail "missing output folder: $(cat err.txt)"
[ -e m.png ] || [ -e x.png ] || [ -e y.png ] && fail "a refused plot left a file: $(ls)"
# without -o: next to the input, its extension replaced, and the line saying where
"$banyan" plot run/energy.txt >out.txt 2>err.txt || fail "plot energy.txt without -o: $(cat err.txt)"
png run/energy.png || fail "no run/energy.png beside run/energy.txt: $(ls run)"
grep -q "wrote run/energy.png" out.txt || fail "no 'wrote run/energy.png' line: $(cat out.txt)"
"$banyan" plot --errors bench.json >out.txt 2>err.txt || fail "plot --errors without -o: $(cat err.txt)"
png bench-errors.png || fail "no bench-errors.png beside bench.json: $(ls)"
grep -q "wrote bench-errors.png" out.txt || fail "no 'wrote bench-errors.png' line: $(cat out.txt)"
# the default would be the input itself (energy.png -> energy.png): refused, the input kept
cp energy.png in.png
"$banyan" plot in.png 2>err.txt && fail "the default output onto the input"
grep -q "in.png is the input" err.txt || fail "default onto input: $(cat err.txt)"
cmp -s in.png energy.png || fail "the input was changed by a default output"
# the PNGs' mode as banyan's other outputs': 0666 less the umask (not mkstemp's 0600)
for mask in 022 027; do
  want=$(printf '%o' $((0666 & ~0$mask)))
  rm -f m$mask.png
  (umask $mask && "$banyan" plot run/energy.txt -o m$mask.png >/dev/null 2>err.txt) || fail "umask $mask: $(cat err.txt)"
  (umask $mask && "$banyan" plot --errors bench.json >/dev/null 2>err.txt) || fail "umask $mask --errors: $(cat err.txt)"
  [ "$(stat -c %a m$mask.png)" = "$want" ] || fail "umask $mask: m$mask.png has mode $(stat -c %a m$mask.png), not $want"
  [ "$(stat -c %a bench-errors.png)" = "$want" ] ||
    fail "umask $mask: bench-errors.png (replaced) has mode $(stat -c %a bench-errors.png), not $want"
  (umask $mask && "$banyan" run -P InitialConditions:n:64 -P Gravity:backend:cpu -P Snapshots:render:no \
    -P TimeIntegration:t_end:0.0625 -q -o r$mask >/dev/null 2>&1) || fail "umask $mask: run"
  [ "$(stat -c %a r$mask/used_parameters.yml)" = "$want" ] ||
    fail "umask $mask: banyan run's used_parameters.yml has mode $(stat -c %a r$mask/used_parameters.yml), not $want"
done
# an interpreter without numpy: one line naming it and what is missing, no traceback, nothing written
mkdir -p nonumpy/numpy && echo 'raise ModuleNotFoundError("numpy is not installed here", name="numpy")' >nonumpy/numpy/__init__.py
printf '#!/bin/sh\nPYTHONPATH=%s:$PYTHONPATH exec %s "$@"\n' "$PWD/nonumpy" "$BANYAN_PYTHON" >nopy.sh
chmod +x nopy.sh
BANYAN_PYTHON=$PWD/nopy.sh "$banyan" plot run/energy.txt -o nonumpy.png >/dev/null 2>err.txt &&
  fail "no numpy: accepted"
grep -q "banyan plot: error: .* cannot import numpy is not installed here: the plots need Python 3 with numpy" err.txt ||
  fail "no numpy: not one line naming it: $(cat err.txt)"
grep -q Traceback err.txt && fail "no numpy: a traceback: $(cat err.txt)"
[ -e nonumpy.png ] && fail "no numpy: nonumpy.png written"
ls -a | grep -q '\.tmp\.' && fail "a temporary file was left: $(ls -a)"
[ $failures -eq 0 ] && echo "cli_plot: all passed"
exit $((failures > 0))
