"""The PLR-family runners: counters, buffer contents, batch layouts, vmap, and the CLI loop."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from minimax.training.checkpoint import Checkpointer
from minimax.config import ConfigError, TrainConfig
from minimax.config import PRESETS
from minimax.training.buffer_view import top_levels
from minimax.curricula.level_buffer import level_hash, offer, replay_weights
from minimax.envs.maze import level_layout
from minimax.envs.maze.level import validate_level
from minimax.training.run_logs import read_rows
from minimax.config import PLR_METHODS
from minimax.config.hyperparams import hp_arrays
from minimax.training.builder import build_runner
from minimax.runners.plr_parts import mark_stored, mutate, new_levels, play, score
from minimax.runners.rollout import ppo_batch
from minimax.training.budget import make_chunk
from minimax.training.loop import train
from run_helpers import CANONICAL, CANONICAL_CYCLES, canonical_program, canonical_run

pytestmark = pytest.mark.contract  # tests/conftest.py's tiers: training programs at their tiny size

# One small config for every runner (tests/run_helpers.py's canonical program): episodes end within a rollout,
# so every level gets a score.
SMALL = CANONICAL
STEPS = CANONICAL_CYCLES


def small(method, **overrides) -> TrainConfig:
    return TrainConfig.from_options(**{**SMALL, "method": method, **overrides})


def host_levels(buffer, mask=None):
    levels = jax.tree.map(np.asarray, buffer.levels)
    if mask is not None:
        levels = jax.tree.map(lambda x: x[np.asarray(mask)], levels)
    return levels


OURS = ("plr", "robust_plr", "accel", "parallel_plr", "parallel_accel")
OURS_GROUPS = {"parallel_plr": 2, "parallel_accel": 3}
"""Level groups per rollout of our parallel methods (the release's); others play one (a method
registered by a user states its own with `groups`)."""


@pytest.fixture(params=PLR_METHODS)
def two_seeds(request):
    """The method's canonical program (tests/run_helpers.py): STEPS cycles on two seeds, computed once."""
    run = canonical_run(request.param)
    return request.param, run.runner, run.keys, run.states, run.metrics


def test_accel_cenie_measures_and_stores_its_childrens_novelty():
    """ACCEL-CENIE's replay cycles play children (ACCEL's), measure their novelty and store it where they enter
    the buffer; its other cycles play none (the counts of every method are checked below)."""
    _, runner, _, states, m = canonical_run("accel_cenie")
    replay = m["replay_fraction_sum"] > 0
    assert replay.any() and runner.mutates
    np.testing.assert_array_equal(m["novelty/mutated_count"], np.where(replay, runner.num_envs, 0))
    assert np.all(m["novelty/mutated_sum"][replay] != 0) and np.all(m["novelty/mutated_sum"][~replay] == 0)
    children = np.asarray(states.buffer.filled) & (np.asarray(states.buffer.mutations) > 0)
    assert children.any() and np.all(np.asarray(states.novelty)[children] != 0)


@pytest.mark.parametrize("method", ["cenie", "accel_cenie"])
def test_cenie_coverage_holds_the_rollouts_the_student_trained_on(method):
    """`--novelty-coverage trained` (the default): only the replay cycles' rollouts join the coverage window, not a
    new-level cycle's (the first cycle always is one: its buffer is empty) nor ACCEL-CENIE's children."""
    _, runner, _, states, m = canonical_run(method)
    replay_cycles = (m["replay_fraction_sum"] > 0).sum(1)
    assert runner.novelty.novelty_coverage == "trained" and (replay_cycles < STEPS).all()
    np.testing.assert_array_equal(np.asarray(states.coverage.filled).sum(1),
                                  replay_cycles * runner.num_envs * runner.novelty.novelty_samples)
    saved = small(method).to_dict()
    saved["novelty"].pop("novelty_coverage")  # a run saved before the option: every cycle's rollouts joined
    assert TrainConfig.from_dict(saved).novelty.novelty_coverage == "cycles"


