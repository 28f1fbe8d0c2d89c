"""The host-side PLR level sampler against a transcription of the reference `LevelSampler`."""

import numpy as np
import pytest

from minimax.host.level_sampler import LevelSampler, SamplerConfig
from minimax.core.options import ConfigError
from tests.reference_level_sampler import ReferenceLevelSampler

SEEDS = np.arange(100, 150)
REFERENCE_NAMES = {"l1_value_loss": "value_l1", "pvl": "positive_value_loss",
                   "normalized_policy_entropy": "policy_entropy", "one_step_td_level_replay": "one_step_td_error"}


def _pair(**kw):
    cfg = SamplerConfig(**kw)
    ours = LevelSampler(SEEDS, 4, cfg)
    ref = ReferenceLevelSampler(SEEDS, 4, strategy=REFERENCE_NAMES.get(cfg.score_function, cfg.score_function),
                                replay_schedule=cfg.replay_schedule, score_transform=cfg.score_transform,
                                temperature=cfg.temperature, eps=cfg.greedy_eps, rho=cfg.rho, nu=1 - cfg.replay_prob,
                                alpha=cfg.score_alpha, staleness_coef=cfg.staleness_coef,
                                staleness_transform=cfg.staleness_transform,
                                staleness_temperature=cfg.staleness_temperature)
    return ours, ref


def _set_state(ours, ref, rng):
    n = SEEDS.size
    scores = rng.permutation(n) * 0.01 + rng.uniform(0.001, 0.009, n)  # distinct and positive: no rank ties
    seen = rng.random(n) < 0.6
    staleness = rng.permutation(n).astype(float)  # distinct: the reference leaves the order of ties to quicksort
    ours.scores, ours.seen, ours.staleness = scores.copy(), seen.copy(), staleness.copy()
    ref.seed_scores, ref.unseen_seed_weights, ref.seed_staleness = scores.copy(), (~seen).astype(float), staleness.copy()


@pytest.mark.parametrize("transform,temperature,staleness_coef,staleness_transform", [
    ("rank", 0.1, 0.1, "power"), ("rank", 1.0, 0.0, "power"), ("rank", 0.3, 0.5, "rank"),
    ("power", 0.5, 0.1, "power"), ("softmax", 0.05, 0.1, "softmax"), ("eps_greedy", 1.0, 0.1, "power"),
    ("softmax", 1.0, 0.0, "power")])
def test_replay_probabilities_equal_the_reference(transform, temperature, staleness_coef, staleness_transform):
    rng = np.random.default_rng(0)
    ours, ref = _pair(score_transform=transform, temperature=temperature, staleness_coef=staleness_coef,
                      staleness_transform=staleness_transform)
    for _ in range(5):
        _set_state(ours, ref, rng)
        np.testing.assert_allclose(ours.sample_weights(), ref.sample_weights(), rtol=1e-10, atol=1e-15)
        assert ours.sample_weights().sum() == pytest.approx(1.0)


def _rollouts(rng, steps=24, actors=4, count=3):
    """Consecutive rollouts with episodes running across their ends: (levels, dones, returns, values, masks)."""
    level = rng.choice(SEEDS, actors)
    prev_done = np.zeros(actors, bool)
    out = []
    for _ in range(count):
        levels, dones = np.empty((steps, actors), np.int64), rng.random((steps, actors)) < 0.12
        for t in range(steps):
            levels[t] = level
            level = np.where(dones[t], rng.choice(SEEDS, actors), level)
        masks = np.concatenate([(~prev_done)[None], ~dones], 0).astype(float)
        prev_done = dones[-1]
        out.append((levels, dones, rng.normal(size=(steps, actors)), rng.normal(size=(steps, actors)), masks))
    return out


@pytest.mark.parametrize("alpha", [1.0, 0.3])
def test_rollout_scores_equal_the_reference(alpha):
    rng = np.random.default_rng(1)
    ours, ref = _pair(score_alpha=alpha)
    for levels, dones, returns, values, masks in _rollouts(rng):
        ours.update_with_rollout(levels, dones, np.abs(returns - values))
        ref.update_with_rollouts(levels, masks, returns, values)
        np.testing.assert_allclose(ours.scores, ref.seed_scores, rtol=1e-12, atol=1e-15)
        ours.after_update()
        ref.after_update()
        np.testing.assert_allclose(ours.scores, ref.seed_scores, rtol=1e-12, atol=1e-15)
        np.testing.assert_array_equal(ours.seen, ref.unseen_seed_weights == 0)


