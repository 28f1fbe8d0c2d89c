"""A PLR-family run plays until its level buffer is `--min-fill-ratio` full before its first
update (minutes at the presets' 4,000 slots): the progress line says that the buffer is filling
and how full it is, instead of staying silent."""

from __future__ import annotations

import re

import pytest

from minimax.training.loop import train
from minimax.training.progress import Progress
from run_helpers import tiny

pytestmark = pytest.mark.contract  # tests/conftest.py's tiers: training programs at their tiny size


@pytest.mark.e2e  # over 20 s here (the default run leaves it out; --slow runs it)
def test_the_progress_line_says_the_buffer_is_filling_until_the_first_update(tmp_path, capsys):
    # --budget cycles: a log row per rollout cycle, so the rows come while the buffer fills.
    cfg = tiny(tmp_path, method="robust_plr", buffer_size=32, budget="cycles", num_updates=2, log_every=1,
               eval_every=0, checkpoint_every=0, max_episode_steps=16, progress=True)
    train(cfg)
    lines = capsys.readouterr().out.splitlines()  # no terminal under pytest: one plain line per row
    assert lines[0].startswith("cycles 0/2 buffer 0/16 levels before the first update")
    assert "--buffer-size" in lines[0]  # how to get there sooner
    held = [int(m.group(1)) for line in lines[1:] if (m := re.search(r"buffer (\d+)/16 levels", line))]
    assert len(held) == 2 and 0 < held[0] <= held[1]  # it counts up as new levels enter


def test_a_run_that_trains_from_its_first_cycle_shows_no_buffer(tmp_path, capsys):
    train(tiny(tmp_path, num_updates=1, log_every=1, eval_every=0, checkpoint_every=0, progress=True))
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1 and "buffer" not in lines[0] and "return" in lines[0]


def test_the_filling_bar_keeps_its_width():
    assert {len(Progress.filling_stats(h, r)) for h, r in [(0, 2000), (None, 2000), (123, 2000),
                                                           (10**9, 10**10), (2500, 2000)]} == {36}
