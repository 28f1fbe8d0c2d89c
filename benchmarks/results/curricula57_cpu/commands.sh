#!/usr/bin/env bash
# Issue 57's new curricula beside DR and robust PLR at one CPU budget: the runs of benchmarks/results/pace_cpu
# (dr, plr_maxmc, pace) and cenie_cpu (cenie), plus TRACED, ReMiDi, SFL and NCC, then one evaluate.py call over
# the eight (the first call, over the five, is kept below). Same protocol for every run.
set -euo pipefail
cd /work/main
. .venv/bin/activate
out=/tmp/cmp57/runs
common="--num-envs 32 --budget env_steps --num-updates 100 --num-seeds 3 --log-every 10 --eval-every 50 --checkpoint-every 50 --out-dir $out --no-progress"
python train.py --preset traced --buffer-size 256 --run-name traced $common
python evaluate.py $out/dr $out/plr_maxmc $out/pace $out/cenie $out/traced --cvar 200 --alpha 0.01 0.1 1.0 \
    --cvar-set n_walls=60 --out $out/eval5
# Added in the next session (after train_mask stepped only the stages with considered levels): ReMiDi with
# 64-level buffers and 50-cycle stages (this budget is ~100 cycles), SFL and NCC with issue 46's CPU settings
# (benchmarks/curricula_2025.sh), the three run at the same time; then one evaluate.py call over all eight.
python train.py --preset remidi --buffer-size 64 --remidi-stage-cycles 50 --run-name remidi --overwrite $common &
python train.py --preset dr --method sfl --sfl-batches 1 --sfl-batch-levels 1000 --sfl-rollout-steps 1000 \
    --sfl-set-size 50 --sfl-refresh-every 25 --run-name sfl $common &
python train.py --preset dr --method ncc --ncc-buffer-size 128 --run-name ncc $common &
wait
python evaluate.py $out/dr $out/plr_maxmc $out/pace $out/cenie $out/traced $out/remidi $out/sfl $out/ncc \
    --cvar 200 --alpha 0.01 0.1 1.0 --cvar-set n_walls=60 --out $out/eval8
