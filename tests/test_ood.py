"""The OOD suite: file mazes parse faithfully, and every maze samples the distribution it names.

Each maze's sampler is jitted and vmapped once over a fixed batch of keys (cached), so the
file costs one compilation per maze.
"""

from collections import deque
from functools import lru_cache

import jax
import numpy as np
import pytest

from minimax.envs.maze import ood
from minimax.envs.maze.level import InvalidLevelError, Level, parse_grid, split_header, validate_level

N_KEYS = 256
SMALL_MAZES = [name for name in ood.list_mazes() if name not in ("PerfectMazeLarge", "PerfectMazeXL")]


def _file_entries() -> dict[str, tuple[dict, list[str]]]:
    """name -> (header, grid rows), read straight from the data file, independently of ood.py."""
    entries, block = {}, []
    lines = ood.DATA_FILE.read_text().splitlines() + [""]
    for line in lines:
        if line.startswith("#") and (" " in line or line == "#"):
            continue
        if line.strip():
            block.append(line.strip())
        elif block:
            header, rows = split_header("\n".join(block))
            entries[header["name"]] = (header, rows)
            block = []
    return entries


FILE = _file_entries()


@lru_cache(maxsize=None)
def batch(name: str) -> Level:
    """`N_KEYS` samples of a maze, as numpy arrays."""
    maze = ood.get_maze(name)
    keys = jax.random.split(jax.random.PRNGKey(0), N_KEYS)
    return jax.tree_util.tree_map(np.asarray, jax.jit(jax.vmap(maze.sample))(keys))


def reachable(walls: np.ndarray, start) -> np.ndarray:
    """bool[H, W]: the free cells reachable from `start` = (x, y), by breadth-first search."""
    h, w = walls.shape
    seen = np.zeros_like(walls)
    seen[start[1], start[0]] = True
    queue = deque([tuple(start)])
    while queue:
        x, y = queue.popleft()
        for nx, ny in ((x + 1, y), (x, y + 1), (x - 1, y), (x, y - 1)):
            if 0 <= nx < w and 0 <= ny < h and not walls[ny, nx] and not seen[ny, nx]:
                seen[ny, nx] = True
                queue.append((nx, ny))
    return seen


# ---------------------------------------------------------------------------------------------
# File mazes

def test_every_file_maze_is_registered_with_its_size_and_budget():
    assert len(FILE) == 10
    for name, (header, rows) in FILE.items():
        maze = ood.get_maze(name)
        assert maze.name == name
        assert f"{maze.height}x{maze.width}" == header["size"] == f"{len(rows)}x{len(rows[0])}"
        assert maze.max_steps == int(header["max_steps"])


def test_fixed_mazes_are_the_file_grids_and_round_trip():
    fixed = [name for name, (header, rows) in FILE.items()
             if header["agent_dir"] != "random" and "one of" not in header["goal"]]
    assert fixed == ["SixteenRooms", "Labyrinth", "LabyrinthFlipped", "StandardMaze"]
    for name, (header, rows) in FILE.items():
        maze = ood.get_maze(name)
        assert maze.is_fixed == (name in fixed)
        if not maze.is_fixed:
            assert maze.fixed_level is None
            continue
        level = maze.fixed_level
        walls, agents, goals, _ = parse_grid(rows)
        np.testing.assert_array_equal(level.wall_map, walls)
        assert tuple(np.asarray(level.agent_pos)) == agents[0]
        assert tuple(np.asarray(level.goal_pos)) == goals[0]
        assert int(level.agent_dir) == int(header["agent_dir"])
        again = Level.from_text(level.to_text())
        for a, b in zip(jax.tree_util.tree_leaves(level), jax.tree_util.tree_leaves(again)):
            np.testing.assert_array_equal(a, b)
        # Sampling a fixed maze always gives its level.
        for a, b in zip(jax.tree_util.tree_leaves(level), jax.tree_util.tree_leaves(batch(name))):
            assert (b == np.asarray(a)).all()


