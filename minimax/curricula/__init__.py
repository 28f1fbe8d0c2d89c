"""Curricula: the PLR level buffer, level scores and finite training sets."""

from minimax.curricula.level_buffer import (BufferConfig, LevelBuffer, buffer_stats, init_buffer, insert,
                                            replay_decision, replay_weights, sample_replay, update_scores)
from minimax.curricula.scores import SCORE_FUNCTIONS, ScoreInputs, score_levels

__all__ = ["BufferConfig", "LevelBuffer", "buffer_stats", "init_buffer", "insert", "replay_decision",
           "replay_weights", "sample_replay", "update_scores", "SCORE_FUNCTIONS", "ScoreInputs", "score_levels"]
