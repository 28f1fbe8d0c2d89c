"""Craftax-Classic as a registered UED environment (`--env craftax`; needs `pip install 'minimax[craftax]'`).

A level is a world from craftax's own generator; ACCEL's `tiles` mutator rewrites map tiles.
The student is the MLP of `models/mlp.py` on the 1,345-float symbolic observation (17 actions).
Craftax has no success outcome (`binary_outcome=False`: returns and achievements only) and no
teacher design MDP (PAIRED and relatives are refused).
"""

from __future__ import annotations

from minimax.envs.craftax.env import (
    NUM_ACTIONS, SUITES, CraftaxClassic, CraftaxParams, check_suite, held_out, level_identity, level_metrics,
    make_world_generator,
)
from minimax.envs.craftax.mutators import MUTATORS
from minimax.envs.registry import UEDEnv


def craftax_params(options) -> CraftaxParams:
    """Craftax-Classic's own settings, with `--max-episode-steps` (0: craftax's 10,000)."""
    return CraftaxParams(max_steps=options.max_episode_steps or CraftaxParams().max_steps)


def craftax_model(cfg):
    from minimax.models.mlp import MLPActorCritic  # noqa: PLC0415 (models sit beside envs, not below)

    return MLPActorCritic.from_options(cfg.model, n_actions=NUM_ACTIONS)


CRAFTAX = UEDEnv(
    name="craftax",
    description="Craftax-Classic (symbolic observations) with generated worlds as levels",
    make_env=lambda options: CraftaxClassic(),
    make_params=craftax_params,
    make_generator=lambda options: make_world_generator(craftax_params(options)),
    make_model=craftax_model,
    held_out=held_out,
    check_suite=check_suite,
    suites=SUITES,
    default_suite="worlds",
    test_suite="worlds",
    mutators=dict(MUTATORS),
    level_identity=level_identity,
    level_metrics=level_metrics,
    binary_outcome=False,
    discrete_actions=True,
    deterministic=False,  # mobs move and spawn by the step's key
    cores=("none", "lstm", "gru", "s5"),
)
