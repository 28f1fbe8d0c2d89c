"""The host-side PLR level sampler against a transcription of the reference `LevelSampler`."""

import numpy as np
import pytest

from minimax.host.level_sampler import LevelSampler, SamplerConfig
from minimax.core.options import ConfigError
from tests.reference_level_sampler import ReferenceLevelSampler

SEEDS = np.arange(100, 150)


def _pair(**kw):
    cfg = SamplerConfig(**kw)
    ours = LevelSampler(SEEDS, 4, cfg)
    ref = ReferenceLevelSampler(SEEDS, 4, strategy=cfg.strategy, replay_schedule=cfg.replay_schedule,
                                score_transform=cfg.score_transform, temperature=cfg.temperature, eps=cfg.eps,
                                rho=cfg.rho, nu=cfg.nu, alpha=cfg.alpha, staleness_coef=cfg.staleness_coef,
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
    ours, ref = _pair(alpha=alpha)
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
    uniform = LevelSampler(SEEDS, 1, SamplerConfig(strategy="random"), rng_seed=0)
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
    with pytest.raises(ConfigError, match="--alpha"):
        SamplerConfig(alpha=0)
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
