"""NCC: a learned replay distribution over a level buffer (Monette et al., "An Optimisation
Framework for Unsupervised Environment Design", RLC 2025; nmonette/NCC-UED,
`minigrid/train/minigrid_ncc.py` and, for NCC-Reg, `minigrid_ncc_regret.py`).

One cycle (one `step`), as the authors' `train_step`:

1. **Score the buffer.** Each of the K buffer levels is played `ncc_attempts` times, each attempt
   `ncc_attempt_steps` steps from the level's start with the current policy (sampled actions, the
   level restarted when an episode ends). Generalised learnability (`--ncc-score learnability`,
   NCC) is p (1 - p), p the fraction of attempts that reached the goal at least once; oracle
   regret (`oracle_regret`, NCC-Reg) is the level's optimal return minus the mean over attempts
   of the attempt's first episode's return (the environment must know the optimum, `level_facts`).
2. **Replace** (unless `--ncc-static-buffer`): `ncc_new_levels` fresh generator levels are scored
   the same way and offered to the buffer best first; each takes the lowest-score slot if its
   score is higher (`curricula/ncc.py: insert_sorted`).
3. **Move y** one step on `y . s - tau sum y log y` with the new scores (`adversary_step`).
4. **Train** on N levels drawn with replacement from the buffer *before* this cycle's
   replacement with the *previous* y (the authors sample "from the last iteration's y
   distribution for theoretical reasons"): one rollout of T steps per env, each env replaying its
   level, and one PPO update.

The scoring passes are not counted in `env_steps` (as SFL's sampling pass): they are logged as
`refresh_env_steps` (the name SFL's sampling passes log under). With K = 4,000 and 5 attempts of
256 steps, they are 78x the training steps of a 256 x 256 rollout; a CPU run needs a small
`--ncc-buffer-size`.

Where we differ from their code (docs/methods.md): NCC-Reg's regret uses undiscounted first-episode
returns and the undiscounted optimum (theirs: the discounted return of the whole attempt, which can
exceed the one-episode optimum when a level is solved twice); their network (512-unit layers with
layer norm) is ours (the Table 5 student). Their configs' `EXPLORATORY_GRAD_UPDATES`, `USE_ACCEL`
and `NUM_EDITS` are read only by their PLR script, not by NCC's, so NCC has no such options.

Data parallel (`shard`): every device scores its slice of the buffer and of the fresh levels;
scores and levels are gathered, so every device keeps the same buffer and `y`. Training envs are
split over devices as in DR.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Literal

import jax
import jax.numpy as jnp
from flax import struct
from flax.training.train_state import TrainState

from minimax.agents.ppo import PPOConfig, create_train_state, ppo_update
from minimax.core.metrics import level_metric_sums, reduce_over_devices
from minimax.core.options import Traced, check
from minimax.core.parallel import NO_SHARD, Shard
from minimax.curricula import ncc
from minimax.envs.wrappers import ReplayAutoReset
from minimax.core.methods import Method, episode_limit, register_method
from minimax.runners.rollout import episode_metrics, play_levels, policy_step, ppo_batch, regret_metrics


@dataclasses.dataclass(frozen=True)
class NCCConfig:
    """NCC's options (static). Defaults: the authors' MiniGrid NCC run (`minigrid-ncc.yaml`,
    `ued/ncc.yaml`, `env/minigrid.yaml`); each field is the training command's option of that name."""

    ncc_buffer_size: int = 4000
    """Levels in the buffer (K), all scored every cycle."""
    ncc_new_levels: int = 0
    """Fresh generator levels scored and offered to the buffer per cycle (0 = --num-envs, as the authors)."""
    ncc_attempts: int = 5
    """Independent attempts per level when scoring it (the authors' EVAL_NUM_ATTEMPTS)."""
    ncc_attempt_steps: int = 256
    """Steps of one scoring attempt (the authors: their rollout length, 256); the level restarts when an episode
    ends."""
    ncc_score: Literal["learnability", "oracle_regret"] = "learnability"
    """learnability: p (1 - p) over the attempts (NCC); oracle_regret: optimal return minus the attempts' mean return
    (NCC-Reg; the environment must know the optimum, as AMaze does)."""
    ncc_meta_lr: Traced[float] = 0.1
    """Step size of the y update (META_LR: 0.1 NCC, 0.005 NCC-Reg)."""
    ncc_meta_reg: Traced[float] = 0.05
    """Entropy regularisation tau of the y objective (META_REG: 0.05 NCC, 0.032 NCC-Reg)."""
    ncc_meta_trunc: Traced[float] = 1e-5
    """Least weight of a buffer slot (META_TRUNC): y lives on the simplex truncated at this value."""
    ncc_static_buffer: bool = False
    """Keep the initial buffer (only its scores are refreshed): the authors' STATIC_BUFFER, their theory setting."""
    ncc_adversary: Literal["descent", "ascent"] = "descent"
    """descent: the authors' code (optax.scale(-META_LR) added to y: a descent step on the objective, what produced
    their results); ascent: the paper's adversary, which maximises it (curricula/ncc.py)."""

    def __post_init__(self):
        check(self, self._rules)

    @staticmethod
    def _rules(c):
        c.positive("ncc_buffer_size", "ncc_attempts", "ncc_attempt_steps")
        c.non_negative("ncc_new_levels", "ncc_meta_lr", "ncc_meta_reg")
        cfg = c.obj
        if not 0 < cfg.ncc_meta_trunc < 1:
            c.add(f"--ncc-meta-trunc must be in (0, 1), got {cfg.ncc_meta_trunc}")
        elif cfg.ncc_buffer_size * cfg.ncc_meta_trunc > 1:
            c.add(f"--ncc-meta-trunc x --ncc-buffer-size must be <= 1 (y is a distribution over the buffer), got "
                  f"{cfg.ncc_meta_trunc} x {cfg.ncc_buffer_size}")

    def new_levels(self, num_envs: int) -> int:
        return self.ncc_new_levels or num_envs

    def problems(self, spec, max_episode_steps: int | None = None):
        """Bad combinations with the environment, as messages naming the flags."""
        if self.ncc_score == "oracle_regret" and spec is not None and spec.level_facts is None:
            yield (f"--ncc-score oracle_regret needs an environment that knows each level's optimal return; "
                   f"{spec.name} does not (use --ncc-score learnability)")
        if self.ncc_score == "learnability" and spec is not None and not spec.binary_outcome:
            yield (f"--ncc-score learnability counts successes, and {spec.name}'s episodes neither succeed nor fail")
        if max_episode_steps and self.ncc_attempt_steps < max_episode_steps:
            yield (f"--ncc-attempt-steps ({self.ncc_attempt_steps}) is shorter than an episode may last "
                   f"(--max-episode-steps {max_episode_steps}): an attempt could finish no episode")


