#!/usr/bin/env bash
# CENIE beside the runs of benchmarks/results/pace_cpu (same out dir, same protocol), then one evaluate.py call
# over all four.
set -euo pipefail
cd /work/main
. .venv/bin/activate
out=/tmp/cmp57/runs
common="--num-envs 32 --budget env_steps --num-updates 100 --num-seeds 3 --log-every 10 --eval-every 50 --checkpoint-every 50 --out-dir $out --no-progress"
start=$SECONDS
python train.py --preset cenie --buffer-size 256 --run-name cenie $common; echo "cenie done $((SECONDS-start)) s"
python evaluate.py $out/dr $out/plr_maxmc $out/pace $out/cenie --cvar 200 --alpha 0.01 0.1 1.0 --cvar-set n_walls=60 \
    --out $out/eval4
echo "eval done $((SECONDS-start)) s"
