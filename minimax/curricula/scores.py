"""Level scores: how much the agent may still learn on a level, from one rollout on it.

Every score is a per-step quantity averaged over each *completed* episode, then over the
level's completed episodes in the rollout (an episode still running when the rollout ends
is not scored: its advantages depend on a bootstrap, not on what happened). A level with
no completed episode has no score (`valid` is False) and the buffer skips it.

To add a score: write a function `(inputs: ScoreInputs) -> float32[T, N]` of per-step values
and call `register_score("name", fn)` (from any module, yours included); `--score-function name`
then selects it for every PLR-family method. A score of whole levels (`learnability`) is
`(inputs) -> (scores float32[N], valid bool[N])`, registered with `per_level=True`.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import jax
import jax.numpy as jnp
from flax import struct


@struct.dataclass
class ScoreInputs:
    """What a rollout on N levels (one level per env, T steps, time-major) offers a score."""

    rewards: jax.Array      # float32[T, N]
    values: jax.Array       # float32[T, N]: V(s_t)
    dones: jax.Array        # bool[T, N]: an episode ended with transition t
    solved: jax.Array       # bool[T, N]: ...with a success (a solve)
    advantages: jax.Array   # float32[T, N]: GAE(gamma, lambda)
    policy: Any             # [T, N] action distributions at s_t (`agents/distributions.py`)
    last_value: jax.Array   # float32[N]: V of the observation after step T-1
    max_returns: jax.Array  # float32[N]: best return ever seen on the level, this rollout included
    episode_returns: Any = None   # float32[T, N]: the return of the episode that ended at t (where `dones`)
    optimal_returns: Any = None   # float32[N]: the level's optimal return, where the environment knows it
    update_sq_norms: Any = None   # float32[N]: |grad of PPO's loss on the level alone|^2, for a score that asks
    optimal_steps: Any = None     # int32[N]: the action count of an optimal episode (-1: none), for a score that asks
    gamma: float = struct.field(pytree_node=False, default=0.99)
    gae_lambda: float = struct.field(pytree_node=False, default=0.95)
    reward_scale: float = struct.field(pytree_node=False, default=1.0)  # rewards and returns here are times this


def positive_value_loss(x: ScoreInputs):
    """PVL: `max(A_t, 0)`, the GAE clipped at zero (regret estimate of robust PLR)."""
    return jnp.maximum(x.advantages, 0.0)


def max_monte_carlo(x: ScoreInputs):
    """MaxMC: `R_max - V(s_t)`, with R_max the best return ever achieved on the level."""
    return x.max_returns[None, :] - x.values


def l1_value_loss(x: ScoreInputs):
    """`|A_t|`, the magnitude of the GAE (PLR's value_l1)."""
    return jnp.abs(x.advantages)


def gae(x: ScoreInputs):
    """`A_t`, the signed GAE."""
    return x.advantages


def policy_entropy(x: ScoreInputs):
    """`H(pi(.|s_t))` (discrete: `-sum_a pi(a) log pi(a)`; continuous: the differential entropy)."""
    return x.policy.entropy()


def least_confidence(x: ScoreInputs):
    """`1 - max_a pi(a|s_t)` (discrete actions only)."""
    return 1.0 - x.policy.probs.max(-1)


def min_margin(x: ScoreInputs):
    """`1 - (p_1 - p_2)`, with p_1 >= p_2 the two largest action probabilities."""
    top2 = jax.lax.top_k(x.policy.probs, 2)[0]
    return 1.0 - (top2[..., 0] - top2[..., 1])


def one_step_td_error(x: ScoreInputs):
    """`|r_t + gamma V(s_{t+1}) (1 - d_t) - V(s_t)|`."""
    next_values = jnp.concatenate([x.values[1:], x.last_value[None]], axis=0)
    return jnp.abs(x.rewards + x.gamma * next_values * (1.0 - x.dones) - x.values)


def one_step_td_level_replay(x: ScoreInputs):
    """`|r_t + V(s_t) - V(s_{t+1})|`, facebookresearch/level-replay's one-step TD as its code writes it (no
    discount, no episode end, the values' order reversed): the PLR paper's Procgen runs, kept under its own name."""
    next_values = jnp.concatenate([x.values[1:], x.last_value[None]], axis=0)
    return jnp.abs(x.rewards + x.values - next_values)


def normalized_policy_entropy(x: ScoreInputs):
    """`H(pi(.|s_t)) / log |A|`, the entropy over that of the uniform policy (the level-replay reference's)."""
    return x.policy.entropy() / jnp.log(x.policy.probs.shape[-1])


@dataclasses.dataclass(frozen=True)
class Score:
    """A registered level score: its function and what it needs of the environment."""

    name: str
    fn: Callable
    per_level: bool = False
    """`fn(inputs) -> (scores[N], valid[N])` of whole levels, instead of per-step values averaged
    over completed episodes."""
    needs_discrete_actions: bool = False
    needs_success: bool = False
    """Reads `solved`: the environment's episodes must succeed or fail."""
    needs_optimum: bool = False
    """Reads `optimal_returns`: the environment must know each level's optimal return (`level_facts`)."""
    needs_update_norms: bool = False
    """Reads `update_sq_norms`: the runner computes each level's own PPO gradient (a backward pass per level)."""
    problems: Callable | None = None
    """`cfg -> messages`: what else the score needs of the run's options (the config checks ask it)."""
    needs_max_returns: bool = False
    """Reads `max_returns`: the best return ever seen on each level (a level buffer keeps it; a host run's
    level sampler does not)."""
    needs_optimal_steps: bool = False
    """Reads `optimal_steps` (and `optimal_returns`): the third of the environment's `level_facts`."""

    @property
    def from_steps_alone(self) -> bool:
        """A per-step score of the rollout alone (rewards, values, dones, advantages, the policy): what a host
        run's level sampler averages over episode segments (`host/learner.py`)."""
        return not (self.per_level or self.needs_success or self.needs_optimum or self.needs_update_norms
                    or self.needs_max_returns)


SCORES: dict[str, Score] = {}
"""Every registered score by `--score-function` name."""


def register_score(name: str, fn: Callable, *, per_level: bool = False, needs_discrete_actions: bool = False,
                   needs_success: bool = False, needs_optimum: bool = False, needs_update_norms: bool = False,
                   problems: Callable | None = None, needs_max_returns: bool = False,
                   needs_optimal_steps: bool = False, replace: bool = False) -> Score:
    """Make `fn` the score `--score-function name` (see the module docstring for its signature)."""
    if not name or not name.replace("_", "").isalnum():
        raise ValueError(f"a score name is letters, digits and underscores, got {name!r}")
    if name in SCORES and not replace:
        raise ValueError(f"score {name!r} is already registered (pass replace=True to replace it)")
    SCORES[name] = Score(name, fn, per_level, needs_discrete_actions, needs_success, needs_optimum,
                         needs_update_norms, problems, needs_max_returns, needs_optimal_steps)
    return SCORES[name]


def learnability(x: ScoreInputs):
    """SFL's `p (1 - p)`, with p the solved fraction of the completed episodes: highest at p = 1/2."""
    episodes = x.dones.sum(0, dtype=jnp.int32)
    p = x.solved.sum(0) / jnp.maximum(episodes, 1)
    return (p * (1.0 - p)).astype(jnp.float32), episodes > 0


def oracle_regret(x: ScoreInputs):
    """The true regret: the level's optimal return minus the mean return of its completed episodes
    (AMaze: `1 - 0.9 n* / max_steps` from the shortest action count n*, 0 if unsolvable)."""
    if x.optimal_returns is None or x.episode_returns is None:
        raise ValueError("oracle_regret needs each level's optimal return (the environment's level_facts)")
    episodes = x.dones.sum(0, dtype=jnp.int32)
    mean_return = jnp.where(x.dones, x.episode_returns, 0.0).sum(0) / jnp.maximum(episodes, 1)
    return (x.optimal_returns - mean_return).astype(jnp.float32), episodes > 0


def discounted_episode_returns(rewards, dones, gamma):
    """`(mean float32[N], episodes int32[N])`: the mean over each env's completed episodes of
    `sum_k gamma^k r_k`, k counted from the episode's first step (ReMiDi's `monte_carlo_regret` returns)."""
    previous = previous_end(dones)
    k = (jnp.arange(dones.shape[0])[:, None] - previous - 1).astype(jnp.float32)  # steps since the episode began
    return mean_over_ends(episode_sums(rewards * gamma ** k, previous), dones)


def perfect_regret(x: ScoreInputs):
    """ReMiDi's true regret, as the authors' code computes it (`perfect_regret` of Michael-Beukman/ReMiDi's
    `lib/common/plr.py`, the score of their maze scripts): their optimum minus the mean discounted return of
    the level's completed episodes (`discounted_episode_returns`). Their optimum for a shortest action count
    N and episodes of at most M steps is `(1 - 0.9 (N + 1) / M) gamma^N`, 0 where the goal cannot be reached.
    That is the discounted return of an optimal episode one action longer than the maze's (AMaze's and
    jaxued's reward is `1 - 0.9 N / M`, on the N-th step, discounted by gamma^(N - 1)): an optimal episode
    scores a little below 0 under it, and we keep it so (the authors' runs were scored so). Written from the
    optimal return `1 - 0.9 N / M` and N (`level_facts`), so it holds for rewards of AMaze's form."""
    if x.optimal_returns is None or x.optimal_steps is None:
        raise ValueError("perfect_regret needs each level's optimal return and action count (the environment's "
                         "level_facts)")
    n = x.optimal_steps.astype(jnp.float32)
    per_step = (x.reward_scale - x.optimal_returns) / jnp.maximum(n, 1.0)  # 0.9 / M, times the reward scale
    optimum = jnp.where(x.optimal_steps >= 1, (x.optimal_returns - per_step) * x.gamma ** n, 0.0)
    mean_return, episodes = discounted_episode_returns(x.rewards, x.dones, x.gamma)
    return (optimum - mean_return).astype(jnp.float32), episodes > 0


def clipped_advantages(x: ScoreInputs):
    """float32[T, N]: DEGen's "clipped GAE" (their `compute_clipped_gae(..., use_max_value=True)`): from
    each start step s, the discounted sum of TD errors is clipped at 0 from above after every step
    (`c_i = min(c_{i-1} + gamma^i delta_{s+i}, 0)`, so it only ever records how much worse than the
    value estimate things went), and the clipped sums are mixed with GAE's lambda weights up to the
    episode's end (the rest of the weight on the end's sum) or to the rollout's end. O(T^2) per env."""
    lam, gamma = x.gae_lambda, x.gamma
    steps = x.values.shape[0]
    next_values = jnp.concatenate([x.values[1:], x.last_value[None]], axis=0)
    deltas = x.rewards + gamma * next_values * (1.0 - x.dones) - x.values
    start = jnp.arange(steps)[:, None]

    def step(carry, inputs):
        mixed, total, ended = carry        # [start, env] each
        now, delta, done = inputs
        on = now >= start
        i = (now - start).astype(jnp.float32)
        total = jnp.minimum(total + jnp.where(on, gamma ** i * delta[None], 0.0), 0.0)
        done = on & done[None]
        mixed = mixed + jnp.where(ended, 0.0, lam ** i * total + jnp.where(done, lam ** (i + 1) / (1 - lam) * total, 0.0))
        return (mixed, total, ended | done), None

    zeros = jnp.zeros_like(x.values)
    (mixed, total, ended), _ = jax.lax.scan(step, (zeros, zeros, jnp.zeros(x.values.shape, bool)),
                                            (jnp.arange(steps), deltas, x.dones))
    i = (steps - start).astype(jnp.float32)
    return (1 - lam) * (mixed + jnp.where(ended, 0.0, lam ** i / (1 - lam) * total))


def mna(x: ScoreInputs):
    """DEGen's MNA score (`score_function=mna`): the summed magnitude of the clipped negative
    advantages of the whole rollout, on levels solved at least once (max return > 0), else 0."""
    solved = x.max_returns > 0
    score = -jnp.minimum(clipped_advantages(x), 0.0).sum(0) * solved
    return score.astype(jnp.float32), x.dones.any(0)


register_score("pvl", positive_value_loss)
register_score("maxmc", max_monte_carlo, needs_max_returns=True)
for _name, _fn in (("l1_value_loss", l1_value_loss), ("gae", gae), ("policy_entropy", policy_entropy),
                   ("one_step_td", one_step_td_error)):
    register_score(_name, _fn)
register_score("least_confidence", least_confidence, needs_discrete_actions=True)
register_score("min_margin", min_margin, needs_discrete_actions=True)
register_score("normalized_policy_entropy", normalized_policy_entropy, needs_discrete_actions=True)
register_score("one_step_td_level_replay", one_step_td_level_replay)
register_score("learnability", learnability, per_level=True, needs_success=True)
register_score("oracle_regret", oracle_regret, per_level=True, needs_optimum=True)
register_score("perfect_regret", perfect_regret, per_level=True, needs_optimum=True, needs_optimal_steps=True)


def _mna_problems(cfg):
    if not cfg.ppo.gae_lambda < 1:
        yield (f"--score-function mna weighs its clipped sums by lambda^i / (1 - lambda): --gae-lambda must be < 1, "
               f"got {cfg.ppo.gae_lambda}")


register_score("mna", mna, per_level=True, problems=_mna_problems)
SCORE_FUNCTIONS = tuple(SCORES)
"""The built-in scores (`SCORES` also holds those registered later)."""
STEP_SCORES = {n: s.fn for n, s in SCORES.items() if not s.per_level}
"""The built-in per-step scores (kept for scripts)."""


def previous_end(dones: jax.Array) -> jax.Array:
    """int32[T, N]: the step of the latest episode end strictly before t, per env (-1: none yet)."""
    ends = jnp.where(dones, jnp.arange(dones.shape[0])[:, None], -1)
    last_end = jax.lax.cummax(ends, axis=0)                     # latest end at or before t
    return jnp.concatenate([jnp.full_like(last_end[:1], -1), last_end[:-1]], axis=0)


def episode_sums(per_step: jax.Array, previous: jax.Array) -> jax.Array:
    """float32[T, N]: the sum of `per_step` from the start of the episode that step t belongs to up to t
    (`previous`: `previous_end(dones)`)."""
    csum = jnp.cumsum(per_step, axis=0)
    return csum - jnp.where(previous >= 0, jnp.take_along_axis(csum, jnp.maximum(previous, 0), axis=0), 0.0)


def mean_over_ends(at_end: jax.Array, dones: jax.Array):
    """`(means float32[N], episodes int32[N])`: the mean of `at_end` over the steps that end an episode."""
    episodes = dones.sum(0, dtype=jnp.int32)
    return jnp.where(dones, at_end, 0.0).sum(0) / jnp.maximum(episodes, 1), episodes


def completed_episode_mean(per_step: jax.Array, dones: jax.Array):
    """Mean over completed episodes of each episode's mean of `per_step`, per env:
    `(means float32[N], episodes int32[N])`; 0 where no episode completed."""
    previous = previous_end(dones)
    return mean_over_ends(episode_sums(per_step, previous) / (jnp.arange(dones.shape[0])[:, None] - previous), dones)


def rollout_max_return(episode_returns: jax.Array, dones: jax.Array, prior_max: jax.Array):
    """float32[N]: the best return on each level, from `prior_max` and this rollout's episodes."""
    return jnp.maximum(prior_max, jnp.where(dones, episode_returns, -jnp.inf).max(0))


def score_levels(name: str, x: ScoreInputs):
    """`(scores float32[N], valid bool[N])` for the score function `name`."""
    score = SCORES.get(name)
    if score is None:
        raise ValueError(f"unknown score function {name!r}; choose from {', '.join(SCORES)}")
    if score.per_level:
        scores, valid = score.fn(x)
        return jnp.asarray(scores, jnp.float32), valid
    means, episodes = completed_episode_mean(score.fn(x).astype(jnp.float32), x.dones)
    return means, episodes > 0
