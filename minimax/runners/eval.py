"""Evaluation of a policy on fixed mazes: each env plays one episode on its level.

`evaluate_levels` runs a batch of envs, one level each, until every env's *first*
episode is over (a `lax.while_loop`, so an evaluation costs the steps the longest
episode needs, never more than the budget). `SuiteEvaluator` evaluates a named OOD
suite with E episodes per maze and reports, per maze, the solved rate (return > 0) and
the mean return; mazes that share a size and step budget run in one compiled program.
"""

from __future__ import annotations

import functools
from collections import defaultdict

import jax
import jax.numpy as jnp
import numpy as np

from minimax.envs.maze.env import AMaze
from minimax.envs.maze.ood import get_suite
from minimax.runners.rollout import policy_step


def evaluate_levels(key, apply_fn, params, initial_carry, env, env_params, levels, greedy: bool = False):
    """First-episode `return`, `solved` and `length` per env, for a batch of levels `[B]`."""
    n = jax.tree.leaves(levels)[0].shape[0]
    obs, state = jax.vmap(env.reset_to_level, in_axes=(None, 0, None))(key, levels, env_params)
    step = jax.vmap(env.step, in_axes=(None, 0, 0, None))
    zeros = jnp.zeros((n,), jnp.float32)
    init = dict(key=key, state=state, obs=obs, carry=initial_carry, reset=jnp.ones((n,), bool),
                active=jnp.ones((n,), bool), ret=zeros, solved=jnp.zeros((n,), bool),
                length=jnp.zeros((n,), jnp.int32), t=jnp.zeros((), jnp.int32))

    def cond(c):
        return jnp.any(c["active"]) & (c["t"] < env_params.max_steps)

    def body(c):
        key, k_act = jax.random.split(c["key"])
        carry, action, _, _, _ = policy_step(k_act, apply_fn, params, c["carry"], c["obs"], c["reset"], greedy)
        obs, state, reward, done, info = step(None, c["state"], action, env_params)
        active = c["active"]
        return dict(key=key, state=state, obs=obs, carry=carry, reset=jnp.zeros_like(c["reset"]),
                    active=active & ~done, ret=c["ret"] + jnp.where(active, reward, 0.0),
                    solved=c["solved"] | (active & info["terminated"]),
                    length=c["length"] + active.astype(jnp.int32), t=c["t"] + 1)

    out = jax.lax.while_loop(cond, body, init)
    return {"return": out["ret"], "solved": out["solved"], "length": out["length"]}


def suite_names(suite: str) -> list[str]:
    """Canonical names of the mazes of a suite name or comma-separated maze names."""
    return [maze.name for maze in get_suite(suite)]


class SuiteEvaluator:
    """`evaluator(key, params) -> {"<maze>/solved_rate": ..., "<maze>/return": ..., "mean_...": ...}`."""

    def __init__(self, model, suite: str, episodes: int, greedy: bool = False, **obs_options):
        self.model, self.episodes, self.greedy = model, int(episodes), bool(greedy)
        self.mazes = get_suite(suite)
        self.env = AMaze()
        groups = defaultdict(list)
        for maze in self.mazes:
            groups[(maze.height, maze.width, maze.max_steps)].append(maze)
        self._programs = [(group, jax.jit(functools.partial(self._evaluate_group, tuple(group),
                                                            group[0].params(**obs_options))))
                          for group in groups.values()]

    def _evaluate_group(self, mazes, env_params, key, params):
        k_levels, k_run = jax.random.split(key)
        keys = jax.random.split(k_levels, (len(mazes), self.episodes))
        levels = [jax.vmap(m.sample)(k) for m, k in zip(mazes, keys)]
        levels = jax.tree.map(lambda *xs: jnp.concatenate(xs), *levels)
        n = len(mazes) * self.episodes
        out = evaluate_levels(k_run, self.model.apply, params, self.model.initial_carry(n), self.env, env_params,
                              levels, self.greedy)
        return jax.tree.map(lambda x: x.reshape(len(mazes), self.episodes), out)

    def __call__(self, key, params) -> dict[str, float]:
        metrics = {}
        for i, (group, program) in enumerate(self._programs):
            out = jax.device_get(program(jax.random.fold_in(key, i), params))
            for j, maze in enumerate(group):
                metrics[f"{maze.name}/solved_rate"] = float(np.mean(out["solved"][j]))
                metrics[f"{maze.name}/return"] = float(np.mean(out["return"][j]))
                metrics[f"{maze.name}/length"] = float(np.mean(out["length"][j]))
        for stat in ("solved_rate", "return"):
            metrics[f"mean_{stat}"] = float(np.mean([metrics[f"{m.name}/{stat}"] for m in self.mazes]))
        return metrics

    @property
    def metric_names(self) -> list[str]:
        names = [f"{m.name}/{s}" for m in self.mazes for s in ("solved_rate", "return", "length")]
        return names + ["mean_solved_rate", "mean_return"]
