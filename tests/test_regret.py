"""Teacher rewards (minimax/curricula/regret.py) against a plain-Python transcription of the
minimax release's `compute_episodic_stats` and UED scores."""

import numpy as np
import pytest

from minimax.curricula.regret import TEACHER_SCORES, teacher_score


def reference(name, rewards, dones):
    """Per student and level: walk the steps, sum rewards into the running episode, close it at
    `done` (the release's scan); then the score of `name`."""
    s, t, n = rewards.shape
    mean, best = np.zeros((s, n)), np.zeros((s, n))
    for a in range(s):
        for j in range(n):
            running, finished = 0.0, []
            for k in range(t):
                running += rewards[a, k, j]
                if dones[a, k, j]:
                    finished.append(running)
                    running = 0.0
            mean[a, j] = sum(finished) / max(len(finished), 1)
            best[a, j] = max([0.0] + finished)
    if name == "relative_regret":
        return np.maximum(best[1] - mean[0], 0)
    if name == "mean_relative_regret":
        return np.maximum(mean[1] - mean[0], 0)
    if name == "population_regret":
        return best.max(0) - mean.mean(0)
    return -mean.mean(0)


def rollouts(students, seed, t=40, n=16):
    """Maze-like rollouts: reward only on the step that ends an episode at the goal; some levels
    never finish an episode, some finish several."""
    rng = np.random.default_rng(seed)
    dones = rng.random((students, t, n)) < rng.choice([0.0, 0.05, 0.3], size=(1, 1, n))
    goal = dones & (rng.random((students, t, n)) < 0.6)
    rewards = np.where(goal, rng.uniform(0.1, 1.0, (students, t, n)), 0.0).astype(np.float32)
    episode_returns = rewards.copy()  # one rewarded step per episode, at its end: the episode's return
    return rewards, dones, episode_returns


@pytest.mark.parametrize("name, students", [("relative_regret", 2), ("mean_relative_regret", 2),
                                            ("population_regret", 2), ("population_regret", 5),
                                            ("negative_return", 1), ("negative_return", 3)])
def test_teacher_scores_match_the_release(name, students):
    for seed in range(3):
        rewards, dones, episode_returns = rollouts(students, seed)
        ours = np.asarray(teacher_score(name, episode_returns, dones))
        np.testing.assert_allclose(ours, reference(name, rewards, dones), rtol=1e-6, atol=1e-7)
    # a level with no completed episode scores as if every return were 0
    z = np.zeros((students, 5, 3), np.float32)
    np.testing.assert_array_equal(np.asarray(teacher_score(name, z, z.astype(bool))), 0.0 * z[0, 0])


def test_relative_regret_is_the_antagonists_best_over_the_protagonists_mean():
    # protagonist: episodes 0.2 and 0.6 (mean 0.4); antagonist: 0.3 and 0.9 (best 0.9)
    episode_returns = np.array([[[0.2], [0.6]], [[0.3], [0.9]]], np.float32)
    dones = np.ones_like(episode_returns, bool)
    assert float(teacher_score("relative_regret", episode_returns, dones)[0]) == pytest.approx(0.5)
    assert float(teacher_score("mean_relative_regret", episode_returns, dones)[0]) == pytest.approx(0.2)
    swapped = episode_returns[::-1]  # the protagonist better than the antagonist: clipped at 0
    assert float(teacher_score("mean_relative_regret", swapped, dones)[0]) == 0.0


@pytest.mark.parametrize("name, students, message", [
    ("relative_regret", 3, "exactly 2 students"), ("population_regret", 1, "population of >= 2"),
    ("nope", 2, "unknown teacher score 'nope'")])
def test_bad_student_counts_and_names_are_clear_errors(name, students, message):
    z = np.zeros((students, 4, 2), np.float32)
    with pytest.raises(ValueError, match=message):
        teacher_score(name, z, z.astype(bool))
    assert set(TEACHER_SCORES) == {"relative_regret", "mean_relative_regret", "population_regret",
                                   "negative_return"}
