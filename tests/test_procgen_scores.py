"""Procgen normalised returns (`envs/host/procgen_scores.py`): spot-checked constants of Cobbe et al.
2020 Appendix C, the map R_min -> 0, R_max -> 1, and errors for unknown games and modes."""

import numpy as np
import pytest

from minimax.envs.host.procgen_scores import (
    PROCGEN_GAMES,
    PROCGEN_RETURN_BOUNDS,
    normalized_return,
    return_bounds,
)


def test_spot_checked_constants():
    assert len(PROCGEN_GAMES) == 16
    assert return_bounds("coinrun", "easy") == (5.0, 10.0)
    assert return_bounds("starpilot", "easy") == (2.5, 64.0)
    assert return_bounds("starpilot", "hard") == (1.5, 35.0)
    assert return_bounds("fruitbot", "easy") == (-1.5, 32.4)
    assert return_bounds("caveflyer", "hard") == (2.0, 13.4)
    assert return_bounds("BigFish", "hard") == (0.0, 40.0)  # any case


@pytest.mark.parametrize("mode", ["easy", "hard"])
def test_bounds_map_to_zero_and_one(mode):
    for game, (r_min, r_max) in PROCGEN_RETURN_BOUNDS[mode].items():
        assert r_min < r_max
        assert normalized_return(game, r_min, mode) == 0.0
        assert normalized_return(game, r_max, mode) == pytest.approx(1.0, abs=1e-12)
    out = normalized_return("chaser", np.array([[0.5, 13.0], [6.75, 19.25]]))
    np.testing.assert_allclose(out, [[0.0, 1.0], [0.5, 1.5]])  # linear, not clipped


def test_unknown_game_or_mode_raises():
    with pytest.raises(ValueError, match="unknown Procgen game"):
        normalized_return("pong", 1.0)
    with pytest.raises(ValueError, match="unknown distribution mode"):
        normalized_return("coinrun", 1.0, mode="memory")
