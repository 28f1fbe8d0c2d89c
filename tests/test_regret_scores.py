"""Regret scores of issue 46. Oracle regret on AMaze (part 3): a level's optimal return (its shortest
action count, checked against BFS on hand-made and random mazes, unsolvable ones included, in
tests/test_paths.py) minus the agent's return, as a PLR-family score and as a logged metric of the
PLR family's levels. MNA (part 2): DEGen's score, against a transcription of the authors' code."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from minimax.config import ConfigError, TrainConfig
from minimax.curricula import scores as sc
from minimax.envs.maze.paths import optimal_return, shortest_action_count
from minimax.runners.plr_parts import group_metrics, play, score
from minimax.training.builder import build_runner

pytestmark = pytest.mark.contract  # tests/conftest.py's tiers: training programs at their tiny size


def inputs(dones, episode_returns, optimal):
    t, n = dones.shape
    zeros = jnp.zeros((t, n))
    return sc.ScoreInputs(rewards=zeros, values=zeros, dones=jnp.asarray(dones), solved=jnp.asarray(dones),
                          advantages=zeros, policy=None, last_value=jnp.zeros(n), max_returns=jnp.zeros(n),
                          episode_returns=jnp.asarray(episode_returns, jnp.float32),
                          optimal_returns=jnp.asarray(optimal, jnp.float32))


def test_oracle_regret_is_the_optimum_minus_the_mean_completed_return():
    dones = np.array([[0, 1, 0], [1, 0, 0], [0, 1, 0], [1, 0, 0]], bool)       # T=4, N=3
    returns = np.where(dones, [[0.0, 0.5, 0.0], [0.9, 0.0, 0.0], [0.0, 0.1, 0.0], [0.7, 0.0, 0.0]], 0.0)
    scores, valid = sc.score_levels("oracle_regret", inputs(dones, returns, [0.95, 0.8, 0.6]))
    np.testing.assert_allclose(np.asarray(scores)[:2], [0.95 - 0.8, 0.8 - 0.3], rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(valid), [True, True, False])   # level 2 finished no episode
    # An unsolvable level's optimum is 0: every failed episode (return 0) has regret 0.
    scores, _ = sc.score_levels("oracle_regret", inputs(dones, np.zeros_like(returns), [0.0, 0.0, 0.0]))
    np.testing.assert_allclose(np.asarray(scores)[:2], 0.0)
    with pytest.raises(ValueError, match="optimal return"):
        sc.score_levels("oracle_regret", inputs(dones, returns, [0.0] * 3).replace(optimal_returns=None))


def test_oracle_regret_is_refused_where_the_env_knows_no_optimum():
    with pytest.raises(ConfigError, match="--score-function oracle_regret needs each level's optimal return, "
                                          "which --env cartpole does not know"):
        TrainConfig.from_options(env="cartpole", method="robust_plr", score_function="oracle_regret",
                                 recurrent_cell="none")
    assert TrainConfig.from_options(method="accel", score_function="oracle_regret").curriculum.score_function == \
        "oracle_regret"


SMALL = dict(maze_height=5, maze_width=5, n_walls=3, max_episode_steps=16, n_actions=3, recurrent_size=8,
             num_envs=4, num_steps=32, buffer_size=8, min_fill_ratio=0.25, score_function="oracle_regret")


@pytest.mark.parametrize("method", ["robust_plr", pytest.param("parallel_plr", marks=pytest.mark.e2e)])
def test_plr_scores_levels_by_their_true_regret(method):
    """A cycle's scores are each played level's optimum minus its mean completed return, and the
    groups log that regret (`new/regret`, `replay/regret`)."""
    runner = build_runner(TrainConfig.from_options(method=method, **SMALL))
    state = jax.jit(runner.init)(jax.random.key(0))

    @jax.jit
    def played(state):
        key = jax.random.key(1)
        levels = jax.vmap(runner.generator)(jax.random.split(key, runner.num_envs))
        played = play(runner, jax.random.key(2), state.train_state.params, state.buffer, levels)
        scored = score(runner, played, state.buffer, state.train_state)
        return levels, played.rollout, scored.scores, scored.valid, group_metrics(runner, "new", played, scored)

    levels, rollout, scores, valid, metrics = jax.device_get(played(state))
    optimum = np.asarray(jax.vmap(optimal_return, in_axes=(0, None))(levels, runner.env_params.max_steps))
    dones = np.asarray(rollout.dones)
    assert valid.any()
    for n in np.flatnonzero(valid):
        completed = np.asarray(rollout.episode_returns)[dones[:, n], n]
        assert scores[n] == pytest.approx(optimum[n] - completed.mean(), abs=1e-5)
        assert scores[n] >= -1e-6  # no policy beats the optimum
    gaps = [optimum[n] - r for n in range(runner.num_envs) for r in np.asarray(rollout.episode_returns)[dones[:, n], n]]
    assert metrics["new/regret_sum"] / metrics["new/regret_count"] == pytest.approx(np.mean(gaps), abs=1e-5)
    # The whole step runs and keeps the regret in its metrics.
    _, step_metrics = jax.jit(runner.step)(state)
    assert "new/regret_sum" in step_metrics and "replay/regret_sum" in step_metrics


def their_perfect_regret(rewards, dones, steps, max_steps, gamma):
    """ReMiDi's `perfect_regret` (Michael-Beukman/ReMiDi `lib/common/plr.py`, with `monte_carlo_regret` of
    `lib/utils.py`) transcribed per env in plain Python: the optimum `(1 - 0.9 (N + 1) / M) gamma^N` (0 where the
    goal cannot be reached) minus the mean over completed episodes of `sum_k gamma^k r_k`, k counted from the
    episode's first step; -inf where no episode completed (their `incomplete_value`)."""
    out = []
    for e in range(rewards.shape[1]):
        returns, total, k = [], 0.0, 0
        for t in range(rewards.shape[0]):
            total += float(rewards[t, e]) * gamma ** k
            if dones[t, e]:
                returns.append(total)
                total, k = 0.0, 0
            else:
                k += 1
        n = steps[e]
        optimum = (1.0 - 0.9 * (n + 1) / max_steps) * gamma ** n if n >= 1 else 0.0
        out.append(optimum - np.mean(returns) if returns else -np.inf)
    return np.asarray(out)


