"""The out-of-distribution (OOD) test suite: the held-out mazes UED agents are evaluated on.

Each maze is a *level distribution*, not a single level: some are fixed layouts, some draw
the agent direction or the goal at each reset, and some (FourRooms, Crossing, the perfect
mazes) are generated procedurally. So every maze is an `OODMaze` whose `sample(key)` is a
jittable, vmappable `key -> Level`; evaluation code can treat all of them alike.

The hand-made layouts and their facts (size, max_steps, aliases, benchmark sets) live in
`data/ood_mazes.txt`, parsed here with the helpers of `level.py`; the procedural generators
(`procedural.py`) follow that file's header.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.resources
import re
from typing import Iterable

import jax
import jax.numpy as jnp
import numpy as np

from minimax.envs.maze.level import (
    InvalidLevelError,
    Level,
    parse_xy,
    parse_grid,
    split_header,
    validate_level,
)

from minimax.envs.maze.procedural import (Sampler, carve_perfect_maze, crossing_sampler,  # noqa: F401
                                         four_rooms_sampler, perfect_maze_sampler)


@dataclasses.dataclass(frozen=True, eq=False)
class OODMaze:
    """One OOD maze: its size, step budget and level distribution `sample(key) -> Level`.

    Compared and hashed by identity (`get_maze` always returns the same object), so a maze
    can be a static argument of a jitted function.
    """

    name: str
    height: int
    width: int
    max_steps: int
    sample: Sampler
    fixed_level: Level | None = None  # the only level, when the maze is deterministic

    @property
    def is_fixed(self) -> bool:
        return self.fixed_level is not None

    def params(self, **overrides):
        """`MazeParams` for this maze: its size and step budget, plus any other options."""
        from minimax.envs.maze.env import MazeParams

        return MazeParams(height=self.height, width=self.width, max_steps=self.max_steps, **overrides)

    def params_for(self, train_params):
        """The params to evaluate this maze with: its size and step budget, the training
        mazes' observation and action settings (the `HeldOutLevel` contract, `envs/registry.py`)."""
        return train_params.replace(height=self.height, width=self.width, max_steps=self.max_steps)


# ---------------------------------------------------------------------------------------------
# Mazes written out in the data file

DATA_FILE = importlib.resources.files("minimax.envs.maze") / "data" / "ood_mazes.txt"

# Other names for the same mazes in the literature (see the data file's header).
ALIASES = {
    "SixteenRoomsFewerDoors": "SixteenRooms2",
    "Maze": "StandardMaze",
    "Maze2": "StandardMaze2",
    "Maze3": "StandardMaze3",
    "SimpleCrossingS11N5": "Crossing",
}

SUITES = {
    # The "dcd 12" benchmark set of the dcd / ACCEL / minimax papers.
    "dcd12": [
        "SixteenRooms", "SixteenRooms2", "Labyrinth", "Labyrinth2", "StandardMaze",
        "StandardMaze2", "StandardMaze3", "Crossing", "FourRooms", "SmallCorridor",
        "LargeCorridor", "PerfectMazeMedium",
    ],
    # Evaluated periodically during training.
    "validation": ["SixteenRooms", "Labyrinth", "StandardMaze"],
}


def _is_comment(line: str) -> bool:
    """'# ...' commentary; grid rows never contain a space, so they are never mistaken for it."""
    line = line.strip()
    return line == "#" or line.startswith("# ")


def _maze_blocks(text: str) -> list[str]:
    """The maze entries of the data file: comment lines dropped, entries split at blank lines."""
    lines = [line for line in text.splitlines() if not _is_comment(line)]
    blocks = re.split(r"\n\s*\n", "\n".join(lines))
    return [block for block in blocks if block.strip()]


