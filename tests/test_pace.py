"""PACE (issue 57, `--score-function pace`, `curricula/pace.py`): a level's score is the squared norm of the PPO
gradient of its own rollout, computed for all levels at once; the batch's gradient is the mean of the levels';
runs train, vmapped over seeds, through the loop and `make_train`, and resume exactly."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import optax

from minimax.agents.level_updates import LevelUpdate, is_critic, level_update_sq_norms
from minimax.agents.ppo import PPOBatch, advantage_moments, ppo_loss
from minimax.config import PRESETS, TrainConfig
from minimax.core.parallel import NO_SHARD
from minimax.curricula.scores import SCORES, ScoreInputs
from minimax.runners.plr_parts import new_levels, play, score
from minimax.training.builder import build_runner
from minimax.training.loop import train
from minimax.training.make_train import make_train
from minimax.training.run_logs import read_rows
from run_helpers import without_timing

pytestmark = pytest.mark.contract  # tests/conftest.py's tiers: training programs at their tiny size

SMALL = dict(method="robust_plr", score_function="pace", maze_height=5, maze_width=5, n_walls=3,
             max_episode_steps=16, n_actions=3, recurrent_size=16, num_envs=4, num_steps=16, n_epochs=2, lr=3e-3,
             buffer_size=16, min_fill_ratio=0.25, replay_prob=0.5, num_updates=4, log_every=2, eval_every=0,
             checkpoint_every=2, progress=False)


@pytest.fixture(scope="module")
def played():
    """A small robust PLR runner, its initial train state and a rollout of 4 new levels with its parameters."""
    runner = build_runner(TrainConfig.from_options(**SMALL))
    state = runner.init(jax.random.key(0))
    _, levels = new_levels(runner, jax.random.key(1), state.training_set, runner.n)
    params = state.train_state.params
    played = jax.jit(functools.partial(play, runner))(jax.random.key(2), params, state.buffer, levels)
    return runner, state.train_state, (played, state.buffer), played.batch


def one_level(batch: PPOBatch, i: int) -> PPOBatch:
    return batch.replace(**{k: jax.tree.map(lambda x: x[:, i:i + 1], getattr(batch, k))
                            for k in ("obs", "reset", "actions", "log_probs", "values", "advantages", "targets")},
                         init_carry=jax.tree.map(lambda x: x[i:i + 1], batch.init_carry))


def test_each_levels_norm_is_its_own_gradients_and_the_batch_gradient_is_their_mean(played):
    runner, player, _, batch = played
    params = player.params
    whole_loss = LevelUpdate(loss="ppo", params="all")  # the reading whose levels' gradients sum to the batch's
    norms = np.asarray(jax.jit(lambda p, b: level_update_sq_norms(p, runner.model.apply, b, runner.ppo,
                                                                  reading=whole_loss))(params, batch))
    moments = advantage_moments(batch.advantages)
    grad = jax.jit(jax.grad(ppo_loss, has_aux=True), static_argnums=(1, 3, 4))
    per_level = [grad(params, runner.model.apply, one_level(batch, i), runner.ppo, NO_SHARD, moments)[0]
                 for i in range(runner.n)]  # directly, one level at a time
    direct = np.array([sum(float(jnp.sum(g ** 2)) for g in jax.tree.leaves(gs)) for gs in per_level])
    assert (direct > 0).all() and len(set(np.round(direct, 6))) == runner.n  # four different levels, four scores
    np.testing.assert_allclose(norms, direct, rtol=1e-4)
    whole, _ = grad(params, runner.model.apply, batch, runner.ppo, NO_SHARD, None)
    mean = jax.tree.map(lambda *gs: sum(gs) / len(gs), *per_level)
    scale = max(float(jnp.abs(g).max()) for g in jax.tree.leaves(whole))
    for a, b in zip(jax.tree.leaves(mean), jax.tree.leaves(whole)):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5 * scale)


READINGS = [LevelUpdate(), LevelUpdate(loss="ppo", params="all"), LevelUpdate(loss="ppo", params="actor"),
            LevelUpdate(step="sgd"), LevelUpdate(loss="ppo", params="all", step="sgd", advantages="level"),
            LevelUpdate(advantages="level"), LevelUpdate(step="optimizer"),
            LevelUpdate(loss="ppo", params="all", step="optimizer")]


def direct_sq_norm(runner, params, batch, i, reading: LevelUpdate, opt_state=None):
    """A temporary update on level i's data alone, taken with optax outside any vmap: the change of the
    parameters `reading` measures, squared and summed. `gradient` is an SGD step of rate 1 (the gradient
    itself); `sgd` the run's rate after clipping at --max-grad-norm; `optimizer` Adam's next step from
    `opt_state`, written here from optax's parts (clip, then Adam)."""
    cfg, level = runner.ppo, one_level(batch, i)
    moments = advantage_moments(batch.advantages) if reading.advantages == "batch" else None

    def objective(p):
        loss, stats = ppo_loss(p, runner.model.apply, level, cfg, NO_SHARD, moments)
        return loss if reading.loss == "ppo" else stats["policy_loss"] - cfg.entropy_coef * stats["entropy"]

    grads = jax.grad(objective)(params)
    clip = optax.clip_by_global_norm(cfg.max_grad_norm)
    tx = {"gradient": optax.sgd(1.0), "sgd": optax.chain(clip, optax.sgd(cfg.lr)),
          "optimizer": optax.chain(clip, optax.adam(cfg.lr, eps=cfg.adam_eps))}[reading.step]
    updates, _ = tx.update(grads, tx.init(params) if opt_state is None else opt_state, params)
    moved = optax.apply_updates(params, updates)
    change = jax.tree_util.tree_map_with_path(
        lambda path, a, b: jnp.zeros_like(a) if reading.params == "actor" and is_critic(path) else a - b, moved, params)
    return sum(float(jnp.sum(jnp.square(c))) for c in jax.tree.leaves(change))


