"""DR's env stream: episodes continue across updates by default; `--dr-restart-each-update` is
the minimax release's stream (fresh levels every update, the carry kept), for comparisons."""

import jax
import numpy as np
import pytest

from minimax.training.builder import build_runner
from minimax.config import TrainConfig

pytestmark = pytest.mark.contract  # tests/conftest.py's tiers: training programs at their tiny size

TINY = dict(maze_height=5, maze_width=5, n_walls=3, max_episode_steps=32, n_actions=3, recurrent_size=8,
            num_envs=6, num_steps=8, n_epochs=1, progress=False)


def test_episodes_continue_by_default_and_restart_on_fresh_levels_when_asked():
    continuing = build_runner(TrainConfig.from_options(**TINY))
    restarting = build_runner(TrainConfig.from_options(**TINY, dr_restart_each_update=True))
    assert not continuing.restart_each_update and restarting.restart_each_update
    state = jax.jit(continuing.init)(jax.random.key(0))
    after, metrics = jax.jit(continuing.step)(state)
    stream = after.stream
    assert np.asarray(stream.episode_length).max() > 0  # episodes of up to 32 steps are running after 8

    fresh = jax.jit(restarting.restart)(jax.random.key(1), stream)
    walls = lambda s: np.asarray(s.env_state.env_state.level.wall_map)  # noqa: E731
    changed = [not np.array_equal(a, b) for a, b in zip(walls(fresh), walls(stream))]
    assert sum(changed) >= 4  # (almost) every env is on a new level
    assert (np.asarray(fresh.env_state.env_state.time) == 0).all()
    # The episodes in progress are dropped uncounted; the carry is kept and not reset (the release's
    # rollouts start with `done` False).
    assert (np.asarray(fresh.episode_return) == 0).all() and (np.asarray(fresh.episode_length) == 0).all()
    assert not np.asarray(fresh.reset).any()
    for a, b in zip(jax.tree.leaves(fresh.carry), jax.tree.leaves(stream.carry)):
        np.testing.assert_array_equal(a, b)
