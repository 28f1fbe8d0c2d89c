#!/bin/bash
# CartPole learning evidence: DR, robust PLR, ACCEL; 3 seeds each, same PPO settings, 1000 rollouts each.
cd "$(dirname "$0")/../../.."   # the repository root
PPO="--lr 3e-4 --gamma 0.99 --gae-lambda 0.95 --entropy-coef 0.0 --n-minibatches 4 --n-epochs 4 --recurrent-cell none --mlp-hidden 64"
for preset in dr plr accel; do
  nice -n 10 .venv/bin/python train.py --preset $preset --env cartpole $PPO --num-updates 1000 --num-seeds 3 \
    --log-every 25 --eval-every 100 --eval-episodes 20 --checkpoint-every 500 --out-dir runs/envs2 \
    --run-name cartpole-$preset --overwrite --no-progress
  nice -n 10 .venv/bin/python evaluate.py runs/envs2/cartpole-$preset --suite grid --episodes 50 \
    --out runs/envs2/eval-cartpole-$preset
done
