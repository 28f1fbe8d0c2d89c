"""PAIRED's design MDP against the minimax release: the same action sequences, the same levels?

A PAIRED teacher designs a level one cell per step (paired.json: 60 wall steps on 13x13, then the
goal, then the agent, walls may repeat). Which level a sequence of actions makes is a pure
function of the actions, except where the release draws at random (the agent placed on the goal
moves to a random unused cell; the agent's direction is drawn at reset). This benchmark plays the
same action sequences through the release's `UEDMaze` (driven by a script outside this repo, in
the release's own environment) and through ours (`minimax.envs.maze.teacher`), and compares:
- walls and goal: equal, level by level;
- the agent: equal wherever the release is deterministic; where it draws (agent on the goal), both
  sides put it on a cell no earlier step chose;
- the agent's direction: its distribution (uniform over 4 on both sides);
- per set: walls, solvable fraction and shortest path of the designed levels;
- the teacher's pay: relative regret, mean relative regret, population regret and the negative
  return computed from the same student rollouts, ours against the release's `compute_ued_scores`.

    python benchmarks/teacher_parity.py actions --out runs/teacher/actions.npz
    <release venv>/python ued_release.py runs/teacher/actions.npz runs/teacher/release.npz
    python benchmarks/teacher_parity.py compare runs/teacher/actions.npz runs/teacher/release.npz

The action sets: `uniform` (every cell equally likely at every step), `few_cells` (each design
draws from 6 cells: walls repeat, the goal and the agent land on walls and on each other),
`agent_on_goal`, `agent_on_wall` and `goal_on_wall` (uniform, with that collision forced).
"""

from __future__ import annotations

import argparse
import json
import sys

import jax
import jax.numpy as jnp
import numpy as np

from minimax.curricula.regret import teacher_score
from minimax.envs.maze.level import Level
from minimax.envs.maze.paths import is_solvable, shortest_path_length
from minimax.envs.maze.teacher import MazeTeacher, TeacherParams

# paired.json: maze 13x13, maze_ued_n_walls 60, noise 50, replace_wall_pos, fixed_n_wall_steps.
PARAMS = TeacherParams(height=13, width=13, n_walls=60, noise_dim=50, replace_wall_pos=True)
SETS = ("uniform", "few_cells", "agent_on_goal", "agent_on_wall", "goal_on_wall")


