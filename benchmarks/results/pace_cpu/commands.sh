#!/usr/bin/env bash
set -euo pipefail
cd /work/main
. .venv/bin/activate
out=/tmp/cmp57/runs
common="--num-envs 32 --budget env_steps --num-updates 100 --num-seeds 3 --log-every 10 --eval-every 50 --checkpoint-every 50 --out-dir $out --no-progress"
start=$SECONDS
python train.py --resume --run-name dr --out-dir $out --num-updates 100 --no-progress; echo "dr done $((SECONDS-start)) s"
python train.py --preset plr --buffer-size 256 --run-name plr_maxmc $common; echo "plr done $((SECONDS-start)) s"
python train.py --preset pace --buffer-size 256 --run-name pace $common; echo "pace done $((SECONDS-start)) s"
python evaluate.py $out/dr $out/plr_maxmc $out/pace --cvar 200 --alpha 0.01 0.1 1.0 --cvar-set n_walls=60 --out $out/eval
echo "eval done $((SECONDS-start)) s"
