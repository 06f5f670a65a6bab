#!/usr/bin/env bash
# Issue 18: scaling over the GPUs of one host, one MPI rank per GPU
# (--device auto), every run a `banyan bench` under mpirun (JSON, stage
# times of the slowest rank) or `banyan potential`:
#   weak:   Plummer and Hernquist, WEAK particles per GPU (default 2^25)
#   strong: Plummer, STRONG particles in all (default 2^27)
#   block steps on GOTHIC's M31 (GALAXY particles, default 2^23) with the
#           acceleration MAC at 2^-7 (GOTHIC's fiducial)
#   mesh:   the potential of an AMR mesh of about 2^26 cells
#   forces: the P-GPU forces against the 1-GPU ones and against direct
#           summation (2^21 particles, every one compared)
#   ab:     the received trees' walk with 2 targets per lane (the old way)
#   hostlink, depth: weak Plummer on the most GPUs with the trees sent
#           through host memory and MPI (BANYAN_NCCL=0) instead of NCCL,
#           and walked depth first (BANYAN_REMOTE_WALK=depth), the ways
#           before session 19
#   boxes:  weak Plummer on the most GPUs with 4096 target boxes per rank
#   nocosts: the same with the local walk's cost kernel off (BANYAN_RANK_COSTS=0)
# The traces (BANYAN_GRAVITY_TRACE) include the device's own time of the
# local walk and of the received trees' walk.
# NCCL is loaded at run time: BANYAN_NCCL_LIBRARY, else the one of the
# Python package nvidia-nccl (PyTorch's), else the loader's path.
# and a table last. Efficiency: weak t(1) / t(P); strong t(1) / (P t(P)).
#   scripts/gpu-scaling.sh BANYAN [GPU COUNTS...]   (default: 1 2)
set -u
SCRIPTS=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BIN=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
shift
COUNTS=${*:-"1 2"}
WEAK=${WEAK:-33554432} STRONG=${STRONG:-134217728} GALAXY=${GALAXY:-8388608} CHECK_N=${CHECK_N:-2097152}
PARTS=${PARTS:-"weak strong forces galaxy mesh ab"}
OUT=${OUT:-$PWD/out-gpu-scaling}
mkdir -p "$OUT"
cd "$OUT" || exit 1
source "$SCRIPTS/device-mpi-env.sh"
TUNED="$TUNED ${EXTRA:-}" # EXTRA: options for every run (e.g. --balance-cost time)
export BANYAN_GRAVITY_TRACE=1 BANYAN_FIELD_TRACE=1
GOTHIC="--mac accel --alpha 0.0078125 ${EXTRA:-}"
CORES=$(nproc)
nvidia-smi --query-gpu=index,name,memory.total --format=csv,noheader >gpus.txt 2>&1
echo "NCCL: ${BANYAN_NCCL_LIBRARY:-libnccl.so.2 from the library path}" >>gpus.txt
fail=0
cat >table.py <<'PY'
import json, os, re, sys
counts = [int(x) for x in sys.argv[1].split()]
def load(name):
    try:
        return json.load(open(name + ".out"))
    except Exception:
        return None
def row(kind, label, weak):
    base = load(f"{kind}-1")
    for p in counts:
        r = load(f"{kind}-{p}")
        if not r:
            print(f"{label:24s} GPUs {p}: no result"); continue
        t, s = r["t_total"], r.get("step_mean", float("nan"))
        eff = ""
        if base and p > 1:
            f = 1.0 if weak else p
            eff = f"eff. forces {base['t_total'] / (f * t):.0%}, step {base.get('step_mean', 0) / (f * s):.0%}"
            if r.get("batch_mean") and base.get("batch_mean"): # the steps as banyan run runs them (no first step's setup)
                eff += f", batch {base['batch_mean'] / (f * r['batch_mean']):.0%}"
        x = (f" exchange {1e3 * r.get('t_exchange', 0):.1f} ms, LET sent {r.get('let_cells_sent', 0)} cells "
             f"{r.get('let_bodies_sent', 0)} bodies, {r.get('gpus', 1)} GPU(s)") if p > 1 else ""
        print(f"{label:24s} GPUs {p}: N {r['n']:>10d} forces {1e3 * t:8.1f} ms (walk {1e3 * r['t_walk']:7.1f}, "
              f"call {1e3 * r['t_call']:7.1f}) step {1e3 * s:8.1f} ms {eff}{x}")
        if "step_best" in r:
            print(f"{'':24s}   steps: best {1e3 * r['step_best']:.1f} ms (its forces {1e3 * r.get('step_t_total', 0):.1f}, "
                  f"walk {1e3 * r.get('step_t_walk', 0):.1f}, exchange {1e3 * r.get('step_t_exchange', 0):.1f}, LET "
                  f"bodies sent {r.get('step_let_bodies_sent', 0)}), batch {1e3 * r.get('batch_mean', 0):.1f} ms")
