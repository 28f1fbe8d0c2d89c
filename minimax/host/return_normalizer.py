"""Reward scaling by a running estimate of the discounted return's spread: OpenAI baselines'
`VecNormalize(ob=False, ret=True)`, which the PLR reference wraps around every Procgen vector env
(`level_replay/envs.py: make_lr_venv`, on unless `--no_ret_normalization`).

Why a host-side numpy port rather than a jnp one: the Procgen envs step on the host, the reference's
statistics are float64 (`np.zeros(num_envs)`, `RunningMeanStd` in 'float64'), and resuming a run must
reproduce the uninterrupted one bit for bit, which float32 on an accelerator would not.

Per env step, in `VecNormalize.step_wait`'s order (the order matters: the reward is scaled by
statistics that already include this step's return, and a finished episode's return is zeroed only
after it has been counted):

    ret = ret * gamma + reward                      # discounted return so far, per env
    ret_rms.update(ret)                             # batch mean/var over the N envs, merged
    out = clip(reward / sqrt(ret_rms.var + epsilon), -cliprew, cliprew)
    ret[done] = 0

The reward is divided, never centred: the return's mean is tracked but unused. `RunningMeanStd`
starts at mean 0, var 1, count 1e-4 and merges each batch with the parallel-variance formula
(`update_mean_var_count_from_moments`), transcribed below in the same operation order so results
agree to the last bit. Baselines on NumPy 1 returned float32 rewards (a float32 array divided by a
float64 scalar kept float32 under the old casting rules); here the output is float64, and rounding
it to float32 differs from that by at most one float32 ulp (the divisor was rounded first there).
"""

from __future__ import annotations

import dataclasses

import numpy as np

_STATE_FIELDS = ("ret", "mean", "var", "count")


@dataclasses.dataclass
class ReturnNormalizerState:
    """Everything that evolves: `ret float64[N]` (each env's discounted return since its last done)
    and the running moments of `ret` as 0-d float64 arrays (`count` is fractional: it starts at the
    `RunningMeanStd` epsilon 1e-4)."""

    ret: np.ndarray
    mean: np.ndarray
    var: np.ndarray
    count: np.ndarray

    @classmethod
    def initial(cls, num_envs: int, rms_epsilon: float = 1e-4) -> ReturnNormalizerState:
        return cls(ret=np.zeros(num_envs, np.float64), mean=np.zeros((), np.float64),
                   var=np.ones((), np.float64), count=np.asarray(rms_epsilon, np.float64))

    def state_dict(self) -> dict:
        """Copies of the arrays by field name (checkpoint-ready; mutating them does not touch self)."""
        return {k: np.array(getattr(self, k), np.float64) for k in _STATE_FIELDS}

    @classmethod
    def from_state_dict(cls, d: dict) -> ReturnNormalizerState:
        return cls(**{k: np.array(d[k], np.float64) for k in _STATE_FIELDS})


def update_mean_var_count(mean, var, count, batch_mean, batch_var, batch_count):
    """Baselines' `update_mean_var_count_from_moments` (Chan et al.'s parallel variance), same order
    of operations."""
    delta = batch_mean - mean
    tot_count = count + batch_count
    new_mean = mean + delta * batch_count / tot_count
    m_a = var * count
    m_b = batch_var * batch_count
    m2 = m_a + m_b + np.square(delta) * count * batch_count / tot_count
    return new_mean, m2 / tot_count, tot_count


class ReturnNormalizer:
    """`VecNormalize(ob=False, ret=True)` for `num_envs` envs: call `normalize(reward[N], done[N])`
    once per vector-env step, with that step's raw rewards and episode ends."""

    def __init__(self, num_envs: int, gamma: float = 0.99, cliprew: float = 10.0, epsilon: float = 1e-8,
                 rms_epsilon: float = 1e-4, state: ReturnNormalizerState | None = None):
        if num_envs < 1:
            raise ValueError(f"ReturnNormalizer needs num_envs >= 1, got {num_envs}")
        self.num_envs, self.gamma, self.cliprew, self.epsilon = num_envs, gamma, cliprew, epsilon
        self.rms_epsilon = rms_epsilon
        self.state = state if state is not None else ReturnNormalizerState.initial(num_envs, rms_epsilon)
        if self.state.ret.shape != (num_envs,):
            raise ValueError(f"ReturnNormalizer: state.ret has shape {self.state.ret.shape}, "
                             f"expected ({num_envs},)")

    def normalize(self, reward, done) -> np.ndarray:
        """The scaled rewards `float64[N]`, updating the state. `done` is read as booleans (an int
        array would otherwise index envs by number in `ret[done] = 0`)."""
        reward = np.asarray(reward, np.float64)
        done = np.asarray(done, bool)
        if reward.shape != (self.num_envs,) or done.shape != (self.num_envs,):
            raise ValueError(f"ReturnNormalizer.normalize needs reward and done of shape ({self.num_envs},), "
                             f"got {reward.shape} and {done.shape}")
        s = self.state
        ret = s.ret * self.gamma + reward
        s.mean, s.var, s.count = (np.asarray(v, np.float64) for v in update_mean_var_count(
            s.mean, s.var, s.count, np.mean(ret, axis=0), np.var(ret, axis=0), ret.shape[0]))
        out = np.clip(reward / np.sqrt(s.var + self.epsilon), -self.cliprew, self.cliprew)
        ret[done] = 0.0
        s.ret = ret
        return out

    __call__ = normalize

    def reset(self) -> None:
        """`VecNormalize.reset`: every env's return restarts at 0; the running moments are kept."""
        self.state.ret = np.zeros(self.num_envs, np.float64)

    def state_dict(self) -> dict:
        """Config and state as a flat dict of numpy values, so `from_state_dict` resumes exactly."""
        config = {"gamma": self.gamma, "cliprew": self.cliprew, "epsilon": self.epsilon,
                  "rms_epsilon": self.rms_epsilon}
        return {**{k: np.asarray(v, np.float64) for k, v in config.items()}, **self.state.state_dict()}

    @classmethod
    def from_state_dict(cls, d: dict) -> ReturnNormalizer:
        state = ReturnNormalizerState.from_state_dict(d)
        return cls(num_envs=state.ret.shape[0], gamma=float(d["gamma"]), cliprew=float(d["cliprew"]),
                   epsilon=float(d["epsilon"]), rms_epsilon=float(d["rms_epsilon"]), state=state)