def test_carry_scores_an_episode_across_rollouts_by_its_steps():
    sampler = LevelSampler(SEEDS, 1, SamplerConfig(partial_episodes="carry"))
    level = np.full((4, 1), SEEDS[3])
    sampler.update_with_rollout(level, np.zeros((4, 1), bool), np.full((4, 1), 2.0))
    sampler.after_update()
    assert not sampler.seen[3]           # carried, not committed
    sampler.update_with_rollout(level[:2], np.array([[False], [True]]), np.full((2, 1), 5.0))
    assert sampler.seen[3] and sampler.scores[3] == pytest.approx((4 * 2.0 + 2 * 5.0) / 6)


def test_staleness_and_the_proportionate_schedule():
    cfg = SamplerConfig(rho=0.0)
    sampler = LevelSampler(SEEDS, 1, cfg, rng_seed=3)
    sampler.seen[:20] = True                 # 40% seen
    sampler.scores[:20] = np.linspace(1, 2, 20)
    replayed = 0
    for _ in range(4000):
        before = sampler.staleness.copy()
        i = sampler.index[sampler.sample()]
        replayed += sampler.seen[i]
        expected = before + 1
        expected[i] = 0
        np.testing.assert_array_equal(sampler.staleness, expected)
    assert replayed / 4000 == pytest.approx(0.4, abs=0.03)  # replay with probability = the seen fraction


def test_new_levels_come_first_until_rho_and_dr_is_uniform():
    sampler = LevelSampler(SEEDS, 1, SamplerConfig(), rng_seed=0)   # rho 1: every level before any replay
    sampler.seen[:49] = True
    assert all(sampler.sample() == SEEDS[49] for _ in range(20))
    tree = LevelSampler(SEEDS, 1, SamplerConfig(draw="tree"), rng_seed=0)
    tree.seen[:48] = True
    assert {tree.sample() for _ in range(40)} == {SEEDS[48], SEEDS[49]}
    assert [sampler.sample_sequential() for _ in range(3)] == list(SEEDS[:3])
    uniform = LevelSampler(SEEDS, 1, SamplerConfig(score_function="random"), rng_seed=0)
    counts = np.bincount([uniform.index[uniform.sample()] for _ in range(20000)], minlength=SEEDS.size)
    assert counts.min() > 300 and counts.max() < 500   # 400 expected each (6 sigma is about 120)


def test_state_dict_resumes_the_same_draws():
    sampler = LevelSampler(SEEDS, 2, SamplerConfig(rho=0.2), rng_seed=5)
    sampler.seen[:30], sampler.scores[:30] = True, np.arange(30.0)
    [sampler.sample() for _ in range(7)]
    saved = sampler.state_dict()
    ahead = [sampler.sample() for _ in range(50)]
    again = LevelSampler(SEEDS, 2, SamplerConfig(rho=0.2), rng_seed=99)
    again.load_state_dict(saved)
    assert [again.sample() for _ in range(50)] == ahead


def test_bad_settings_are_named():
    with pytest.raises(ConfigError, match="--temperature"):
        SamplerConfig(temperature=0)
    with pytest.raises(ConfigError, match="--score-alpha"):
        SamplerConfig(score_alpha=0)
    with pytest.raises(ConfigError, match="--replay-prob"):
        SamplerConfig(replay_prob=1.5)
    with pytest.raises(ValueError, match="distinct"):
        LevelSampler([1, 1, 2], 1, SamplerConfig())


def test_tree_draws_follow_the_replay_distribution():
    """The sum-tree path draws from the same P_replay as the reference's O(n) choice (chi-square)."""
    from scipy.stats import chisquare
    sampler = LevelSampler(SEEDS, 1, SamplerConfig(draw="tree", temperature=0.5, staleness_coef=0.3), rng_seed=2)
    sampler.seen[:35], sampler.scores[:35] = True, np.linspace(0.1, 3.0, 35)
    sampler.staleness[:] = np.arange(SEEDS.size)[::-1]
    p = sampler.sample_weights()
    counts = np.bincount([sampler._draw_tree() for _ in range(30000)], minlength=SEEDS.size)
    assert counts[35:].sum() == 0
    assert chisquare(counts[:35], 30000 * p[:35]).pvalue > 1e-4
    sampler.sample()                       # a draw moves staleness; a score change rebuilds the tree
    sampler._commit(40, 5.0)
    p = sampler.sample_weights()
    counts = np.bincount([sampler._draw_tree() for _ in range(30000)], minlength=SEEDS.size)
    assert chisquare(counts[p > 0], 30000 * p[p > 0]).pvalue > 1e-4