def test_every_step_is_one_cycle_and_counts_gradient_updates_and_env_steps(two_seeds):
    """One step is one rollout cycle, as in the minimax release (its "update"): plain PLR trains on
    every cycle, robust PLR and ACCEL on replay cycles only (ACCEL's also play the mutated children),
    the parallel methods once the buffer is ready."""
    method, runner, _, states, m = two_seeds
    n, t, g = runner.num_envs, runner.num_steps, OURS_GROUPS.get(method, 1 if method in OURS else runner.groups)  # groups per rollout
    replay = m["replay_fraction_sum"]
    assert np.all(m["cycles"] == 1) and np.all(m["replay_fraction_count"] == 1)
    if method == "plr":
        assert np.all(m["gradient_updates"] == 1)
    else:
        np.testing.assert_array_equal(m["gradient_updates"], replay)
    assert m["gradient_updates"][:, 0].sum() == 0 or method == "plr"     # nothing to replay at first
    assert m["gradient_updates"].sum() > 0
    mutation_rollout = replay if runner.mutates and runner.groups == 1 else 0  # ACCEL's cycle (and TRACED's)
    np.testing.assert_array_equal(m["env_steps"], n * t * (g + mutation_rollout))
    # The optimiser saw exactly the logged gradient updates (n_epochs gradient steps each).
    np.testing.assert_array_equal(np.asarray(states.train_state.step), m["gradient_updates"].sum(1) * runner.ppo.n_epochs)
    np.testing.assert_array_equal(np.asarray(states.updates), m["gradient_updates"].sum(1))
    if g == 1:
        np.testing.assert_array_equal(m["new/count"], (1 - replay) * n)
        np.testing.assert_array_equal(m["replay/count"], replay * n)
    else:  # before the buffer is ready every group plays new levels
        np.testing.assert_array_equal(m["new/count"], n + (1 - replay) * (g - 1) * n)
        np.testing.assert_array_equal(m["replay/count"], replay * n)
    if runner.mutates:
        np.testing.assert_array_equal(m["mutated/count"], replay * n)
    for k, v in m.items():
        if not k.endswith(("_sum", "_count")):
            assert np.all(np.isfinite(v)), k


def test_the_staleness_clock_counts_as_the_release(two_seeds):
    """One per replay draw, N per cycle of new levels (N per parallel cycle, replaying or not);
    mutated levels and a replaying parallel cycle's new levels do not count."""
    method, runner, _, states, m = two_seeds
    np.testing.assert_array_equal(np.asarray(states.buffer.episode_count), [STEPS * runner.num_envs] * 2)


def test_buffers_hold_valid_distinct_scored_levels(two_seeds):
    method, runner, _, states, _ = two_seeds
    for seed in range(2):
        buffer = jax.tree.map(lambda x: x[seed], states.buffer)
        filled = np.asarray(buffer.filled)
        assert filled.sum() >= 1
        levels = host_levels(buffer, filled)
        validate_level(levels)
        assert np.all(np.isfinite(np.asarray(buffer.scores)[filled]))
        layouts = np.asarray(jax.vmap(lambda lv: level_hash(level_layout(lv)))(buffer.levels))[filled]
        assert len({tuple(h) for h in layouts}) == filled.sum(), "the buffer stores a level twice"
        np.testing.assert_array_equal(np.asarray(buffer.hashes)[filled], layouts)
    # Different seeds, different curricula.
    assert not np.array_equal(np.asarray(states.buffer.scores[0]), np.asarray(states.buffer.scores[1]))


@pytest.mark.e2e  # over 20 s here (the default run leaves it out; --slow runs it)
def test_a_vmapped_run_equals_each_seed_alone():
    """Under vmap the replay and mutation `lax.cond`s compute both sides; each seed must still get
    exactly its own result."""
    cfg, _, run, _ = canonical_program("accel")  # conds and mutations
    _, _, keys, together, m_together = canonical_run("accel")
    alone, m_alone = jax.jit(run)(keys[1], hp_arrays(cfg))
    np.testing.assert_array_equal(np.asarray(m_alone["gradient_updates"]), m_together["gradient_updates"][1])
    np.testing.assert_array_equal(np.asarray(alone.buffer.filled), np.asarray(together.buffer.filled[1]))
    np.testing.assert_allclose(np.asarray(alone.buffer.scores), np.asarray(together.buffer.scores[1]),
                               rtol=1e-4, atol=1e-5)
    for a, b in zip(jax.tree.leaves(alone.train_state.params),
                    jax.tree.leaves(jax.tree.map(lambda x: x[1], together.train_state.params))):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-5)


class StepLoopOnly:
    """A runner seen without the update unit's protocol (`will_train`, `cycle`): `make_chunk` then spends
    the update budget with the step loop, whose body holds both sides of the replay decision (as before
    issue 55, and as `--budget cycles` still does)."""

    def __init__(self, runner):
        self._runner = runner

    def __getattr__(self, name):
        if name in ("will_train", "cycle"):
            raise AttributeError(name)
        return getattr(self._runner, name)


