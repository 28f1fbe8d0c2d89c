"""Rollouts: one `lax.scan` of T policy-act -> env-step transitions over N envs.

The envs' stream (state, current observation, recurrent carry, running episode
return) persists across rollouts, so episodes continue from one update to the next
and no episode is cut short by an update boundary. A rollout stores what PPO and the
level-score functions need, time-major `[T, N]`.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import jax
import jax.numpy as jnp
from flax import struct

from minimax.agents.distributions import noise_per_element, sample_per_element, sample_per_element_from_noise
from minimax.agents.ppo import PPOBatch, PPOConfig, compute_gae
from minimax.envs.wrappers import ReplayAutoReset
from minimax.core.metrics import mean_sums
from minimax.core.parallel import NO_SHARD, Shard


@struct.dataclass
class EnvStream:
    """Per-env state that persists across rollouts."""

    env_state: Any
    obs: Any                   # [N, ...] the observation to act on next
    reset: jax.Array           # bool[N]: `obs` starts an episode (zero the carry first)
    carry: Any                 # recurrent carry before `obs`
    episode_return: jax.Array  # float32[N]: return of the episode in progress so far
    episode_length: jax.Array  # int32[N]


@struct.dataclass
class Rollout:
    obs: Any                 # [T, N, ...]
    reset: jax.Array         # bool[T, N]
    actions: jax.Array       # [T, N, ...]: int32 (discrete) or float32[..., D] (continuous)
    log_probs: jax.Array     # [T, N]
    policy: Any              # [T, N] batch of the policy's action distributions (`agents/distributions.py`)
    values: jax.Array        # [T, N]
    rewards: jax.Array       # [T, N]
    dones: jax.Array         # bool[T, N]: the episode ended with this transition
    solved: jax.Array        # bool[T, N]: ...with a success (`info["solved"]`; AMaze: the goal reached)
    truncated: jax.Array     # bool[T, N]: ...by the time limit
    episode_returns: jax.Array  # [T, N]: the finished episode's return where `dones`, else 0
    episode_lengths: jax.Array  # int32[T, N], likewise
    episode_stats: dict      # {name: float32[T, N]}: the env's `info["episode_stats"]` where `dones`, else 0
    init_carry: Any          # [N, ...] recurrent carry before step 0
    last_value: jax.Array    # [N]: value of the observation after step T-1 (for GAE)
    episode_ends: Any = None    # bool[T, N]: inside a meta-RL trial (`envs/trials.py`), its episodes' ends, else None
    episode_solves: Any = None  # bool[T, N]: ...those that succeeded (the trial's `dones` and `solved` are its own)


def start_stream(env_state, obs, carry) -> EnvStream:
    n = jax.tree.leaves(obs)[0].shape[0]
    return EnvStream(env_state=env_state, obs=obs, reset=jnp.ones((n,), bool), carry=carry,
                     episode_return=jnp.zeros((n,), jnp.float32), episode_length=jnp.zeros((n,), jnp.int32))


def typed_key(key):
    """`key` as a typed key array (`jax.random.key`): a legacy raw key (`jax.random.PRNGKey`,
    `uint32[..., 2]`) is wrapped, so `PRNGKey(s)` and `key(s)` draw the same numbers. A typed
    key's `ndim` counts keys, not key words, so it says "one key or a batch" under `vmap` too."""
    if jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
        return key
    return jax.random.wrap_key_data(key)


def policy_step(key, apply_fn, params, carry, obs, reset, greedy: bool = False, noise=None):
    """Act on one batched observation: `(carry, action, log_prob, value, policy)`, `policy` the
    network's action distribution (`agents/distributions.py`). `key` is one key, or one key per
    env (`[N]`, e.g. from `Shard.env_keys`), typed or raw (`typed_key`); `greedy` takes the
    distribution's mode; `noise` (instead of `key`) is the sampling noise drawn beforehand with
    `noise_per_element`, which gives the same action as the key it was drawn with."""
    add_time = lambda x: x[None]  # noqa: E731
    with jax.named_scope("policy"):  # scopes name the ops for the profiler (benchmarks/gpu_profile.py)
        carry, policy, value = apply_fn(params, carry, jax.tree.map(add_time, obs), reset[None])
        policy, value = jax.tree.map(lambda x: x[0], policy), value[0]
    with jax.named_scope("sample"):
        if greedy:
            action = policy.mode()
        elif noise is not None:
            action = sample_per_element_from_noise(noise, policy)
        else:
            key = typed_key(key)
            keys = key if key.ndim == 1 else jax.random.split(key, value.shape[0])
            action = sample_per_element(keys, policy)
        log_prob = policy.log_prob(action)
    return carry, action, log_prob, value, policy


