"""PLR cycles of several PPO updates (`--cycle-updates K`, `minimax/runners/plr_trials.py`; SFL's XLand PLR keeps a
trial's rulesets for its 128 updates): a cycle's levels, replay decision and episodes are kept across its updates,
the buffer changes only at its end, the levels' MaxMC is taken over the whole cycle (episodes that span an update
boundary are one episode), against NumPy; the update budget counts the cycle's updates; what is refused."""

import jax
import numpy as np
import pytest

from minimax.config import ConfigError, TrainConfig
from minimax.training.builder import build_runner
from minimax.training.loop import train
from minimax.training.run_logs import read_rows
from run_helpers import tiny, without_timing

pytestmark = pytest.mark.contract

TRIALS = dict(maze_height=5, maze_width=5, n_walls=3, max_episode_steps=10, n_actions=3, recurrent_size=8,
              num_envs=4, num_steps=8, n_epochs=1, method="robust_plr", buffer_size=8, min_fill_ratio=0.5,
              unique_levels=False, replay_prob=0.5, cycle_updates=3, progress=False)
"""10-step episodes in 8-step updates: most episodes span an update boundary; a cycle is 24 steps."""


@pytest.fixture(scope="module")
def steps():
    """The first 12 steps (4 cycles) of robust PLR with K = 3: `(states, metrics)`, `states[0]` the initial one."""
    runner = build_runner(TrainConfig.from_options(**TRIALS))
    step = jax.jit(runner.step)
    states, metrics = [jax.jit(runner.init)(jax.random.key(1))], []
    for _ in range(12):
        state, m = step(states[-1])
        states.append(state)
        metrics.append(jax.device_get(m))
    return runner, states, metrics


def numpy_maxmc(rec):
    """MaxMC per env from a cycle's record, by hand: the best completed episode's return minus each episode's mean
    value, averaged over the completed episodes (NaN: none completed)."""
    rewards, values, ends = (np.asarray(x) for x in (rec.rewards, rec.values, rec.ends))
    scores = []
    for n in range(ends.shape[1]):
        episodes, ret, vals = [], 0.0, []
        for t in range(ends.shape[0]):
            ret, vals = ret + rewards[t, n], vals + [values[t, n]]
            if ends[t, n]:
                episodes.append((ret, np.mean(vals)))
                ret, vals = 0.0, []
        best = max((r for r, _ in episodes), default=np.nan)
        scores.append(np.mean([best - v for _, v in episodes]) if episodes else np.nan)
    return np.array(scores)


def test_a_cycle_keeps_its_levels_and_episodes_and_stores_at_its_end(steps):
    _, states, metrics = steps
    trials = [s.trial for s in states[1:4]]
    assert [int(t.phase) for t in trials] == [1, 2, 0]
    walls = [np.asarray(t.levels.wall_map) for t in trials]
    assert all((w == walls[0]).all() for w in walls)
    # the episodes continue: an env is mid-episode across the first update boundary (10-step episodes, 8-step updates)
    assert (np.asarray(trials[0].stream.episode_length) > 0).any()
    assert [int(s.buffer.filled.sum()) for s in states[1:4]] == [0, 0, 4]  # offered at the cycle's end only
    assert [m["gradient_updates"] for m in metrics[:3]] == [0, 0, 0]  # robust PLR: a cycle of new levels trains not
    assert metrics[2]["new/count"] == 4 and metrics[0]["new/count"] == metrics[1]["new/count"] == 0
    assert not (np.asarray(states[4].trial.levels.wall_map) == walls[0]).all()  # the next cycle, new levels


def test_the_score_is_maxmc_over_the_whole_cycle(steps):
    _, states, _ = steps
    rec = states[3].trial.record
    assert rec.rewards.shape == (24, 4)
    expected = numpy_maxmc(rec)
    stored = np.sort(np.asarray(states[3].buffer.scores)[np.asarray(states[3].buffer.filled)])
    assert np.isfinite(expected).all()  # every env finished an episode in 24 steps
    np.testing.assert_allclose(stored, np.sort(expected), rtol=1e-5, atol=1e-6)


def test_the_replay_decision_is_the_cycles(steps):
    _, _, metrics = steps
    replays = [float(m["replay_fraction_sum"]) for m in metrics]
    trained = [int(m["gradient_updates"]) for m in metrics]
    for c in range(4):
        cycle = slice(3 * c, 3 * c + 3)
        assert len(set(replays[cycle])) == 1 and trained[cycle] == [int(replays[3 * c])] * 3
    assert 1.0 in replays[3:]  # the buffer is ready after the first cycle: p = 0.5 over 3 cycles replays (seed 1)


@pytest.mark.e2e  # a run of the loop (the update budget's unit) from the Python API: about 30 s here
def test_the_update_budget_counts_a_cycles_updates(tmp_path):
    """robust PLR with K = 2 and p = 1: a cycle of new levels (2 steps, no gradient), then replay cycles (2 updates
    each): 4 updates are 6 steps."""
    cfg = tiny(tmp_path, **{**TRIALS, "cycle_updates": 2, "replay_prob": 1.0}, num_updates=4, log_every=4,
               eval_every=0, checkpoint_every=0)
    train(cfg)
    (row,) = read_rows(cfg.run_dir)
    assert (row["gradient_updates"], row["cycles"], row["buffer/size"]) == (4, 6, 4)


@pytest.mark.e2e  # three runs of the loop: about a minute here
def test_a_run_cut_inside_a_cycle_resumes_exactly(tmp_path):
    """plain PLR, K = 3: a run stopped after 4 updates (inside its second cycle: the trial's levels, episodes and
    record are in the checkpoint) and resumed to 6 logs what the uncut run logs."""
    opts = {**TRIALS, "method": "plr", "replay_prob": 1.0}
    whole = tiny(tmp_path, **opts, num_updates=6, log_every=2, eval_every=0, checkpoint_every=2, run_name="whole")
    train(whole)
    cut = whole.replace(run_name="cut", num_updates=4)
    train(cut)
    train(cut.replace(resume=True, num_updates=6))
    assert without_timing(read_rows(cut.run_dir)) == without_timing(read_rows(whole.run_dir))


@pytest.mark.parametrize("options, message", [
    (dict(method="accel"), r"--cycle-updates 3 is not supported by accel"),
    (dict(method="parallel_plr"), r"--cycle-updates 3 is not supported by parallel_plr"),
    (dict(train_levels=8), r"--cycle-updates 3 cannot be used with --train-levels \(8\)"),
    (dict(score_function="pace"), r"--cycle-updates 3 cannot be used with --score-function pace"),
    (dict(cycle_updates=0), r"--cycle-updates must be >= 1, got 0"),
])
def test_what_a_multi_update_cycle_refuses(options, message):
    with pytest.raises(ConfigError, match=message):
        TrainConfig.from_options(**{**TRIALS, **options})