@pytest.mark.e2e  # over 20 s here (the default run leaves it out; --slow runs it)
def test_the_update_unit_plays_the_step_loops_cycles_for_every_seed():
    """ACCEL on two vmapped seeds from an empty buffer: the unit that plays the cycles of new levels without
    the PPO update and the mutation rollout (`budget._update_unit`) draws the same replay decisions and
    levels as the step loop, so every seed's cycles per update, replay fraction, buffer statistics
    (scores, staleness, mutations) and parameters are the step loop's."""
    runner = build_runner(small("accel"))
    states = jax.jit(jax.vmap(runner.init))(jax.random.split(jax.random.key(3), 2))
    ahead = jnp.zeros(2, jnp.int32)
    (by_unit, m_unit), (by_step, m_step) = [
        jax.device_get(jax.jit(jax.vmap(make_chunk(r, 6)))(states, ahead)) for r in (runner, StepLoopOnly(runner))]
    assert m_unit["cycles"].sum() > 12 and (m_unit["gradient_updates"] == 1).all()  # warm-up and new-level cycles
    for name in ("cycles", "gradient_updates", "env_steps", "replay_fraction_sum", "buffer/size"):
        np.testing.assert_array_equal(m_unit[name], m_step[name], err_msg=name)
    for name in [k for k in m_step if k.startswith("buffer/") or k.endswith("/count")]:
        np.testing.assert_allclose(m_unit[name], m_step[name], rtol=1e-4, atol=1e-5, err_msg=name)
    np.testing.assert_array_equal(by_unit.buffer.filled, by_step.buffer.filled)
    np.testing.assert_array_equal(by_unit.buffer.mutations, by_step.buffer.mutations)
    for a, b in zip(jax.tree.leaves(by_unit.train_state.params), jax.tree.leaves(by_step.train_state.params)):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


