#!/usr/bin/env bash
# Issue 57's new curricula beside DR and robust PLR at one CPU budget: the runs of benchmarks/results/pace_cpu
# (dr, plr_maxmc, pace) and cenie_cpu (cenie), plus TRACED, then one evaluate.py call over the five.
# Same protocol for every run. (ReMiDi's run, below, did not finish within the session: not in the table.)
set -euo pipefail
cd /work/main
. .venv/bin/activate
out=/tmp/cmp57/runs
common="--num-envs 32 --budget env_steps --num-updates 100 --num-seeds 3 --log-every 10 --eval-every 50 --checkpoint-every 50 --out-dir $out --no-progress"
python train.py --preset traced --buffer-size 256 --run-name traced $common
python evaluate.py $out/dr $out/plr_maxmc $out/pace $out/cenie $out/traced --cvar 200 --alpha 0.01 0.1 1.0 \
    --cvar-set n_walls=60 --out $out/eval5
# Not finished: ReMiDi with 64-level buffers and 50-cycle stages (this budget is ~100 cycles).
# python train.py --preset remidi --buffer-size 64 --remidi-stage-cycles 50 --run-name remidi $common
