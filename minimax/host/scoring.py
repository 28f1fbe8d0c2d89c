"""Scoring a policy on given levels of a host environment: one episode per level, returns in level order.

The PLR paper reports returns on unseen test levels (Procgen's full distribution) beside the
returns on its training levels; the gap between them is the generalisation gap. Test levels here
are seeds drawn uniformly from `[0, 2^31)` leaving out the training levels, so a test level is
never one the student trained on. Actions are sampled from the policy, as the reference's
evaluation does (`deterministic=False`).
"""

from __future__ import annotations

import jax
import numpy as np

MAX_SEED = 2**31 - 1


def test_levels(rng: np.random.Generator, n: int, exclude: range | list[range]) -> np.ndarray:
    """`n` distinct level seeds from `[0, 2^31)`, none in `exclude` (the training levels: a range, or
    a list of ranges for several runs)."""
    ranges = [exclude] if isinstance(exclude, range) else list(exclude)
    out = np.empty(0, np.int64)
    while out.size < n:
        draw = rng.integers(0, MAX_SEED, size=2 * (n - out.size), dtype=np.int64)
        for r in ranges:
            draw = draw[(draw < r.start) | (draw >= r.stop)]
        out = np.unique(np.concatenate([out, draw]))
    return rng.permutation(out)[:n]


def evaluate_levels(learner, params, env, levels, key, greedy: bool = False) -> np.ndarray:
    """float64[len(levels)]: the return of one episode on each level, the envs of `env` taking the
    levels in order as they become free (the episodes of envs with nothing left to play are ignored).
    Actions are sampled from the policy, or its most likely ones with `greedy`."""
    levels = np.asarray(levels, np.int64)
    n, slots = levels.size, env.num_envs
    returns = np.zeros(n)
    playing = np.full(slots, -1, np.int64)      # the index into `levels` each env is playing, -1: idle
    first = min(n, slots)
    playing[:first] = np.arange(first)
    obs = env.reset(np.concatenate([levels[:first], np.full(slots - first, levels[0])]))
    next_level, done_count, t = first, 0, 0
    open_returns = np.zeros(slots)
    while done_count < n:
        action = learner.policy_action(params, jax.random.fold_in(key, t), obs, greedy)
        step = env.step(np.asarray(action))
        open_returns += step.reward
        obs = step.obs
        ended = np.flatnonzero(step.done)
        if ended.size:
            obs = np.array(obs, copy=True)
            for e in ended:
                if playing[e] >= 0:
                    returns[playing[e]] = open_returns[e]
                    done_count += 1
                playing[e] = next_level if next_level < n else -1
                next_level += next_level < n
            open_returns[ended] = 0.0
            obs[ended] = env.set_levels(ended, levels[np.maximum(playing[ended], 0)])
        t += 1
    return returns


def return_summary(env_name: str, distribution_mode: str, test: np.ndarray, train: np.ndarray) -> dict:
    """The PLR paper's numbers from returns on test and training levels: their means, the generalisation
    gap (train - test) and, for Procgen, the means of the normalised returns."""
    row = {"test_return": float(test.mean()), "train_levels_return": float(train.mean()),
           "generalization_gap": float(train.mean() - test.mean())}
    if env_name.startswith("procgen-"):
        from minimax.envs.host.procgen_scores import normalized_return  # noqa: PLC0415
        game = env_name.removeprefix("procgen-")
        row["test_normalized"] = float(normalized_return(game, test, distribution_mode).mean())
        row["train_levels_normalized"] = float(normalized_return(game, train, distribution_mode).mean())
    return row
