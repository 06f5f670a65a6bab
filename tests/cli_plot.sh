#!/usr/bin/env bash
# banyan plot (issue 20): a run's energy.txt and a benchmark's JSON drawn
# as PNGs by the Python package (Debian's python3 with numpy and
# matplotlib; skipped without them or for the sanitizer build, whose
# library python cannot load); refusals: a missing input, the output
# onto the input, a file of the other kind; nothing written then.
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
"$banyan" plot --errors run/energy.txt -o x.png 2>err.txt && fail "an energy log taken as bench JSON"
grep -q "energy.txt" err.txt || fail "wrong kind: $(cat err.txt)"
"$banyan" plot bench.json -o y.png 2>err.txt && fail "bench JSON taken as an energy log"
"$banyan" plot run/energy.txt -o no/such/dir/e.png 2>err.txt && fail "an output in a missing folder"
grep -q "no/such/dir/e.png" err.txt || fail "missing output folder: $(cat err.txt)"
[ -e m.png ] || [ -e x.png ] || [ -e y.png ] && fail "a refused plot left a file: $(ls)"
[ $failures -eq 0 ] && echo "cli_plot: all passed"
exit $((failures > 0))
