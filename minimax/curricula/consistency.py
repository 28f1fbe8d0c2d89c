"""ReMiDi's trajectory consistency (Beukman et al., ICML 2024, "Refining Minimax Regret for Unsupervised
Environment Design", arXiv 2402.12284), as a pure function of a played rollout.

ReMiDi trains on a sequence of level buffers; at stage i it ignores what the buffers of the earlier stages
already cover: a step of a trajectory is trained on only once the trajectory has left every earlier level,
and a new level whose whole trajectory stays inside them is not stored. "Inside" is what the authors' code
computes (their `ParallelStepWrapper`, run beside every env): every earlier level is stepped with the
env's own actions from its start, and the trajectory stays consistent while, at each of its steps, *some*
considered earlier level shows exactly the observation the env shows (the levels may differ from step to
step: their check is an `any` over levels at each step, ANDed over steps); the flag is recomputed from the
first observation when an episode starts. A step's mask is "not consistent before this step's action".

The authors step the earlier levels inside the rollout; we replay the rollout's actions on them afterwards
(`train_mask`), which sees the same observations: the mask of step t depends on the observations of the
episode up to t only, all in the rollout (the terminal observation, which our rollouts do not keep, decides
nothing: the next step starts a new episode). The environments must be deterministic given the actions,
as the authors require (AMaze is).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def _matches(obs, par_obs, considered) -> jax.Array:
    """bool[N]: some considered earlier level `[N, M, ...]` shows exactly `obs` `[N, ...]`."""
    equal = jax.tree.map(lambda p, o: (p == o[:, None]).reshape(p.shape[:2] + (-1,)).all(-1), par_obs, obs)
    return (jnp.stack(jax.tree.leaves(equal)).all(0) & considered[None, :]).any(-1)


def _group_matches(env, env_params, obs, actions, reset, levels, considered, key):
    """`(at_start, after_step)`, bool[T, N] each: some considered level of `levels` (`[M, ...]`, bool[M]) shows
    the env's observation at step t's start (read where an episode starts there), and after step t's action
    (every level restarted where the env's episode started and stepped with the env's actions)."""
    n = actions.shape[1]
    start = jax.vmap(env.init_state, in_axes=(0, None))(levels, env_params)
    start_obs = jax.vmap(env.get_obs, in_axes=(0, None))(start, env_params)
    tile = lambda x: jnp.broadcast_to(x[None], (n,) + x.shape)  # noqa: E731  every env tracks every level
    start, start_obs = jax.tree.map(tile, start), jax.tree.map(tile, start_obs)
    step_one = jax.vmap(jax.vmap(env.step_env, in_axes=(None, 0, None, None)), in_axes=(None, 0, 0, None))
    observe = jax.vmap(jax.vmap(env.get_obs, in_axes=(0, None)), in_axes=(0, None))

    def step(par, t):
        o_t = jax.tree.map(lambda x: x[t], obs)
        starts = reset[t]
        par = jax.tree.map(lambda s, p: jnp.where(starts.reshape((n,) + (1,) * (p.ndim - 1)), s, p), start, par)
        at_start = _matches(o_t, start_obs, considered)
        par, _, _, _ = step_one(jax.random.fold_in(key, t), par, actions[t], env_params)
        # After the last step the next observation is not in the rollout; no mask reads that match.
        o_next = jax.tree.map(lambda x: x[jnp.minimum(t + 1, x.shape[0] - 1)], obs)
        return par, (at_start, _matches(o_next, observe(par, env_params), considered))

    return jax.lax.scan(step, start, jnp.arange(actions.shape[0]))[1]


def train_mask(env, env_params, obs, actions, reset, earlier_levels, considered, key=None, group=None) -> jax.Array:
    """bool[T, N]: the steps of a rollout (`obs`, `actions`, `reset`: `[T, N, ...]`, one env per level, as
    `play` plays them) whose trajectory so far has left every `considered` (bool[M]) level of
    `earlier_levels` (`[M, ...]`); all True where none is considered (the first stage).

    The levels are stepped `group` at a time (default: all M), and only the groups that hold a considered
    level are (a `while_loop`; vmapped seeds run as many groups as the seed with the most, and ReMiDi's
    stages advance together): ReMiDi's first stage steps nothing, its stage i steps the i earlier stages'
    buffers. The authors' `any` over levels at each step is an OR over the
    groups, so the masks do not depend on the grouping."""
    m = considered.shape[0]
    group = m if group is None else group
    if m % group:
        raise ValueError(f"train_mask: {m} levels do not split into groups of {group}")
    key = jax.random.key(0) if key is None else key
    grouped = jax.tree.map(lambda x: x.reshape((m // group, group) + x.shape[1:]), (earlier_levels, considered))
    has_any = grouped[1].any(-1)
    order = jnp.argsort(~has_any, stable=True)  # the groups with considered levels first, then the rest
    blank = jnp.zeros(actions.shape[:2], bool)

    def body(carry):
        i, at_start, after_step = carry
        levels, cons = jax.tree.map(lambda x: x[order[i]], grouped)
        a, b = _group_matches(env, env_params, obs, actions, reset, levels, cons, jax.random.fold_in(key, i))
        return i + 1, at_start | a, after_step | b

    _, at_start, after_step = jax.lax.while_loop(lambda c: c[0] < has_any.sum(), body, (0, blank, blank))

    def consistency(consistent, t):
        consistent = jnp.where(reset[t], at_start[t], consistent)
        return consistent & after_step[t], ~consistent  # a step's mask: not consistent before its action

    return jax.lax.scan(consistency, blank[0], jnp.arange(actions.shape[0]))[1]
