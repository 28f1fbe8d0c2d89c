"""JaxNav (single agent) as a registered UED environment (`--env jaxnav`; needs `pip install 'minimax[jaxnav]'`).

A level is a map with a start pose and a goal (`env.py`); the generator, ACCEL's mutator and the
held-out suites are SFL's (`levels.py`). The student is the MLP of `models/mlp.py` on the 205-float
lidar observation, with a Gaussian policy over (speed, turn rate) or a categorical one over
jaxmarl's 15 pairs (`--nav-actions`). SFL's own network is Dense 512 + ReLU -> GRU 512 -> one
Dense 512 + ReLU layer per head; ours is `--mlp-hidden` tanh units twice -> the `--recurrent-cell`
core -> one Dense layer per head: the `jaxnav_*` presets set a 512-unit GRU, and the layer that
differs is what every other MLP environment here uses. There is no teacher design MDP (PAIRED and
relatives are refused) and no exact optimum for continuous driving (no oracle regret).
"""

from __future__ import annotations

from minimax.envs.jaxnav.env import DISCRETE_ACTS, JaxNavSingle, NavParams
from minimax.envs.jaxnav.levels import SUITES, held_out, level_metrics, make_nav_generator, make_nav_mutator
from minimax.envs.jaxnav.render import render_episode, render_levels, trace_state
from minimax.envs.registry import UEDEnv


def nav_params(options) -> NavParams:
    """The training levels' static params from the run's `EnvConfig` (`--max-episode-steps` 0: SFL's 500)."""
    return NavParams(max_steps=options.max_episode_steps or NavParams().max_steps, fill=float(options.nav_fill),
                     valid_path_check=bool(options.nav_valid_path_check), actions=options.nav_actions)


def nav_model(cfg):
    from minimax.models.mlp import MLPActorCritic  # noqa: PLC0415 (models sit beside envs, not below)

    if cfg.env.nav_actions == "discrete":
        return MLPActorCritic.from_options(cfg.model, n_actions=int(DISCRETE_ACTS.shape[0]))
    return MLPActorCritic.from_options(cfg.model, action_dim=2)


JAXNAV = UEDEnv(
    name="jaxnav",
    description="JaxNav (jaxmarl, single agent): lidar robot navigation with maps, start and goal as levels",
    make_env=lambda options: JaxNavSingle(),
    make_params=nav_params,
    make_generator=lambda options: make_nav_generator(nav_params(options)),
    make_model=nav_model,
    held_out=held_out,
    suites=SUITES,
    default_suite="single",
    test_suite="sfl",
    mutators={"flip_goal": lambda n_edits: make_nav_mutator(NavParams())(n_edits)},
    level_metrics=level_metrics,
    binary_outcome=True,    # solved: the robot reached the goal
    discrete_actions=False,  # the default's Gaussian policy: the action-probability scores are refused either way
    cores=("none", "lstm", "gru", "s5"),
    trace_state=trace_state,
    render_episode=render_episode,
    render_levels=render_levels,
)
