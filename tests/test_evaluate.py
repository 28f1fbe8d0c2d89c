"""Evaluation: an oracle solves every OOD maze optimally, early stopping, statistics, the evaluate command."""

import json
import math
from collections import deque

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from minimax.agents.distributions import Categorical
from minimax.training.checkpoint import Checkpointer
from minimax.config import TrainConfig
from minimax.envs.maze import AMaze, Level, MazeParams
from minimax.envs.maze.env import FORWARD, LEFT, RIGHT
from minimax.envs.maze.level import DIR_TO_VEC
from minimax.envs.maze.ood import get_maze, get_suite, list_mazes
from minimax.envs.maze.spec import MAZE
from minimax.evaluation.evaluate import main as evaluate_main
from minimax.evaluation.report import summarize
from minimax.runners.eval import EvalRunner, evaluate_levels
from minimax.core.stats import cvar_of_worst, mean_ci

pytestmark = pytest.mark.contract  # tests/conftest.py's tiers: training programs at their tiny size


def shortest_actions(level: Level) -> list[int] | None:
    """Host-side BFS over (x, y, direction): an optimal action sequence, or None if unsolvable."""
    walls = np.asarray(level.wall_map)
    h, w = walls.shape
    goal = tuple(int(v) for v in np.asarray(level.goal_pos))
    start = (*(int(v) for v in np.asarray(level.agent_pos)), int(level.agent_dir))
    parent = {start: None}
    queue = deque([start])
    while queue:
        x, y, d = queue.popleft()
        ax, ay = x + DIR_TO_VEC[d][0], y + DIR_TO_VEC[d][1]
        if (ax, ay) == goal:  # forward now reaches the goal
            plan, node = [FORWARD], (x, y, d)
            while parent[node] is not None:
                node, action = parent[node]
                plan.append(action)
            return plan[::-1]
        moves = [((x, y, (d - 1) % 4), LEFT), ((x, y, (d + 1) % 4), RIGHT)]
        if 0 <= ax < w and 0 <= ay < h and not walls[ay, ax]:
            moves.append(((ax, ay, d), FORWARD))
        for nxt, action in moves:
            if nxt not in parent:
                parent[nxt] = ((x, y, d), action)
                queue.append(nxt)
    return None


class PlanPolicy:
    """A 'model' that replays fixed per-env action plans (`params[env, t]`); carry = (t, env)."""

    n_actions = 3

    def initial_carry(self, n):
        return jnp.zeros((n,), jnp.int32), jnp.arange(n)

    def apply(self, params, carry, obs, reset):
        t, env = carry
        action = params[env, jnp.minimum(t, params.shape[1] - 1)]
        return (t + 1, env), Categorical(jax.nn.one_hot(action, 3)[None] * 1e9), jnp.zeros((1, t.shape[0]))


@pytest.mark.e2e  # one compiled program per maze size and budget, every OOD maze: 35-55 s
def test_an_oracle_solves_every_solvable_ood_maze_with_the_optimal_return():
    runner = EvalRunner(AMaze(), PlanPolicy(), MazeParams(n_actions=3), episodes=1, greedy=True,
                        level_facts=MAZE.level_facts)
    for name in list_mazes():
        maze = get_maze(name)
        n = 3  # draws (fixed layouts give 3 equal levels): one compiled program per maze size and budget
        levels = jax.vmap(maze.sample)(jax.random.split(jax.random.key(sum(map(ord, name))), n))
        plans = [shortest_actions(jax.tree.map(lambda x, i=i: x[i], levels)) for i in range(n)]
        assert all(p is not None for p in plans), f"{name}: an OOD level without a solution"
        longest = max(len(p) for p in plans)
        table = jnp.asarray([p + [LEFT] * (maze.max_steps - len(p)) for p in plans], jnp.int32)
        result = runner.evaluate_levels(jax.random.key(0), table, levels, maze.params(n_actions=3))
        assert result.solved.all(), name
        # float32 returns (1 - 0.9 t / T, from the env and from the shortest path): rounding moves
        # them by up to ~1.5e-7, 1.5e-6 relative near the smallest (0.1); one step moves them by
        # 0.9 / T >= 4e-5 (PerfectMazeXL's budget of 20,808 steps).
        np.testing.assert_allclose(result.returns[:, 0], result.optimal_return, rtol=1e-6, atol=1e-6,
                                   err_msg=name)
        np.testing.assert_allclose(result.optimal_return, [1 - 0.9 * len(p) / maze.max_steps for p in plans],
                                   rtol=1e-6, atol=1e-6, err_msg=name)
        np.testing.assert_array_equal(result.length[:, 0], [len(p) for p in plans])
        assert result.summary()["gap"] == pytest.approx(0.0, abs=1e-6)
        if name == "PerfectMazeXL":  # early stop: a fraction of the 20,808-step budget is executed
            out = jax.jit(lambda lv, tb: evaluate_levels(jax.random.key(0), PlanPolicy().apply, tb,
                                                         PlanPolicy().initial_carry(n), AMaze(), maze.params(n_actions=3),
                                                         lv, True, chunk_steps=16))(levels, table)
            assert int(out["steps"]) == math.ceil(longest / 16) * 16 < maze.max_steps


