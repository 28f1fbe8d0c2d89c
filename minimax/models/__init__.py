"""Actor-critic networks (the student, the PAIRED teacher) and their recurrent cores."""

from minimax.models.maze import MazeActorCritic, count_params
from minimax.models.recurrent import GRU, LSTM
from minimax.models.teacher import MazeTeacherActorCritic

__all__ = ["MazeActorCritic", "MazeTeacherActorCritic", "LSTM", "GRU", "count_params"]