def test_the_fixed_schedule_replays_with_replay_prob():
    """`--replay-prob` means on the host what it means on the compiled path: the probability of a replay
    under --replay-schedule fixed (the reference's 1 - nu), once --rho of the levels are seen."""
    for p in (0.2, 0.8):
        sampler = LevelSampler(SEEDS, 1, SamplerConfig(replay_schedule="fixed", replay_prob=p, rho=0.1), rng_seed=1)
        sampler.seen[:25] = True
        assert np.mean([sampler.replay_decision() for _ in range(5000)]) == pytest.approx(p, abs=0.03)


def _score_inputs(rng, T=7, N=5, A=4):
    """A rollout's arrays, and the compiled path's `ScoreInputs` of it."""
    import jax.numpy as jnp
    from minimax.agents.distributions import Categorical
    from minimax.curricula.scores import ScoreInputs
    arrays = dict(rewards=rng.normal(size=(T, N)), values=rng.normal(size=(T, N)), dones=rng.random((T, N)) < 0.3,
                  advantages=rng.normal(size=(T, N)), last_value=rng.normal(size=N), logits=rng.normal(size=(T, N, A)))
    arrays = {k: jnp.asarray(v, jnp.float32 if v.dtype != bool else bool) for k, v in arrays.items()}
    inputs = ScoreInputs(rewards=arrays["rewards"], values=arrays["values"], dones=arrays["dones"],
                         solved=arrays["dones"], advantages=arrays["advantages"], policy=Categorical(arrays["logits"]),
                         last_value=arrays["last_value"], max_returns=jnp.zeros(N), gamma=0.99)
    return arrays, inputs


def _host_terms(name, a, gamma=0.99):
    from minimax.host.learner import step_score_terms
    return step_score_terms(name, a["rewards"], a["values"], a["dones"], a["advantages"], a["logits"],
                            a["last_value"], gamma, 0.95)


def test_host_scores_are_the_registered_functions_and_the_references_formulas():
    """A host run's per-step score terms are the registered score's own function on its rollout (the compiled
    path's formulas); the reference's one-step TD, |r + V - V'|, and its entropy over log |A| have names of their
    own; scores a host sampler cannot feed (a level's best return, its optimum, successes) are not offered."""
    import numpy.testing as npt
    from minimax.curricula.scores import SCORES
    from minimax.host.level_sampler import host_scores
    arrays, inputs = _score_inputs(np.random.default_rng(0))
    assert {"l1_value_loss", "gae", "pvl", "policy_entropy", "one_step_td", "least_confidence", "min_margin",
            "normalized_policy_entropy", "one_step_td_level_replay"} <= set(host_scores())
    assert not {"maxmc", "learnability", "oracle_regret", "mna", "pace"} & set(host_scores())
    for name in host_scores():
        npt.assert_allclose(_host_terms(name, arrays), SCORES[name].fn(inputs), rtol=1e-5, atol=1e-6, err_msg=name)
    v, nxt = np.asarray(arrays["values"]), np.concatenate([arrays["values"][1:], arrays["last_value"][None]])
    r, d = np.asarray(arrays["rewards"]), np.asarray(arrays["dones"], np.float32)
    npt.assert_allclose(_host_terms("one_step_td_level_replay", arrays), np.abs(r + v - nxt), rtol=1e-5, atol=1e-6)
    npt.assert_allclose(_host_terms("one_step_td", arrays), np.abs(r + 0.99 * nxt * (1 - d) - v), rtol=1e-5,
                        atol=1e-6)
    logits = np.asarray(arrays["logits"], np.float64)
    p = np.exp(logits - logits.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    entropy = -(p * np.log(p)).sum(-1)
    npt.assert_allclose(_host_terms("policy_entropy", arrays), entropy, rtol=1e-5)
    npt.assert_allclose(_host_terms("normalized_policy_entropy", arrays), entropy / np.log(4), rtol=1e-5)
    npt.assert_allclose(_host_terms("least_confidence", arrays), 1 - p.max(-1), rtol=1e-5, atol=1e-6)
    assert not np.asarray(_host_terms("random", arrays)).any()


def test_a_score_the_host_sampler_cannot_feed_is_refused_naming_the_choices():
    with pytest.raises(ConfigError, match="--score-function maxmc needs what a host run's level sampler does not"):
        SamplerConfig(score_function="maxmc")
    with pytest.raises(ConfigError, match=r"--score-function must be one of pvl, l1_value_loss, .*random, sequential, "
                                          r"got 'nope'"):
        SamplerConfig(score_function="nope")
