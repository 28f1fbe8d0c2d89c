"""Actor-critic networks and their recurrent cores."""

from minimax.models.maze import MazeActorCritic, count_params
from minimax.models.recurrent import GRU, LSTM

__all__ = ["MazeActorCritic", "LSTM", "GRU", "count_params"]