def test_perfect_regret_is_the_authors_discounted_regret():
    m, gamma = 16, 0.9
    steps = np.array([3, 5, -1, 2])      # level 2's goal cannot be reached
    dones = np.zeros((9, 4), bool)
    rewards = np.zeros((9, 4), np.float32)
    for env, ends in ((0, (2, 8)), (1, (6,)), (2, (4,))):  # env 3 completes no episode
        for t in ends:
            dones[t, env] = True
    rewards[2, 0], rewards[8, 0] = 1 - 0.9 * 3 / m, 1 - 0.9 * 6 / m   # an optimal episode, then a 6-step one
    rewards[6, 1] = 1 - 0.9 * 7 / m
    optimal = np.where(steps >= 1, 1 - 0.9 * steps / m, 0.0)
    want = their_perfect_regret(rewards, dones, steps, m, gamma)
    for scale in (1.0, 2.0):   # --reward-scale: rewards and optimal returns arrive scaled, and so does the score
        x = inputs(dones, np.zeros_like(rewards), optimal * scale).replace(
            rewards=jnp.asarray(rewards * scale), optimal_steps=jnp.asarray(steps, jnp.int32), gamma=gamma,
            reward_scale=scale)
        scores, valid = sc.score_levels("perfect_regret", x)
        np.testing.assert_array_equal(np.asarray(valid), [True, True, True, False])
        np.testing.assert_allclose(np.asarray(scores)[:3], scale * want[:3], rtol=1e-5, atol=1e-7)
    # Their optimum is an optimal episode one action longer: the optimal 3-step episode alone scores below 0.
    alone = their_perfect_regret(rewards[:3], dones[:3], steps, m, gamma)[0]
    assert alone == pytest.approx((1 - 0.9 * 4 / m) * gamma ** 3 - (1 - 0.9 * 3 / m) * gamma ** 2) and alone < 0
    with pytest.raises(ValueError, match="action count"):
        sc.score_levels("perfect_regret", x.replace(optimal_steps=None))


