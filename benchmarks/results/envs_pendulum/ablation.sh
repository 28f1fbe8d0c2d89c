#!/bin/bash
# Pendulum DR: which PPO settings learn the swing-up (2 seeds each, 150 rollouts of 32 x 256).
cd "$(dirname "$0")/../../.."   # the repository root
BASE="--preset dr --env pendulum --entropy-coef 0.0 --n-minibatches 4 --recurrent-cell none --mlp-hidden 64 --gae-lambda 0.95 --clip-eps 0.2 --num-updates 150 --num-seeds 2 --log-every 10 --eval-every 0 --checkpoint-every 1000 --out-dir runs/pend-ablation --overwrite --no-progress"
run() { name=$1; shift; nice -n 5 .venv/bin/python train.py $BASE --run-name $name "$@" > runs/pend-ablation/$name.log 2>&1; }
run a_rs01_g095 --reward-scale 0.1 --gamma 0.95 --lr 1e-3 --n-epochs 10 --no-clip-value
run b_rs1_g095 --reward-scale 1.0 --gamma 0.95 --lr 1e-3 --n-epochs 10 --no-clip-value
run c_rs01_g099 --reward-scale 0.1 --gamma 0.99 --lr 3e-4 --n-epochs 4 --no-clip-value
run d_rs01_g095_clipv --reward-scale 0.1 --gamma 0.95 --lr 1e-3 --n-epochs 10 --clip-value
run e_rs01_g099_lr1e3 --reward-scale 0.1 --gamma 0.99 --lr 1e-3 --n-epochs 10 --no-clip-value
run f_rs01_g095_lr3e4 --reward-scale 0.1 --gamma 0.95 --lr 3e-4 --n-epochs 4 --no-clip-value
