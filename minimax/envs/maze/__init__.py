"""AMaze: levels, dynamics, generators, the teacher's design MDP, shortest paths, the OOD suite and rendering."""

from minimax.envs.maze.env import AMaze, MazeParams, MazeState
from minimax.envs.maze.generators import make_dr_generator, make_empty_generator
from minimax.envs.maze.level import InvalidLevelError, Level, empty_level, level_layout
from minimax.envs.maze.mutators import (
    MUTATORS, make_four_edit_mutator, make_minimax_mutator, make_mutator, mutate_batch,
)
from minimax.envs.maze.teacher import MazeTeacher, TeacherParams, TeacherState

__all__ = [
    "AMaze", "MazeParams", "MazeState", "Level", "InvalidLevelError", "empty_level", "level_layout",
    "make_dr_generator", "make_empty_generator",
    "MUTATORS", "make_mutator", "make_minimax_mutator", "make_four_edit_mutator", "mutate_batch",
    "MazeTeacher", "TeacherParams", "TeacherState",
]
