"""Kinetix as a registered UED environment (`--env kinetix`; needs the `kinetix` extra, README).

A level is a Kinetix scene of the run's size class (`--kinetix-size`, `env.py`); the generator,
ACCEL's mutator and the held-out suites (one per size class, the hand-designed levels the wheel
ships) are the authors' (`levels.py`).

The student. The authors' default agent reads per-entity observations with a permutation-invariant
transformer (`configs/env/entity.yaml`, `model-transformer.yaml`); their flat-symbolic alternative
(`configs/env/symbolic.yaml`) feeds an MLP (5 tanh layers of 128 units per head). We train the flat
symbolic observation with the MLP of `models/mlp.py`: `--mlp-hidden` tanh units twice, an optional
recurrent core, one Dense layer per head, a `MultiCategorical` over the 6 action dimensions. Why:
every runner, score and buffer here is built around one observation array per env, and a
transformer student is a model of its own (left out; the flat observation is the authors'
documented option, not a variant of ours). The `kinetix_*` presets set 128 units, feedforward.

What is refused, and why: the learned-teacher methods (PAIRED and relatives: Kinetix has no
design MDP), and the scores that read action probabilities of one categorical (least confidence,
min margin: the policy is a product of 6). There is no exact optimum (no oracle regret).
"""

from __future__ import annotations

from minimax.envs.kinetix.env import KinetixParams, KinetixSingle, action_nvec
from minimax.envs.kinetix.render import render_episode, render_levels, trace_state
from minimax.envs.kinetix.levels import SUITES, check_suite, held_out, level_metrics, make_kinetix_generator, \
    make_kinetix_mutator
from minimax.envs.registry import UEDEnv


def kinetix_params(options) -> KinetixParams:
    """The training levels' static params from the run's `EnvConfig` (`--max-episode-steps` 0: 256)."""
    return KinetixParams(size=options.kinetix_size, max_steps=options.max_episode_steps or KinetixParams().max_steps)


def kinetix_model(cfg):
    from minimax.models.mlp import MLPActorCritic  # noqa: PLC0415 (models sit beside envs, not below)

    return MLPActorCritic.from_options(cfg.model, action_nvec=action_nvec(kinetix_params(cfg.env)))


KINETIX = UEDEnv(
    name="kinetix",
    description="Kinetix (kinetix-env): 2D rigid-body physics tasks with scenes of a size class as levels",
    make_env=lambda options: KinetixSingle(),
    make_params=kinetix_params,
    make_generator=lambda options: make_kinetix_generator(kinetix_params(options), options.kinetix_filter_steps),
    make_model=kinetix_model,
    held_out=held_out,
    suites=SUITES,
    default_suite="s",
    test_suite="s",
    default_suite_of=lambda options: options.kinetix_size,
    check_suite=check_suite,
    mutators={"kinetix": make_kinetix_mutator},
    level_metrics=level_metrics,
    binary_outcome=True,     # solved: a green shape touched a blue one
    discrete_actions=False,  # multi-discrete: the one-categorical scores are refused
    cores=("none", "lstm", "gru", "s5"),
    trace_state=trace_state,
    render_episode=render_episode,
    render_levels=render_levels,
)
