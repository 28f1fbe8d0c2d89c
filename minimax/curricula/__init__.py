"""Curricula: the PLR level buffer, level scores, finite training sets and the teachers' regret."""

from minimax.curricula.level_buffer import (BufferConfig, LevelBuffer, Located, advance_clock, buffer_stats,
                                            init_buffer, locate, offer, replay_weights,
                                            sample_replay)
from minimax.curricula.scores import SCORE_FUNCTIONS, ScoreInputs, score_levels
from minimax.curricula import pace  # noqa: F401  (registers --score-function pace)

__all__ = ["BufferConfig", "LevelBuffer", "Located", "advance_clock", "buffer_stats", "init_buffer", "locate", "offer",
           "replay_weights", "sample_replay", "SCORE_FUNCTIONS", "ScoreInputs", "score_levels"]
