"""Level scores (minimax/curricula/scores.py) against plain NumPy/Python transcriptions of
the formulas in their docstrings, combined by an independent completed-episode mean."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from minimax.agents.distributions import Categorical
from minimax.curricula import scores as sc

T, N, A = 16, 12, 5
GAMMA = 0.9


# --------------------------------------------------------------------------- reference


def ref_completed_episode_mean(per_step, dones):
    """Walk each env's steps; an episode's mean is taken when it ends; a running tail is dropped."""
    t_max, n_env = per_step.shape
    means, counts = np.zeros(n_env), np.zeros(n_env, int)
    for n in range(n_env):
        episode_means, current = [], []
        for t in range(t_max):
            current.append(float(per_step[t, n]))
            if dones[t, n]:
                episode_means.append(sum(current) / len(current))
                current = []
        counts[n] = len(episode_means)
        means[n] = sum(episode_means) / len(episode_means) if episode_means else 0.0
    return means, counts


def np_softmax(logits):
    z = logits - logits.max(-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(-1, keepdims=True)


def ref_step_scores(name, x):
    adv, values = x["advantages"], x["values"]
    if name == "pvl":
        return np.maximum(adv, 0.0)
    if name == "maxmc":
        return x["max_returns"][None, :] - values
    if name == "l1_value_loss":
        return np.abs(adv)
    if name == "gae":
        return adv
    p = np_softmax(x["logits"])
    if name == "policy_entropy":
        return -(p * np.log(p)).sum(-1)
    if name == "least_confidence":
        return 1.0 - p.max(-1)
    if name == "min_margin":
        srt = np.sort(p, axis=-1)
        return 1.0 - (srt[..., -1] - srt[..., -2])
    if name == "one_step_td":
        out = np.zeros_like(values)
        for t in range(values.shape[0]):
            nxt = values[t + 1] if t + 1 < values.shape[0] else x["last_value"]
            out[t] = np.abs(x["rewards"][t] + GAMMA * nxt * (1.0 - x["dones"][t]) - values[t])
        return out
    if name == "normalized_policy_entropy":
        return -(p * np.log(p)).sum(-1) / np.log(p.shape[-1])
    if name == "one_step_td_level_replay":  # facebookresearch/level-replay's `|r_t + V_t - V_{t+1}|`
        nxt = np.concatenate([values[1:], x["last_value"][None]])
        return np.abs(x["rewards"] + values - nxt)
    raise KeyError(name)


def random_inputs(seed=0):
    rng = np.random.default_rng(seed)
    dones = rng.random((T, N)) < 0.25
    dones[:, 0] = False                       # no completed episode
    dones[:, 1] = False
    dones[-1, 1] = True                       # one episode ending exactly at the last step
    dones[:, 2] = False
    dones[0, 2] = True                        # one-step episode, then a running tail
    dones[:, 3] = True                        # every step ends an episode
    dones[-1, 4] = False                      # make sure some env has a running tail
    solved = dones & (rng.random((T, N)) < 0.5)
    logits = rng.normal(size=(T, N, A)) * 2.0
    tie = rng.random((T, N)) < 0.2            # two equal largest logits: margin 1
    top = logits.max(-1) + 0.5
    logits[..., 0] = np.where(tie, top, logits[..., 0])
    logits[..., 1] = np.where(tie, top, logits[..., 1])
    x = dict(rewards=rng.normal(size=(T, N)), values=rng.normal(size=(T, N)), dones=dones,
             solved=solved, advantages=rng.normal(size=(T, N)), logits=logits,
             last_value=rng.normal(size=N), max_returns=rng.normal(size=N) + 1.0)
    x = {k: (v.astype(np.float32) if v.dtype.kind == "f" else v) for k, v in x.items()}
    return x


def to_inputs(x):
    arrays = {k: jnp.asarray(v) for k, v in x.items() if k != "logits"}
    return sc.ScoreInputs(**arrays, policy=Categorical(jnp.asarray(x["logits"])), gamma=GAMMA)


# Eager: the score functions share most primitives, so op-by-op dispatch is cheaper here
# than one XLA compile per score name (jit is covered by the completed-episode-mean tests).
SCORE = sc.score_levels


# --------------------------------------------------------------------------- completed_episode_mean


def test_reference_episode_mean_by_hand():
    per_step = np.array([[1.0], [3.0], [5.0], [7.0], [100.0]])
    dones = np.array([[False], [True], [True], [False], [False]])
    means, counts = ref_completed_episode_mean(per_step, dones)
    assert counts[0] == 2 and means[0] == pytest.approx((2.0 + 5.0) / 2)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_completed_episode_mean_matches_loop(seed):
    x = random_inputs(seed)
    per_step = np.random.default_rng(100 + seed).normal(size=(T, N)).astype(np.float32)
    means, episodes = jax.jit(sc.completed_episode_mean)(jnp.asarray(per_step), jnp.asarray(x["dones"]))
    want_means, want_counts = ref_completed_episode_mean(per_step, x["dones"])
    np.testing.assert_allclose(np.asarray(means), want_means, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(np.asarray(episodes), want_counts)
    assert want_counts[0] == 0 and float(means[0]) == 0.0


def test_running_tail_is_not_scored():
    x = random_inputs(0)
    per_step = np.random.default_rng(5).normal(size=(T, N)).astype(np.float32)
    f = jax.jit(sc.completed_episode_mean)
    base, _ = f(jnp.asarray(per_step), jnp.asarray(x["dones"]))
    changed = per_step.copy()
    for n in range(N):
        ends = np.flatnonzero(x["dones"][:, n])
        tail_start = ends[-1] + 1 if len(ends) else 0
        changed[tail_start:, n] += 1000.0
    again, _ = f(jnp.asarray(changed), jnp.asarray(x["dones"]))
    np.testing.assert_allclose(np.asarray(again), np.asarray(base), rtol=1e-5, atol=1e-5)
    # ...while a change inside a completed episode does change the score
    changed = per_step.copy()
    changed[0, 3] += 1.0
    third, _ = f(jnp.asarray(changed), jnp.asarray(x["dones"]))
    assert abs(float(third[3]) - float(base[3]) - 1.0 / T) < 1e-4   # env 3: T one-step episodes


# --------------------------------------------------------------------------- score functions


def test_every_registered_score_has_a_reference():
    assert set(sc.STEP_SCORES) == {"pvl", "maxmc", "l1_value_loss", "gae", "policy_entropy", "least_confidence",
                                   "min_margin", "one_step_td", "normalized_policy_entropy",
                                   "one_step_td_level_replay"}
    assert set(sc.SCORE_FUNCTIONS) == set(sc.STEP_SCORES) | {"learnability", "oracle_regret", "perfect_regret", "mna"}  # test_regret_scores


@pytest.mark.parametrize("name", sorted(["pvl", "maxmc", "l1_value_loss", "gae", "policy_entropy",
                                         "least_confidence", "min_margin", "one_step_td", "normalized_policy_entropy",
                                         "one_step_td_level_replay"]))
def test_step_score_matches_formula(name):
    for seed in (0, 1):
        x = random_inputs(seed)
        per_step = ref_step_scores(name, {k: np.asarray(v, np.float64) for k, v in x.items()})
        np.testing.assert_allclose(np.asarray(sc.STEP_SCORES[name](to_inputs(x))), per_step, rtol=1e-4, atol=1e-5)
        want, counts = ref_completed_episode_mean(per_step, x["dones"])
        got, valid = SCORE(name, to_inputs(x))
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-4, atol=1e-5)
        np.testing.assert_array_equal(np.asarray(valid), counts > 0)
        assert np.asarray(got).dtype == np.float32


def test_min_margin_and_least_confidence_by_hand():
    logits = np.log(np.array([[[0.5, 0.3, 0.2]], [[0.4, 0.4, 0.2]]], np.float32))   # T=2, N=1, A=3
    x = sc.ScoreInputs(rewards=jnp.zeros((2, 1)), values=jnp.zeros((2, 1)), dones=jnp.ones((2, 1), bool),
                       solved=jnp.zeros((2, 1), bool), advantages=jnp.zeros((2, 1)), policy=Categorical(jnp.asarray(logits)),
                       last_value=jnp.zeros(1), max_returns=jnp.zeros(1))
    np.testing.assert_allclose(np.asarray(sc.min_margin(x))[:, 0], [0.8, 1.0], rtol=1e-5)
    np.testing.assert_allclose(np.asarray(sc.least_confidence(x))[:, 0], [0.5, 0.6], rtol=1e-5)


def test_learnability():
    for seed in (0, 3):
        x = random_inputs(seed)
        got, valid = SCORE("learnability", to_inputs(x))
        for n in range(N):
            episodes = int(x["dones"][:, n].sum())
            solved = int(x["solved"][:, n].sum())
            p = solved / episodes if episodes else 0.0
            assert float(got[n]) == pytest.approx(p * (1 - p), abs=1e-6)
            assert bool(valid[n]) == (episodes > 0)
    # hand values: 1 of 2 solved -> 1/4; all solved -> 0
    dones = jnp.array([[True, True], [True, True]])
    term = jnp.array([[True, True], [False, True]])
    x = to_inputs(random_inputs(0))
    x = x.replace(dones=jnp.zeros((T, N), bool).at[:2, :2].set(dones),
                  solved=jnp.zeros((T, N), bool).at[:2, :2].set(term))
    got, valid = SCORE("learnability", x)
    np.testing.assert_allclose(np.asarray(got)[:2], [0.25, 0.0], atol=1e-6)
    assert not np.asarray(valid)[2:].any()


def test_maxmc_with_rollout_max_return():
    x = random_inputs(4)
    rng = np.random.default_rng(9)
    episode_returns = rng.normal(size=(T, N)).astype(np.float32) * 2
    prior = rng.normal(size=N).astype(np.float32)
    mr = np.asarray(jax.jit(sc.rollout_max_return)(jnp.asarray(episode_returns), jnp.asarray(x["dones"]),
                                                   jnp.asarray(prior)))
    for n in range(N):
        best = prior[n]
        for t in range(T):
            if x["dones"][t, n]:
                best = max(best, episode_returns[t, n])
        assert mr[n] == pytest.approx(best)
    assert mr[0] == prior[0]                                  # no completed episode: prior kept
    x["max_returns"] = mr
    got, valid = SCORE("maxmc", to_inputs(x))
    want, counts = ref_completed_episode_mean(mr[None, :].astype(np.float64) - x["values"], x["dones"])
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(np.asarray(valid), counts > 0)


def test_unknown_score_raises_with_name():
    with pytest.raises(ValueError, match="no_such_score"):
        sc.score_levels("no_such_score", to_inputs(random_inputs(0)))
