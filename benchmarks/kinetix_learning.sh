#!/usr/bin/env bash
# Kinetix learning check at a CPU scale (issue 47): DR, robust PLR and SFL on size-s scenes, 3 seeds each in
# one vmapped program, then every seed scored on the 10 hand-designed size-s levels, 20 episodes each (the
# authors' eval_num_attempts). The authors' presets with a CPU budget: 64 envs (theirs 2,048), 8 minibatches
# (theirs 32), lr 3e-4 (their peak lr; their constant 5e-5 is for 2^30 steps), 1,228,800 env steps per seed
# (theirs 2^30; `--budget env_steps`: DR 300 x 64 x 64, robust PLR and SFL 75 x 64 x 256),
# and no no-op filter on new levels (--kinetix-filter-steps 0; theirs 64 for PLR and SFL: each fresh level
# then costs a second sample and 2 x 64 no-op steps more, RESULTS.md).
# Usage: bash benchmarks/kinetix_learning.sh OUT_DIR
set -euo pipefail
out=${1:-benchmarks/results/kinetix/learning}
common=(--num-envs 64 --n-minibatches 8 --lr 3e-4 --num-seeds 3 --budget env_steps --eval-every 0 --checkpoint-every 0
        --out-dir "$out" --no-progress)
[ -e "$out/dr/metrics.jsonl" ] || python train.py --preset kinetix_dr --num-steps 64 --num-updates 300 --log-every 25 --run-name dr "${common[@]}"
python train.py --preset kinetix_plr --method robust_plr --num-updates 75 --log-every 15 --buffer-size 500 \
  --kinetix-filter-steps 0 --run-name robust_plr "${common[@]}"
python train.py --preset kinetix_sfl --num-updates 75 --log-every 15 --sfl-batches 1 --sfl-batch-levels 256 \
  --sfl-rollout-steps 256 --sfl-set-size 64 --sfl-refresh-every 15 --kinetix-filter-steps 0 --run-name sfl "${common[@]}"
python evaluate.py "$out/dr" "$out/robust_plr" "$out/sfl" --episodes 20 --out "$out/eval"