@pytest.mark.e2e  # over 20 s here (the default run leaves it out; --slow runs it)
def test_robust_plr_trains_only_on_replay_cycles():
    runner = build_runner(small("robust_plr", replay_prob=1.0))   # ready after one cycle of N = 4 new levels
    state = runner.init(jax.random.key(2))
    step = jax.jit(runner.step)
    first, m1 = step(state)          # the buffer is empty: a cycle of new levels, no gradient
    assert int(m1["gradient_updates"]) == 0 and float(m1["new/count"]) == runner.num_envs
    for a, b in zip(jax.tree.leaves(state.train_state.params), jax.tree.leaves(first.train_state.params)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert int(first.buffer.filled.sum()) > 0 and int(first.buffer.episode_count) == runner.num_envs
    second, m2 = step(first)         # ready, p = 1: a replay cycle, one PPO update
    assert int(m2["gradient_updates"]) == 1 and float(m2["replay/count"]) == runner.num_envs
    assert int(second.train_state.step) == runner.ppo.n_epochs
    assert any(not np.array_equal(a, b) for a, b in zip(jax.tree.leaves(first.train_state.params),
                                                       jax.tree.leaves(second.train_state.params)))


@pytest.mark.parametrize("score_function", ["maxmc", "pvl", "one_step_td"])
def test_reward_scale_learns_from_the_same_numbers_on_a_scaled_environment(score_function):
    """`--reward-scale 1/s` on an environment paying s times the reward must give PPO and the
    scores exactly the numbers of the unscaled run: MaxMC mixes stored returns (env units) with
    values (scaled units), so a scale applied to the rewards alone would be caught here."""
    s = 8.0
    plain = build_runner(small("robust_plr", score_function=score_function))
    scaled = build_runner(small("robust_plr", score_function=score_function, reward_scale=1 / s))
    state = plain.init(jax.random.key(4))
    levels = jax.vmap(plain.generator)(jax.random.split(jax.random.key(5), plain.num_envs))
    params = state.train_state.params
    played = jax.jit(functools.partial(play, plain))(jax.random.key(6), params, state.buffer, levels)
    rollout = played.rollout
    assert int(rollout.dones.sum()) > 0
    # An untrained agent earns nothing on these small mazes: give every step and episode a reward.
    k_r, k_ret = jax.random.split(jax.random.key(7))
    rollout = rollout.replace(
        rewards=jax.random.uniform(k_r, rollout.rewards.shape, minval=-1.0, maxval=1.0),
        episode_returns=jnp.where(rollout.dones, jax.random.uniform(k_ret, rollout.rewards.shape), 0.0))
    louder = rollout.replace(rewards=rollout.rewards * s, episode_returns=rollout.episode_returns * s)

    want_batch = ppo_batch(rollout, plain.ppo)
    got_batch = ppo_batch(louder, scaled.ppo)
    np.testing.assert_allclose(got_batch.advantages, want_batch.advantages, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_batch.targets, want_batch.targets, rtol=1e-5, atol=1e-6)

    # Levels 1 and 2 are stored (slots 0 and 1) with max returns 0.5 and 0.9 (env units); 0 and 3 are not.
    slots = jnp.array([-1, 0, 1, -1][:plain.num_envs], jnp.int32)
    stored = lambda scale: state.buffer.replace(  # noqa: E731
        max_returns=state.buffer.max_returns.at[:2].set(jnp.array([0.5, 0.9]) * scale))
    want = score(plain, played._replace(rollout=rollout, batch=want_batch, slots=slots), stored(1.0), state.train_state)
    got = score(scaled, played._replace(rollout=louder, batch=got_batch, slots=slots), stored(s), state.train_state)
    np.testing.assert_array_equal(got.valid, want.valid)
    np.testing.assert_allclose(got.scores, want.scores, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got.best, want.best * s, rtol=1e-6, atol=1e-6)  # stored in env units


def test_parallel_accel_lays_out_new_replay_and_mutated_levels():
    cfg = small("parallel_accel", min_fill_ratio=0.25)
    runner = build_runner(cfg)
    state = runner.init(jax.random.key(3))
    n = runner.num_envs
    # Fill the buffer with known levels and scores.
    stock = jax.vmap(runner.generator)(jax.random.split(jax.random.key(4), 8))
    buffer, _ = offer(state.buffer, stock, jnp.full(8, -1), jnp.linspace(0.1, 0.8, 8), jnp.zeros(8),
                      jnp.ones(8, bool), runner.buffer_cfg, identity=level_layout)
    new = jax.vmap(runner.generator)(jax.random.split(jax.random.key(6), 3 * n))
    lay_out = jax.jit(runner.level_groups)
    after, idx, groups, edits = lay_out(jax.random.key(5), True, buffer, new)
    assert len(groups) == 3
    fresh, replayed, children = (jax.tree.map(np.asarray, g) for g in groups)
    np.testing.assert_array_equal(fresh.wall_map, np.asarray(new.wall_map)[:n])
    np.testing.assert_array_equal(replayed.wall_map, np.asarray(buffer.levels.wall_map)[np.asarray(idx)])
    assert np.all(np.asarray(buffer.filled)[np.asarray(idx)])
    np.testing.assert_array_equal(np.asarray(edits), [0] * (2 * n) + [1] * n)  # only the children are edited
    for i in range(n):  # batch selection: env i's child comes from env i's replayed level
        edits = int((children.wall_map[i] != replayed.wall_map[i]).sum()) + int(
            np.any(children.goal_pos[i] != replayed.goal_pos[i]))
        assert edits <= cfg.mutation.n_mutations
        np.testing.assert_array_equal(children.agent_pos[i], replayed.agent_pos[i])
    # The clock counts the N replay draws only; the last drawn level is not stale at all.
    assert int(after.episode_count) == n
    assert int(after.last_sampled[int(idx[-1])]) == int(after.episode_count)
    # Not ready: every group plays new levels, no mutation counts, the clock advances by N.
    before, idx, groups, edits = lay_out(jax.random.key(5), False, buffer, new)
    for i, grp in enumerate(groups):
        np.testing.assert_array_equal(np.asarray(grp.wall_map), np.asarray(new.wall_map)[i * n:(i + 1) * n])
    assert np.all(np.asarray(idx) == -1) and np.all(np.asarray(edits) == 0)
    assert int(before.episode_count) == n


@pytest.mark.parametrize("criterion", ["batch", "easy", "hard"])
def test_mutation_criteria_pick_the_reference_parents(criterion):
    """Table 5's `batch` mutates every replayed level (one child per env); `easy` / `hard` tile
    the q lowest / highest scoring ones. With an identity mutator the children are the parents."""
    cfg = small("accel", num_envs=8, mutation_criterion=criterion, mutation_subsample=2)
    runner = build_runner(cfg)
    runner.mutator = lambda key, level: level
    levels = jax.vmap(runner.generator)(jax.random.split(jax.random.key(8), 8))
    scores = jnp.array([0.5, 0.9, 0.1, 0.7, 0.3, 0.8, 0.2, 0.6])
    children, mutations = mutate(runner, jax.random.key(9), levels, scores, jnp.arange(8, dtype=jnp.int32))
    parents = np.asarray(mutations) - 1   # each child's count is its parent's plus one
    expected = {"batch": np.arange(8), "easy": np.array([2, 6] * 4), "hard": np.array([1, 5] * 4)}[criterion]
    np.testing.assert_array_equal(parents, expected)
    np.testing.assert_array_equal(np.asarray(children.wall_map), np.asarray(levels.wall_map)[expected])
    if criterion == "batch":  # as many distinct parents as distinct replayed levels
        assert len(set(parents.tolist())) == len({np.asarray(w).tobytes() for w in levels.wall_map})


@pytest.mark.parametrize("method, traced", [("robust_plr", {"replay_prob": 1.0}), ("parallel_accel", {})])
def test_a_cycle_never_trains_on_an_empty_buffer(method, traced):
    """At replay probability 1 (passed as data to the canonical program; the parallel methods read none: they
    replay whenever the buffer is ready) the first cycle, whose buffer is empty, plays new levels and trains on
    nothing: no gradient step, no replay, no mutated children (of placeholder levels) played or stored; the
    next cycles replay and train, so the probability reached the program."""
    _, runner, _, states, m = canonical_run(method, **traced)
    np.testing.assert_array_equal(m["gradient_updates"][:, 0], 0)
    np.testing.assert_array_equal(m["replay/count"][:, 0], 0)
    np.testing.assert_array_equal(m["gradient_updates"][:, 1:], 1)
    if runner.mutates:
        np.testing.assert_array_equal(m["mutated/count"][:, 0], 0)
    # The optimiser stepped only in the cycles that trained (the first one's parameters stayed as they were).
    np.testing.assert_array_equal(np.asarray(states.train_state.step), m["gradient_updates"].sum(1) * runner.ppo.n_epochs)


@pytest.mark.e2e  # over a minute of compiling and training; the default run leaves it out (--slow)
def test_train_logs_buffer_and_level_statistics_and_checkpoints_the_buffer(tmp_path):
    cfg = small("accel", out_dir=str(tmp_path), run_name="accel", buffer_png=6)
    row = train(cfg)
    rows = read_rows(cfg.run_dir)
    assert [r["update"] for r in rows] == [2, 4]
    # The curriculum picture: the 6 highest-weighted levels at every log step.
    assert sorted(p.name for p in (cfg.run_dir / "buffer").iterdir()) == ["update0000002.png", "update0000004.png"]
    for key in ("buffer/size", "buffer/mean_score", "buffer/max_score", "buffer/weighted_score",
                "buffer/mean_staleness", "buffer/mean_mutations", "replay_fraction", "new/solvable",
                "new/shortest_path", "new/n_walls", "replay/n_walls", "mutated/shortest_path", "replay/score"):
        assert key in row, key
    assert [r["gradient_updates"] for r in rows] == [2, 4]   # --num-updates counts PPO updates, as the release
    assert rows[-1]["cycles"] >= 4                               # and the cycles of new levels in between
    # Each update is a replay cycle, which also plays the N mutated children; the totals are per run.
    assert rows[-1]["env_steps"] == 4 * 16 * (rows[-1]["cycles"] + 4)
    assert (rows[0]["replay/count"] + rows[1]["replay/count"]) // 4 == 4
    runner = build_runner(cfg)
    abstract = jax.eval_shape(runner.init, jax.random.key(0))
    state, meta = Checkpointer(cfg.run_dir / "checkpoints").restore(abstract)
    assert meta["update"] == 4
    assert int(state.buffer.filled.sum()) == rows[-1]["buffer/size"]
    levels, weights, scores, _ = top_levels(state.buffer, runner.buffer_cfg, 6)
    expected = np.sort(np.asarray(replay_weights(state.buffer, runner.buffer_cfg)))[::-1][:6]
    np.testing.assert_allclose(weights, expected, rtol=1e-6)
    assert levels.wall_map.shape[0] == len(scores) == 6
    # A per-device layout [D, K/D] counts as one buffer.
    split = jax.tree.map(lambda x: x.reshape((2, -1) + x.shape[1:]) if x.ndim else jnp.stack([x, x]), state.buffer)
    assert len(top_levels(split, runner.buffer_cfg, 100)[1]) == int(state.buffer.filled.sum())

    # Resume from update 2 reproduces the uninterrupted run.
    again = cfg.replace(run_name="accel-resumed", num_updates=2)
    train(again)
    train(again.replace(resume=True, num_updates=4))
    resumed = read_rows(again.run_dir)
    strip = lambda rs: [{k: v for k, v in r.items() if k not in ("time_s", "sps")} for r in rs]  # noqa: E731
    assert strip(resumed) == strip(rows)


@pytest.mark.parametrize("preset", ["plr", "accel", "pplr", "paccel"])
def test_presets_build_their_runners(preset):
    cfg = PRESETS[preset]
    runner = build_runner(cfg)
    assert runner.method == cfg.method and runner.buffer_cfg.capacity == 4000
    state = jax.eval_shape(runner.init, jax.random.key(0))
    assert state.buffer.scores.shape == (4000,)
    assert state.buffer.levels.wall_map.shape == (4000, 13, 13)


# The minimax report's Table 5 (LSTM student), typed from the report: DR, PLR⊥, PLR∥, ACCEL, ACCEL∥.
TABLE_5_COLUMNS = ("dr", "plr", "pplr", "accel", "paccel")
TABLE_5_ROWS = {
    "gamma": (0.995, 0.995, 0.999, 0.995, 0.995),
    "lr": (1e-4, 5e-5, 1e-4, 1e-4, 1e-4),
    "entropy_coef": (1e-3, 0.0, 0.0, 0.0, 0.0),
    "replay_prob": (None, 0.5, 0.5, 0.8, 0.8),
    "buffer_size": (None, 4000, 4000, 4000, 4000),
    "score_function": (None, "maxmc", "maxmc", "maxmc", "maxmc"),
    "score_transform": (None, "rank", "rank", "rank", "rank"),
    "temperature": (None, 0.1, 0.3, 0.1, 0.1),
    "staleness_coef": (None, 0.3, 0.3, 0.3, 0.3),
    "mutation_subsample": (None, None, None, 4, 4),
    "mutation_criterion": (None, None, None, "batch", "batch"),
    "n_mutations": (None, None, None, 20, 10),
}
TABLE_5_SHARED = dict(gae_lambda=0.98, num_steps=256, n_epochs=5, n_minibatches=1, clip_eps=0.2, num_envs=32,
                      adam_eps=1e-5, max_grad_norm=0.5, clip_value=True, value_coef=0.5, num_updates=30_000,
                      recurrent_cell="lstm", recurrent_size=256)


def test_presets_are_the_reports_table_5():
    # (the learned-teacher presets, Table 5's PAIRED column, are checked in test_paired.py; SFL's
    # authors' configuration in test_sfl.py, NCC's in test_ncc.py, SFL's JaxNav ones in test_jaxnav.py, the
    # Kinetix authors' in test_kinetix.py, SFL's XLand presets in test_xland.py)
    assert set(PRESETS) == (set(TABLE_5_COLUMNS) | {"paired", "pop_paired", "minimax_adversary", "sfl", "ncc",
                                                    "ncc_reg", "jaxnav_dr", "jaxnav_plr", "jaxnav_sfl", "kinetix_dr",
                                                    "kinetix_plr", "kinetix_accel", "kinetix_sfl",
                                                    "kinetix_dr_transformer", "kinetix_plr_transformer",
                                                    "kinetix_sfl_transformer", "pace",
                                                    "cenie", "accel_cenie", "traced", "remidi", "xland_dr", "xland_sfl",
                                                    "xland_plr"}
                            | set(TABLE_6_COLUMNS))
    assert_presets_are_the_table(TABLE_5_COLUMNS, ("dr", "robust_plr", "parallel_plr", "accel", "parallel_accel"),
                                 TABLE_5_SHARED, TABLE_5_ROWS)


def assert_presets_are_the_table(columns, methods, shared, rows):
    """Each column's preset has its method, the `shared` values and its own value of every row
    (None: the row does not apply to that method)."""
    for col, name in enumerate(columns):
        cfg = PRESETS[name]
        assert cfg.method == methods[col] and cfg.preset == name
        options = cfg.options()
        for field, value in shared.items():
            assert options[field] == value, (name, field)
        for field, values in rows.items():
            if values[col] is not None:
                assert options[field] == values[col], (name, field, options[field], values[col])


# The minimax report's Table 6 (S5 student), typed from the report: DR, PAIRED, PLR⊥, PLR∥, ACCEL, ACCEL∥.
TABLE_6_COLUMNS = ("dr_s5", "paired_s5", "plr_s5", "pplr_s5", "accel_s5", "paccel_s5")
TABLE_6_ROWS = {
    "gamma": (0.995, 0.995, 0.999, 0.995, 0.999, 0.999),
    "lr": (3e-5, 1e-4, 3e-5, 3e-5, 3e-5, 1e-5),
    "entropy_coef": (1e-3, 1e-3, 1e-3, 1e-3, 1e-3, 0.0),
    "teacher_entropy_coef": (None, 1e-3, None, None, None, None),
    "replay_prob": (None, None, 0.5, 0.5, 0.8, 0.8),
    "buffer_size": (None, None, 4000, 4000, 4000, 4000),
    "score_function": (None, None, "maxmc", "maxmc", "maxmc", "maxmc"),
    "score_transform": (None, None, "rank", "rank", "rank", "rank"),
    "temperature": (None, None, 0.3, 0.3, 0.3, 0.3),
    "staleness_coef": (None, None, 0.3, 0.3, 0.3, 0.3),
    "mutation_subsample": (None, None, None, None, 4, 4),
    "mutation_criterion": (None, None, None, None, "batch", "batch"),
    "n_mutations": (None, None, None, None, 10, 20),
    "s5_layernorm": ("post", "post", "pre", "post", "post", "post"),
}
TABLE_6_SHARED = {**TABLE_5_SHARED, "recurrent_cell": "s5", "s5_layers": 2, "s5_blocks": 2}


def test_s5_presets_are_the_reports_table_6():
    assert_presets_are_the_table(TABLE_6_COLUMNS, ("dr", "paired", "robust_plr", "parallel_plr", "accel",
                                                   "parallel_accel"), TABLE_6_SHARED, TABLE_6_ROWS)
    # The report replaces the student's LSTM only: the S5 PAIRED teacher is Table 5's network.
    assert PRESETS["paired_s5"].teacher.teacher_recurrent_cell == "lstm"
    model = build_runner(PRESETS["dr_s5"]).model
    assert (model.recurrent_cell, model.s5_layers, model.s5_blocks, model.s5_layernorm) == ("s5", 2, 2, "post")


def test_a_finite_training_set_must_fit_in_the_buffer():
    with pytest.raises(ConfigError, match=r"--train-levels \(100\) needs --buffer-size >= 100"):
        small("robust_plr", train_levels=100, buffer_size=50)
    small("robust_plr", train_levels=16, buffer_size=16)  # every level has a slot: fine


def test_configs_saved_before_mutation_criteria_keep_their_selection():
    # (configs of that time were saved flat: one key per option)
    old = {k: v for k, v in small("accel").options().items() if k != "mutation_criterion"}
    assert TrainConfig.from_dict({**old, "mutation_subsample": 4}).mutation.mutation_criterion == "hard"
    legacy_all = TrainConfig.from_dict({**old, "mutation_subsample": 0})
    assert legacy_all.mutation.mutation_criterion == "batch"


def test_a_finite_training_set_plays_unseen_seeds_first_and_loses_none():
    runner = build_runner(small("robust_plr", train_levels=10, buffer_size=16, min_fill_ratio=0.5))
    state = runner.init(jax.random.key(6))
    from minimax.curricula.training_set import level_from_seed  # noqa: PLC0415

    named = jax.vmap(lambda s: level_from_seed(runner.generator, s))(jnp.arange(10))
    named = {tuple(h) for h in np.asarray(jax.vmap(level_hash)(named))}
    seeds, levels = new_levels(runner, jax.random.key(7), state.training_set, runner.num_envs)
    assert len(set(np.asarray(seeds).tolist())) == runner.num_envs                # distinct while unseen remain
    assert {tuple(h) for h in np.asarray(jax.vmap(level_hash)(levels))} <= named
    # A seed counts as seen only once its level is stored.
    marked = mark_stored(runner, state.training_set, seeds, jnp.array([3, -1, 5, -1]))
    assert np.flatnonzero(np.asarray(marked.seen)).tolist() == sorted(np.asarray(seeds)[[0, 2]].tolist())


def test_a_training_level_whose_rollout_ends_no_episode_is_not_lost():
    """With rollouts shorter than an episode no level gets a score, so none is stored: every seed
    must stay unseen (drawn again later), not be marked seen and never played again."""
    runner = build_runner(small("robust_plr", train_levels=8, buffer_size=8, num_steps=4, max_episode_steps=16,
                                min_fill_ratio=0.5))
    state, m = jax.jit(lambda s: jax.lax.scan(lambda s, _: runner.step(s), s, None, length=3))(
        runner.init(jax.random.key(1)))
    assert int(state.buffer.filled.sum()) == 0 and int(state.training_set.seen.sum()) == 0


def test_mutation_methods_reject_a_finite_training_set():
    for method in ("accel", "parallel_accel"):
        with pytest.raises(ConfigError, match=rf"--train-levels \(8\) cannot be used with {method}"):
            small(method, train_levels=8, buffer_size=16)


def write_level_file(path, n: int, size: int = 5, seed: int = 3):
    """`n` distinct generated levels of `size` in the text format evaluate.py reads; their layouts."""
    from minimax.envs.maze import make_dr_generator  # noqa: PLC0415

    generator = make_dr_generator(size, size, n_walls=3)
    levels, seen = [], set()
    for i in range(10 * n):
        level = jax.tree.map(np.asarray, generator(jax.random.key(seed * 1000 + i)))
        if tuple(np.asarray(level_hash(level))) not in seen:
            seen.add(tuple(np.asarray(level_hash(level))))
            levels.append(level)
        if len(levels) == n:
            break
    path.write_text("\n\n".join(level_from_arrays(lv).to_text() for lv in levels) + "\n")
    return seen


def level_from_arrays(level):
    from minimax.envs.maze.level import Level  # noqa: PLC0415

    return Level(**{f: jnp.asarray(getattr(level, f)) for f in level.__dataclass_fields__})


def test_training_on_a_level_file_dr_and_plr(tmp_path):
    """--train-level-file: DR plays only the file's levels, uniformly; the PLR family uses them as
    its finite training set, so its buffer only ever holds them."""
    hashes = write_level_file(tmp_path / "mine.txt", 6)
    dr = build_runner(small("dr", train_level_file=str(tmp_path / "mine.txt")))
    drawn = np.asarray(jax.jit(jax.vmap(lambda k: level_hash(dr.auto_reset.generator(k))))(
        jax.random.split(jax.random.key(0), 1200)))
    counts = {h: 0 for h in hashes}
    for h in map(tuple, drawn):
        counts[h] += 1  # a KeyError here: a level not in the file
    assert all(abs(c - 200) < 5 * np.sqrt(200 * 5 / 6) for c in counts.values()), counts

    plr = build_runner(small("robust_plr", buffer_size=8, min_fill_ratio=0.5,
                             train_level_file=str(tmp_path / "mine.txt")))
    assert plr.cur.train_levels == 6
    state, _ = jax.jit(lambda s: jax.lax.scan(lambda s, _: plr.step(s), s, None, length=4))(
        plr.init(jax.random.key(1)))
    stored = np.asarray(jax.vmap(level_hash)(state.buffer.levels))[np.asarray(state.buffer.filled)]
    assert len(stored) > 0 and {tuple(h) for h in stored} <= hashes
    assert int(state.training_set.seen.sum()) == len(stored)


def test_bad_level_files_for_training_are_clear_errors(tmp_path):
    write_level_file(tmp_path / "five.txt", 3)
    with pytest.raises(ConfigError, match=r"level 'five-0' is 5x5, the training mazes .* 7x7"):
        build_runner(small("dr", maze_height=7, maze_width=7, train_level_file=str(tmp_path / "five.txt")))
    with pytest.raises(ConfigError, match=r"holds 3 levels: --train-levels \(3\) cannot be used with accel"):
        build_runner(small("accel", train_level_file=str(tmp_path / "five.txt")))
    with pytest.raises(ConfigError, match="--train-levels \\(4\\) and --train-level-file \\(3 levels\\) disagree"):
        build_runner(small("robust_plr", train_levels=4, train_level_file=str(tmp_path / "five.txt")))
    with pytest.raises(ConfigError, match="cannot be used with paired"):
        build_runner(small("paired", teacher_n_walls=10, train_level_file=str(tmp_path / "five.txt")))
    with pytest.raises(ConfigError, match="--train-level-file: cannot read level file"):
        build_runner(small("dr", train_level_file=str(tmp_path / "missing.txt")))
