"""XLand-MiniGrid throughput: our wrapped env beside xminigrid's own, same rulesets, batch, steps and machine.

Each mode runs `jit(scan(vmap(step)))` over `--envs` envs for `--steps` steps with uniformly random actions
(drawn before the timed region), on rulesets drawn from the first `--envs` of `high-3m` (v2, generated here; our
modes' envs start on draws of the pool generator, xminigrid's envs on one batch of them), and reduces
every observation to a checksum (so XLA cannot skip computing it):

- ours:       `ReplayAutoReset(XLand())`: on done the level's next room (xminigrid's auto-reset draw);
- ours-gen:   `GenerateAutoReset(XLand(), pool generator)`: on done a fresh ruleset and room (domain randomisation);
- ours-trial: `ReplayAutoReset(Trials(XLand()))`, trials of 4,096 steps (SFL's meta-RL): the episodes of a trial
              restart the level, the previous action and reward join the observation;
- xminigrid:  xminigrid's `XLand-MiniGrid-R4-13x13` under its `GymAutoResetWrapper`, the ruleset in its params
              (vmapped), as SFL's training runs it.

    python benchmarks/xland_throughput.py [--envs 1024 ...] [--steps 64] [--repeats 3] [--modes ...]
"""

from __future__ import annotations

import jax
import xminigrid
from wrapped_env_bench import checksum_rollout, ours_step, throughput_table
from xminigrid.wrappers import GymAutoResetWrapper

from minimax.envs.trials import Trials
from minimax.envs.xland import benchmarks
from minimax.envs.xland.env import XLand
from minimax.envs.xland.spec import pool_generator

MODES = ("ours", "ours-gen", "ours-trial", "xminigrid")


def build(mode: str, num_envs: int):
    """`(init(key) -> state, rollout(state, key, actions) -> (state, key, checksum, dones))`, jitted."""
    generator = pool_generator(benchmarks.load("high-3m", "v2", num_envs))
    if mode in ("ours", "ours-gen"):
        env = XLand()
        return checksum_rollout(*ours_step(mode, env, env.default_params(), generator, num_envs))
    if mode == "ours-trial":
        env = Trials(XLand())
        return checksum_rollout(*ours_step("ours", env, env.default_params(steps=4096), generator, num_envs))
    if mode != "xminigrid":
        raise ValueError(f"unknown mode {mode!r}; choose from {', '.join(MODES)}")
    theirs, params = xminigrid.make("XLand-MiniGrid-R4-13x13")
    theirs = GymAutoResetWrapper(theirs)
    levels = jax.vmap(generator)(jax.random.split(jax.random.key(0), num_envs))
    per_env = jax.vmap(lambda level: params.replace(ruleset=level.ruleset))(levels)

    def init(key):
        return jax.vmap(theirs.reset)(per_env, jax.random.split(key, num_envs))

    def step(key, timestep, actions):
        del key
        timestep = jax.vmap(theirs.step)(per_env, timestep, actions)
        return timestep.observation, timestep, timestep.reward, timestep.last(), {}
    return checksum_rollout(init, step)


def random_actions(steps: int, num_envs: int):
    return jax.random.randint(jax.random.key(1), (steps, num_envs), 0, 6)


if __name__ == "__main__":
    throughput_table(__doc__, MODES, build, random_actions)
