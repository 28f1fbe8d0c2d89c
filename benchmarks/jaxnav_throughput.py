"""JaxNav throughput: our wrapped env beside jaxmarl's own, same batch, steps and machine.

Each mode runs `jit(scan(vmap(step)))` over each `--envs` batch for `--steps` steps with uniformly
random (speed, turn rate) actions drawn before the timed region, and reduces every observation to a
checksum (so XLA cannot skip computing it):

- ours:     `ReplayAutoReset(JaxNavSingle())`, on done back to the start of the same level (PLR replay,
            evaluation; the level's first observation is stored, so a reset costs no lidar sweep);
- ours-gen: `GenerateAutoReset(JaxNavSingle(), make_nav_generator(params))`, on done a fresh level from
            a pool generated only as episodes end (domain randomisation);
- jaxmarl:  jaxmarl's `JaxNav.step`, whose auto-reset samples a fresh level (and its observation) on
            every step and selects it where an episode ended;
- jaxmarl-noreset: jaxmarl's `JaxNav.step_env`, no reset at all: the cost of its dynamics and lidar
            alone, the floor that shows what our reset and bookkeeping add.

    python benchmarks/jaxnav_throughput.py [--envs 32 1024 4096] [--steps 64] [--repeats 3] [--modes ...]
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from wrapped_env_bench import OURS, checksum_rollout, ours_step, throughput_table

from minimax.envs.jaxnav import JaxNavSingle, NavParams, jaxnav_env, make_nav_generator
from minimax.envs.jaxnav.env import known_warnings

MODES = ("ours", "ours-gen", "jaxmarl", "jaxmarl-noreset")


def build(mode: str, num_envs: int):
    """`(init(key) -> state, rollout(state, key, actions) -> (state, key, checksum, dones))`, jitted."""
    env, params = JaxNavSingle(), NavParams()
    if mode in OURS:
        return checksum_rollout(*ours_step(mode, env, params, make_nav_generator(params), num_envs))
    if mode not in ("jaxmarl", "jaxmarl-noreset"):
        raise ValueError(f"unknown mode {mode!r}; choose from {', '.join(MODES)}")
    theirs = jaxnav_env(params)
    their_step = theirs.step if mode == "jaxmarl" else theirs.step_env

    def init(key):
        with known_warnings():
            return jax.vmap(theirs.reset)(jax.random.split(key, num_envs))[1]

    def step(key, state, actions):
        with known_warnings():
            obs, state, reward, done, info = jax.vmap(lambda k, s, a: their_step(k, s, {"agent_0": a}))(
                jax.random.split(key, num_envs), state, actions)
        return obs["agent_0"], state, reward["agent_0"], done["__all__"], info
    return checksum_rollout(init, step)


def random_actions(steps: int, num_envs: int):
    """Uniform (speed, turn rate) within jaxmarl's bounds."""
    return jax.random.uniform(jax.random.key(1), (steps, num_envs, 2), minval=jnp.array([0.0, -0.6]),
                              maxval=jnp.array([1.0, 0.6]))


def main():
    throughput_table(__doc__, MODES, build, random_actions)


if __name__ == "__main__":
    main()
