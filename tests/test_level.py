"""Level text round-trip and validation errors that name the problem."""

import jax
import numpy as np
import pytest

from minimax.envs.maze import InvalidLevelError, Level, make_dr_generator
from minimax.envs.maze.level import validate_level


def test_text_round_trip_on_random_levels():
    levels = jax.vmap(make_dr_generator(7, 9, n_walls=20))(jax.random.split(jax.random.key(0), 20))
    for i in range(20):
        level = jax.tree.map(lambda x: np.asarray(x[i]), levels)
        again = Level.from_text(Level(*(level.wall_map, level.goal_pos, level.agent_pos, level.agent_dir)).to_text())
        jax.tree.map(np.testing.assert_array_equal, again, level)


def test_text_format_and_headers():
    text = "size: 2x3\nagent_dir: 2\nagent: x=0 y=0\ngoal: x=2 y=1\nwalls: 1\nA#.\n..G\n"
    level = Level.from_text(text)
    assert level.wall_map.tolist() == [[False, True, False], [False, False, False]]
    assert level.agent_pos.tolist() == [0, 0] and level.goal_pos.tolist() == [2, 1]
    assert int(level.agent_dir) == 2
    assert level.to_text() == "agent_dir: 2\nA#.\n..G\n"
    assert int(Level.from_text("A.G", agent_dir=3).agent_dir) == 3


@pytest.mark.parametrize("text, message", [
    ("A.x\n..G", r"unknown character 'x' at x=2 y=0"),
    ("A..\n.G", "row 1 has 2 characters, expected 3"),
    ("...\n..G", "exactly one agent"),
    ("AA.\n..G", "exactly one agent"),
    ("A..\n...", "exactly one goal"),
    ("AG.\n..G", "exactly one goal"),
    ("A.g\n..G", "candidate goals"),
    ("size: 3x3\nA..\n..G", "size header says 3x3 but the grid is 2x3"),
    ("agent: x=1 y=0\nA..\n..G", "agent header"),
    ("walls: 2\nA#.\n..G", "walls header says 2"),
    ("agent_dir: 4\nA..\n..G", "agent_dir 4"),
    ("agent_dir: random\nA..\n..G", "agent_dir 'random'"),
    ("agent_dir: up\nA..\n..G", "agent_dir: expected 0-3"),
    ("", "no grid rows"),
])
def test_malformed_text_is_named(text, message):
    with pytest.raises(InvalidLevelError, match=message):
        Level.from_text(text)


WALLS = np.array([[False, True, False], [False, False, False]])


@pytest.mark.parametrize("agent, goal, direction, message", [
    ((1, 0), (2, 1), 0, "agent at x=1 y=0 is on a wall"),
    ((0, 0), (1, 0), 0, "goal at x=1 y=0 is on a wall"),
    ((2, 1), (2, 1), 0, "agent is on the goal"),
    ((3, 0), (2, 1), 0, "agent position x=3 y=0 is out of bounds for a 2x3 maze"),
    ((0, 0), (0, -1), 0, "goal position x=0 y=-1 is out of bounds"),
    ((0, 0), (2, 1), 5, "agent_dir 5"),
])
def test_invalid_levels_are_named(agent, goal, direction, message):
    with pytest.raises(InvalidLevelError, match=message):
        Level.create(WALLS, goal, agent, direction).validate()


def test_wrong_size_and_batches():
    level = Level.create(WALLS, (2, 1), (0, 0), 0)
    with pytest.raises(InvalidLevelError, match=r"wrong size: level is 2x3 \(HxW\), expected 13x13"):
        level.validate(13, 13)
    batch = jax.tree.map(lambda x: np.stack([x, x]), level)
    validate_level(batch, 2, 3)
    bad = batch.replace(agent_pos=np.array([[0, 0], [1, 0]]))
    with pytest.raises(InvalidLevelError, match=r"level \(1,\): agent at x=1 y=0 is on a wall"):
        validate_level(bad)
    with pytest.raises(InvalidLevelError, match="one level"):
        batch.to_text()
