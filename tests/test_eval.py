"""Evaluation: first episodes only, early stop, and per-maze reports."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from minimax.agents.distributions import Categorical
from minimax.envs.maze import AMaze, Level, MazeParams
from minimax.envs.maze.env import FORWARD, LEFT
from minimax.models import MazeActorCritic
from minimax.envs.maze.ood import get_suite
from minimax.envs.maze.spec import MAZE
from minimax.runners.eval import EvalRunner, SuiteEvaluator, evaluate_levels


def always(action, n_actions=3):
    """A policy that always picks `action`."""
    def apply(params, carry, obs, reset):
        t, n = reset.shape
        logits = jnp.full((t, n, n_actions), -1e9).at[..., action].set(0.0)
        return carry, Categorical(logits), jnp.zeros((t, n))
    return apply


def test_first_episode_only_with_exact_returns_and_lengths():
    params = MazeParams(height=3, width=3, max_steps=10, n_actions=3)
    goal_ahead = Level.from_text("AG.\n...\n...", agent_dir=0)  # one forward step reaches the goal
    wall_ahead = Level.from_text("A#G\n...\n...", agent_dir=0)  # forward forever: never
    levels = jax.tree.map(lambda *x: jnp.stack(x), goal_ahead, wall_ahead)
    out = jax.jit(lambda: evaluate_levels(jax.random.key(0), always(FORWARD), None, jnp.zeros((2,)), AMaze(),
                                          params, levels, greedy=True))()
    np.testing.assert_allclose(out["return"], [1 - 0.9 * 1 / 10, 0.0], rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(out["solved"], [True, False])
    np.testing.assert_array_equal(out["length"], [1, 10])
    # Turning in place never solves anything.
    out = evaluate_levels(jax.random.key(0), always(LEFT), None, jnp.zeros((2,)), AMaze(), params, levels)
    np.testing.assert_array_equal(out["solved"], [False, False])


def test_suite_evaluator_reports_every_maze_and_the_mean():
    model = MazeActorCritic(n_actions=3, recurrent_size=8)
    obs = {"image": jnp.zeros((1, 1, 5, 5, 3)), "agent_dir": jnp.zeros((1, 1), jnp.int32)}
    params = model.init(jax.random.key(0), model.initial_carry(1), obs, jnp.ones((1, 1), bool))
    runner = EvalRunner(AMaze(), model, MazeParams(n_actions=3, normalize_obs=True), episodes=2,
                        level_facts=MAZE.level_facts)
    evaluator = SuiteEvaluator(runner, get_suite("SixteenRooms,Crossing"))
    metrics = evaluator(jax.random.key(1), params)
    assert list(metrics) == evaluator.metric_names or set(metrics) == set(evaluator.metric_names)
    for name in ("SixteenRooms", "Crossing"):
        assert 0 <= metrics[f"{name}/solved_rate"] <= 1
        assert 0 < metrics[f"{name}/length"] <= 484
    assert metrics["mean_return"] == pytest.approx((metrics["SixteenRooms/return"] + metrics["Crossing/return"]) / 2)
    assert [m.name for m in MAZE.held_out("validation")] == ["SixteenRooms", "Labyrinth", "StandardMaze"]
    with pytest.raises(ValueError, match="unknown OOD maze"):
        MAZE.held_out("Nope")