@pytest.mark.e2e  # a robust PLR program of its own (another score function)
def test_a_robust_plr_cycle_scores_its_levels_by_the_authors_perfect_regret():
    """The maze's `level_facts` give each level's optimal action count, and a cycle's scores are the authors'
    formula on its rollout (`their_perfect_regret`)."""
    runner = build_runner(TrainConfig.from_options(method="robust_plr", **{**SMALL, "score_function": "perfect_regret"}))
    state = jax.jit(runner.init)(jax.random.key(0))

    @jax.jit
    def played(state):
        levels = jax.vmap(runner.generator)(jax.random.split(jax.random.key(1), runner.num_envs))
        played = play(runner, jax.random.key(2), state.train_state.params, state.buffer, levels)
        return levels, played.rollout, score(runner, played, state.buffer, state.train_state)

    levels, rollout, scored = jax.device_get(played(state))
    steps = np.asarray(jax.vmap(shortest_action_count)(levels))
    want = their_perfect_regret(np.asarray(rollout.rewards), np.asarray(rollout.dones), steps,
                                runner.env_params.max_steps, runner.ppo.gamma)
    assert scored.valid.any()
    np.testing.assert_allclose(scored.scores[scored.valid], want[scored.valid], rtol=1e-5, atol=1e-6)


@pytest.mark.e2e  # over 20 s here (the default run leaves it out; --slow runs it)
def test_dr_reports_each_finished_episodes_own_level_optimum():
    """DR changes level at every episode end: the optimum a finished episode reports is its own
    level's (computed once per generated level), and `new/regret` is that minus its return."""
    runner = build_runner(TrainConfig.from_options(method="dr", **{**SMALL, "score_function": "maxmc"}))
    state = jax.jit(runner.init)(jax.random.key(0))
    auto, params = runner.auto_reset, runner.env_params

    @jax.jit
    def steps(env_state):
        def one(c, key):
            levels = c.env_state.level
            actions = jax.random.randint(key, (runner.num_envs,), 0, 3)
            _, c, _, done, info = auto.step(key, c, actions, params)
            return c, (done, info["episode_stats"]["optimal_return"], jax.vmap(optimal_return, in_axes=(0, None))(
                levels, params.max_steps))
        return jax.lax.scan(one, env_state, jax.random.split(jax.random.key(4), 64))[1]

    done, reported, truth = jax.device_get(steps(state.stream.env_state))
    assert done.sum() >= 8
    np.testing.assert_allclose(reported[done], truth[done], atol=1e-6)
    m = {k: float(v) for k, v in jax.jit(runner.step)(state)[1].items()}
    assert m["new/regret_count"] == m["episodes"]
    assert m["new/regret_sum"] == pytest.approx(m["optimal_return_sum"] - m["episode_return_sum"], abs=1e-5)


@pytest.mark.parametrize("method, groups", [("sfl", ("new", "set")), ("paired", ("teacher",))])
def test_sfl_and_the_teachers_log_the_true_regret_of_their_levels(method, groups):
    options = dict(SMALL, method=method, score_function="maxmc")
    options.update(dict(sfl_batches=1, sfl_batch_levels=8, sfl_rollout_steps=32, sfl_set_size=4) if method == "sfl"
                   else dict(teacher_n_walls=3))
    runner = build_runner(TrainConfig.from_options(**{k: v for k, v in options.items()
                                                      if k not in ("buffer_size", "min_fill_ratio")}))
    m = {k: float(v) for k, v in jax.jit(runner.step)(jax.jit(runner.init)(jax.random.key(0)))[1].items()}
    assert sum(m[f"{g}/regret_count"] for g in groups) == m["episodes"] > 0
    for g in groups:
        mean = m[f"{g}/regret_sum"] / max(m[f"{g}/regret_count"], 1)
        assert -1e-6 <= mean <= 1.0


