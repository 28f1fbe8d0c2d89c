"""TRACED (issue 57, `--method traced`, `curricula/transitions.py`, `runners/traced.py`): which transitions
count, each level's transition error against a direct computation, the model's step, the co-learnability
credit on a hand-computed case, the runner's score (PVL + coef x ATPL) and ledger, and runs that train
vmapped and resume."""

import functools
import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from minimax.config import PRESETS, TrainConfig
from minimax.curricula.transitions import (TransitionModel, completed_episode_length, credit_colearnability,
                                           init_transition_state, score_and_step, transition_errors, transition_mask)
from minimax.runners.plr_parts import new_levels, play, score
from minimax.training.builder import build_runner
from run_helpers import trains_resumes_and_makes_train

pytestmark = pytest.mark.contract  # tests/conftest.py's tiers: training programs at their tiny size


def test_only_non_terminal_transitions_of_completed_episodes_count():
    dones = jnp.asarray([[0, 0], [1, 0], [0, 1], [0, 0], [1, 0], [0, 0]], bool)  # [T=6, N=2]
    mask = np.asarray(transition_mask(dones))
    # env 0: episodes end at t=1 and t=4; t=5 belongs to an unfinished one. env 1: one episode ends at t=2.
    np.testing.assert_array_equal(mask[:, 0], [1, 0, 1, 1, 0, 0])
    np.testing.assert_array_equal(mask[:, 1], [1, 1, 0, 0, 0, 0])


def test_a_levels_episode_sum_factor_is_the_mean_length_of_its_completed_episodes():
    dones = jnp.asarray([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 0], [1, 0, 0], [0, 0, 0]], bool)  # [T=6, N=3]
    # env 0: episodes of 2 and 3 steps (t=5 runs on); env 1: one of 3 steps; env 2: none ended.
    np.testing.assert_allclose(completed_episode_length(dones), [2.5, 3.0, 0.0])


def _batch(seed=0, t=6, n=3, f=4, actions=3):
    rng = np.random.default_rng(seed)
    x = jnp.asarray(rng.normal(size=(t, n, f)), jnp.float32)
    a = jax.nn.one_hot(rng.integers(0, actions, (t, n)), actions)
    dones = jnp.asarray(rng.random((t, n)) < 0.35)
    reset = jnp.concatenate([jnp.ones((1, n), bool), dones[:-1]], axis=0)
    return x, a, reset, dones


def test_each_levels_error_is_the_mean_l1_of_its_counted_predictions():
    x, a, reset, dones = _batch()
    model = TransitionModel(4, 8)
    state = init_transition_state(jax.random.key(0), model, x, a, 1e-3)
    per_level, count, loss = transition_errors(state.params, model, x, a, reset, dones)
    pred = np.asarray(model.apply(state.params, x, a, reset))
    mask, xs = np.asarray(transition_mask(dones)), np.asarray(x)
    errs = {i: [np.abs(pred[t, i] - xs[t + 1, i]).mean() for t in range(x.shape[0]) if mask[t, i]]
            for i in range(x.shape[1])}
    want = [np.mean(e) if e else 0.0 for e in errs.values()]
    np.testing.assert_allclose(per_level, want, rtol=1e-5, atol=1e-6)
    assert np.asarray(count).tolist() == [len(e) for e in errs.values()]
    np.testing.assert_allclose(loss, np.mean(sum(errs.values(), [])), rtol=1e-5)


def test_levels_are_scored_by_the_model_before_its_step_and_the_step_descends():
    x, a, reset, dones = _batch(1)
    model = TransitionModel(4, 8)
    state = init_transition_state(jax.random.key(1), model, x, a, 1e-2)
    before, _, loss0 = transition_errors(state.params, model, x, a, reset, dones)
    stepped, per_level, _, loss = score_and_step(state, model, x, a, reset, dones)
    np.testing.assert_allclose(per_level, before, rtol=1e-6)
    assert float(loss) == pytest.approx(float(loss0))
    assert float(transition_errors(stepped.params, model, x, a, reset, dones)[2]) < float(loss0)
    assert int(stepped.step) == 1


def test_co_learnability_credits_the_previous_periods_levels_with_this_periods_mean_drop():
    changed = jnp.asarray([True, False, True, False])
    previous, scores = jnp.asarray([5.0, 0.0, 3.0, 9.0]), jnp.asarray([4.0, 7.0, 1.0, 2.0])
    last = jnp.asarray([False, True, False, True])
    bonus = jnp.asarray([0.0, 0.5, 0.0, 0.0])
    b, new_last, new_changed = credit_colearnability(bonus, changed, previous, scores, last, 2.0, True)
    # mean drop over the rescored slots 0 and 2: ((5 - 4) + (3 - 1)) / 2 = 1.5, times 2 to slots 1 and 3
    np.testing.assert_allclose(b, [0.0, 3.5, 0.0, 3.0])
    assert np.asarray(new_last).tolist() == [True, False, True, False] and not np.asarray(new_changed).any()
    same = credit_colearnability(bonus, changed, previous, scores, last, 2.0, False)  # no update: nothing moves
    for got, want in zip(same, (bonus, last, changed)):
        np.testing.assert_array_equal(got, want)