@pytest.mark.parametrize("name", SMALL_MAZES)
def test_samples_are_valid_levels(name):
    maze = ood.get_maze(name)
    levels = batch(name)
    assert levels.wall_map.shape == (N_KEYS, maze.height, maze.width)
    validate_level(levels, height=maze.height, width=maze.width)


def test_directions_fixed_or_uniform_as_the_file_says():
    for name, (header, _) in FILE.items():
        dirs = set(batch(name).agent_dir.tolist())
        if header["agent_dir"] == "random":
            assert dirs == {0, 1, 2, 3}, name
        else:
            assert dirs == {int(header["agent_dir"])}, name


@pytest.mark.parametrize("name", ["SmallCorridor", "LargeCorridor"])
def test_candidate_goals_cover_exactly_the_g_cells(name):
    header, rows = FILE[name]
    walls, agents, goals, candidates = parse_grid(rows)
    levels = batch(name)
    assert not goals and len(candidates) == int(header["goal"].split()[2])
    assert {tuple(g) for g in levels.goal_pos.tolist()} == set(candidates)
    assert (levels.agent_pos == agents[0]).all()
    assert (levels.wall_map == walls).all()


def _sixteen_rooms_text() -> str:
    header, rows = FILE["SixteenRooms"]
    return "\n".join([f"{k}: {v}" for k, v in header.items()] + rows)


@pytest.mark.parametrize("old, new, message", [
    ("walls: 46", "walls: 47", "walls header says 47 but the grid has 46"),
    ("agent: x=1 y=1", "agent: x=2 y=1", "agent header"),
    ("goal: x=11 y=11", "goal: x=11 y=10", "goal header"),
    ("size: 13x13", "size: 13x12", "size header"),
])
def test_header_grid_mismatch_names_the_maze(old, new, message):
    text = _sixteen_rooms_text()
    assert ood.parse_maze(text).name == "SixteenRooms"
    with pytest.raises(InvalidLevelError, match=f"OOD maze SixteenRooms: {message}"):
        ood.parse_maze(text.replace(old, new))


# ---------------------------------------------------------------------------------------------
# Procedural mazes

def test_four_rooms_has_one_door_per_wall_segment():
    levels = batch("FourRooms")
    walls = levels.wall_map
    segments = [walls[:, 8, :8], walls[:, 8, 9:], walls[:, :8, 8], walls[:, 9:, 8]]
    for segment in segments:
        assert ((~segment).sum(axis=1) == 1).all()  # exactly one door per segment
        assert len(set(np.argmin(segment, axis=1).tolist())) == 8  # at every position, over keys
    assert walls[:, 8, 8].all()
    assert walls.sum(axis=(1, 2)).tolist() == [33 - 4] * N_KEYS  # nothing but the cross
    assert len({tuple(g) for g in levels.goal_pos.tolist()}) > 100
    assert set(levels.agent_dir.tolist()) == {0, 1, 2, 3}


def test_crossing_has_five_gapped_lines_and_is_solvable():
    levels = batch("Crossing")
    assert (levels.agent_pos == [0, 0]).all() and (levels.goal_pos == [8, 8]).all()
    assert (levels.agent_dir == 0).all()
    odd = [1, 3, 5, 7]
    line_sets = set()
    for walls in levels.wall_map:
        rows = [y for y in odd if (~walls[y, :]).sum() == 1]
        cols = [x for x in odd if (~walls[:, x]).sum() == 1]
        assert len(rows) + len(cols) == 5
        on_lines = np.zeros_like(walls)
        on_lines[rows, :] = True
        on_lines[:, cols] = True
        assert not (walls & ~on_lines).any()  # every wall lies on a chosen line
        assert reachable(walls, (0, 0))[8, 8]
        line_sets.add((tuple(rows), tuple(cols)))
    assert len(line_sets) > 20  # many of the 56 choices of 5 lines among 8