def test_a_policy_that_only_turns_solves_no_maze():
    runner = EvalRunner(AMaze(), PlanPolicy(), MazeParams(n_actions=3), episodes=1, greedy=True,
                        level_facts=MAZE.level_facts)
    mazes = get_suite("dcd12")
    results = runner.evaluate_held_out(jax.random.key(1), jnp.full((len(mazes), 1), LEFT), mazes)
    for name, result in results.items():
        assert not result.solved.any() and (result.returns == 0).all(), name
        assert (result.length == get_maze(name).max_steps).all(), name  # ran to the budget


@pytest.mark.parametrize("chunk", [1, 4, 16])
def test_early_stopping_executes_only_the_steps_the_longest_episode_needs(chunk):
    params = MazeParams(height=1, width=8, max_steps=64, n_actions=3)
    levels = [Level.from_text("A" + "." * k + "G" + "." * (6 - k), agent_dir=0) for k in (0, 2, 5)]
    levels = jax.tree.map(lambda *x: jnp.stack(x), *levels)
    always_forward = jnp.full((3, 1), FORWARD)
    out = evaluate_levels(jax.random.key(0), PlanPolicy().apply, always_forward, PlanPolicy().initial_carry(3),
                          AMaze(), params, levels, True, chunk_steps=chunk)
    np.testing.assert_array_equal(out["length"], [1, 3, 6])
    assert out["solved"].all()
    assert int(out["steps"]) == math.ceil(6 / chunk) * chunk


def test_confidence_intervals_and_cvar_match_numpy():
    rng = np.random.default_rng(0)
    x = rng.uniform(size=5)
    mean, low, high = mean_ci(x)
    half = 2.7764451051977987 * x.std(ddof=1) / np.sqrt(5)  # Student t, 4 degrees of freedom, 97.5%
    np.testing.assert_allclose([mean, low, high], [x.mean(), x.mean() - half, x.mean() + half], rtol=1e-12)
    assert math.isnan(mean_ci([0.5])[1]) and mean_ci([0.5])[0] == 0.5
    y, z = rng.uniform(size=1000), rng.uniform(size=1000)  # ranking run, measuring run
    worst = np.argsort(y)
    assert cvar_of_worst(y, z, 0.1) == pytest.approx(z[worst[:100]].mean())
    assert cvar_of_worst(y, z, 0.0105) == pytest.approx(z[worst[:10]].mean())  # floor(alpha * n) levels
    assert cvar_of_worst(y, z, 0.0001) == pytest.approx(z[worst[0]])  # at least one
    assert cvar_of_worst(y, y, 1.0) == pytest.approx(y.mean())
    assert cvar_of_worst([0.5, 0.0, 0.0], [1.0, 0.2, 0.4], 0.34) == pytest.approx(0.2)  # ties: the earlier level
    with pytest.raises(ValueError, match="alpha"):
        cvar_of_worst(y, z, 0.0)
    runs = [{"mazes": {"A": {"solved_rate": a, "return": a / 2, "length": 1.0, "gap": 0.0},
                       "B": {"solved_rate": b, "return": b / 2, "length": 1.0, "gap": 0.0}}}
            for a, b in zip(x, x[::-1])]
    summary = summarize(runs, [type("M", (), {"name": "A"}), type("M", (), {"name": "B"})])
    assert summary["A"]["solved_rate"]["ci_high"] == pytest.approx(high)
    assert summary["suite_mean"]["solved_rate"]["mean"] == pytest.approx(x.mean())