def collect_rollout(key, apply_fn, params, env_step: Callable, stream: EnvStream, num_steps: int,
                    shard: Shard = NO_SHARD, unroll: int = 1):
    """Run `num_steps` transitions. `env_step(key, env_state, actions) -> (obs, env_state, reward, done, info)`
    steps the whole batch with auto-reset. Returns `(rollout, stream)`. Actions are sampled
    with per-env keys from the global batch (`shard`), so a sharded rollout equals the
    matching slice of an unsharded one."""
    act_noise, env_keys = rollout_randomness(key, apply_fn, params, stream, num_steps, shard)

    def step(stream: EnvStream, inputs):
        noise, k_env = inputs
        carry, action, log_prob, value, policy = policy_step(None, apply_fn, params, stream.carry, stream.obs,
                                                             stream.reset, noise=noise)
        obs, env_state, reward, done, info = env_step(k_env, stream.env_state, action)
        ep_return = stream.episode_return + reward
        ep_length = stream.episode_length + 1
        out = dict(obs=stream.obs, reset=stream.reset, actions=action, log_probs=log_prob, policy=policy, values=value,
                   rewards=reward, dones=done, solved=info["solved"], truncated=info["truncated"],
                   episode_returns=jnp.where(done, ep_return, 0.0),
                   episode_lengths=jnp.where(done, ep_length, 0),
                   episode_stats={k: jnp.where(done, jnp.asarray(v, jnp.float32), 0.0)
                                  for k, v in info.get("episode_stats", {}).items()})
        if "episode_done" in info:  # a meta-RL trial: its episodes, for a score over them (`runners/plr_trials.py`)
            out.update(episode_ends=info["episode_done"], episode_solves=info["episode_solved"])
        stream = EnvStream(env_state=env_state, obs=obs, reset=done, carry=carry,
                           episode_return=jnp.where(done, 0.0, ep_return),
                           episode_length=jnp.where(done, 0, ep_length))
        return stream, out

    init_carry = stream.carry
    with jax.named_scope("rollout"):
        stream, out = jax.lax.scan(step, stream, (act_noise, env_keys), unroll=unroll)
    _, _, _, last_value, _ = policy_step(None, apply_fn, params, stream.carry, stream.obs, stream.reset, greedy=True)
    return Rollout(**out, init_carry=init_carry, last_value=last_value), stream


def rollout_randomness(key, apply_fn, params, stream: EnvStream, num_steps: int, shard: Shard = NO_SHARD):
    """`(action noise [T, N, ...], env keys [T])`: every random number a rollout's steps use, drawn in
    one batched call before its loop. Step t's key is `split(key, T)[t]`, split into an action key
    (one key per env of the global batch, `shard`) and an env key, as a per-step draw would do; the
    action noise is what sampling with those keys draws (`agents/distributions.py`), so the actions
    are the same. Why: on CPU each `jax.random` call is a loop of its own (threefry's rounds), and four of
    them per step were about two thirds of the rollout's op events (benchmarks/RESULTS.md, issue 48)."""
    n = stream.reset.shape[0]
    pairs = jax.vmap(jax.random.split)(jax.random.split(key, num_steps))  # [T, 2] (typed) or [T, 2, 2] (raw)
    act_keys = jax.vmap(lambda k: typed_key(shard.env_keys(k, n)))(pairs[:, 0])
    first = jax.tree.map(lambda x: x[None], stream.obs)
    policy = jax.eval_shape(apply_fn, params, stream.carry, first, stream.reset[None])[1]
    like = jax.tree.map(lambda s: jnp.zeros(s.shape[1:], s.dtype), policy)  # one step's [N] policy: shapes only
    return jax.vmap(noise_per_element, in_axes=(0, None))(act_keys, like), pairs[:, 1]


@functools.lru_cache(maxsize=None)
def replaying_step(env):
    """`ReplayAutoReset(env).step`, jitted once per environment object (the params static): a program that plays
    levels several times at the same shapes (new, replayed and mutated levels; the scores' rollouts) traces the
    environment's step once, as `traced_once` does the model's (`agents/ppo.py`); XLA inlines the call."""
    return jax.jit(ReplayAutoReset(env).step, static_argnums=3)