@struct.dataclass
class NCCState:
    train_state: TrainState
    buffer: ncc.NCCBuffer   # replicated over devices
    key: jax.Array
    updates: jax.Array      # int32: PPO updates done


def play_attempts(key, apply_fn, params, initial_carry, env, env_params, levels, attempts: int, steps: int,
                  shard: Shard = NO_SHARD, unroll: int = 1):
    """`(solved bool[A, b], first_return float32[A, b])` for this device's `b` levels: each played
    `attempts` times for `steps` steps from its start (restarted when an episode ends); `solved`:
    the goal reached at least once, `first_return`: the first completed episode's return (0 if
    none). Envs are level-major (level i's attempts are envs iA ... iA + A - 1), so a device's
    slice of the levels is its slice of the global envs and the keys match an unsharded run."""
    b = jax.tree.leaves(levels)[0].shape[0]
    n = b * attempts
    replay = ReplayAutoReset(env)
    tiled = jax.tree.map(lambda x: jnp.repeat(x, attempts, axis=0), levels)
    env_state = jax.vmap(env.init_state, in_axes=(0, None))(tiled, env_params)
    obs = jax.vmap(env.get_obs, in_axes=(0, None))(env_state, env_params)

    def step(c, t):
        env_state, obs, carry, reset, solved, first, ep_return, finished = c
        k_act, k_env = jax.random.split(jax.random.fold_in(key, t))
        carry, action, _, _, _ = policy_step(shard.env_keys(k_act, n), apply_fn, params, carry, obs, reset)
        obs, env_state, reward, done, info = jax.vmap(replay.step, in_axes=(0, 0, 0, None))(
            shard.env_keys(k_env, n), env_state, action, env_params)
        ep_return = ep_return + reward
        first = jnp.where(done & ~finished, ep_return, first)
        solved = solved | (done & info["solved"])
        return (env_state, obs, carry, done, solved, first, jnp.where(done, 0.0, ep_return), finished | done), None

    no, zero = jnp.zeros((n,), bool), jnp.zeros((n,), jnp.float32)
    c = (env_state, obs, initial_carry(n), jnp.ones((n,), bool), no, zero, zero, no)
    c, _ = jax.lax.scan(step, c, jnp.arange(steps), unroll=max(1, min(int(unroll), int(steps))))
    return c[4].reshape(b, attempts).T, c[5].reshape(b, attempts).T


