"""AMaze's own options (the `maze` group of a run's config, declared where `--env maze` registers):
the maze's size and wall budget, the student's view and actions. The maze spec reads them as
`options.maze_height` from the run's environment options (`envs/registry.py`)."""

from __future__ import annotations

import dataclasses
from typing import Literal

from minimax.core.options import check


@dataclasses.dataclass(frozen=True)
class MazeOptions:
    """AMaze: the maze, the student's view and its actions."""

    maze_height: int = 13
    """Maze interior height in cells."""
    maze_width: int = 13
    """Maze interior width in cells."""
    n_walls: int = 60
    """Wall draws per generated level (with replacement); 0 generates empty levels (ACCEL)."""
    n_actions: Literal[3, 7] = 7
    """7 = MiniGrid's full action set (the literature's), 3 = left, right, forward."""
    agent_view_size: int = 5
    """Side of the egocentric view (odd)."""
    normalize_obs: bool = True
    """Divide observation images by 10."""

    def __post_init__(self):
        check(self, self._rules)

    def _rules(self, c):
        c.positive("maze_height", "maze_width")
        c.non_negative("n_walls")
        if c.problems:
            return
        h, w = self.maze_height, self.maze_width
        if h * w < 2:
            c.add(f"a {h}x{w} maze (--maze-height x --maze-width) has no room for agent and goal")
        elif self.n_walls > h * w - 2:
            c.add(f"--n-walls must be <= {h * w - 2} for a {h}x{w} maze, got {self.n_walls}")
        v = self.agent_view_size
        if not isinstance(v, int) or v < 3 or v % 2 == 0:
            c.add(f"--agent-view-size must be an odd int >= 3, got {v!r}")
