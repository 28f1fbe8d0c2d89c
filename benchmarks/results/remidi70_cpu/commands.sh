#!/usr/bin/env bash
# Issue 70, point 5: the like-for-like baseline of ReMiDi's row in issue 57's equal-PPO-update table
# (../curricula57_updates_cpu/commands.sh): robust PLR scored as that ReMiDi run was (the undiscounted
# `oracle_regret`, its preset's score until 2026-11-28) with ReMiDi's 64-level buffer, so that the difference
# is ReMiDi's stages and masks alone. Scored beside DR (../traced70_cpu's run, the same command as every other
# call's DR) so that the call combines with the earlier ones.
set -euo pipefail
cd "$(dirname "$0")/../../.."
out=${1:-/tmp/traced70/runs}
common="--num-envs 32 --budget updates --num-updates 100 --num-seeds 3 --log-every 10 --eval-every 50 --checkpoint-every 50 --out-dir $out --no-progress"
start=$SECONDS
name=plr64_oracle
if [ -f "$out/$name/config.json" ]; then python train.py --resume --run-name "$name" --out-dir "$out" --no-progress
else python train.py --preset plr --score-function oracle_regret --buffer-size 64 --run-name "$name" $common; fi
echo "$name done $((SECONDS-start)) s"
python evaluate.py $out/dr $out/$name --cvar 200 --alpha 0.01 0.1 1.0 --cvar-set n_walls=60 --out $out/eval_remidi
echo "eval done $((SECONDS-start)) s"