SMALL = dict(method="traced", maze_height=5, maze_width=5, n_walls=3, max_episode_steps=16, n_actions=3,
             recurrent_size=16, num_envs=4, num_steps=16, n_epochs=2, lr=3e-3, buffer_size=16, min_fill_ratio=0.25,
             replay_prob=0.5, num_updates=4, log_every=2, eval_every=0, checkpoint_every=2, progress=False,
             n_mutations=2, score_function="pvl", traced_hidden=16)


def test_the_model_sees_the_maze_view_over_10_once_as_the_authors_model_does():
    """The authors' model reads MultiGrid's view divided by 10 (their image wrapper's `scale`), the view alone
    (a dict observation gives its `image`). Our maze normalises its view by 10 already (`--normalize-obs`, on in
    every preset): the model's inputs are the raw view over 10, not over 100, and not the agent's direction."""
    runner = build_runner(TrainConfig.from_options(**SMALL))
    assert runner.env_params.normalize_obs and PRESETS["traced"].env.normalize_obs
    levels = jax.vmap(runner.generator)(jax.random.split(jax.random.key(0), 3))
    states = jax.vmap(lambda lv: runner.env.init_state(lv, runner.env_params))(levels)
    obs = jax.vmap(lambda st: runner.env.get_obs(st, runner.env_params))(states)
    raw = jax.vmap(lambda st: runner.env.get_obs(st, runner.env_params.replace(normalize_obs=False)))(states)
    rollout = types.SimpleNamespace(obs=jax.tree.map(lambda v: v[None], obs), actions=jnp.zeros((1, 3), jnp.int32),
                                    reset=jnp.ones((1, 3), bool), dones=jnp.zeros((1, 3), bool))
    x = np.asarray(runner._inputs(rollout)[0])
    want = np.asarray(raw["image"], np.float32).reshape(1, 3, -1) / 10
    np.testing.assert_allclose(x, want, rtol=1e-6)
    assert 0.5 < x.max() <= 1.0  # the goal (8) or the agent (10) in view: values up to 1, the authors' range


def test_runs_saved_before_the_authors_inputs_and_sums_resume_as_they_ran():
    saved = TrainConfig.from_options(**SMALL).to_dict()
    for field in ("traced_observation", "traced_score_sums"):
        saved["traced"].pop(field)
    old = TrainConfig.from_dict(saved)
    assert (old.traced.traced_observation, old.traced.traced_score_sums) == ("all", False)
    new = TrainConfig.from_options(**SMALL).traced
    assert (new.traced_observation, new.traced_score_sums, new.traced_obs_scale) == ("image", True, 1.0)


@pytest.mark.e2e  # over 20 s here (the default run leaves it out; --slow runs it)
def test_the_runner_scores_pvl_plus_the_transition_error_and_keeps_its_ledger():
    runner = build_runner(TrainConfig.from_options(**SMALL, traced_transition_coef=2.0))
    state = runner.init(jax.random.key(0))
    _, levels = new_levels(runner, jax.random.key(1), state.training_set, runner.n)
    params = state.train_state.params
    played = jax.jit(functools.partial(play, runner))(jax.random.key(2), params, state.buffer, levels)
    pvl, _, valid = jax.jit(functools.partial(score, runner))(played, state.buffer, state.train_state)
    x, a, reset, dones = runner._inputs(played.rollout)
    atpl = transition_errors(state.model.params, runner._model(x.shape[-1]), x, a, reset, dones)[0]
    offer = jax.jit(functools.partial(runner.scored_offer, offered=jnp.ones((runner.n,), bool)))
    buffer, model, ledger, where, scored, _ = offer(state.buffer, state.model, state.ledger, played, params)
    length = completed_episode_length(played.rollout.dones)
    np.testing.assert_allclose(scored.scores, (pvl + 2.0 * atpl) * length, rtol=1e-5, atol=1e-6)
    assert np.asarray(valid).any() and int(model.step) == 1
    stored = np.asarray(where)[np.asarray(where) >= 0]
    assert stored.size and np.asarray(ledger.changed)[stored].all() and (np.asarray(ledger.bonus) == 0).all()
    # a newcomer's score before its rescoring is its own score: its first drop is 0
    np.testing.assert_allclose(np.asarray(ledger.previous)[stored], np.asarray(buffer.scores)[stored], rtol=1e-6)


def test_the_traced_preset_is_accel_with_pvl_and_the_authors_weights():
    traced, accel = PRESETS["traced"].options(), PRESETS["accel"].options()
    assert traced["method"] == "traced" and traced["score_function"] == "pvl"
    assert traced["traced_transition_coef"] == 1.0 and traced["traced_colearnability_coef"] == 1.0
    assert {k for k in accel if k in traced and traced[k] != accel[k]} == {"preset", "method", "score_function"}


@pytest.mark.e2e  # two programs of the loop: about a minute of compiling on 2 cores
def test_two_vmapped_seeds_train_resume_exactly_and_make_train_runs_them(tmp_path):
    cfg = TrainConfig.from_options(**SMALL, seeds="0,1", out_dir=str(tmp_path), run_name="traced")
    rows, state = trains_resumes_and_makes_train(cfg)
    assert all(r["traced/atpl"] > 0 for r in rows)
    assert state.ledger.bonus.shape == (2, 16) and (np.asarray(state.model.step) > 0).all()
