"""The training budget (`minimax/training/budget.py`): `--num-updates N` is N PPO updates of the student, as
the minimax release's loop counts them, for every seed of a program; a run that cannot train stops
with an error instead of looping forever; `cycles` and `env_steps` budgets keep other comparisons."""

from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import struct

from minimax.training.budget import STALLED, knows_next_cycle, make_chunk, max_idle_cycles
from minimax.config import TrainConfig
from minimax.config.experiments import experiment_groups
from minimax.core.metrics import summarize
from minimax.training.run_logs import read_rows
from minimax.training.loop import BudgetStalled, train
from minimax.cli.train import main
from minimax.training.cli import parse_config
from run_helpers import tiny, without_timing

pytestmark = pytest.mark.contract  # tests/conftest.py's tiers: training programs at their tiny size


# ----------------------------------------------------------------------------- the loop against the release's


def release_loop(decisions, n_total_updates: int) -> tuple[int, int]:
    """The minimax release's loop reduced to its counters (`ExperimentRunner.run`: `while (n_updates <
    n_total_updates).any()`; `PLRRunner.run`: one `tick` per call; `_efficient_grad_update` calls
    `PPO.update`, whose `increment_updates` is the only place `n_updates` rises, unless robust PLR's
    cycle does not replay, when the fake update returns the train state untouched).
    `(ticks, n_updates)` once it stops."""
    n_updates = ticks = 0
    while n_updates < n_total_updates:
        is_replay = bool(decisions[ticks])
        if is_replay:  # PPO.update -> train_state.increment_updates()
            n_updates += 1
        ticks += 1  # the loop's tick: one rollout cycle
    return ticks, n_updates


@struct.dataclass
class ScriptedState:
    trains: jax.Array  # bool[T]: whether cycle t makes a gradient update (the replay decisions)
    batches: jax.Array  # int32[T]: env batches cycle t plays (ACCEL's replay cycles: 2)
    tick: jax.Array
    updates: jax.Array


class ScriptedRunner:
    """A runner whose cycles follow a script: robust PLR's replay decisions without the rollouts."""

    state_type = ScriptedState
    num_envs, num_steps = 2, 3
    local_fields = ()

    def __init__(self, trains, batches=None, idle_limit: int = 10_000, grows_for: int = 0):
        self.trains = jnp.asarray(trains, bool)
        self.batches = jnp.ones(self.trains.shape, jnp.int32) if batches is None else jnp.asarray(batches, jnp.int32)
        self.max_idle_cycles, self.grows_for = idle_limit, grows_for

    def init(self, key):
        return ScriptedState(self.trains, self.batches, jnp.zeros((), jnp.int32), jnp.zeros((), jnp.int32))

    def step(self, s: ScriptedState):
        trained = s.trains[s.tick].astype(jnp.int32)
        metrics = {"gradient_updates": trained, "cycles": jnp.ones((), jnp.int32),
                   "env_steps": s.batches[s.tick] * self.num_envs * self.num_steps,
                   "episodes": jnp.ones((), jnp.int32), "tick_sum": s.tick.astype(jnp.float32),
                   "loss": s.tick.astype(jnp.float32), "buffer/size": jnp.minimum(s.tick + 1, self.grows_for)}
        return s.replace(tick=s.tick + 1, updates=s.updates + trained), metrics


def decisions(seed: int, warmup: int = 4, p: float = 0.5, n: int = 400) -> np.ndarray:
    """Replay decisions as robust PLR makes them: none while the buffer warms up, then Bernoulli(p)."""
    draws = np.random.default_rng(seed).random(n) < p
    draws[:warmup] = False
    return draws


def test_the_update_budget_stops_where_the_releases_loop_stops():
    for seed in range(3):
        script = decisions(seed)
        runner = ScriptedRunner(script)
        ticks, n_updates = release_loop(script, 12)
        state, metrics = jax.jit(make_chunk(runner, 12))(runner.init(None))
        assert int(state.updates) == n_updates == 12
        assert int(state.tick) == ticks  # the same cycles, so the same env steps
        assert int(metrics["cycles"].sum()) == ticks and int(metrics["gradient_updates"].sum()) == 12
        assert np.all(np.asarray(metrics["gradient_updates"]) == 1)  # every unit ends with its update
        assert int(metrics["env_steps"].sum()) == ticks * runner.num_envs * runner.num_steps


