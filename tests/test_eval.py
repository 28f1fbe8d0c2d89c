"""Evaluation: first episodes only, early stop, and per-maze reports."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from minimax.agents.distributions import Categorical
from minimax.envs.maze import AMaze, Level, MazeParams
from minimax.envs.maze.env import FORWARD, LEFT
from minimax.envs.maze.generators import make_dr_generator
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


class FixedPolicy:
    """A model whose policy always picks one action (no parameters, no carry)."""

    def __init__(self, action):
        self.apply = always(action)

    @staticmethod
    def initial_carry(n):
        return jnp.zeros((n,))


def test_cvar_passes_count_every_episode_of_a_whole_budget():
    """The SFL paper's evaluation: each env plays the full step budget, restarting the level, and
    every completed episode counts (a level solved in 1 step is played 10 times in 10 steps)."""
    params = MazeParams(height=3, width=3, max_steps=10, n_actions=3)
    levels = [Level.from_text("AG.\n...\n...", agent_dir=0), Level.from_text("A#G\n...\n...", agent_dir=0),
              Level.from_text("A.G\n...\n...", agent_dir=0)]
    levels = jax.tree.map(lambda *x: jnp.stack(x), *levels)
    runner = EvalRunner(AMaze(), FixedPolicy(FORWARD), params, episodes=3, greedy=True)
    wins, eps = jax.jit(lambda: runner._pooled(params, jax.random.key(0), None, levels))()
    np.testing.assert_array_equal(eps, [30, 3, 15])   # 3 envs x (10 one-step, 1 timed-out, 5 two-step episodes)
    np.testing.assert_array_equal(wins, [30, 0, 15])
    np.testing.assert_allclose(runner.success_rates(jax.random.key(0), None, levels, params), [1.0, 0.0, 1.0])


@pytest.mark.e2e  # over 20 s here (the default run leaves it out; --slow runs it)
def test_cvar_levels_are_the_first_solvable_draws():
    params = MazeParams(height=5, width=5, max_steps=20, n_actions=3)
    generator = make_dr_generator(5, 5, n_walls=12)
    runner = EvalRunner(AMaze(), FixedPolicy(FORWARD), params, level_facts=MAZE.level_facts)
    key = jax.random.key(4)
    levels, drawn = runner.sample_solvable(key, generator, 30, params)
    draws = jax.vmap(generator)(jax.random.split(jax.random.fold_in(key, 0), 60))
    solvable = np.flatnonzero(np.asarray(MAZE.level_facts(draws, params)[1]))
    assert 30 <= len(solvable) < 60  # 12 wall draws on 25 cells: some mazes are cut off, most are not
    np.testing.assert_array_equal(levels.wall_map, np.asarray(draws.wall_map)[solvable[:30]])
    assert drawn == solvable[29] + 1 and bool(np.all(MAZE.level_facts(levels, params)[1]))
