#!/usr/bin/env bash
# The curricula of issue 46 side by side on AMaze at one equal env-step budget: DR, robust PLR
# with PVL, MNA and oracle-regret scores, SFL, NCC (the authors' descent and the paper's ascent),
# each N seeds vmapped in one program, then the held-out evaluation (dcd12 with IQM/mean/median/
# optimality gap and stratified-bootstrap intervals, CVaR on sampled 60-wall mazes) and the report.
#
#   bash benchmarks/curricula_2025.sh cpu [OUT]   # what RESULTS records: 150 x 8,192 env steps per seed
#   bash benchmarks/curricula_2025.sh gpu [OUT]   # the minimax report's budget: 30,000 x 8,192 (245.8M)
#
# Every method trains the Table 5 student with Table 5's PPO (`--preset dr` or `plr`), so only the
# curriculum differs. CPU scale: PLR's buffer 256 (Table 5: 4,000, which would not replay before
# half of this budget), SFL's sampling scaled as in RESULTS (issue 25), NCC's buffer 128 (its
# scoring passes dominate a CPU). GPU scale: the published sizes (PLR 4,000; SFL's 5 x 5,000
# levels every 100 updates; NCC 4,000). Runs resume where they stopped (rerun the same command).
set -euo pipefail
scale=${1:-cpu}
out=${2:-runs/curricula_2025_$scale}
seeds=${SEEDS:-3}
case "$scale" in
  cpu) units=150; every=50; plr="--buffer-size 256"; ncc="--ncc-buffer-size 128"; cvar=200
       sfl="--sfl-batches 1 --sfl-batch-levels 1000 --sfl-rollout-steps 1000 --sfl-set-size 50 --sfl-refresh-every 25" ;;
  gpu) units=30000; every=1000; plr=""; ncc="--ncc-buffer-size 4000"; cvar=10000; sfl="" ;;
  *) echo "usage: $0 cpu|gpu [OUT]" >&2; exit 2 ;;
esac
common="--num-envs 32 --budget env_steps --num-updates $units --num-seeds $seeds --log-every 10
        --eval-every $every --checkpoint-every $every --out-dir $out --no-progress"
train() {  # NAME ARGS...: train, or extend the run where it stopped
  local name=$1; shift
  if [ -f "$out/$name/config.json" ]; then
    python train.py --resume --run-name "$name" --out-dir "$out" --num-updates "$units" --no-progress
  else
    python train.py "$@" --run-name "$name" $common
  fi
}
train dr --preset dr
for score in pvl mna oracle_regret; do train "plr_$score" --preset plr $plr --score-function $score; done
train sfl --preset dr --method sfl $sfl
train ncc --preset dr --method ncc $ncc
train ncc_ascent --preset dr --method ncc $ncc --ncc-adversary ascent
runs=(dr plr_pvl plr_mna plr_oracle_regret sfl ncc ncc_ascent)
python evaluate.py "${runs[@]/#/$out/}" --cvar $cvar --alpha 0.01 0.1 1.0 --cvar-set n_walls=60 --out "$out/eval"
python benchmarks/method_comparison.py --window $((units / 5)) --eval "$out/eval/results.json" \
  $(for r in "${runs[@]}"; do echo "--run $r=$out/$r"; done) --out "$out/report.md"