def test_chunks_of_any_length_spend_the_same_budget():
    runner = ScriptedRunner(decisions(7))
    whole, _ = jax.jit(make_chunk(runner, 12))(runner.init(None))
    state = runner.init(None)
    for length in (5, 5, 2):
        state, _ = jax.jit(make_chunk(runner, length))(state)
    assert int(state.tick) == int(whole.tick) and int(state.updates) == 12


def test_each_seed_of_a_program_stops_at_exactly_n_updates():
    """The release's `.any()` would run every seed until the slowest is done; here a seed that is done
    is left as it was."""
    scripts = [decisions(s) for s in range(4)]
    runner = ScriptedRunner(scripts[0])
    states = jax.tree.map(lambda *xs: jnp.stack(xs), *[ScriptedRunner(s).init(None) for s in scripts])
    states, metrics = jax.jit(jax.vmap(make_chunk(runner, 10)))(states, jnp.zeros(4, jnp.int32))
    expected = [release_loop(s, 10)[0] for s in scripts]
    assert len(set(expected)) > 1  # the seeds need different numbers of cycles
    assert np.asarray(states.tick).tolist() == expected
    assert np.asarray(states.updates).tolist() == [10] * 4
    # The release's loop over all four at once: each ticks as long as the slowest needs.
    slowest = max(expected)
    assert [int(s[:slowest].sum()) for s in scripts] != [10] * 4


def test_the_env_step_budget_counts_batches_and_carries_the_overshoot():
    """ACCEL-like cycles of 1 or 2 batches: N units spend at least N batches, and a unit's overshoot
    counts towards the next (the host passes it as `ahead`), in one chunk or several."""
    script = decisions(3)
    runner = ScriptedRunner(script, batches=1 + script.astype(np.int32))
    batch = runner.num_envs * runner.num_steps
    whole, _ = jax.jit(make_chunk(runner, 10, "env_steps"))(runner.init(None))
    played = np.cumsum(1 + script.astype(np.int32))
    first = int(np.argmax(played >= 10)) + 1  # cycles until 10 batches are spent
    assert int(whole.tick) == first
    state, spent, done = runner.init(None), 0, 0
    for length in (3, 3, 4):
        state, metrics = jax.jit(make_chunk(runner, length, "env_steps"))(state, spent - done * batch)
        spent += int(metrics["env_steps"].sum())
        done += length
    assert int(state.tick) == first and spent == int(played[first - 1]) * batch


def test_a_unit_summarizes_its_cycles():
    """Counters and sums add up over a unit's cycles, a per-cycle mean weighs every cycle, the buffer
    is the last cycle's."""
    script = decisions(5)
    runner = ScriptedRunner(script, grows_for=1000)
    _, metrics = jax.jit(make_chunk(runner, 3))(runner.init(None))
    row = summarize({k: v for k, v in metrics.items() if k != STALLED})
    ticks = release_loop(script, 3)[0]
    assert row["cycles"] == ticks and row["episodes"] == ticks
    assert row["loss"] == pytest.approx(np.mean(np.arange(ticks)), rel=1e-6)
    assert row["buffer/size"] == ticks


def test_a_unit_that_cannot_be_spent_stops_after_the_idle_limit():
    runner = ScriptedRunner(np.zeros(400, bool), idle_limit=7, grows_for=3)
    state, metrics = jax.jit(make_chunk(runner, 4))(runner.init(None))
    # 3 cycles grow the buffer, then 7 idle ones: the chunk stops, its remaining units run no cycle.
    assert int(state.tick) == 3 + 7
    assert np.asarray(metrics[STALLED]).tolist() == [True] * 4
    assert np.asarray(metrics["cycles"]).tolist() == [10, 0, 0, 0]


