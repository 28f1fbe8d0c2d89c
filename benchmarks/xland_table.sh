#!/usr/bin/env bash
# XLand-MiniGrid's table at a CPU budget (issue 73): DR, PLR (MaxMC) and SFL on `high-3m` (v2, SFL's and NCC's
# benchmark) in R4-13x13 with 4,096-step meta-RL trials, the presets `xland_dr`, `xland_plr` and `xland_sfl` (SFL's
# own scripts' settings) scaled to this CPU, 3 seeds of each in one vmapped program; then every seed scored on SFL's
# evaluation rulesets in 10-episode trials (`--suite sfl-1k`: the first 1,000 of their 10,000; SUITE=sfl for all).
# Scaled (theirs -> here): 8,192 envs -> 256 (4 minibatches of 64 envs; theirs 16 of 512); a GRU of 1,024 with
# 256-unit heads -> 64 / 64; 10^10 steps (298 trials) -> TRIALS trials (default 8: 1,024 updates, 8.4M steps per
# seed); PLR's 40,000-ruleset buffer -> 512 (full after 2 trials; theirs after 5 of 298), the rest theirs (p 0.95,
# rank T 1, staleness 0.3, a trial's rulesets scored at its end); SFL's 40,000 scored rulesets -> 256, its 8,192 kept
# -> 52 (the same 20%), each scored over 5,070 steps as theirs, refreshed every trial.
# Usage: bash benchmarks/xland_table.sh OUT [TRIALS]
set -euo pipefail
out=${1:-benchmarks/results/xland/table}
trials=${2:-8}
updates=$((trials * 128))
common=(--num-envs 256 --n-minibatches 4 --recurrent-size 64 --head-hidden 64 --num-seeds 3 --num-updates "$updates"
        --log-every 128 --eval-every 0 --checkpoint-every "$updates" --out-dir "$out" --no-progress)
declare -A own=([dr]="" [plr]="--buffer-size 512"
                [sfl]="--sfl-batch-levels 256 --sfl-set-size 52")
for method in ${METHODS:-dr plr sfl}; do
    # shellcheck disable=SC2086  # the method's own options are words
    [ -e "$out/$method/checkpoints" ] && [ -e "$out/$method/metrics.csv" ] \
        || python train.py --preset "xland_$method" --run-name "$method" "${common[@]}" ${own[$method]}
done
[ -e "$out/eval/results.json" ] || python evaluate.py "$out/dr" "$out/plr" "$out/sfl" --suite "${SUITE:-sfl-1k}" \
    --episodes 1 --out "$out/eval"