@pytest.mark.e2e  # six readings' programs and a direct update per level: 15 s here (the default run leaves it out)
def test_every_pace_reading_is_a_temporary_update_on_the_level_alone(played):
    runner, player, _, batch = played
    params, whole_grad = player.params, jax.grad(lambda p: ppo_loss(p, runner.model.apply, batch, runner.ppo)[0])
    # Adam a step into training (its moments non-zero, its count 1): at the start its step is lr x sign(g) for
    # every level alike, and the reading would tell the levels apart only by their zero gradients.
    opt_state = player.tx.update(whole_grad(params), player.opt_state, params)[1]
    got = {}
    for reading in READINGS:
        norms = np.asarray(jax.jit(lambda p, b, s, r=reading: level_update_sq_norms(
            p, runner.model.apply, b, runner.ppo, reading=r, opt_state=s))(params, batch, opt_state))
        direct = [direct_sq_norm(runner, params, batch, i, reading, opt_state) for i in range(runner.n)]
        np.testing.assert_allclose(norms, direct, rtol=2e-4, atol=1e-12)
        got[reading] = norms
    # The readings measure different things: the value term moves the trunk (policy vs ppo), the value head is
    # left out (actor vs all), the level's own moments change every level's advantages.
    default, whole = got[LevelUpdate()], got[LevelUpdate(loss="ppo", params="all")]
    assert not np.allclose(default, whole, rtol=1e-3)
    assert (got[LevelUpdate(loss="ppo", params="actor")] < whole).all()
    assert not np.allclose(got[LevelUpdate(advantages="level")], default, rtol=1e-3)
    # Adam's step is not the gradient rescaled: its moments weigh each parameter by the gradients before.
    adam, sgd = got[LevelUpdate(step="optimizer")], got[LevelUpdate(step="sgd")]
    assert not np.allclose(adam / adam.mean(), sgd / sgd.mean(), rtol=1e-2)
    # The policy objective leaves the critic's own parameters unmoved: `actor` and `all` agree there.
    np.testing.assert_allclose(direct_sq_norm(runner, params, batch, 0, LevelUpdate(params="all")), default[0],
                               rtol=2e-4)


def test_the_runner_scores_every_played_level_by_its_norm(played):
    runner, player, (levels_played, buffer), batch = played
    params = player.params
    scores, _, valid = jax.jit(functools.partial(score, runner))(levels_played, buffer, player)
    norms = jax.jit(lambda p, b: level_update_sq_norms(p, runner.model.apply, b, runner.ppo))(params, batch)
    np.testing.assert_allclose(scores, norms, rtol=1e-5)  # one computation in two programs: rounding only
    assert np.asarray(valid).all()  # a gradient exists whether or not an episode ended


def test_pace_without_the_norms_says_what_it_needs():
    inputs = ScoreInputs(*(jnp.zeros((2, 3)),) * 5, policy=None, last_value=jnp.zeros(3), max_returns=jnp.zeros(3))
    with pytest.raises(ValueError, match="pace needs each level's PPO gradient norm"):
        SCORES["pace"].fn(inputs)
    assert SCORES["pace"].per_level and SCORES["pace"].needs_update_norms


def test_the_pace_preset_is_robust_plr_scored_by_pace():
    pace, plr = PRESETS["pace"].options(), PRESETS["plr"].options()
    assert pace["method"] == "robust_plr" and pace["score_function"] == "pace"
    assert {k for k in pace if pace[k] != plr[k]} == {"preset", "score_function"}


@pytest.mark.e2e  # two programs with a backward pass per level: over a minute of compiling on 2 cores
def test_two_vmapped_seeds_train_resume_exactly_and_make_train_runs_them(tmp_path):
    cfg = TrainConfig.from_options(**SMALL, seeds="0,1", out_dir=str(tmp_path), run_name="pace")
    train(cfg)
    rows = read_rows(cfg.run_dir)
    assert [r["update"] for r in rows] == [2, 2, 2, 4, 4, 4]
    assert all(r["buffer/mean_score"] > 0 for r in rows)
    again = cfg.replace(run_name="resumed", num_updates=2)
    train(again)
    train(again.replace(resume=True, num_updates=4))
    assert without_timing(read_rows(again.run_dir)) == without_timing(rows)
    out = jax.jit(jax.vmap(make_train(cfg.replace(seeds="", num_updates=2))))(jax.random.split(jax.random.key(0), 2))
    scores = np.asarray(out["runner_state"].buffer.scores)
    assert scores.shape == (2, 16) and (scores.max(1) > 0).all()


def test_pace_reads_the_paper_by_default_and_older_runs_resume_with_the_whole_loss():
    now = TrainConfig.from_options(**SMALL).curriculum
    assert (now.pace_loss, now.pace_params, now.pace_step, now.pace_advantages) == ("policy", "actor", "gradient",
                                                                                    "batch")
    saved = TrainConfig.from_options(**SMALL).to_dict()
    for field in ("pace_loss", "pace_params", "pace_step", "pace_advantages"):
        saved["curriculum"].pop(field)
    old = TrainConfig.from_dict(saved).curriculum
    assert (old.pace_loss, old.pace_params, old.pace_step, old.pace_advantages) == ("ppo", "all", "gradient", "batch")
