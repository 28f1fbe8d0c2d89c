"""AMaze: levels, dynamics, generators, shortest paths, the OOD suite and rendering."""

from minimax.envs.maze.env import AMaze, MazeParams, MazeState
from minimax.envs.maze.generators import make_dr_generator, make_empty_generator
from minimax.envs.maze.level import InvalidLevelError, Level, empty_level

__all__ = [
    "AMaze", "MazeParams", "MazeState", "Level", "InvalidLevelError", "empty_level",
    "make_dr_generator", "make_empty_generator",
]
