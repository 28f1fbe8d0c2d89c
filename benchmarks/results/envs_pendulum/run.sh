#!/bin/bash
# Pendulum learning evidence: DR, robust PLR, ACCEL; 3 seeds each, the same PPO settings, 300 rollout cycles of
# 32 envs x 256 steps each, then the held-out grid (torque x length, hanging down). The settings are those of
# the ablation in RESULTS.md (gamma 0.95, lr 1e-3, 10 epochs, --reward-scale 0.1).
cd "$(dirname "$0")/../../.."   # the repository root
PPO="--reward-scale 0.1 --gamma 0.95 --gae-lambda 0.95 --lr 1e-3 --n-epochs 10 --n-minibatches 4 --clip-eps 0.2 \
  --no-clip-value --entropy-coef 0.0 --recurrent-cell none --mlp-hidden 64"
for preset in dr plr accel; do
  nice -n 5 .venv/bin/python train.py --preset $preset --env pendulum $PPO --num-updates 300 --num-seeds 3 \
    --log-every 10 --eval-every 100 --eval-episodes 10 --checkpoint-every 300 --out-dir runs/pend \
    --run-name pendulum-$preset --overwrite --no-progress
  nice -n 5 .venv/bin/python evaluate.py runs/pend/pendulum-$preset --suite grid --episodes 50 \
    --out runs/pend/eval-pendulum-$preset
done
# gymnax's own Pendulum-v1 (default physics, random start as its reset):
for preset in dr plr accel; do
  nice -n 5 .venv/bin/python evaluate.py runs/pend/pendulum-$preset --suite gymnax --episodes 100 \
    --out runs/pend/evalgymnax-pendulum-$preset
done
