"""Meta-RL trials (RL^2): several episodes of one level as one episode of the learner, for any environment.

SFL and NCC train XLand-MiniGrid agents this way: a *trial* is `steps` env steps on one level (theirs 4,096);
inside it every episode that ends restarts the same level (`restart_state`: XLand's next room of the same
ruleset), the recurrent state is never reset, and the observation carries the previous action and reward, so
the agent can find the task's rules in one episode and use them in the next. For the learner a trial is an
episode: `done` only at its end (the runners cut GAE and reset the recurrent state there, as SFL does at
trial start only), its return the trial's summed reward.

`Trials(env, steps, episodes)` is an `Environment` over `TrialParams`; a trial ends after `steps` steps or
`episodes` finished episodes, whichever comes first (0: no such limit; SFL evaluates trials of 10 episodes).
What it adds to the inner env's `info`:
- `episode_done`, `episode_solved`: the inner episode's end and success at this step, which the success
  counters read where they exist (`runners/rollout.py: count_outcomes`, SFL's learnability over the episodes
  of a trial, and the evaluation's solved rate, the fraction of a trial's episodes solved: SFL's win rate);
- `solved`: some episode of the trial was solved (the trial's own outcome, read at its end);
- `episode_stats` at the trial's end: `trial/episodes` and `trial/solved_rate`, means in the training logs.
The observation is the inner env's (a dict; a plain array becomes `{"obs": ...}`) plus `prev_action` and
`prev_reward` (zero at a trial's start; across an episode's end, the reward that ended it, as SFL feeds it).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

from minimax.envs.environment import Box, Dict, Environment
from minimax.envs.wrappers import tree_select


@struct.dataclass
class TrialParams:
    """The inner env's params and the trial's length (static)."""

    inner: Any = struct.field(pytree_node=False)
    steps: int = struct.field(pytree_node=False, default=0)
    episodes: int = struct.field(pytree_node=False, default=0)

    def __post_init__(self):
        for name in ("steps", "episodes"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 0:
                raise ValueError(f"TrialParams.{name} must be a non-negative int, got {value!r}")
        if not (self.steps or self.episodes):
            raise ValueError("a trial needs an end: TrialParams.steps or .episodes > 0")

    @property
    def max_steps(self) -> int:
        """The longest trial (the evaluation loop's bound)."""
        return min(s for s in (self.steps, self.episodes * self.inner.max_steps) if s)


@struct.dataclass
class TrialState:
    inner: Any
    t: jax.Array             # int32: steps into the trial
    episodes: jax.Array      # int32: episodes finished in it
    solved: jax.Array        # int32: of which solved
    prev_action: jax.Array
    prev_reward: jax.Array   # float32


class Trials(Environment):
    """`env` played in trials (module docstring)."""

    def __init__(self, env: Environment):
        self.env = env

    def default_params(self, steps: int = 0, episodes: int = 0, **overrides) -> TrialParams:
        return TrialParams(self.env.default_params(**overrides), steps, episodes)

    def init_state(self, level, params: TrialParams) -> TrialState:
        space = self.env.action_space(params.inner)
        zero = jnp.zeros((), jnp.int32)
        return TrialState(inner=self.env.init_state(level, params.inner), t=zero, episodes=zero, solved=zero,
                          prev_action=jnp.zeros(space.shape, space.dtype), prev_reward=jnp.zeros((), jnp.float32))

    def level_of(self, state: TrialState):
        return self.env.level_of(state.inner)

    def step_env(self, key, state: TrialState, action, params: TrialParams):
        inner, reward, ended, info = self.env.step_env(key, state.inner, action, params.inner)
        inner = tree_select(ended, self.env.restart_state(inner, params.inner), inner)
        t = state.t + 1
        episodes = state.episodes + ended.astype(jnp.int32)
        solved = state.solved + (ended & info["solved"]).astype(jnp.int32)
        by_steps = (t >= params.steps) if params.steps else jnp.zeros((), bool)
        by_episodes = (episodes >= params.episodes) if params.episodes else jnp.zeros((), bool)
        done = by_steps | by_episodes
        stats = {**info.get("episode_stats", {}), "trial/episodes": episodes.astype(jnp.float32),
                 "trial/solved_rate": solved / jnp.maximum(episodes, 1)}
        info = {**info, "episode_done": ended, "episode_solved": ended & info["solved"], "solved": solved > 0,
                "terminated": by_episodes, "truncated": done & ~by_episodes, "episode_stats": stats}
        state = TrialState(inner=inner, t=t, episodes=episodes, solved=solved,
                           prev_action=jnp.asarray(action, state.prev_action.dtype).reshape(state.prev_action.shape),
                           prev_reward=jnp.asarray(reward, jnp.float32))
        return state, reward, done, info

    def get_obs(self, state: TrialState, params: TrialParams) -> dict:
        obs = self.env.get_obs(state.inner, params.inner)
        obs = dict(obs) if isinstance(obs, dict) else {"obs": obs}
        return {**obs, "prev_action": state.prev_action, "prev_reward": state.prev_reward}

    def observation_space(self, params: TrialParams) -> Dict:
        inner = self.env.observation_space(params.inner)
        spaces = dict(inner.spaces) if isinstance(inner, Dict) else {"obs": inner}
        action = self.env.action_space(params.inner)
        return Dict({**spaces, "prev_action": action,
                     "prev_reward": Box(-jnp.inf, jnp.inf, (), jnp.float32)})

    def action_space(self, params: TrialParams):
        return self.env.action_space(params.inner)
