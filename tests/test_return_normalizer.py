"""Return-based reward scaling (`host/return_normalizer.py`) against a transcription of OpenAI
baselines' `VecNormalize(ob=False, ret=True)` + `RunningMeanStd`, and exact resume from a state dict."""

import numpy as np
import pytest

from minimax.host.return_normalizer import ReturnNormalizer


class BaselinesRewardNormalizer:
    """baselines/common/vec_env/vec_normalize.py and running_mean_std.py, reward path only."""

    def __init__(self, num_envs, cliprew=10., gamma=0.99, epsilon=1e-8):
        self.mean, self.var, self.count = np.zeros((), 'float64'), np.ones((), 'float64'), 1e-4
        self.ret = np.zeros(num_envs)
        self.cliprew, self.gamma, self.epsilon = cliprew, gamma, epsilon

    def rms_update(self, x):
        batch_mean, batch_var, batch_count = np.mean(x, axis=0), np.var(x, axis=0), x.shape[0]
        delta = batch_mean - self.mean
        tot_count = self.count + batch_count
        new_mean = self.mean + delta * batch_count / tot_count
        m_a = self.var * self.count
        m_b = batch_var * batch_count
        M2 = m_a + m_b + np.square(delta) * self.count * batch_count / tot_count
        self.mean, self.var, self.count = new_mean, M2 / tot_count, tot_count

    def step_wait(self, rews, news):
        self.ret = self.ret * self.gamma + rews
        self.rms_update(self.ret)
        rews = np.clip(rews / np.sqrt(self.var + self.epsilon), -self.cliprew, self.cliprew)
        self.ret[news] = 0.
        return rews


def random_stream(steps=500, n=16, seed=0):
    rng = np.random.default_rng(seed)
    # Small dense rewards and rare large ones: a rare reward dwarfs the returns' running spread, so
    # the clip at cliprew is hit too.
    rewards = np.where(rng.random((steps, n)) < 0.003, rng.normal(0, 30, (steps, n)),
                       rng.normal(0, 0.01, (steps, n))).astype(np.float32)
    dones = rng.random((steps, n)) < 0.02
    return rewards, dones


@pytest.mark.parametrize("gamma, cliprew", [(0.99, 10.0), (0.999, 3.0)])
def test_matches_baselines_vec_normalize(gamma, cliprew):
    rewards, dones = random_stream()
    ours = ReturnNormalizer(16, gamma=gamma, cliprew=cliprew)
    ref = BaselinesRewardNormalizer(16, gamma=gamma, cliprew=cliprew)
    clipped = 0
    for r, d in zip(rewards, dones):
        out, expected = ours.normalize(r, d), ref.step_wait(r, d)
        np.testing.assert_allclose(out, expected, rtol=1e-12, atol=0)
        clipped += int(np.sum(np.abs(expected) == cliprew))
    assert clipped > 0  # the clip path was exercised
    np.testing.assert_allclose(ours.state.ret, ref.ret, rtol=1e-12, atol=0)
    np.testing.assert_allclose([ours.state.mean, ours.state.var, ours.state.count],
                               [ref.mean, ref.var, ref.count], rtol=1e-12, atol=0)


def test_resume_from_state_dict_is_exact():
    rewards, dones = random_stream(steps=200, n=8, seed=1)
    whole = ReturnNormalizer(8, gamma=0.999, cliprew=5.0)
    expected = np.stack([whole.normalize(r, d) for r, d in zip(rewards, dones)])

    first = ReturnNormalizer(8, gamma=0.999, cliprew=5.0)
    outs = [first.normalize(r, d) for r, d in zip(rewards[:120], dones[:120])]
    saved = {k: np.array(v) for k, v in first.state_dict().items()}  # as a checkpoint would hold it
    resumed = ReturnNormalizer.from_state_dict(saved)
    assert (resumed.gamma, resumed.cliprew, resumed.num_envs) == (0.999, 5.0, 8)
    outs += [resumed.normalize(r, d) for r, d in zip(rewards[120:], dones[120:])]
    np.testing.assert_array_equal(np.stack(outs), expected)
    for k, v in whole.state_dict().items():
        np.testing.assert_array_equal(resumed.state_dict()[k], v)


def test_done_zeroes_the_return_after_it_is_counted_and_shapes_are_checked():
    norm = ReturnNormalizer(2)
    assert (norm.gamma, norm.cliprew, norm.epsilon, norm.rms_epsilon) == (0.99, 10.0, 1e-8, 1e-4)  # baselines'
    norm.normalize([1.0, 2.0], [True, 0])  # ints are read as booleans, not as indices
    np.testing.assert_array_equal(norm.state.ret, [0.0, 2.0])
    assert norm.state.count == pytest.approx(2.0001)
    with pytest.raises(ValueError, match="shape"):
        norm.normalize([1.0, 2.0, 3.0], [False] * 3)