def _check_perfect(walls: np.ndarray, agent) -> None:
    h, w = walls.shape
    ys, xs = np.indices(walls.shape)
    assert not walls[(ys % 2 == 0) & (xs % 2 == 0)].any()  # rooms are open
    assert walls[(ys % 2 == 1) & (xs % 2 == 1)].all()  # lattice corners are walls
    free = ~walls
    assert (reachable(walls, agent) == free).all()  # connected ...
    edges = (free[:, 1:] & free[:, :-1]).sum() + (free[1:, :] & free[:-1, :]).sum()
    assert edges == free.sum() - 1  # ... and acyclic: a tree
    assert free.sum() == 2 * ((h + 1) // 2) * ((w + 1) // 2) - 1


@pytest.mark.parametrize("name, size", [("PerfectMaze", 13), ("PerfectMazeMedium", 19)])
def test_perfect_mazes_are_spanning_trees(name, size):
    maze = ood.get_maze(name)
    assert (maze.height, maze.width, maze.max_steps) == (size, size, 2 * (size + 2) ** 2)
    levels = batch(name)
    for walls, agent in zip(levels.wall_map, levels.agent_pos):
        _check_perfect(walls, agent)
    assert len({w.tobytes() for w in levels.wall_map}) == N_KEYS
    assert set(levels.agent_dir.tolist()) == {0, 1, 2, 3}


def test_perfect_maze_xl_samples():
    maze = ood.get_maze("PerfectMazeXL")
    assert (maze.height, maze.width, maze.max_steps) == (99, 99, 20402)
    level = jax.jit(maze.sample)(jax.random.PRNGKey(1))
    validate_level(level, height=99, width=99)
    _check_perfect(np.asarray(level.wall_map), np.asarray(level.agent_pos))


# ---------------------------------------------------------------------------------------------
# Registry

def test_unknown_maze_lists_valid_names():
    with pytest.raises(ValueError, match="unknown OOD maze 'Nope'") as info:
        ood.get_maze("Nope")
    for name in ood.list_mazes():
        assert name in str(info.value)


def test_list_mazes_has_file_and_procedural_mazes():
    procedural = ["FourRooms", "Crossing", "PerfectMaze", "PerfectMazeMedium",
                  "PerfectMazeLarge", "PerfectMazeXL"]
    assert sorted(ood.list_mazes()) == sorted(list(FILE) + procedural)


def test_suites_and_aliases():
    dcd12 = ["SixteenRooms", "SixteenRooms2", "Labyrinth", "Labyrinth2", "StandardMaze",
             "StandardMaze2", "StandardMaze3", "Crossing", "FourRooms", "SmallCorridor",
             "LargeCorridor", "PerfectMazeMedium"]
    assert [m.name for m in ood.get_suite("dcd12")] == dcd12
    assert [m.name for m in ood.get_suite("validation")] == ["SixteenRooms", "Labyrinth", "StandardMaze"]
    assert [m.name for m in ood.get_suite("FourRooms")] == ["FourRooms"]
    assert [m.name for m in ood.get_suite(["Maze", "SimpleCrossingS11N5"])] == ["StandardMaze", "Crossing"]
    for alias, name in [("SixteenRoomsFewerDoors", "SixteenRooms2"), ("Maze", "StandardMaze"),
                        ("Maze2", "StandardMaze2"), ("Maze3", "StandardMaze3"),
                        ("SimpleCrossingS11N5", "Crossing")]:
        assert ood.get_maze(alias) is ood.get_maze(name)
    with pytest.raises(ValueError, match="unknown OOD maze"):
        ood.get_suite(["SixteenRooms", "Nope"])


def test_maze_is_a_static_value():
    maze = ood.get_maze("Labyrinth")
    assert maze == ood.get_maze("Labyrinth") and len({maze, ood.get_maze("Labyrinth")}) == 1
    start = jax.jit(lambda m, key: m.sample(key).agent_pos, static_argnums=0)(maze, jax.random.PRNGKey(0))
    assert tuple(np.asarray(start)) == (0, 12)
