"""Auto-reset wrappers: replay the same level, or start a fresh generated one."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from minimax.envs import GenerateAutoReset, ReplayAutoReset
from minimax.envs.maze import AMaze, Level, MazeParams, make_dr_generator
from minimax.envs.maze.env import FORWARD, LEFT

ENV = AMaze()


def test_replay_resets_to_the_same_level_with_the_reset_observation():
    level = Level.from_text("A.G\n...", agent_dir=0)
    params = MazeParams(height=2, width=3, max_steps=10)
    wrapped = ReplayAutoReset(ENV)
    obs0, state = wrapped.reset_to_level(None, level, params)
    step = jax.jit(wrapped.step)
    obs, state, reward, done, info = step(None, state, FORWARD, params)  # to (1,0), facing the goal
    assert not done and state.agent_pos.tolist() == [1, 0]
    obs, state, reward, done, info = step(None, state, FORWARD, params)
    assert done and bool(info["terminated"]) and float(reward) == pytest.approx(1 - 0.9 * 2 / 10, abs=1e-6)
    assert state.agent_pos.tolist() == [0, 0] and int(state.time) == 0
    jax.tree.map(np.testing.assert_array_equal, obs, obs0)
    # A time-limit ending replays too.
    short = MazeParams(height=2, width=3, max_steps=2)
    _, state = wrapped.reset_to_level(None, level, short)
    for _ in range(2):
        _, state, reward, done, info = step(None, state, LEFT, short)
    assert done and bool(info["truncated"]) and int(state.agent_dir) == 0 and int(state.time) == 0


def test_generate_starts_every_episode_on_a_fresh_level():
    params = MazeParams(max_steps=3)
    n_envs = 8
    gen = make_dr_generator(13, 13, n_walls=60)
    wrapped = GenerateAutoReset(ENV, gen, n_envs, pool_size=12)  # refills mid-run
    obs, state = jax.jit(wrapped.reset, static_argnums=1)(jax.random.key(0), params)
    step = jax.jit(wrapped.step)
    actions = jax.random.randint(jax.random.key(1), (20, n_envs), 0, 3)
    started = [state.env_state.level]
    episodes = n_envs
    for t, acts in enumerate(actions):
        before = state
        obs, state, reward, done, info = step(jax.random.key(t), state, acts, params)
        done = np.asarray(done)
        episodes += done.sum()
        started.append(jax.tree.map(lambda x: x[done], state.env_state.level))
        # Envs that did not finish keep their level and clock.
        keep = ~done
        np.testing.assert_array_equal(state.env_state.level.wall_map[keep], before.env_state.level.wall_map[keep])
        np.testing.assert_array_equal(state.env_state.time[keep], before.env_state.time[keep] + 1)
        np.testing.assert_array_equal(state.env_state.time[done], 0)
        ref = jax.vmap(ENV.get_obs, in_axes=(0, None))(state.env_state, params)
        jax.tree.map(np.testing.assert_array_equal, obs, ref)
    walls = np.concatenate([np.asarray(lv.wall_map).reshape(-1, 169) for lv in started])
    goals = np.concatenate([np.asarray(lv.goal_pos) for lv in started])
    assert len(walls) == episodes and episodes > 3 * n_envs
    keys = {w.tobytes() + g.tobytes() for w, g in zip(walls, goals)}
    assert len(keys) == episodes  # no level handed out twice


def test_generate_is_deterministic_and_vmaps_over_seeds():
    params = MazeParams(max_steps=4)
    wrapped = GenerateAutoReset(ENV, make_dr_generator(13, 13, 60), num_envs=4)

    def run(key):
        _, state = wrapped.reset(key, params)

        def body(state, k):
            _, state, reward, done, _ = wrapped.step(k, state, jnp.full(4, FORWARD), params)
            return state, done.sum()

        state, dones = jax.lax.scan(body, state, jax.random.split(key, 9))
        return state.env_state.level.wall_map, dones

    keys = jax.random.split(jax.random.key(5), 2)
    batched = jax.jit(jax.vmap(run))(keys)
    for i in range(2):
        single = jax.jit(run)(keys[i])
        jax.tree.map(lambda b, s: np.testing.assert_array_equal(np.asarray(b)[i], np.asarray(s)), batched, single)


def test_generate_rejects_a_pool_smaller_than_the_batch():
    with pytest.raises(ValueError, match=r"pool_size \(2\) must be >= num_envs \(4\)"):
        GenerateAutoReset(ENV, make_dr_generator(), num_envs=4, pool_size=2)