def make_actions(n: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    cells, steps = PARAMS.height * PARAMS.width, PARAMS.num_steps
    goal, agent = PARAMS.n_walls, PARAMS.n_walls + 1
    uniform = lambda: rng.integers(0, cells, (n, steps))  # noqa: E731
    few = np.take_along_axis(rng.integers(0, cells, (n, 6)), rng.integers(0, 6, (n, steps)), axis=1)
    on_goal, on_wall, goal_on_wall = uniform(), uniform(), uniform()
    on_goal[:, agent] = on_goal[:, goal]
    on_wall[:, agent] = on_wall[:, 0]
    goal_on_wall[:, goal] = goal_on_wall[:, 5]
    sets = {"uniform": uniform(), "few_cells": few, "agent_on_goal": on_goal, "agent_on_wall": on_wall,
            "goal_on_wall": goal_on_wall}
    out = {k: v.astype(np.uint32) for k, v in sets.items()}
    out.update(make_rollouts(rng))
    return out


def make_rollouts(rng, t: int = 64, n: int = 512) -> dict[str, np.ndarray]:
    """Student rollouts for the teacher's pay, `[students, T, levels]`: goal rewards in [0.1, 1]
    at some episode ends, levels whose episodes never end, end rarely or end often; for 2 students
    (PAIRED) and 3 (population PAIRED, the minimax adversary's population)."""
    out = {}
    for students in (2, 3):
        ends = rng.random((students, t, n)) < rng.choice([0.0, 0.02, 0.1, 0.5], size=(1, 1, n))
        goal = ends & (rng.random((students, t, n)) < 0.6)
        out[f"rollout{students}/rewards"] = np.where(goal, rng.uniform(0.1, 1.0, goal.shape), 0.0).astype(np.float32)
        out[f"rollout{students}/dones"] = ends
    return out


# The teacher scores of minimax.curricula.regret, as the release's `UEDScore` names them.
RELEASE_SCORES = {"relative_regret": (2, "RELATIVE_REGRET"), "mean_relative_regret": (2, "MEAN_RELATIVE_REGRET"),
                  "population_regret": (3, "POPULATION_REGRET"), "negative_return": (3, "NEG_RETURN")}


@jax.jit
@jax.vmap
def design(key, actions):
    teacher = MazeTeacher()
    k_reset, k_steps = jax.random.split(key)
    _, state = teacher.reset(k_reset, PARAMS)

    def one(state, inputs):
        k, a = inputs
        _, state, _, done, _ = teacher.step(k, state, a, PARAMS)
        return state, done

    state, dones = jax.lax.scan(one, state, (jax.random.split(k_steps, actions.shape[0]), actions))
    return teacher.level(state, PARAMS), dones


@jax.jit
@jax.vmap
def path_stats(level):
    return is_solvable(level), shortest_path_length(level)


def summary(walls, solvable, path) -> dict:
    return {"walls": float(walls.sum((1, 2)).mean()), "solvable": float(solvable.mean()),
            "shortest_path": float(path[solvable].mean())}


def compare(actions: dict, release: dict) -> dict:
    out = {}
    cells = PARAMS.height * PARAMS.width
    for name in SETS:
        acts = actions[name].astype(np.int32)
        n = len(acts)
        ours, dones = jax.device_get(design(jax.random.split(jax.random.key(0), n), jnp.asarray(acts)))
        solvable, path = jax.device_get(path_stats(ours))
        r_walls, r_goal = release[f"{name}/wall_map"], release[f"{name}/goal_pos"].astype(np.int64)
        r_agent, r_dir = release[f"{name}/agent_pos"].astype(np.int64), release[f"{name}/agent_dir"].astype(np.int64)
        r_level = Level(wall_map=jnp.asarray(r_walls), goal_pos=jnp.asarray(r_goal, jnp.int32),
                        agent_pos=jnp.asarray(r_agent, jnp.int32), agent_dir=jnp.asarray(r_dir, jnp.int32))
        r_solvable, r_path = jax.device_get(path_stats(r_level))
        drawn = acts[:, PARAMS.n_walls + 1] == acts[:, PARAMS.n_walls]       # the agent chose the goal's cell
        earlier = np.zeros((n, cells), bool)
        np.put_along_axis(earlier, acts[:, :PARAMS.n_walls + 1], True, axis=1)  # cells chosen before the agent

        def unused(pos):  # the agent's cell was chosen by no earlier step
            return ~np.take_along_axis(earlier, (pos[:, 1] * PARAMS.width + pos[:, 0])[:, None], 1)[:, 0]

        o_agent, o_goal = np.asarray(ours.agent_pos, np.int64), np.asarray(ours.goal_pos, np.int64)
        out[name] = {
            "designs": n,
            "episode_steps": [int(np.argmax(dones[0])) + 1, int(np.argmax(release[f"{name}/dones"][0])) + 1],
            "walls_equal": int((np.asarray(ours.wall_map) == r_walls).all((1, 2)).sum()),
            "goal_equal": int((o_goal == r_goal).all(1).sum()),
            "agent_deterministic": int((~drawn).sum()),
            "agent_equal_where_deterministic": int(((o_agent == r_agent).all(1) & ~drawn).sum()),
            "agent_drawn": int(drawn.sum()),
            "drawn_agent_on_an_unused_cell": [int((unused(p) & drawn).sum()) for p in (o_agent, r_agent)],
            "agent_dir_counts": [np.bincount(np.asarray(ours.agent_dir), minlength=4).tolist(),
                                 np.bincount(r_dir, minlength=4).tolist()],
            "ours": summary(np.asarray(ours.wall_map), np.asarray(solvable), np.asarray(path)),
            "release": summary(r_walls, np.asarray(r_solvable), np.asarray(r_path)),
        }
    out["teacher_scores"] = compare_scores(actions, release)
    return out


def compare_scores(actions: dict, release: dict) -> dict:
    """The teacher's pay per level from the same student rollouts: ours against the release's
    `compute_ued_scores` (n_eval 1). A rollout's rewards are its episodes' returns here (one
    rewarded step per episode, at its end), the input our `teacher_score` takes."""
    out = {}
    for name, (students, _) in RELEASE_SCORES.items():
        rewards, dones = actions[f"rollout{students}/rewards"], actions[f"rollout{students}/dones"]
        ours = np.asarray(teacher_score(name, jnp.asarray(rewards), jnp.asarray(dones)))
        theirs = release[f"score/{name}"]
        out[name] = {"levels": int(ours.size), "max_abs_diff": float(np.abs(ours - theirs).max()),
                     "mean": [float(ours.mean()), float(theirs.mean())],
                     "levels_without_an_episode": int((dones.sum((0, 1)) == 0).sum())}
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    a = sub.add_parser("actions", help="write the action sets")
    a.add_argument("--out", required=True)
    a.add_argument("--n", type=int, default=2000, help="designs per set")
    a.add_argument("--seed", type=int, default=0)
    c = sub.add_parser("compare", help="compare the release's levels with ours")
    c.add_argument("actions")
    c.add_argument("release")
    c.add_argument("--json", help="also write the comparison here")
    args = parser.parse_args(argv)
    if args.command == "actions":
        np.savez(args.out, **make_actions(args.n, args.seed))
        return 0
    result = compare(dict(np.load(args.actions)), dict(np.load(args.release)))
    print(json.dumps(result, indent=1))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
