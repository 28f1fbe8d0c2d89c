#!/usr/bin/env bash
# Kinetix with the authors' entity-transformer student beside the flat-symbolic MLP (issue 72), at a CPU budget:
# DR and SFL on random size-l levels (the size class the authors' released general agents trained on), 3 seeds
# each in one vmapped program, the authors' PPO with 64 envs x 64 steps (theirs 2,048 x 256), 8 minibatches (theirs
# 32) and lr 3e-4 (their warmup's peak), UPDATES updates (default 20: 81,920 env steps per seed, 0.008% of their
# 2^30); SFL scaled with it: one batch of 64 random levels played 256 steps (an episode) (theirs 3 x 4,096 x 512), the 16 most
# learnable kept (theirs 1,024), refreshed every 10 updates (theirs 128), half the envs on them (theirs);
# then every seed scored on all 74 hand-designed levels (`--suite all`: s and m levels padded into the l slots,
# reported per size class and overall, as the authors' S / M / L / all), EPISODES attempts each (theirs 20).
# METHODS (default "dr sfl") picks the curricula. Usage: bash benchmarks/kinetix_transformer.sh OUT [UPDATES] [EPISODES]
set -euo pipefail
out=${1:-benchmarks/results/kinetix/transformer}
updates=${2:-20}
episodes=${3:-5}
common=(--kinetix-size l --num-envs 64 --num-steps 64 --n-minibatches 8 --lr 3e-4 --num-seeds 3
        --num-updates "$updates" --log-every 10 --eval-every 0 --checkpoint-every 0 --out-dir "$out" --no-progress)
sfl=(--sfl-batches 1 --sfl-batch-levels 64 --sfl-rollout-steps 256 --sfl-set-size 16 --sfl-refresh-every 10)
for method in ${METHODS:-dr sfl}; do
    for student in transformer mlp; do
        preset=kinetix_$method$([ "$student" = transformer ] && echo _transformer || true)
        extra=(); [ "$method" = sfl ] && extra=("${sfl[@]}")
        [ -e "$out/${method}_$student/metrics.jsonl" ] || [ -e "$out/${method}_$student/metrics.csv" ] \
            || python train.py --preset "$preset" --run-name "${method}_$student" "${common[@]}" "${extra[@]}"
    done
    [ -e "$out/eval_$method/results.json" ] || python evaluate.py "$out/${method}_transformer" "$out/${method}_mlp" \
        --suite all --episodes "$episodes" --out "$out/eval_$method"
done
