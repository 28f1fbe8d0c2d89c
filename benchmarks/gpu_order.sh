#!/usr/bin/env bash
# The standing GPU order as one device call that fits a 15-minute lease (issues 37, 55, 57): each part runs
# only while time is left, under `timeout`, and logs to $OUT as it goes, so a part cut short still returns
# what it printed. Prepared here, run there:
#   bash benchmarks/device_wheels.sh 3.12 core  # wheels/: the packages the device image lacks (its Python is 3.12)
#   echo /.gpu/ >> .git/info/exclude; mkdir -p .gpu/before && git archive <rev> | tar -x -C .gpu/before
#                                               # optional: the "before" of a change
#   run(carry=["wheels", ".gpu"], timeout_s=600, command="bash benchmarks/gpu_order.sh 520")
# Parts, in order of importance:
#   suite      gpu_suite.py: DR at 1 seed and the six Table 2 methods at 10 seeds vmapped (the projected hours)
#   profile    gpu_profile.py: robust PLR at 10 seeds, where one update's device time goes
#   before     the same robust PLR and ACCEL rows from .gpu/before (skipped without it)
#   bf16       DR and PAIRED at 10 seeds with --matmul-dtype bfloat16 (beside the suite's float32 rows)
#   flags      DR at 1 and 10 seeds, robust PLR at 10, with XLA:GPU's while and conditional command buffers (issue
#              55 part 2: each test of a loop of unknown count is read back by the host, a round trip that drains the
#              queue; DR's pool refill tests once per env step, 256 per update: hlo_census.py)
#   unroll     DR and robust PLR at 10 seeds with --scan-unroll 32 (8 by default on a GPU: 4x fewer iterations)
#   curricula  the 2026 curricula (PACE, CENIE, TRACED, ReMiDi) at 10 seeds, beside the suite's robust PLR
#   sweep      issue 68: DR and robust PLR at Table 5 sizes, one program of 10 lanes (10 seeds) against 100 (10 points
#              x 10 seeds, the lanes' learning rates differ): seconds per lane-update (lane_cost.py)
set -uo pipefail
deadline=${1:-540}
out=${OUT:-runs/gpu_order}
mkdir -p "$out"
if ls wheels/*.whl >/dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
        wheels/*.whl || exit 1
    export PYTHONPATH=/tmp/site
fi
export PYTHONUNBUFFERED=1
left() { echo $((deadline - SECONDS)); }
part() {  # name min_seconds command...: runs while at least min_seconds are left, cut at the deadline
    local name=$1 need=$2; shift 2
    if [ "$(left)" -lt "$need" ]; then echo "== $name: skipped, $(left) s left" | tee -a "$out/order.log"; return; fi
    echo "== $name at ${SECONDS} s: $*" | tee -a "$out/order.log"
    timeout --signal=INT "$(left)" bash -c '"$@"' _ "$@" 2>&1 | tee "$out/$name.log"
    echo "== $name done at ${SECONDS} s (rc ${PIPESTATUS[0]})" | tee -a "$out/order.log"
}
{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader; python3 -c \
    "import jax, sys; print('jax', jax.__version__, jax.devices(), sys.version.split()[0])"; } 2>&1 \
    | tee -a "$out/order.log"
root=$PWD
extra=${GPU_ORDER_EXTRA:-}  # e.g. --tiny: the same order at toy sizes, to check it here on the CPU
suite() { (cd "$1" && shift && PYTHONPATH="$PWD:${PYTHONPATH:-}" python3 benchmarks/gpu_suite.py $extra "$@"); }
export -f suite
export extra
# A row costs 35-70 s on an H100 (compile, warm buffer, timed calls); on 2026-11-27 a budget of deadline / 2 - 20
# (240 s) reached five rows. The six 10-seed rows come first: they give the projected Table 2 hours.
# GPU_ORDER_PARTS picks and orders the parts (default: all, in the order above), e.g. after a session that measured
# the suite: GPU_ORDER_PARTS="flags unroll sweep curricula bf16" bash benchmarks/gpu_order.sh 530
run_part() {
    case $1 in
    suite) part suite 120 suite "$root" --time-budget "$((deadline * 11 / 20))" \
        --rows dr:10:0,plr:10:0,accel:10:0,paired:10:0,paccel:10:0,pplr:10:0,dr:1:0 ;;
    profile) part profile 100 env PYTHONPATH="$root:${PYTHONPATH:-}" python3 benchmarks/gpu_profile.py --preset plr \
        --seeds 10 --trace-dir /tmp/profile $extra ;;
    before) [ -d .gpu/before/benchmarks ] && part before 90 suite "$root/.gpu/before" --time-budget 45 \
        --rows plr:10:0,accel:10:0 ;;
    bf16) part bf16 90 suite "$root" --time-budget 45 --rows dr:10:0,paired:10:0 --set matmul_dtype=bfloat16 ;;
    flags) part flags 110 env XLA_FLAGS="--xla_gpu_enable_command_buffer=+WHILE,+CONDITIONAL ${XLA_FLAGS:-}" \
        bash -c 'suite "$1" --time-budget 70 --rows dr:1:0,dr:10:0,plr:10:0' _ "$root" ;;
    unroll) part unroll 90 suite "$root" --time-budget 45 --rows dr:10:32,plr:10:32 ;;
    sweep) part sweep 100 env PYTHONPATH="$root:${PYTHONPATH:-}" python3 benchmarks/lane_cost.py --table5 \
        --lanes 10,100 --updates 5 --out "$out/lane_cost.json" ;;
    curricula) part curricula 60 suite "$root" --time-budget "$(( $(left) > 71 ? $(left) - 70 : 1 ))" \
        --rows pace:10:0,cenie:10:0,traced:10:0,remidi:10:0 ;;
    *) echo "== $1: no such part (suite profile before bf16 flags unroll sweep curricula)" | tee -a "$out/order.log" ;;
    esac
}
for name in ${GPU_ORDER_PARTS:-suite profile before bf16 flags unroll sweep curricula}; do run_part "$name"; done
echo "== order done at ${SECONDS} s" | tee -a "$out/order.log"