def test_the_idle_limit_is_far_beyond_bad_luck():
    assert max_idle_cycles(1.0) == 64 and max_idle_cycles(0.8) == 64
    assert 0.5 ** max_idle_cycles(0.5) < 1e-12 and 0.95 ** max_idle_cycles(0.05) < 1e-12


class KnownSideRunner(ScriptedRunner):
    """The scripted runner with the update unit's protocol (`budget.knows_next_cycle`): it says before a
    cycle whether the cycle trains, and plays a cycle of a side given as a Python bool, as robust PLR's
    `cycle(state, replay)` does. It counts the cycles played on the wrong side (none, if the unit asks
    `will_train` before every cycle)."""

    def will_train(self, s: ScriptedState):
        return s.trains[s.tick]

    def cycle(self, s: ScriptedState, trains):
        assert isinstance(trains, bool), "the update unit passes the side as a Python bool"
        state, metrics = self.step(s)
        return state, {**metrics, "wrong_side": (s.trains[s.tick] != trains).astype(jnp.int32)}

    def step(self, s: ScriptedState):
        state, metrics = super().step(s)
        return state, {**metrics, "wrong_side": jnp.zeros((), jnp.int32)}


def test_the_update_unit_plays_the_same_cycles_as_the_step_loop_for_every_seed():
    """The unit that plays a runner's non-training cycles without their update (robust PLR, ACCEL) spends
    the budget exactly as the step loop: the same cycles per seed, the same metrics, each seed stopping at N."""
    scripts = [decisions(s) for s in range(4)]
    known = KnownSideRunner(scripts[0], grows_for=1000)
    stepped = ScriptedRunner(scripts[0], grows_for=1000)
    states = jax.tree.map(lambda *xs: jnp.stack(xs), *[known.init(None) for known in map(KnownSideRunner, scripts)])
    ahead = jnp.zeros(4, jnp.int32)
    by_unit, m_unit = jax.jit(jax.vmap(make_chunk(known, 10)))(states, ahead)
    by_step, m_step = jax.jit(jax.vmap(make_chunk(stepped, 10)))(states, ahead)
    assert np.asarray(by_unit.tick).tolist() == np.asarray(by_step.tick).tolist() == \
        [release_loop(s, 10)[0] for s in scripts]
    assert np.asarray(by_unit.updates).tolist() == [10] * 4
    assert int(np.asarray(m_unit.pop("wrong_side")).sum()) == 0
    m_step.pop("wrong_side", None)
    assert set(m_unit) == set(m_step)
    for k in m_step:
        np.testing.assert_allclose(np.asarray(m_unit[k]), np.asarray(m_step[k]), rtol=1e-6, err_msg=k)


def test_the_update_unit_serves_robust_plr_and_accel_not_plain_plr_or_a_subclass_with_its_own_step():
    """Plain PLR trains on every cycle (no unit needed); a subclass that writes its own `step` keeps the
    step loop, since the unit plays `cycle` and would bypass it."""
    from minimax.runners.accel import ACCELRunner
    from minimax.runners.plr import PLRRunner
    from minimax.runners.robust_plr import RobustPLRRunner

    class OwnStep(RobustPLRRunner):
        def step(self, state):
            return super().step(state)

    assert knows_next_cycle(object.__new__(RobustPLRRunner)) and knows_next_cycle(object.__new__(ACCELRunner))
    assert not knows_next_cycle(object.__new__(PLRRunner)) and not knows_next_cycle(object.__new__(OwnStep))


def test_the_update_unit_stops_after_the_idle_limit():
    runner = KnownSideRunner(np.zeros(400, bool), idle_limit=7, grows_for=3)
    state, metrics = jax.jit(make_chunk(runner, 4))(runner.init(None))
    assert int(state.tick) == 3 + 7 and int(state.updates) == 0  # the cycle that would train is not kept
    assert np.asarray(metrics[STALLED]).tolist() == [True] * 4
    assert np.asarray(metrics["cycles"]).tolist() == [10, 0, 0, 0]


# ----------------------------------------------------------------------------- real runs


