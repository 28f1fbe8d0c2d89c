"""AMaze levels: the free parameters of one maze, as a pytree value.

A level is what a curriculum chooses, stores, mutates and replays, so it is a plain
value (a `flax.struct.dataclass`) that stacks, vmaps and checkpoints like any array.
The interior grid is stored; the outer ring of walls is implicit (a 13x13 level is
MiniGrid's 15x15 grid).

Coordinates are (x, y): x is the column (0 = left), y the row (0 = top), so
`wall_map[y, x]`. Directions follow MiniGrid: 0 right (+x), 1 down (+y), 2 left (-x),
3 up (-y).

The text format is the one of `ood_mazes.txt`: optional `key: value` header lines
followed by one row of characters per grid row, with '#' wall, '.' free, 'A' agent,
'G' goal. The header `agent_dir: N` carries the direction (0 when absent).
"""

from __future__ import annotations

import numpy as np
import jax.numpy as jnp
from flax import struct

WALL_CHAR = "#"
FREE_CHAR = "."
AGENT_CHAR = "A"
GOAL_CHAR = "G"
CANDIDATE_GOAL_CHAR = "g"
GRID_CHARS = frozenset(WALL_CHAR + FREE_CHAR + AGENT_CHAR + GOAL_CHAR + CANDIDATE_GOAL_CHAR)

DIR_NAMES = ("right", "down", "left", "up")
DIR_TO_VEC = np.array([(1, 0), (0, 1), (-1, 0), (0, -1)], dtype=np.int32)  # (dx, dy) per direction


def level_layout(level: "Level"):
    """What makes two mazes the same level for a level buffer's de-duplication: walls, goal and
    agent position, not the agent's starting direction (the minimax release's `is_equal_map`)."""
    return (level.wall_map, level.goal_pos, level.agent_pos)


class InvalidLevelError(ValueError):
    """A level (or level text) that does not describe a valid maze; the message says why."""


@struct.dataclass
class Level:
    """One maze: `wall_map bool[H, W]`, `goal_pos int32[2]` and `agent_pos int32[2]` as (x, y),
    `agent_dir int32[]` (0 right, 1 down, 2 left, 3 up). Batches stack along a leading axis."""

    wall_map: jnp.ndarray
    goal_pos: jnp.ndarray
    agent_pos: jnp.ndarray
    agent_dir: jnp.ndarray

    @property
    def height(self) -> int:
        return self.wall_map.shape[-2]

    @property
    def width(self) -> int:
        return self.wall_map.shape[-1]

    @classmethod
    def create(cls, wall_map, goal_pos, agent_pos, agent_dir=0) -> "Level":
        """Build a level from array-likes with the canonical dtypes (bool, int32)."""
        return cls(
            wall_map=jnp.asarray(wall_map, dtype=jnp.bool_),
            goal_pos=jnp.asarray(goal_pos, dtype=jnp.int32),
            agent_pos=jnp.asarray(agent_pos, dtype=jnp.int32),
            agent_dir=jnp.asarray(agent_dir, dtype=jnp.int32),
        )

    @classmethod
    def from_text(cls, text: str, *, height: int | None = None, width: int | None = None,
                  agent_dir: int | None = None) -> "Level":
        """Parse a level from the text format (see module docstring) and validate it."""
        return parse_level(text, height=height, width=width, agent_dir=agent_dir)

    def to_text(self) -> str:
        """The text format: an `agent_dir` header line and the grid rows."""
        return level_to_text(self)

    def validate(self, height: int | None = None, width: int | None = None) -> "Level":
        """Raise `InvalidLevelError` naming the problem; return the level when valid."""
        validate_level(self, height=height, width=width)
        return self


def empty_level(height: int = 13, width: int = 13) -> Level:
    """A wall-free level with the agent top-left facing right and the goal bottom-right."""
    return Level.create(np.zeros((height, width), bool), (width - 1, height - 1), (0, 0), 0)


def parse_xy(value: str, what: str) -> tuple[int, int]:
    parts = dict(p.split("=", 1) for p in value.split() if "=" in p)
    try:
        return int(parts["x"]), int(parts["y"])
    except (KeyError, ValueError):
        raise InvalidLevelError(f"{what}: expected 'x=<int> y=<int>', got {value!r}") from None


def parse_grid(rows: list[str]):
    """Characters -> (wall_map, agent cells, goal cells, candidate goal cells), checking the
    alphabet and that rows have equal length. Shared by levels and the OOD suite."""
    if not rows:
        raise InvalidLevelError("level text has no grid rows")
    width = len(rows[0])
    walls = np.zeros((len(rows), width), dtype=bool)
    agents, goals, candidates = [], [], []
    for y, row in enumerate(rows):
        if len(row) != width:
            raise InvalidLevelError(
                f"row {y} has {len(row)} characters, expected {width} (all rows must be equally wide)")
        for x, ch in enumerate(row):
            if ch not in GRID_CHARS:
                raise InvalidLevelError(
                    f"unknown character {ch!r} at x={x} y={y}; "
                    f"legend: '#' wall, '.' free, 'A' agent, 'G' goal, 'g' candidate goal")
            walls[y, x] = ch == WALL_CHAR
            if ch == AGENT_CHAR:
                agents.append((x, y))
            elif ch == GOAL_CHAR:
                goals.append((x, y))
            elif ch == CANDIDATE_GOAL_CHAR:
                candidates.append((x, y))
    return walls, agents, goals, candidates