TINY = dict(maze_height=5, maze_width=5, n_walls=3, max_episode_steps=32, n_actions=3, recurrent_size=16,
            num_envs=8, num_steps=16, progress=False)


def make_run(out_dir, name, seed, diverged=False, **overrides):
    """A run directory with a config and an initial checkpoint, as train.py would leave it (with
    `diverged`, as a diverged run of an older version left it: NaN parameters)."""
    from minimax.training.builder import build_runner  # noqa: PLC0415

    cfg = TrainConfig.from_options(**{**TINY, "out_dir": str(out_dir), "run_name": name, "seed": seed, **overrides})
    cfg.run_dir.mkdir(parents=True)
    cfg.save(cfg.run_dir / "config.json")
    runner = build_runner(cfg)
    seeds = cfg.seed_list
    if len(seeds) == 1:
        state = runner.init(jax.random.key(seed))
    else:
        state = jax.vmap(runner.init)(jax.random.split(jax.random.key(seed), len(seeds)))
    if diverged:
        params = jax.tree.map(lambda x: x * float("nan"), state.train_state.params)
        state = state.replace(train_state=state.train_state.replace(params=params))
    Checkpointer(cfg.run_dir / "checkpoints").save(7, state, {"update": 7, "cycles": 7, "env_steps": 0})
    return cfg.run_dir


@pytest.fixture(scope="module")
def run_dirs(tmp_path_factory):
    """Two single-seed runs with a checkpoint, and the broken inputs the errors test uses."""
    tmp = tmp_path_factory.mktemp("eval-runs")
    for s in (0, 1):
        make_run(tmp, f"r{s}", s)
    (tmp / "empty").mkdir()
    fresh = TrainConfig.from_options(**{**TINY, "out_dir": str(tmp), "run_name": "fresh"})
    fresh.run_dir.mkdir()
    fresh.save(fresh.run_dir / "config.json")
    (tmp / "bad.txt").write_text("A.X\n..G\n")
    make_run(tmp, "diverged", 0, diverged=True)
    return tmp


@pytest.mark.e2e  # over 20 s here (the default run leaves it out; --slow runs it)
def test_evaluate_command_end_to_end(run_dirs, tmp_path, capsys):
    level_file = tmp_path / "mine.txt"
    level_file.write_text("name: Corridor\nagent_dir: 0\nA..G\n\nmax_steps: 9\nA#\n.G\n")
    out = tmp_path / "results"
    evaluate_main([str(run_dirs / "r0"), str(run_dirs / "r1"), "--suite", "SixteenRooms",
                   "--levels", str(level_file), "--episodes", "3", "--cvar", "40", "--cvar-episodes", "2", "--gif",
                   "--out", str(out)])
    doc = json.loads((out / "results.json").read_text())
    assert [(r["run"], r["seed"], r["checkpoint"]) for r in doc["runs"]] == [("r0", 0, 7), ("r1", 1, 7)]
    assert list(doc["runs"][0]["mazes"]) == ["SixteenRooms", "Corridor", "mine-1"]
    for r in doc["runs"]:
        c = r["cvar"]
        assert c["levels"] == 40 and c["drawn"] == 40 + c["unsolvable"] and c["unsolvable"] >= 0
        assert c["cvar@1"] == pytest.approx(c["mean_solved_rate"]) and 0 <= c["cvar@0.1"] <= 1
        corridor = r["mazes"]["Corridor"]
        assert corridor["optimal_return"] == pytest.approx(1 - 0.9 * 3 / 36, abs=1e-6)  # 3 forwards, budget 2*3*6
        assert corridor["gap"] == pytest.approx(corridor["optimal_return"] - corridor["return"])
        assert r["mazes"]["mine-1"]["optimal_return"] == pytest.approx(1 - 0.9 * 4 / 9, abs=1e-6)  # float32
    rates = [r["mazes"]["SixteenRooms"]["length"] for r in doc["runs"]]
    s = doc["summary"]["SixteenRooms"]["length"]
    assert s["n"] == 2 and s["mean"] == pytest.approx(np.mean(rates))
    if rates[0] != rates[1]:
        assert s["ci_low"] == pytest.approx(mean_ci(rates)[1])
    per_run = (out / "per_run.csv").read_text().splitlines()
    # 3 mazes, the sampled levels, and the 5 of 9 alphas with a level among 40 (floor(alpha x 40) >= 1)
    assert per_run[0] == "run,seed,checkpoint,level,solved_rate,return,length,gap" and len(per_run) == 1 + 2 * (3 + 1 + 5)
    assert (out / "gifs" / "r0-seed0" / "SixteenRooms.gif").stat().st_size > 0
    captured = capsys.readouterr()
    assert "suite mean" in captured.out and f"results written to {out}" in captured.err
    assert "CVaR at alpha 0.0001, 0.001, 0.01, 0.02 left out" in captured.err