def traces(kind, which=None):
    """The exchange's traced stages on several GPUs: the median over the calls and ranks."""
    for p in which or counts[1:]:
        stages = {}
        try:
            for l in open(f"{kind}-{p}.err"):
                if l.startswith("gravity trace:"):
                    l = re.sub(r" \[rank \d+\]\s*$", "", l)  # several ranks tag their lines
                    name, ms = l[14:].rsplit(None, 2)[0].strip(), float(l.split()[-2])
                    stages.setdefault(name, []).append(ms)
        except OSError:
            continue
        med = {k: sorted(v)[len(v) // 2] for k, v in stages.items()}
        print(f"  {kind} GPUs {p} traced (median ms): " + ", ".join(f"{k} {v:.1f}" for k, v in med.items()))
for m in ("plummer", "hernquist"):
    row(f"weak-{m}", f"weak {m}", True)
    traces(f"weak-{m}")
row("strong", "strong plummer", False)
traces("strong")
row("galaxy", "M31 block steps (strong)", False)
row("galaxy0", "M31 block steps, self-tuned rebuild", False)
for p in counts[1:]:
    r, w = load(f"ab-k2-{p}"), load(f"weak-plummer-{p}")
    if r and w:
        print(f"remote walk, 2 targets per lane, weak plummer GPUs {p}: forces {1e3 * r['t_total']:.1f} ms (default "
              f"{1e3 * w['t_total']:.1f} ms)")
    r = load(f"cma-{p}")
    if r and w:
        print(f"MPI shared memory by CMA, weak plummer GPUs {p}: forces {1e3 * r['t_total']:.1f} ms, exchange "
              f"{1e3 * r['t_exchange']:.1f} ms (two copies: {1e3 * w['t_total']:.1f}, {1e3 * w['t_exchange']:.1f} ms)")
traces("galaxy")
top = counts[-1]
for kind, what in (("hostlink", "trees through host memory and MPI (BANYAN_NCCL=0)"),
                   ("depth", "received trees walked depth first (BANYAN_REMOTE_WALK=depth)"),
                   ("boxes", "4096 target boxes per rank (BANYAN_LET_BOXES=4096)"),
                   ("nocosts", "the local walk without the costs' writes (BANYAN_RANK_COSTS=0)")):
    r, w = load(f"{kind}-{top}"), load(f"weak-plummer-{top}")
    if r and w:
        print(f"weak plummer GPUs {top}, {what}: forces {1e3 * r['t_total']:.1f} ms, walk {1e3 * r['t_walk']:.1f}, "
              f"exchange {1e3 * r['t_exchange']:.1f} ms, LET bodies {r.get('let_bodies_sent', 0)} (default: "
              f"{1e3 * w['t_total']:.1f}, {1e3 * w['t_walk']:.1f}, {1e3 * w['t_exchange']:.1f}, "
              f"{w.get('let_bodies_sent', 0)})")
        traces(kind, [top])
for p in counts:
    f = f"mesh-{p}.err"
    if os.path.exists(f):
        line = [l.strip() for l in open(f) if l.startswith("banyan potential") or "ranks:" in l]
        print(f"mesh GPUs {p}: {' | '.join(line)}")
    if p > 1 and os.path.exists(f"mesh-{p}-vs-1.json"):
        v = json.load(open(f"mesh-{p}-vs-1.json")).get("variables", {})
        print(f"mesh GPUs {p} against 1 GPU: " + ", ".join(f"{k} p99 {x['p99']:.2e} max {x['max']:.2e}" for k, x in v.items()))
for m in ("plummer", "hernquist"):
    for p in counts:
        try:
            a = json.load(open(f"forces-{m}-{p}-direct.json"))["acc_rel_error"]
        except Exception:
            continue
        one = json.load(open(f"forces-{m}-1-direct.json"))["acc_rel_error"]
        ok = a["p99"] <= 1.3 * one["p99"] and a["p99.9"] <= 1.6 * one["p99.9"]
        vs = ""
        if p > 1 and os.path.exists(f"forces-{m}-{p}-vs-1.json"):
            b = json.load(open(f"forces-{m}-{p}-vs-1.json"))["acc_rel_error"]
            vs = f"; against 1 GPU p99 {b['p99']:.2e} max {b['max']:.2e}"
        print(f"forces {m} GPUs {p}: against direct p99 {a['p99']:.3e} p99.9 {a['p99.9']:.3e} "
              f"{'ok' if ok else 'BEYOND THE BOUND (1.3x p99, 1.6x p99.9 of 1 GPU)'}{vs}")
PY
# the table and the logs so far, after every part (a run stopped at its
# time limit still leaves them): REPORT names a folder to copy them to
report() {
    python3 table.py "$COUNTS" >table.txt 2>&1 || fail=1
    tar czf logs.tar.gz ./*.out ./*.err ./*.log ./*.json commands.txt gpus.txt 2>/dev/null
    [ -n "${REPORT:-}" ] && cp table.txt logs.tar.gz "$REPORT"/
}
# mp NP LOG CMD...: the command on NP ranks, each with its share of the cores
mp() {
    local np=$1 log=$2
    shift 2
    echo "+ np $np: $*" >>commands.txt
    OMP_NUM_THREADS=$((CORES / np)) timeout 600 mpirun --bind-to none -np "$np" "$@" 2>"$log.err" >"$log.out" ||
        { echo "FAIL: $log: $(tail -3 "$log.err")"; fail=1; }
}
for part in $PARTS; do
    case $part in
    weak)
        for m in ${WEAK_MODELS:-plummer hernquist}; do
            for p in $COUNTS; do
                mp "$p" "weak-$m-$p" "$BIN" bench --backend gpu --device auto --json --model $m --n $((WEAK * p)) \
                    $TUNED --repeat 3 --steps 4
            done
        done ;;
    strong)
        for p in $COUNTS; do
            mp "$p" "strong-$p" "$BIN" bench --backend gpu --device auto --json --model plummer --n "$STRONG" $TUNED \
                --repeat 3 --steps 2
        done ;;
    galaxy)
        OMP_NUM_THREADS=$CORES "$BIN" ic galaxy --model m31 --n "$GALAXY" -o m31.hdf5 >ic-galaxy.log 2>&1 ||
            { echo "FAIL: ic galaxy: $(tail -2 ic-galaxy.log)"; fail=1; }
        for p in $COUNTS; do # rebuilt every step, and the self-tuned default (counted work)
            mp "$p" "galaxy-$p" "$BIN" bench --backend gpu --device auto --json --input m31.hdf5 --eps 0.015625 \
                $GOTHIC --repeat 2 --steps 32 --time-bins 8 --dt 0.015625 --eta 0.2 --tree-rebuild 1
            mp "$p" "galaxy0-$p" "$BIN" bench --backend gpu --device auto --json --input m31.hdf5 --eps 0.015625 \
                $GOTHIC --repeat 2 --steps 32 --time-bins 8 --dt 0.015625 --eta 0.2 --tree-rebuild 0 --rebuild-cost work
        done ;;
    mesh)
        OMP_NUM_THREADS=$CORES "$BIN" mesh-ic maclaurin --levels 7 --min-level 3 --block 16 --radius 0.35 \
            -o mesh.h5 >mesh-ic.log 2>&1 || { echo "FAIL: mesh-ic: $(tail -2 mesh-ic.log)"; fail=1; }
        for p in $COUNTS; do
            mp "$p" "mesh-$p" "$BIN" potential mesh.h5 -o "mesh-$p.h5" --backend gpu --device auto --theta 0.35
        done
        [ -f mesh-1.h5 ] && for p in $COUNTS; do
            [ "$p" = 1 ] || "$BIN" compare "mesh-$p.h5" mesh-1.h5 --json >"mesh-$p-vs-1.json" 2>>compare.err
        done
        rm -f mesh*.h5 ;;
    forces)
        for m in plummer hernquist; do
            "$BIN" ic $m --n "$CHECK_N" -o "$m.hdf5" 2>/dev/null
            "$BIN" forces "$m.hdf5" -o "$m-direct.hdf5" --backend gpu --method direct >/dev/null 2>&1 ||
                { echo "FAIL: direct $m"; fail=1; }
            for p in $COUNTS; do
                mp "$p" "forces-$m-$p" "$BIN" forces "$m.hdf5" -o "$m-$p.hdf5" --backend gpu --device auto $TUNED
                "$BIN" compare "$m-$p.hdf5" "$m-direct.hdf5" --json >"forces-$m-$p-direct.json" 2>>compare.err
                [ "$p" = 1 ] || "$BIN" compare "$m-$p.hdf5" "$m-1.hdf5" --json >"forces-$m-$p-vs-1.json" 2>>compare.err
            done
        done
        rm -f ./*.hdf5 ;;
    cma) # Open MPI's shared memory with one copy (CMA) instead of two
        for p in $COUNTS; do
            [ "$p" = 1 ] && continue
            OMPI_MCA_btl_vader_single_copy_mechanism=cma mp "$p" "cma-$p" "$BIN" bench --backend gpu --device auto \
                --json --model plummer --n $((WEAK * p)) $TUNED --repeat 3
        done ;;
    hostlink) # the trees through host memory and MPI, on the most GPUs
        top=${COUNTS##* }
        [ "$top" = 1 ] || BANYAN_NCCL=0 mp "$top" "hostlink-$top" "$BIN" bench --backend gpu --device auto --json \
            --model plummer --n $((WEAK * top)) $TUNED --repeat 3 --steps 4 ;;
    nocosts) # the local walk without the particles' costs (BANYAN_RANK_COSTS=0), on the most GPUs
        top=${COUNTS##* }
        [ "$top" = 1 ] || BANYAN_RANK_COSTS=0 mp "$top" "nocosts-$top" "$BIN" bench --backend gpu --device auto --json \
            --model plummer --n $((WEAK * top)) $TUNED --repeat 3 ;;
    boxes) # 4096 target boxes per rank instead of 256, on the most GPUs
        top=${COUNTS##* }
        [ "$top" = 1 ] || BANYAN_LET_BOXES=4096 mp "$top" "boxes-$top" "$BIN" bench --backend gpu --device auto --json \
            --model plummer --n $((WEAK * top)) $TUNED --repeat 3 ;;
    depth) # the received trees walked depth first, on the most GPUs
        top=${COUNTS##* }
        [ "$top" = 1 ] || BANYAN_REMOTE_WALK=depth mp "$top" "depth-$top" "$BIN" bench --backend gpu --device auto \
            --json --model plummer --n $((WEAK * top)) $TUNED --repeat 3 ;;
    ab) # the remote walk's targets per lane: 2 (before issue 18) against the default
        for p in $COUNTS; do
            [ "$p" = 1 ] && continue
            BANYAN_REMOTE_TARGETS=2 mp "$p" "ab-k2-$p" "$BIN" bench --backend gpu --device auto --json --model plummer \
                --n $((WEAK * p)) $TUNED --repeat 3
        done ;;
    esac
    report
done
cat table.txt
exit $fail