def play_levels(key, env, env_params, apply_fn, params, initial_carry, levels, num_steps: int,
                shard: Shard = NO_SHARD, unroll: int = 1) -> Rollout:
    """`num_steps` steps of one env per level from its start, each env replaying its level when an
    episode ends (the PLR family's replays and scoring, the students of PAIRED). `initial_carry`:
    the recurrent carry for the batch (zeroed anyway: the first observation starts an episode)."""
    return continue_levels(key, env, env_params, apply_fn, params, start_levels(env, env_params, levels, initial_carry),
                           num_steps, shard, unroll)[0]


def start_levels(env, env_params, levels, initial_carry) -> EnvStream:
    """The stream of one env per level at its start."""
    env_state = jax.vmap(env.init_state, in_axes=(0, None))(levels, env_params)
    return start_stream(env_state, jax.vmap(env.get_obs, in_axes=(0, None))(env_state, env_params), initial_carry)


def continue_levels(key, env, env_params, apply_fn, params, stream: EnvStream, num_steps: int,
                    shard: Shard = NO_SHARD, unroll: int = 1):
    """`(rollout, stream)`: `num_steps` more steps of the episodes in progress in `stream`, each env replaying its
    level when an episode ends (levels kept for several updates: SFL's and the PLR family's `--*cycle-updates`)."""
    replay_step = replaying_step(env)
    n = stream.reset.shape[0]

    def env_step(k, env_state, actions):
        return jax.vmap(replay_step, in_axes=(0, 0, 0, None))(shard.env_keys(k, n), env_state, actions, env_params)
    return collect_rollout(key, apply_fn, params, env_step, stream, num_steps, shard, unroll)


def count_outcomes(key, apply_fn, params, initial_carry, env, env_params, levels, max_steps: int,
                   episodes: int | None = None, chunk_steps: int = 50, stop_early: bool = True, waits=None,
                   shard: Shard = NO_SHARD, greedy: bool = False, unroll: int = 1):
    """Play one env per level from its start for up to `max_steps` steps (the level restarted when
    an episode ends) and count each level's completed episodes and successes: `(successes int32[b],
    episodes int32[b], steps int32)`. `episodes`: count only each level's first ones (None: all).
    With `stop_early` the loop (a `lax.while_loop` over `lax.scan`s of `chunk_steps` steps) ends at
    the first check where every level that `waits` (default all) has its `episodes`; steps are
    keyed by their index, so the counts equal those of a plain scan to `max_steps`.
    `initial_carry(b)` makes the policy's zero carry (SFL's sampling pass, the CVaR evaluation);
    `unroll`: steps per iteration of the inner scan (`--scan-unroll`)."""
    b = jax.tree.leaves(levels)[0].shape[0]
    step = outcome_step(key, apply_fn, params, env, env_params, max_steps, episodes, shard, greedy)
    waits = jnp.ones((b,), bool) if waits is None else waits
    chunk = min(int(chunk_steps), int(max_steps))

    def run_chunk(loop):
        t, c = loop
        c, _ = jax.lax.scan(step, c, t + jnp.arange(chunk), unroll=min(int(unroll), chunk))
        return t + chunk, c

    def more(loop):
        t, c = loop
        if episodes is None or not stop_early:
            return t < max_steps
        return (t < max_steps) & (shard.sum(jnp.sum(waits & (c[-1] < episodes))) > 0)

    start = outcome_start(env, env_params, initial_carry, levels)
    steps, c = jax.lax.while_loop(more, run_chunk, (jnp.zeros((), jnp.int32), start))
    return c[-2], c[-1], jnp.minimum(steps, max_steps)


def outcome_start(env, env_params, initial_carry, levels):
    """`count_outcomes`' loop state: env states, observations, carry, reset flags, counts."""
    b = jax.tree.leaves(levels)[0].shape[0]
    env_state = jax.vmap(env.init_state, in_axes=(0, None))(levels, env_params)
    obs = jax.vmap(env.get_obs, in_axes=(0, None))(env_state, env_params)
    zeros = jnp.zeros((b,), jnp.int32)
    return env_state, obs, initial_carry(b), jnp.ones((b,), bool), zeros, zeros


