"""Kinetix as a registered UED environment (`--env kinetix`; needs the `kinetix` extra, README).

A level is a Kinetix scene of the run's size class (`--kinetix-size`, `env.py`); the generator,
ACCEL's mutator and the held-out suites (one per size class, the hand-designed levels the wheel
ships, and `all`, the 74 together) are the authors' (`levels.py`).

The student, by the observation (`--kinetix-obs`):
- `entity` (the authors' default agent): their entity transformer (`models/entity_transformer.py`,
  `--student transformer` or `auto`), which reads the per-entity observation and, its feature widths
  not depending on the size class, can be evaluated on any size. The `kinetix_*_transformer` presets.
- `flat`: the flat symbolic observation with the MLP of `models/mlp.py` (`--student mlp` or `auto`):
  `--mlp-hidden` tanh units twice, an optional recurrent core, one Dense layer per head (the authors'
  flat-symbolic alternative, `configs/env/symbolic.yaml`, has 5 tanh layers of 128 per head). The other
  `kinetix_*` presets set 128 units, feedforward.
Either student ends in a `MultiCategorical` over the 6 action dimensions.

What is refused, and why: the learned-teacher methods (PAIRED and relatives: Kinetix has no
design MDP), and the scores that read action probabilities of one categorical (least confidence,
min margin: the policy is a product of 6). There is no exact optimum (no oracle regret).
"""

from __future__ import annotations

from minimax.envs.kinetix.env import KinetixParams, KinetixSingle, action_nvec
from minimax.envs.kinetix.render import render_episode, render_levels, trace_state
from minimax.envs.kinetix.levels import SUITES, check_suite, check_training_level, held_out, level_metrics, \
    load_level_file, make_kinetix_generator, make_kinetix_mutator
from minimax.envs.registry import UEDEnv


def kinetix_params(options) -> KinetixParams:
    """The training levels' static params from the run's `EnvConfig` (`--max-episode-steps` 0: 256)."""
    return KinetixParams(size=options.kinetix_size, max_steps=options.max_episode_steps or KinetixParams().max_steps,
                         obs=options.kinetix_obs)


STUDENTS = {"flat": "mlp", "entity": "transformer"}
"""The student network each observation feeds."""


def student_for(options, student: str) -> str:
    """The network `--student` picks for `--kinetix-obs` (`auto`: the one that reads it), or a `ValueError`."""
    fed = STUDENTS[options.kinetix_obs]
    if student in ("auto", fed):
        return fed
    if student == "transformer":
        raise ValueError("the entity transformer reads entity observations: add --kinetix-obs entity")
    raise ValueError(f"the {student.upper()} reads one flat vector, and --kinetix-obs {options.kinetix_obs} gives "
                     f"per-entity arrays: use --student {fed} (or auto), or --kinetix-obs flat")


def kinetix_model(cfg):
    """The student `student_for` picks (imported here: models sit beside envs, not below)."""
    nvec = action_nvec(kinetix_params(cfg.env))
    if student_for(cfg.env, cfg.model.student) == "transformer":
        from minimax.models.entity_transformer import EntityTransformerActorCritic  # noqa: PLC0415

        return EntityTransformerActorCritic.from_options(cfg.model, nvec)
    from minimax.models.mlp import MLPActorCritic  # noqa: PLC0415

    return MLPActorCritic.from_options(cfg.model, action_nvec=nvec)


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
    load_levels=load_level_file,
    check_training_level=check_training_level,
    mutators={"kinetix": make_kinetix_mutator},
    level_metrics=level_metrics,
    binary_outcome=True,     # solved: a green shape touched a blue one
    discrete_actions=False,  # multi-discrete: the one-categorical scores are refused
    cores=("none", "lstm", "gru", "s5"),
    student_for=student_for,
    trace_state=trace_state,
    render_episode=render_episode,
    render_levels=render_levels,
)
