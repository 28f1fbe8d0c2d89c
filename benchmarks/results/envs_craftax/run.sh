#!/bin/bash
# Craftax-Classic learning evidence on this CPU: DR and ACCEL, 3 seeds, 150 rollouts of 32 envs x 256 steps.
cd "$(dirname "$0")/../../.."   # the repository root
while pgrep -f "runs/envs2/run.sh" > /dev/null; do sleep 20; done
PPO="--lr 3e-4 --gamma 0.99 --gae-lambda 0.8 --entropy-coef 0.01 --n-minibatches 4 --n-epochs 4 --recurrent-cell none --mlp-hidden 256"
for preset in dr accel; do
  nice -n 10 .venv/bin/python train.py --preset $preset --env craftax $PPO --num-updates 150 --num-seeds 3 \
    --buffer-size 1000 --log-every 25 --eval-every 75 --eval-episodes 4 --checkpoint-every 75 --out-dir runs/envs2 \
    --run-name craftax-$preset --overwrite --no-progress
  nice -n 10 .venv/bin/python evaluate.py runs/envs2/craftax-$preset --suite worlds --episodes 8 \
    --out runs/envs2/eval-craftax-$preset
done