def split_header(text: str) -> tuple[dict[str, str], list[str]]:
    """Split text into `key: value` header entries and grid rows (blank and '#'-comment-free)."""
    header: dict[str, str] = {}
    rows: list[str] = []
    for raw in text.strip("\n").splitlines():
        line = raw.strip()
        if not line:
            continue
        if ":" in line and not set(line) <= GRID_CHARS:
            if rows:
                raise InvalidLevelError(f"header line {line!r} after grid rows")
            key, value = line.split(":", 1)
            header[key.strip()] = value.strip()
        else:
            rows.append(line)
    return header, rows


def parse_level(text: str, *, height: int | None = None, width: int | None = None,
                agent_dir: int | None = None) -> Level:
    """Parse and validate one level. Header keys `size`, `agent`, `goal`, `agent_dir` and
    `walls` are checked against the grid when present; others (name, max_steps) are ignored."""
    header, rows = split_header(text)
    walls, agents, goals, candidates = parse_grid(rows)
    h, w = walls.shape
    if candidates:
        raise InvalidLevelError(
            f"a single level cannot hold candidate goals 'g' ({len(candidates)} found); "
            "use the OOD suite for mazes with random goals")
    if len(agents) != 1:
        raise InvalidLevelError(f"expected exactly one agent 'A', found {len(agents)}")
    if len(goals) != 1:
        raise InvalidLevelError(f"expected exactly one goal 'G', found {len(goals)}")
    if "size" in header:
        try:
            hw = tuple(int(v) for v in header["size"].lower().split("x"))
        except ValueError:
            raise InvalidLevelError(f"size: expected 'HxW', got {header['size']!r}") from None
        if hw != (h, w):
            raise InvalidLevelError(f"size header says {header['size']} but the grid is {h}x{w}")
    if "agent" in header and parse_xy(header["agent"], "agent") != agents[0]:
        raise InvalidLevelError(f"agent header {header['agent']!r} disagrees with 'A' at {agents[0]}")
    if "goal" in header and "one of" not in header["goal"] and parse_xy(header["goal"], "goal") != goals[0]:
        raise InvalidLevelError(f"goal header {header['goal']!r} disagrees with 'G' at {goals[0]}")
    if "walls" in header and int(header["walls"]) != int(walls.sum()):
        raise InvalidLevelError(f"walls header says {header['walls']} but the grid has {int(walls.sum())}")
    if agent_dir is None:
        value = header.get("agent_dir", "0")
        if value == "random":
            raise InvalidLevelError("agent_dir 'random' is a level distribution, not a level; "
                                    "pass agent_dir= or use the OOD suite")
        try:
            agent_dir = int(value)
        except ValueError:
            raise InvalidLevelError(f"agent_dir: expected 0-3, got {value!r}") from None
    level = Level.create(walls, goals[0], agents[0], agent_dir)
    validate_level(level, height=height, width=width)
    return level


def level_to_text(level: Level) -> str:
    """Inverse of `parse_level` for a single (unbatched) level."""
    walls = np.asarray(level.wall_map)
    if walls.ndim != 2:
        raise InvalidLevelError(f"to_text takes one level, got a batch with wall_map shape {walls.shape}")
    grid = np.where(walls, WALL_CHAR, FREE_CHAR).astype("<U1")
    ax, ay = (int(v) for v in np.asarray(level.agent_pos))
    gx, gy = (int(v) for v in np.asarray(level.goal_pos))
    grid[ay, ax] = AGENT_CHAR
    grid[gy, gx] = GOAL_CHAR
    lines = [f"agent_dir: {int(level.agent_dir)}"] + ["".join(r) for r in grid]
    return "\n".join(lines) + "\n"


def validate_level(level: Level, height: int | None = None, width: int | None = None) -> None:
    """Host-side check of one level (or a batch): raises `InvalidLevelError` naming the problem."""
    walls = np.asarray(level.wall_map)
    goal = np.asarray(level.goal_pos)
    agent = np.asarray(level.agent_pos)
    adir = np.asarray(level.agent_dir)
    if walls.ndim < 2 or walls.dtype != np.bool_:
        raise InvalidLevelError(f"wall_map must be bool[H, W], got {walls.dtype}{list(walls.shape)}")
    h, w = walls.shape[-2:]
    if (height is not None and h != height) or (width is not None and w != width):
        raise InvalidLevelError(f"wrong size: level is {h}x{w} (HxW), expected {height}x{width}")
    batch = walls.shape[:-2]
    walls = walls.reshape(-1, h, w)
    goal, agent, adir = goal.reshape(-1, 2), agent.reshape(-1, 2), adir.reshape(-1)
    if not (len(goal) == len(agent) == len(adir) == len(walls)):
        raise InvalidLevelError("level fields disagree on the batch shape")
    for i in range(len(walls)):
        where = f"level {tuple(int(j) for j in np.unravel_index(i, batch))}: " if batch else ""
        for name, (x, y) in (("agent", agent[i].tolist()), ("goal", goal[i].tolist())):
            if not (0 <= x < w and 0 <= y < h):
                raise InvalidLevelError(f"{where}{name} position x={x} y={y} is out of bounds for a {h}x{w} maze")
            if walls[i, y, x]:
                raise InvalidLevelError(f"{where}{name} at x={x} y={y} is on a wall")
        if tuple(agent[i]) == tuple(goal[i]):
            raise InvalidLevelError(f"{where}agent is on the goal at x={agent[i][0]} y={agent[i][1]}")
        if not 0 <= adir[i] <= 3:
            raise InvalidLevelError(f"{where}agent_dir {int(adir[i])} is not one of 0 right, 1 down, 2 left, 3 up")