def _layout_sampler(walls: np.ndarray, agent: tuple[int, int], goals: list[tuple[int, int]],
                    agent_dir: int | None) -> Sampler:
    """A fixed layout whose goal is drawn among `goals` and whose direction is `agent_dir`
    (uniform when None). Closes over numpy constants only, so it traces anywhere."""
    walls = np.asarray(walls, dtype=bool)
    agent = np.asarray(agent, dtype=np.int32)
    goals = np.asarray(goals, dtype=np.int32).reshape(-1, 2)

    def sample(key: jax.Array) -> Level:
        k_goal, k_dir = jax.random.split(key)
        if len(goals) == 1:
            goal = goals[0]
        else:
            goal = jnp.asarray(goals)[jax.random.randint(k_goal, (), 0, len(goals))]
        direction = jax.random.randint(k_dir, (), 0, 4) if agent_dir is None else agent_dir
        return Level.create(walls, goal, agent, direction)

    return sample


def _check_header(header: dict[str, str], walls, agents, goals, candidates) -> None:
    """The header facts (size, agent, goal, walls count) must agree with the grid."""
    h, w = walls.shape
    if len(agents) != 1:
        raise InvalidLevelError(f"expected exactly one agent 'A', found {len(agents)}")
    if bool(goals) == bool(candidates) or len(goals) > 1:
        raise InvalidLevelError(
            f"expected either one goal 'G' or candidate goals 'g', found {len(goals)} 'G' "
            f"and {len(candidates)} 'g'")
    for key in ("size", "max_steps", "agent", "agent_dir", "goal", "walls"):
        if key not in header:
            raise InvalidLevelError(f"missing header line '{key}:'")
    if header["size"] != f"{h}x{w}":
        raise InvalidLevelError(f"size header says {header['size']} but the grid is {h}x{w}")
    if parse_xy(header["agent"], "agent") != agents[0]:
        raise InvalidLevelError(f"agent header {header['agent']!r} disagrees with 'A' at {agents[0]}")
    if candidates:
        match = re.match(r"one of (\d+)", header["goal"])
        if not match or int(match.group(1)) != len(candidates):
            raise InvalidLevelError(
                f"goal header {header['goal']!r} disagrees with the {len(candidates)} 'g' cells")
    elif parse_xy(header["goal"], "goal") != goals[0]:
        raise InvalidLevelError(f"goal header {header['goal']!r} disagrees with 'G' at {goals[0]}")
    if int(header["walls"]) != int(walls.sum()):
        raise InvalidLevelError(f"walls header says {header['walls']} but the grid has {int(walls.sum())}")


def parse_maze(text: str) -> OODMaze:
    """One data-file entry -> `OODMaze`, validated; errors name the maze."""
    header, rows = split_header(text)
    name = header.get("name", "<unnamed maze>")
    try:
        walls, agents, goals, candidates = parse_grid(rows)
        _check_header(header, walls, agents, goals, candidates)
        agent_dir = None if header["agent_dir"] == "random" else int(header["agent_dir"])
        goal_cells = goals or candidates
        for goal in goal_cells:  # every level in the distribution must be valid
            validate_level(Level.create(walls, goal, agents[0], agent_dir or 0))
        max_steps = int(header["max_steps"])
    except ValueError as err:  # InvalidLevelError, or a header number that is not one
        raise InvalidLevelError(f"OOD maze {name}: {err}") from err
    fixed = None
    if agent_dir is not None and len(goal_cells) == 1:
        fixed = Level.create(walls, goal_cells[0], agents[0], agent_dir)
    h, w = walls.shape
    return OODMaze(name, h, w, max_steps, _layout_sampler(walls, agents[0], goal_cells, agent_dir), fixed)


def parse_maze_file(text: str) -> list[OODMaze]:
    """Every maze of a file in the `ood_mazes.txt` format."""
    return [parse_maze(block) for block in _maze_blocks(text)]


