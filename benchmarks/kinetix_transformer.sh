#!/usr/bin/env bash
# Kinetix with the authors' entity-transformer student beside the flat-symbolic MLP (issue 72), at a CPU budget:
# DR on random size-l levels (the size class the authors' released general agents trained on), 3 seeds each in
# one vmapped program, the authors' PPO with 64 envs x 64 steps (theirs 2,048), 8 minibatches (theirs 32) and
# lr 3e-4 (their warmup's peak), UPDATES updates (default 20: 81,920 env steps per seed, 0.008% of their 2^30);
# then every seed scored on all 74 hand-designed levels (`--suite all`: s and m levels padded into the l slots,
# reported per size class and overall, as the authors' S / M / L / all), EPISODES attempts each (theirs 20).
# Usage: bash benchmarks/kinetix_transformer.sh OUT_DIR [UPDATES] [EPISODES]
set -euo pipefail
out=${1:-benchmarks/results/kinetix/transformer}
updates=${2:-20}
episodes=${3:-5}
common=(--kinetix-size l --num-envs 64 --num-steps 64 --n-minibatches 8 --lr 3e-4 --num-seeds 3
        --num-updates "$updates" --log-every 10 --eval-every 0 --checkpoint-every 0 --out-dir "$out" --no-progress)
for student in transformer mlp; do
    preset=kinetix_dr$([ "$student" = transformer ] && echo _transformer || true)
    [ -e "$out/dr_$student/metrics.jsonl" ] || python train.py --preset "$preset" --run-name "dr_$student" "${common[@]}"
done
python evaluate.py "$out/dr_transformer" "$out/dr_mlp" --suite all --episodes "$episodes" --out "$out/eval"