PLR = dict(method="robust_plr", buffer_size=16, replay_prob=0.5, num_steps=32, eval_every=0)
"""Robust PLR on the tiny maze, whose 32-step episodes all end within a rollout: the buffer is ready
after a cycle, then about every other cycle trains."""


@pytest.mark.e2e  # over a minute of compiling and training; the default run leaves it out (--slow)
def test_robust_plr_seeds_each_make_exactly_their_updates_and_resume_exactly(tmp_path):
    cfg = tiny(tmp_path, **PLR, num_seeds=2, num_updates=6, log_every=3, checkpoint_every=3, run_name="whole")
    train(cfg)
    rows = [r for r in read_rows(cfg.run_dir) if r["seed"] != "mean"]
    last = {r["seed"]: r for r in rows if r["update"] == 6}
    assert [last[s]["gradient_updates"] for s in (0, 1)] == [6, 6]
    assert all(last[s]["cycles"] > 6 for s in (0, 1))  # the cycles of new levels came on top
    assert all(last[s]["env_steps"] == last[s]["cycles"] * 8 * 32 for s in (0, 1))
    split = cfg.replace(run_name="split", num_updates=3)
    train(split)
    train(split.replace(resume=True, num_updates=6))
    assert without_timing(read_rows(split.run_dir)) == without_timing(read_rows(cfg.run_dir))


@pytest.mark.e2e  # over 20 s here (the default run leaves it out; --slow runs it)
def test_a_run_that_never_trains_stops_with_an_error_naming_the_options(tmp_path, capsys):
    """Episodes far longer than the rollout: no level is ever scored, the buffer never fills, robust
    PLR never replays. The run stops instead of looping forever."""
    args = ["--preset", "plr", "--num-envs", "4", "--num-steps", "1", "--buffer-size", "16", "--num-updates", "2",
            "--log-every", "1", "--eval-every", "0", "--recurrent-size", "8", "--out-dir", str(tmp_path),
            "--no-progress"]
    with pytest.raises(SystemExit) as exit_:
        main(args)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "cannot reach update 1" in err and "Traceback" not in err
    assert "raise --num-steps or lower --max-episode-steps" in err and "--budget cycles" in err
    assert "buffer holds 8 levels" in err and issubclass(BudgetStalled, RuntimeError)


@pytest.mark.e2e  # over 20 s here (the default run leaves it out; --slow runs it)
def test_runs_saved_before_the_budget_existed_resume_counting_cycles(tmp_path):
    cfg = tiny(tmp_path, **PLR, num_updates=4, log_every=2, checkpoint_every=2, budget="cycles")
    train(cfg)
    saved = json.loads((cfg.run_dir / "config.json").read_text())
    assert saved.pop("budget") == "cycles"
    (cfg.run_dir / "config.json").write_text(json.dumps(saved))  # as written before --budget existed
    assert TrainConfig.load(cfg.run_dir / "config.json").budget == "cycles"
    rows = read_rows(cfg.run_dir)
    assert [r["cycles"] for r in rows] == [2, 4] and rows[-1]["gradient_updates"] < 4
    resumed = parse_config(["--resume", "--out-dir", str(tmp_path), "--run-name", cfg.name, "--num-updates", "6"])
    assert resumed.budget == "cycles"
    train(resumed)
    assert read_rows(cfg.run_dir)[-1]["cycles"] == 6
    with pytest.raises(Exception, match="counted rollout cycles"):
        parse_config(["--resume", "--out-dir", str(tmp_path), "--run-name", cfg.name, "--budget", "updates"])


def test_runs_pool_into_one_experiment_when_their_budgets_mean_the_same():
    """A cycle is an update for DR: its runs saved before --budget pool with today's; robust PLR's do not."""
    configs = [{"method": "dr", "seed": 0}, {"method": "dr", "seed": 1, "budget": "updates"},
               {"method": "robust_plr", "seed": 0}, {"method": "robust_plr", "seed": 0, "budget": "updates"}]
    assert experiment_groups(configs) == [("dr", [0, 1]), ("robust_plr (budget=cycles)", [2]),
                                          ("robust_plr (budget=updates)", [3])]