def load_level_file(path) -> list[OODMaze]:
    """Mazes to evaluate on from a user's text file: blocks separated by blank lines, each
    either a full `ood_mazes.txt` entry (a `name:` header and all its facts) or a single
    level as `Level.to_text` writes it (optional `name:` and `max_steps:` headers; the
    default budget is 2 * (H + 2) * (W + 2)). Unnamed levels are called `<file stem>-<i>`.
    Errors name the file and the block."""
    from pathlib import Path  # noqa: PLC0415

    from minimax.envs.maze.level import parse_level  # noqa: PLC0415

    path = Path(path)
    try:
        text = path.read_text()
    except OSError as e:
        raise InvalidLevelError(f"cannot read level file {path}: {e.strerror or e}") from None
    mazes = []
    for i, block in enumerate(_maze_blocks(text)):
        header, _ = split_header(block)
        try:
            if "name" in header and "size" in header and "max_steps" in header:
                mazes.append(parse_maze(block))
                continue
            level = parse_level(block)
            h, w = level.wall_map.shape
            budget = int(header.get("max_steps", _budget(h, w)))
            if budget < 1:
                raise InvalidLevelError(f"max_steps must be positive, got {budget}")
        except ValueError as e:
            raise InvalidLevelError(f"level file {path}, block {i + 1}: {e}") from None
        name = header.get("name", f"{path.stem}-{i}")
        mazes.append(OODMaze(name, h, w, budget, lambda key, level=level: level, level))
    if not mazes:
        raise InvalidLevelError(f"level file {path} holds no levels")
    names = [m.name for m in mazes]
    if len(set(names)) != len(names):
        raise InvalidLevelError(f"level file {path} names a maze twice: {sorted({n for n in names if names.count(n) > 1})}")
    return mazes


def _budget(height: int, width: int) -> int:
    """The standard evaluation step budget, 2 * (H + 2) * (W + 2) (border ring included)."""
    return 2 * (height + 2) * (width + 2)


def _procedural_mazes() -> list[OODMaze]:
    perfect = [("PerfectMaze", 13), ("PerfectMazeMedium", 19), ("PerfectMazeLarge", 49),
               ("PerfectMazeXL", 99)]
    return [
        OODMaze("FourRooms", 17, 17, 250, four_rooms_sampler(17)),
        # SimpleCrossing's own budget, 4 * (H + 2) * (W + 2) = 484.
        OODMaze("Crossing", 9, 9, 2 * _budget(9, 9), crossing_sampler(9, 5)),
        *(OODMaze(name, n, n, _budget(n, n), perfect_maze_sampler(n, n)) for name, n in perfect),
    ]


# ---------------------------------------------------------------------------------------------
# Registry

@functools.lru_cache(maxsize=None)
def _registry() -> dict[str, OODMaze]:
    """All mazes by name, built once so that `get_maze` returns the same (hashable) object."""
    mazes = parse_maze_file(DATA_FILE.read_text()) + _procedural_mazes()
    registry = {}
    for maze in mazes:
        if maze.name in registry:
            raise InvalidLevelError(f"OOD maze {maze.name} is defined twice")
        registry[maze.name] = maze
    return registry


def list_mazes() -> list[str]:
    """Names of every OOD maze (aliases excluded)."""
    return list(_registry())


def get_maze(name: str) -> OODMaze:
    """The maze called `name` (or one of its `ALIASES`)."""
    registry = _registry()
    maze = registry.get(ALIASES.get(name, name))
    if maze is None:
        raise ValueError(f"unknown OOD maze {name!r}; valid names: {', '.join(registry)} "
                         f"(aliases: {', '.join(ALIASES)})")
    return maze


def suite_maze_names(names: str | Iterable[str]) -> list[str]:
    """The maze names a suite spec means: a suite name (see `SUITES`), comma-separated maze
    names, or a list of names (not checked: `get_suite` resolves them)."""
    if isinstance(names, str):
        names = SUITES.get(names) or [n.strip() for n in names.split(",") if n.strip()]
    return list(names)


def get_suite(names: str | Iterable[str]) -> list[OODMaze]:
    """Mazes from a suite name (see `SUITES`), comma-separated maze names, or a list of names."""
    return [get_maze(name) for name in suite_maze_names(names)]