class NCCRunner:
    """`init(key) -> NCCState`, `step(state) -> (state, metrics)`: one cycle and one PPO update
    per step (the module docstring)."""

    trains_every_cycle = True
    state_type = NCCState

    def __init__(self, env, env_params, generator: Callable, model, ppo: PPOConfig, num_envs: int, num_steps: int,
                 ncc_cfg: NCCConfig, level_metrics: Callable | None = None, level_facts: Callable | None = None,
                 shard: Shard = NO_SHARD):
        self.cfg = ncc_cfg
        self.new_levels = ncc_cfg.new_levels(num_envs)
        self.env, self.env_params, self.generator, self.model, self.ppo = env, env_params, generator, model, ppo
        self.num_envs, self.num_steps, self.shard = int(num_envs), int(num_steps), shard
        self.level_metrics, self.level_facts = level_metrics, level_facts
        d = shard.size  # the sizes split over devices are checked at config time (the method's device_splits)
        self.local_envs = self.num_envs // d

    @property
    def local_fields(self) -> tuple[str, ...]:
        return ()

    @property
    def env_steps_per_update(self) -> int:
        return self.num_envs * self.num_steps

    @property
    def score_env_steps_per_update(self) -> int:
        """Env steps of one cycle's scoring passes (not counted in `env_steps`)."""
        fresh = 0 if self.cfg.ncc_static_buffer else self.new_levels
        return (self.cfg.ncc_buffer_size + fresh) * self.cfg.ncc_attempts * self.cfg.ncc_attempt_steps

    def init(self, key) -> NCCState:
        k_model, k_levels, k_run = jax.random.split(key, 3)
        levels = jax.vmap(self.generator)(jax.random.split(k_levels, self.cfg.ncc_buffer_size))
        first = jax.tree.map(lambda x: x[jnp.arange(self.local_envs) % self.cfg.ncc_buffer_size], levels)  # shapes
        state0 = jax.vmap(self.env.init_state, in_axes=(0, None))(first, self.env_params)
        obs = jax.vmap(self.env.get_obs, in_axes=(0, None))(state0, self.env_params)
        carry = self.model.initial_carry(self.local_envs)
        params = self.model.init(k_model, carry, jax.tree.map(lambda x: x[None], obs),
                                 jnp.ones((1, self.local_envs), bool))
        return NCCState(train_state=create_train_state(self.model.apply, params, self.ppo),
                        buffer=ncc.initial_buffer(levels), key=k_run, updates=jnp.zeros((), jnp.int32))

    def score(self, key, params, levels):
        """float32[n]: the score of each of `n` levels (replicated), this device playing its slice."""
        n = jax.tree.leaves(levels)[0].shape[0]
        local = self.shard.local(levels, n // self.shard.size)
        solved, first = play_attempts(key, self.model.apply, params, self.model.initial_carry, self.env,
                                      self.env_params, local, self.cfg.ncc_attempts, self.cfg.ncc_attempt_steps,
                                      self.shard, self.ppo.unroll)
        if self.cfg.ncc_score == "oracle_regret":
            scores = ncc.attempt_regret(first, self.level_facts(local, self.env_params)[0])
        else:
            scores = ncc.attempt_learnability(solved)
        return self.shard.gather(scores)

    def adapt(self, key, params, buffer: ncc.NCCBuffer) -> ncc.NCCBuffer:
        """Steps 1-3 of the cycle: rescore, replace, move y."""
        cfg = self.cfg
        k_score, k_fresh, k_fresh_score = jax.random.split(key, 3)
        scores = self.score(k_score, params, buffer.levels)
        levels, inserted = buffer.levels, jnp.zeros((), jnp.int32)
        if not cfg.ncc_static_buffer:
            fresh = jax.vmap(self.generator)(jax.random.split(k_fresh, self.new_levels))
            levels, scores, inserted = ncc.insert_sorted(levels, scores, fresh,
                                                         self.score(k_fresh_score, params, fresh))
        y, rss = ncc.adversary_step(buffer.y, buffer.rss, scores, cfg.ncc_meta_lr, cfg.ncc_meta_reg,
                                    cfg.ncc_meta_trunc, ascent=cfg.ncc_adversary == "ascent")
        return ncc.NCCBuffer(levels=levels, scores=scores, y=y, rss=rss, inserted=inserted)

    def step(self, state: NCCState):
        key, k_adapt, k_draw, k_play, k_update = jax.random.split(state.key, 5)
        ts, old = state.train_state, state.buffer
        buffer = self.adapt(k_adapt, ts.params, old)
        slots = jax.random.choice(k_draw, old.size, (self.num_envs,), p=old.y)   # the previous y, the old buffer
        levels = self.shard.local(jax.tree.map(lambda x: x[slots], old.levels), self.local_envs)
        rollout = play_levels(k_play, self.env, self.env_params, ts.apply_fn, ts.params,
                              self.model.initial_carry(self.local_envs), levels, self.num_steps, self.shard,
                              self.ppo.unroll)
        ts, metrics = ppo_update(k_update, ts, ppo_batch(rollout, self.ppo), self.ppo, self.shard)
        metrics.update(episode_metrics(rollout))
        metrics.update(self.replay_metrics(levels, rollout))
        metrics = reduce_over_devices(metrics, self.shard)
        metrics.update(ncc.adversary_stats(buffer))
        metrics["refresh_env_steps"] = jnp.asarray(self.score_env_steps_per_update, jnp.int32)
        metrics["env_steps"] = jnp.asarray(self.env_steps_per_update, jnp.int32)
        metrics["gradient_updates"] = jnp.ones((), jnp.int32)
        metrics["cycles"] = jnp.ones((), jnp.int32)
        return NCCState(train_state=ts, buffer=buffer, key=key, updates=state.updates + 1), metrics

    def replay_metrics(self, levels, rollout) -> dict:
        """The trained-on levels (`replay/`): their per-level statistics and, where the env knows
        the optimum, the regret of their completed episodes."""
        out = {"replay/count": jnp.asarray(self.local_envs, jnp.float32)}
        if self.level_metrics is not None:
            out.update(level_metric_sums("replay", jax.vmap(self.level_metrics)(levels)))
        if self.level_facts is not None:
            out.update(regret_metrics("replay", self.level_facts(levels, self.env_params)[0], rollout))
        return out


register_method(Method(
    "ncc", summary="NCC: a replay distribution over a level buffer learned by projected gradient steps (RLC 2025)",
    runner=NCCRunner, options={"ncc": NCCConfig}, trains_every_cycle=True,
    problems=lambda cfg, spec: cfg.ncc.problems(spec, episode_limit(cfg, spec)),
    device_splits=lambda cfg: (("--ncc-buffer-size", cfg.ncc.ncc_buffer_size),
                               ("--ncc-new-levels (or --num-envs)", cfg.ncc.new_levels(cfg.num_envs))),
    build=lambda parts: NCCRunner(*parts.args, ncc_cfg=parts.cfg.ncc, level_metrics=parts.spec.level_metrics,
                                  level_facts=parts.spec.level_facts, shard=parts.shard)))
