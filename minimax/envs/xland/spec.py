"""XLand-MiniGrid as a registered UED environment (`--env xland`; needs the `xland` extra: README).

A level is a ruleset of an xminigrid benchmark (`--xland-benchmark`, `--xland-version`), generated here
(`rulesets.py`, `benchmarks.py`), with the key of its first room (`env.py`). DR draws uniformly from the
benchmark's first `--xland-pool` rulesets (the authors draw from all of it; a prefix is the same
distribution), each with a fresh room key. ACCEL's `ruleset` mutator redraws rooms and adds or removes
distractor objects (`mutators.py`). The student is xminigrid's meta-RL baseline (`models/xland.py`).

Held-out suites (none of them held out from training in the strict sense: SFL evaluates on rulesets of the
benchmark it trains on, and so do these):
- `sfl`: SFL's 10,000 evaluation rulesets (`high-3m` v2 at their draws, with their reset keys), `evaluate.py`'s
  default; `sfl-1k`: its first 1,000, the periodic evaluation of training. Both are generated from the 3M
  rows' stream on first use (minutes; cached);
- `head`: the first 100 rulesets of `high-3m` v2 (seconds), with fixed room keys: a quick check.

Refused, and why: the learned-teacher methods (no design MDP for rulesets). There is no exact optimum.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from minimax.envs.registry import HeldOutLevel, UEDEnv
from minimax.envs.trials import TrialParams, Trials
from minimax.envs.xland import benchmarks
from minimax.envs.xland.env import XLand, XLandLevel, XLandParams, level_identity, level_metrics, raw_key
from minimax.envs.xland.mutators import MUTATORS
from minimax.envs.xland.render import render_episode, render_levels, trace_state

SUITES = ("sfl", "sfl-1k", "head")
HEAD_ROWS = 100
HELD_OUT_TAG = 0x71A4D


def trials(options) -> bool:
    return bool(options.xland_trial_steps or options.xland_trial_episodes)


def xland_params(options) -> XLandParams | TrialParams:
    """The room and time limit of a run (`--max-episode-steps` 0: xminigrid's 3 x height x width), inside the
    trial's params where the run plays trials."""
    room = XLandParams(grid_type=options.xland_room, height=options.xland_size, width=options.xland_size,
                       max_steps=options.max_episode_steps or 0)
    return TrialParams(room, options.xland_trial_steps, options.xland_trial_episodes) if trials(options) else room


EVAL_TRIAL_EPISODES = 10
"""Episodes of an evaluation trial (SFL's `xland_1_rollout_on_eval_rulesets.py`: 10, the recurrent state kept)."""


def suite_params(train):
    """A suite's params for a run's: its own room, in trials of `EVAL_TRIAL_EPISODES` episodes where it trains in
    trials (SFL's win rate: the fraction of those episodes solved)."""
    return TrialParams(train.inner, 0, EVAL_TRIAL_EPISODES) if isinstance(train, TrialParams) else train


def _levels(arrays: dict, keys) -> XLandLevel:
    return XLandLevel(goal=jnp.asarray(arrays["goals"]), rules=jnp.asarray(arrays["rules"]),
                      init_tiles=jnp.asarray(arrays["init_tiles"]), key=jnp.asarray(keys, jnp.uint32))


def make_pool_generator(options):
    """`generator(key) -> level`: a ruleset uniform over the run's pool, and a room key, from independent splits."""
    return pool_generator(benchmarks.load(options.xland_benchmark, options.xland_version, options.xland_pool))


def pool_generator(pool: dict):
    """`generator(key) -> level` over the rulesets of a benchmark file's arrays (`benchmarks.read`)."""
    goals, rules, tiles = (jnp.asarray(pool[n]) for n in ("goals", "rules", "init_tiles"))
    n = len(goals)

    def generate(key) -> XLandLevel:
        k_row, k_room = jax.random.split(key)
        i = jax.random.randint(k_row, (), 0, n)
        return XLandLevel(goal=goals[i], rules=rules[i], init_tiles=tiles[i], key=raw_key(k_room))

    return generate


def check_suite(suite: str, params=None) -> None:
    if suite not in SUITES:
        raise ValueError(f"unknown XLand evaluation suite {suite!r}; known suites: {', '.join(SUITES)}")


@functools.cache
def _suite(suite: str) -> tuple[HeldOutLevel, ...]:
    if suite == "head":
        arrays = benchmarks.load("high-3m", "v2", HEAD_ROWS)
        keys = np.stack([np.asarray(raw_key(jax.random.fold_in(jax.random.key(HELD_OUT_TAG), i)))
                         for i in range(HEAD_ROWS)])
    else:
        arrays, keys = benchmarks.sfl_rulesets(), benchmarks.sfl_draws()["keys"]
        if suite == "sfl-1k":
            arrays, keys = {k: v[:1000] for k, v in arrays.items()}, keys[:1000]
    levels = _levels(arrays, keys)
    entries = []
    for i in range(len(keys)):
        level = jax.tree.map(lambda x, i=i: x[i], levels)
        entries.append(HeldOutLevel(name=f"{suite}/{i:05d}", sample=lambda key, lv=level: lv,
                                    params_for=suite_params, fixed_level=level))
    return tuple(entries)


def held_out(suite: str) -> list[HeldOutLevel]:
    """The named evaluation rulesets of `suite` (module docstring)."""
    check_suite(suite)
    return list(_suite(suite))


def xland_model(cfg):
    from minimax.models.xland import XLandActorCritic  # noqa: PLC0415 (models sit beside envs, not below)

    return XLandActorCritic.from_options(cfg.model, embed=cfg.env.xland_embed)


XLAND = UEDEnv(
    name="xland",
    description="XLand-MiniGrid (xminigrid): rulesets of its benchmarks as levels, in a four-room 13x13 grid",
    make_env=lambda options: Trials(XLand()) if trials(options) else XLand(),
    make_params=xland_params,
    make_generator=make_pool_generator,
    make_model=xland_model,
    held_out=held_out,
    check_suite=check_suite,
    suites=SUITES,
    default_suite="sfl-1k",
    test_suite="sfl",
    mutators=dict(MUTATORS),
    level_identity=level_identity,
    level_metrics=level_metrics,
    binary_outcome=True,   # solved: the goal reached
    discrete_actions=True,
    deterministic=True,    # xminigrid's step ignores the key
    cores=("gru", "lstm", "s5", "none"),
    trace_state=trace_state,
    render_episode=render_episode,
    render_levels=render_levels,
)
