#!/usr/bin/env bash
# Issue 70, point 2: PACE's readings A/B at issue 57's equal-PPO-update protocol (../curricula57_updates_cpu/
# commands.sh). The earlier PACE row (five_runs/, 2026-11-27) measured the whole PPO loss over every parameter
# (now `--pace-loss ppo --pace-params all`); this run is the paper's reading, PACE's default since 2026-11-28
# (the policy objective over the policy's parameters). Both are robust PLR with Table 5's values, the learning
# rate of robust PLR with MaxMC (5e-5) included. Scored beside DR (../traced70_cpu's run) to combine.
set -euo pipefail
cd "$(dirname "$0")/../../.."
out=${1:-/tmp/traced70/runs}
common="--num-envs 32 --budget updates --num-updates 100 --num-seeds 3 --log-every 10 --eval-every 50 --checkpoint-every 50 --out-dir $out --no-progress"
start=$SECONDS
name=pace_policy
if [ -f "$out/$name/config.json" ]; then python train.py --resume --run-name "$name" --out-dir "$out" --no-progress
else python train.py --preset pace --buffer-size 256 --run-name "$name" $common; fi
echo "$name done $((SECONDS-start)) s"
python evaluate.py $out/dr $out/$name --cvar 200 --alpha 0.01 0.1 1.0 --cvar-set n_walls=60 --out $out/eval_pace
echo "eval done $((SECONDS-start)) s"

# 2026-11-29: two more readings (issue 70 point 2): `optimizer` (the step the run's Adam would take next from its
# state) and `level` (each level's advantages normalised by its own moments: PPO on that level alone), scored in
# one call with DR and the paper's reading (eval_readings/).
name=pace_optimizer
if [ -f "$out/$name/config.json" ]; then python train.py --resume --run-name "$name" --out-dir "$out" --no-progress
else python train.py --preset pace --pace-step optimizer --buffer-size 256 --run-name "$name" $common; fi
echo "$name done $((SECONDS-start)) s"
name=pace_level
if [ -f "$out/$name/config.json" ]; then python train.py --resume --run-name "$name" --out-dir "$out" --no-progress
else python train.py --preset pace --pace-advantages level --buffer-size 256 --run-name "$name" $common; fi
python evaluate.py $out/dr $out/pace_policy $out/pace_optimizer $out/pace_level --cvar 200 --alpha 0.01 0.1 1.0 \
    --cvar-set n_walls=60 --out $out/eval_readings
echo "eval done $((SECONDS-start)) s"