def outcome_step(key, apply_fn, params, env, env_params, max_steps, episodes=None, shard: Shard = NO_SHARD,
                 greedy: bool = False):
    """`step(c, t) -> (c, (done, solved))`: step `t` of `count_outcomes` (scan it over `arange(T)`
    to see every episode end, as the tests do)."""
    replay = ReplayAutoReset(env)

    def step(c, t):
        env_state, obs, carry, reset, wins, eps = c
        b = reset.shape[0]
        k_act, k_env = jax.random.split(jax.random.fold_in(key, t))
        carry, action, _, _, _ = policy_step(shard.env_keys(k_act, b), apply_fn, params, carry, obs, reset, greedy)
        obs, env_state, _, done, info = jax.vmap(replay.step, in_axes=(0, 0, 0, None))(
            shard.env_keys(k_env, b), env_state, action, env_params)
        # Inside a meta-RL trial (envs/trials.py) the outcomes counted are its episodes', as SFL counts them.
        ended, solved = info.get("episode_done", done), info.get("episode_solved", info["solved"])
        counted = ended & (t < max_steps)
        if episodes is not None:
            counted = counted & (eps < episodes)
        return (env_state, obs, carry, done, wins + (counted & solved), eps + counted), (ended, solved)

    return step


def ppo_batch(rollout: Rollout, ppo: PPOConfig) -> PPOBatch:
    """GAE over the rollout (`ppo`'s discount and lambda, its rewards times `ppo.reward_scale`) and the
    batch PPO trains on. It takes the whole config so that no caller can leave the reward scale out."""
    with jax.named_scope("gae"):
        advantages, targets = compute_gae(rollout.rewards * ppo.reward_scale, rollout.values, rollout.dones,
                                          rollout.last_value, ppo.gamma, ppo.gae_lambda, ppo.unroll)
    return PPOBatch(obs=rollout.obs, reset=rollout.reset, actions=rollout.actions, log_probs=rollout.log_probs,
                    values=rollout.values, advantages=advantages, targets=targets, init_carry=rollout.init_carry)


def episode_metrics(rollout: Rollout) -> dict:
    """Sums over the episodes that finished in this rollout (divide by `episodes` over a log window),
    with the environment's own `episode_stats` (logged under their names, e.g. `achievements/eat_cow`)."""
    done = rollout.dones
    return {
        "episodes": jnp.sum(done, dtype=jnp.int32),
        "episode_return_sum": jnp.sum(rollout.episode_returns),
        "episode_solved_sum": jnp.sum(rollout.solved, dtype=jnp.int32),
        "episode_length_sum": jnp.sum(rollout.episode_lengths, dtype=jnp.int32),
        **{f"{name}_sum": jnp.sum(value) for name, value in rollout.episode_stats.items()},
    }


def regret_metrics(group: str, optimal, rollout: Rollout, weight=1.0, member=None) -> dict:
    """`{group}/regret` (sum and count): the true regret of the rollout's completed episodes, the
    level's optimal return (the environment's `level_facts`: `float32[N]` for levels fixed over the
    rollout, `[T, N]` per finished episode) minus the episode's return, averaged over episodes;
    `member: bool[N]` keeps the group's envs only."""
    optimal = optimal if optimal.ndim == 2 else optimal[None, :]
    done = rollout.dones if member is None else rollout.dones & member[None, :]
    gap = jnp.where(done, optimal - rollout.episode_returns, 0.0)
    return mean_sums(f"{group}/regret", gap.sum(), done.sum(), weight)


def env_slice(batch: PPOBatch, start: int, stop: int) -> PPOBatch:
    """The envs `start:stop` of a batch (time-major fields on axis 1, the carry on axis 0)."""
    sliced = jax.tree.map(lambda x: x[:, start:stop], batch.replace(init_carry=None))
    return sliced.replace(init_carry=jax.tree.map(lambda x: x[start:stop], batch.init_carry))


def rollout_envs(rollout: Rollout, start: int, stop: int) -> Rollout:
    """The envs `start:stop` of a rollout (time-major fields on axis 1, per-env ones on axis 0)."""
    per_env = rollout.replace(init_carry=None, last_value=None)
    sliced = jax.tree.map(lambda x: x[:, start:stop], per_env)
    return sliced.replace(init_carry=jax.tree.map(lambda x: x[start:stop], rollout.init_carry),
                          last_value=rollout.last_value[start:stop])
