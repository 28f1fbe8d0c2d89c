#!/usr/bin/env bash
# Issue 70, point 1: TRACED's row of issue 57's equal-PPO-update table (../curricula57_updates_cpu/commands.sh)
# again after TRACED took the authors' inputs and scores (the maze view over 10 once, the view alone, per-episode
# sums, eviction on the credited score), beside the like-for-like baseline the authors compare with: ACCEL scored
# by PVL (TRACED's score without its transition term and co-learnability). DR is retrained so that this
# evaluate.py call can be combined with the earlier ones (its scores must agree with theirs to the digit).
set -euo pipefail
cd "$(dirname "$0")/../../.."
out=${1:-/tmp/traced70/runs}
common="--num-envs 32 --budget updates --num-updates 100 --num-seeds 3 --log-every 10 --eval-every 50 --checkpoint-every 50 --out-dir $out --no-progress"
start=$SECONDS
run() {  # NAME ARGS...: train, or resume a run cut short (the same command with --resume)
    local name=$1; shift
    if [ -f "$out/$name/config.json" ]; then python train.py --resume --run-name "$name" --out-dir "$out" --no-progress
    else python train.py "$@" --run-name "$name" $common; fi
    echo "$name done $((SECONDS-start)) s"
}
run traced --preset traced --buffer-size 256
run accel_pvl --preset accel --score-function pvl --buffer-size 256
run dr --preset dr
python evaluate.py $out/dr $out/traced $out/accel_pvl --cvar 200 --alpha 0.01 0.1 1.0 --cvar-set n_walls=60 \
    --out $out/eval
echo "eval done $((SECONDS-start)) s"
