"""CartPole and Pendulum as registered UED environments (`--env cartpole`, `--env pendulum`).

The student is `models/mlp.py: MLPActorCritic` (vector observations): `--mlp-hidden` units per
layer, with the recurrent core of `--recurrent-cell` (`none`: a feedforward policy, the usual
choice for these fully observed tasks). Pendulum's actions are continuous: a `DiagGaussian`
policy over the torque. There is no teacher design MDP for physics, so PAIRED and its
relatives are refused; the held-out suites are `grid` (physics inside and outside the
training ranges) and `gymnax` (gymnax's own physics and reset).
"""

from __future__ import annotations

import dataclasses

from minimax.envs.classic import cartpole, pendulum
from minimax.envs.registry import UEDEnv


def _params(params_cls):
    def make(options):
        return params_cls(max_steps=options.max_episode_steps or params_cls().max_steps)
    return make


def _model(n_actions: int, action_dim: int):
    def make(cfg):
        from minimax.models.mlp import MLPActorCritic  # noqa: PLC0415 (models sit beside envs, not below)

        return MLPActorCritic.from_options(cfg.model, n_actions, action_dim)
    return make


CARTPOLE = UEDEnv(
    name="cartpole",
    description="CartPole-v1 (gymnax dynamics) with the physics and start state as the level",
    make_env=lambda options: cartpole.CartPole(),
    make_params=_params(cartpole.CartPoleParams),
    make_generator=lambda options: cartpole.make_cartpole_generator(),
    make_model=_model(n_actions=2, action_dim=0),
    held_out=cartpole.cartpole_held_out,
    suites=cartpole.SUITES,
    default_suite="grid",
    test_suite="grid",
    mutators=dict(cartpole.MUTATORS),
    level_metrics=cartpole.level_metrics,
    binary_outcome=True,   # solved: the pole stayed up until the time limit
    discrete_actions=True,
    cores=("none", "lstm", "gru", "s5"),
)

PENDULUM = dataclasses.replace(
    CARTPOLE,
    name="pendulum",
    description="Pendulum-v1 (gymnax dynamics, continuous torque) with the physics and start state as the level",
    make_env=lambda options: pendulum.Pendulum(),
    make_params=_params(pendulum.PendulumParams),
    make_generator=lambda options: pendulum.make_pendulum_generator(),
    make_model=_model(n_actions=0, action_dim=1),
    held_out=pendulum.pendulum_held_out,
    suites=pendulum.SUITES,
    mutators=dict(pendulum.MUTATORS),
    level_metrics=pendulum.level_metrics,
    binary_outcome=False,  # a swing-up has no success: only returns are reported
    discrete_actions=False,
)