# ---- MNA (DEGen, issue 46 part 2) against a transcription of the authors' code --------------------------

def ref_clipped_gae(gamma, lam, last_value, values, rewards, dones):
    """DEGen's `compute_clipped_gae(..., use_max_value=True)` (minigrid/maze_plr.py), as loops over
    start step s and current step c, float64."""
    steps, envs = values.shape
    ext = np.concatenate([values, last_value[None]], 0)
    deltas = rewards + gamma * ext[1:] * (1 - dones) - ext[:-1]
    adv = np.zeros((steps, envs))
    for s in range(steps):
        for e in range(envs):
            gae, total, is_done = 0.0, 0.0, False
            for c in range(s, steps):
                i = c - s
                total = min(total + gamma ** i * deltas[c, e], 0.0)
                if not is_done:
                    gae += lam ** i * total + (lam ** (i + 1) / (1 - lam) * total if dones[c, e] else 0.0)
                is_done = is_done or bool(dones[c, e])
            i = steps - s
            adv[s, e] = (1 - lam) * (gae + (0.0 if is_done else lam ** i / (1 - lam) * total))
    return adv


def test_mna_matches_the_authors_clipped_gae_and_score():
    rng = np.random.default_rng(0)
    steps, envs, gamma, lam = 12, 5, 0.99, 0.95
    dones = rng.random((steps, envs)) < 0.2
    rewards = np.where(dones, rng.random((steps, envs)), 0.0)
    values, last_value = rng.normal(0.5, 0.3, (steps, envs)), rng.normal(0.5, 0.3, envs)
    max_returns = np.array([0.8, 0.0, -np.inf, 0.3, 0.5])
    x = sc.ScoreInputs(rewards=jnp.asarray(rewards, jnp.float32), values=jnp.asarray(values, jnp.float32),
                       dones=jnp.asarray(dones), solved=jnp.asarray(dones), advantages=jnp.zeros((steps, envs)),
                       policy=None, last_value=jnp.asarray(last_value, jnp.float32),
                       max_returns=jnp.asarray(max_returns, jnp.float32), gamma=gamma, gae_lambda=lam)
    want = ref_clipped_gae(gamma, lam, last_value, values, rewards, dones.astype(float))
    np.testing.assert_allclose(np.asarray(sc.clipped_advantages(x)), want, rtol=1e-4, atol=1e-5)
    assert (want <= 1e-12).all()
    scores, valid = sc.score_levels("mna", x)
    # negative_value_loss_solved_sum: -sum_t min(A, 0), times solved (max return > 0).
    np.testing.assert_allclose(np.asarray(scores), -np.minimum(want, 0).sum(0) * (max_returns > 0), rtol=1e-4,
                               atol=1e-5)
    np.testing.assert_array_equal(np.asarray(valid), dones.any(0))
    with pytest.raises(ConfigError, match="--gae-lambda must be < 1"):
        TrainConfig.from_options(method="robust_plr", score_function="mna", gae_lambda=1.0)


@pytest.mark.e2e  # over 20 s here (the default run leaves it out; --slow runs it)
def test_a_robust_plr_step_scores_by_mna():
    runner = build_runner(TrainConfig.from_options(method="robust_plr", **{**SMALL, "score_function": "mna"}))
    state = jax.jit(runner.init)(jax.random.key(0))
    for _ in range(3):
        state, metrics = jax.jit(runner.step)(state)
    scores = np.asarray(state.buffer.scores)[np.asarray(state.buffer.filled)]
    assert scores.size and (scores >= 0).all() and np.isfinite(scores).all()
