#!/usr/bin/env bash
# Issue 57's side-by-side table at the issue's budget, equal PPO updates (`--budget updates`): the eight runs of
# ../curricula57_cpu/commands.sh (and of ../pace_cpu, ../cenie_cpu for DR, robust PLR, PACE and CENIE) with
# only the budget changed, and ACCEL-CENIE and ACCEL, one after the other, then one evaluate.py call over the
# ten (RESULTS says which calls scored the rows there, combined: the runs took two sessions). Methods that train on
# every cycle (DR, SFL, NCC) play the same cycles under either budget; the PLR family plays its new-level cycles
# on top of its 100 updates (about twice the env steps of the env-step table).
set -euo pipefail
cd "$(dirname "$0")/../../.."
out=${1:-/tmp/cmp57u/runs}
common="--num-envs 32 --budget updates --num-updates 100 --num-seeds 3 --log-every 10 --eval-every 50 --checkpoint-every 50 --out-dir $out --no-progress"
start=$SECONDS
run() {  # NAME ARGS...: train, or resume a run cut short (the same command with --resume)
    local name=$1; shift
    if [ -f "$out/$name/config.json" ]; then python train.py --resume --run-name "$name" --out-dir "$out" --no-progress
    else python train.py "$@" --run-name "$name" $common; fi
    echo "$name done $((SECONDS-start)) s"
}
# The PLR family first (its runs differ from the env-step table's), then the methods that train on every cycle.
run plr_maxmc --preset plr --buffer-size 256
run pace --preset pace --buffer-size 256
run cenie --preset cenie --buffer-size 256
run traced --preset traced --buffer-size 256
run remidi --preset remidi --buffer-size 64 --remidi-stage-cycles 50
run accel_cenie --preset accel_cenie --buffer-size 256
run accel --preset accel --buffer-size 256  # ACCEL-CENIE's base (MaxMC, no novelty), and TRACED's but for its score
run dr --preset dr
run sfl --preset dr --method sfl --sfl-batches 1 --sfl-batch-levels 1000 --sfl-rollout-steps 1000 --sfl-set-size 50 \
    --sfl-refresh-every 25
run ncc --preset dr --method ncc --ncc-buffer-size 128
python evaluate.py $out/dr $out/plr_maxmc $out/pace $out/cenie $out/traced $out/remidi $out/accel_cenie $out/accel \
    $out/sfl $out/ncc --cvar 200 --alpha 0.01 0.1 1.0 --cvar-set n_walls=60 --out $out/eval10
echo "eval done $((SECONDS-start)) s"

# What RESULTS' table is: the runs took two sessions (/tmp does not survive one), so it combines four calls, each
# with DR (whose scores must agree, and did to the digit): five_runs/ (DR, robust PLR, PACE, CENIE, TRACED; the
# session of 2026-11-27), then on 2026-11-28 dr_remidi_accel_cenie/, dr_accel/ and dr_sfl_ncc/ (the same evaluate.py
# flags over those runs), and
#   python -m minimax.cli.combine_evaluations benchmarks/results/curricula57_updates_cpu/{five_runs,dr_remidi_accel_cenie,dr_accel,dr_sfl_ncc} \
#       --out benchmarks/results/curricula57_updates_cpu
# which writes the aggregates and every probability of improvement one call over the ten gives.