def test_runs_of_different_configs_are_not_pooled_unless_asked(run_dirs, tmp_path, capsys):
    other = make_run(tmp_path, "other-lr", 0, lr=1e-3)
    args = [str(run_dirs / "r0"), str(run_dirs / "r1"), str(other), "--suite", "SixteenRooms", "--episodes", "2"]
    evaluate_main([*args, "--out", str(tmp_path / "grouped")])
    doc = json.loads((tmp_path / "grouped" / "results.json").read_text())
    assert [(g["label"], g["runs"]) for g in doc["groups"]] == [("dr (lr=0.0001)", ["r0/seed0", "r1/seed1"]),
                                                                 ("dr (lr=0.001)", ["other-lr/seed0"])]
    assert [g["summary"]["suite_mean"]["solved_rate"]["n"] for g in doc["groups"]] == [2, 1]
    assert "summary" not in doc  # no single interval over two experiments
    printed = capsys.readouterr().out
    assert "dr (lr=0.001): other-lr/seed0" in printed
    # rliable's aggregates per experiment, and the probability of improvement both ways.
    agg = doc["aggregates"]
    assert set(agg["groups"]) == {"dr (lr=0.0001)", "dr (lr=0.001)"}
    rates = [[r["mazes"]["SixteenRooms"]["solved_rate"]] for r in doc["runs"][:2]]
    assert agg["groups"]["dr (lr=0.0001)"]["mean"]["estimate"] == pytest.approx(np.mean(rates))
    assert agg["groups"]["dr (lr=0.0001)"]["iqm"]["runs"] == 2
    pair = {(p["x"], p["y"]): p["estimate"] for p in agg["probability_of_improvement"]}
    assert pair[("dr (lr=0.0001)", "dr (lr=0.001)")] == pytest.approx(1 - pair[("dr (lr=0.001)", "dr (lr=0.0001)")])
    assert "fewer than 5 runs" in agg["note"] and "P(dr (lr=0.0001) > dr (lr=0.001))" in printed
    assert (tmp_path / "grouped" / "aggregates.csv").read_text().startswith("experiment,metric,estimate")
    summary_csv = (tmp_path / "grouped" / "summary.csv").read_text().splitlines()
    assert summary_csv[0].startswith("group,level") and any(line.startswith("dr (lr=0.001),") for line in summary_csv)
    evaluate_main([*args, "--pool", "--out", str(tmp_path / "pooled")])
    doc = json.loads((tmp_path / "pooled" / "results.json").read_text())
    assert len(doc["groups"]) == 1 and doc["summary"]["suite_mean"]["solved_rate"]["n"] == 3


def test_cvar_scores_runs_on_one_level_distribution(run_dirs, tmp_path, capsys):
    """ACCEL trains from empty rooms: its CVaR on its own generator would rank other levels than
    DR's. Such runs are refused with the fix named; with it, every run is ranked on the same levels."""
    rooms = make_run(tmp_path, "empty-rooms", 0, n_walls=0)
    args = [str(run_dirs / "r0"), str(rooms), "--suite", "SixteenRooms", "--episodes", "2", "--cvar", "40",
            "--cvar-episodes", "2"]
    with pytest.raises(SystemExit):
        evaluate_main([*args, "--out", str(tmp_path / "refused")])
    err = capsys.readouterr().err
    assert "n_walls 3 in r0 but 0 in empty-rooms" in err and "--cvar-set n_walls=3" in err and err.count("\n") == 1
    evaluate_main([*args, "--cvar-set", "n_walls=3", "--out", str(tmp_path / "one")])
    runs = json.loads((tmp_path / "one" / "results.json").read_text())["runs"]
    # Both runs hold seed 0's initial parameters: on the same levels, with the same keys, the same results.
    assert runs[0]["cvar"] == runs[1]["cvar"]
    evaluate_main([str(rooms), "--suite", "SixteenRooms", "--episodes", "2", "--cvar", "40", "--cvar-episodes", "2",
                   "--out", str(tmp_path / "own")])  # alone, on its own empty rooms: other levels, other rates
    own = json.loads((tmp_path / "own" / "results.json").read_text())["runs"][0]["cvar"]
    assert own["mean_solved_rate"] != runs[1]["cvar"]["mean_solved_rate"]


def test_an_unwritable_out_fails_before_evaluating(run_dirs, tmp_path, capsys):
    (tmp_path / "a-file").write_text("")
    with pytest.raises(SystemExit) as exit_info:
        evaluate_main([str(run_dirs / "r0"), "--suite", "SixteenRooms", "--out", str(tmp_path / "a-file" / "out")])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and err.startswith(f"error: cannot write to --out {tmp_path}/a-file/out")
    assert "evaluated" not in err and err.count("\n") == 1


@pytest.mark.parametrize("args, message", [
    (["{tmp}/nope"], "no run directory"),
    (["{tmp}/empty"], "is not a run directory (no config.json)"),
    (["{tmp}/fresh"], "has no checkpoints"),
    (["{tmp}/r0", "--checkpoint", "3"], "no checkpoint at update 3 (have [7])"),
    (["{tmp}/r0", "--suite", "SixteenRooms,Nope"], "unknown OOD maze 'Nope'"),
    (["{tmp}/r0", "--levels", "{tmp}/bad.txt"], "bad.txt, block 1"),
    (["{tmp}/r0", "--alpha", "0"], "--alpha must be in (0, 1]"),
    (["{tmp}/r0", "--cvar", "4", "--cvar-set", "lr=1"], "--cvar-set sets options of the level generator's"),
    (["{tmp}/r0", "--cvar", "4", "--cvar-set", "n_walls"], "--cvar-set expects KEY=VALUE, got 'n_walls'"),
    (["{tmp}/diverged"], "checkpoint 7 holds NaN or infinite parameters"),
])
def test_bad_inputs_are_one_line_errors(run_dirs, capsys, args, message):
    with pytest.raises(SystemExit) as exit_info:
        evaluate_main([a.format(tmp=run_dirs) for a in args])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and err.startswith("error: ") and err.count("\n") == 1 and message in err, err


def test_a_host_environment_run_is_named_not_misread(tmp_path):
    """The JAX-environment loader on a Procgen run says what it is, in one line (evaluate.py scores host
    runs on their own: tests/test_host_evaluate.py)."""
    from minimax.evaluation.saved_policies import EvaluateError, load_policies
    from minimax.host.config import HostTrainConfig
    run = tmp_path / "procgen-bigfish+plr-seed0"
    run.mkdir()
    HostTrainConfig().save(run / "config.json")
    with pytest.raises(EvaluateError, match="host-environment run.*apart from JAX-env runs"):
        load_policies(run)
