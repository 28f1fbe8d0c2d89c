"""JaxNav (single agent) as a UED environment: step for step jaxmarl's own env object from the same
level with the same actions, SFL's generator, ACCEL edits and held-out maps, and whole runs."""

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

pytest.importorskip("jaxmarl")

from jaxmarl.environments.jaxnav.jaxnav_env import JaxNav  # noqa: E402
from jaxmarl.environments.jaxnav.jaxnav_singletons import make_jaxnav_singleton  # noqa: E402
from jaxmarl.environments.jaxnav.jaxnav_ued_utils import make_level_mutator  # noqa: E402

from minimax.cli.train import main  # noqa: E402
from minimax.envs.jaxnav import (  # noqa: E402
    JaxNavSingle, NavParams, held_out, jaxnav_env, level_metrics, make_nav_generator, make_nav_mutator, nav_level,
    reachable_cells,
)
from minimax.envs.jaxnav.env import jaxnav_start, known_warnings, level_of_jaxnav_state  # noqa: E402
from minimax.envs.jaxnav.render import render_episode, render_levels  # noqa: E402
from minimax.envs.registry import get_env  # noqa: E402
from minimax.evaluation.evaluate import main as evaluate_main  # noqa: E402
from minimax.training.loop import train  # noqa: E402
from minimax.training.run_logs import read_rows  # noqa: E402
from run_helpers import tiny, without_timing  # noqa: E402

pytestmark = pytest.mark.contract  # tests/conftest.py's tiers: training programs at their tiny size

PARAMS = NavParams()
ENV = JaxNavSingle()
SFL_KWARGS = dict(rad=0.3, goal_radius=0.3, max_steps=500, fixed_lambda=True, rew_lambda=0.5, map_id="Grid-Rand-Poly")


def theirs(params=PARAMS):
    return jaxnav_env(params)


def play_both(level, actions, params=PARAMS, their_env=None, their_state=None, their_actions=None):
    """Our and jaxmarl's episodes from `level` (theirs from `their_state`) under the same actions:
    (obs, reward, done) per step, each side stacked."""
    their_env = their_env or theirs(params)
    their_state = jaxnav_start(level) if their_state is None else their_state
    their_actions = actions if their_actions is None else their_actions

    @jax.jit
    def run(level, their_state):
        def step(carry, inputs):
            ours, their = carry
            action, their_action = inputs
            ours, r, d, _ = ENV.step_env(jax.random.key(0), ours, action, params)
            with known_warnings():
                o2, their, r2, d2, _ = their_env.step_env(jax.random.key(0), their, {"agent_0": their_action})
            return (ours, their), (ENV.get_obs(ours, params), r, d, o2["agent_0"], r2["agent_0"], d2["__all__"])
        return jax.lax.scan(step, (ENV.init_state(level, params), their_state), (actions, their_actions))[1]
    return run(level, their_state)


@pytest.mark.reference  # jaxmarl's env objects run live beside ours
def test_generated_levels_are_the_levels_jaxmarls_reset_starts():
    keys = jax.random.split(jax.random.key(3), 6)
    levels = jax.jit(jax.vmap(make_nav_generator(PARAMS)))(keys)
    with known_warnings():
        obs, states = jax.jit(jax.vmap(theirs().reset))(keys)
    np.testing.assert_array_equal(levels.map_data, states.map_data)
    np.testing.assert_array_equal(levels.agent_pos, states.pos[:, 0])
    np.testing.assert_array_equal(levels.goal_pos, states.goal[:, 0])
    ours = jax.jit(jax.vmap(ENV.init_state, in_axes=(0, None)), static_argnums=1)(levels, PARAMS)
    np.testing.assert_allclose(ours.obs, obs["agent_0"], atol=1e-6)
    # SFL's distribution: borders walled, start and goal at distinct free cell centres, fewer than 0.6 x 81 walls.
    maps = np.asarray(levels.map_data)
    assert (maps[:, 0] == 1).all() and (maps[:, -1] == 1).all() and (maps[:, :, 0] == 1).all()
    assert (maps[:, 1:-1, 1:-1].sum((1, 2)) < 0.6 * 81).all()
    for i in range(len(keys)):
        (sx, sy), (gx, gy) = np.floor(levels.agent_pos[i]).astype(int), np.floor(levels.goal_pos[i]).astype(int)
        assert maps[i, sy, sx] == 0 and maps[i, gy, gx] == 0 and (sx, sy) != (gx, gy)
        np.testing.assert_allclose(levels.agent_pos[i] % 1, 0.5)


@pytest.mark.reference  # jaxmarl's env objects run live beside ours
def test_an_episode_is_jaxmarls_step_for_step():
    level = make_nav_generator(PARAMS)(jax.random.key(11))
    actions = jax.random.uniform(jax.random.key(1), (120, 2), minval=jnp.array([0.0, -0.6]),
                                 maxval=jnp.array([1.0, 0.6]))
    obs, rew, done, obs2, rew2, done2 = play_both(level, actions)
    end = int(np.argmax(np.asarray(done))) if np.any(done) else len(done)
    assert end > 5
    np.testing.assert_allclose(obs[:end + 1], obs2[:end + 1], atol=1e-6)
    np.testing.assert_allclose(rew[:end + 1], rew2[:end + 1], atol=1e-6)
    np.testing.assert_array_equal(done[:end + 1], done2[:end + 1])


def test_driving_straight_to_the_goal_solves_and_hitting_a_wall_terminates():
    walls = np.ones((11, 11), np.int32)
    walls[1:-1, 1:-1] = 0
    params = PARAMS
    level = nav_level([1.5, 5.5], 0.0, [8.5, 5.5], walls)
    state = ENV.init_state(level, params)
    step = jax.jit(ENV.step_env, static_argnums=3)
    total, t = 0.0, 0
    while True:
        state, reward, done, info = step(jax.random.key(t), state, jnp.array([1.0, 0.0]), params)
        total, t = total + float(reward), t + 1
        if done:
            break
    assert bool(info["solved"]) and bool(info["terminated"]) and not bool(info["truncated"])
    assert float(info["episode_stats"]["collided"]) == 0.0
    assert total == pytest.approx(4.0 + 0.25 * (7.0 - 0.3) - 0.01 * t, abs=0.3)  # goal, progress, time
    wall = nav_level([1.5, 5.5], np.pi, [8.5, 5.5], walls)  # facing the west wall, 1.25 m of travel away
    state = ENV.init_state(wall, params)
    for t in range(40):
        state, reward, done, info = step(jax.random.key(t), state, jnp.array([1.0, 0.0]), params)
        if done:
            break
    assert bool(done) and not bool(info["solved"]) and bool(info["terminated"])
    assert float(info["episode_stats"]["collided"]) == 1.0 and float(reward) < -3.9


@pytest.mark.reference  # jaxmarl's env objects run live beside ours
def test_discrete_actions_are_jaxmarls_discrete_mode():
    params = NavParams(actions="discrete")
    with known_warnings():
        their = JaxNav(num_agents=1, act_type="Discrete", map_params={"map_size": (11, 11), "fill": 0.6,
                                                                       "sample_test_case_type": "grid"}, **SFL_KWARGS)
    level = make_nav_generator(params)(jax.random.key(5))
    actions = jax.random.randint(jax.random.key(2), (40,), 0, 15)
    obs, rew, done, obs2, rew2, done2 = play_both(level, actions, params, their, their_actions=actions[:, None])
    np.testing.assert_allclose(obs, obs2, atol=1e-6)
    np.testing.assert_allclose(rew, rew2, atol=1e-6)
    assert ENV.action_space(params).n == 15 and ENV.action_space(PARAMS).shape == (2,)
    assert ENV.action_space(PARAMS).contains(jnp.array([1.0, 0.5])) and not ENV.action_space(PARAMS).contains(
        jnp.array([-0.1, 0.0]))


def test_mutations_are_sfls_edits_key_for_key():
    n = 6
    levels = jax.vmap(make_nav_generator(PARAMS))(jax.random.split(jax.random.key(8), 8))
    keys = jax.random.split(jax.random.key(9), 8)
    ours = jax.jit(jax.vmap(make_nav_mutator(PARAMS)(n)))(keys, levels)
    their_mutate = make_level_mutator(n, theirs().map_obj)
    with known_warnings():
        their = jax.jit(jax.vmap(lambda k, lv: level_of_jaxnav_state(their_mutate(k, jaxnav_start(lv), n))))(
            keys, levels)
    for a, b in zip(jax.tree.leaves(ours), jax.tree.leaves(their)):
        np.testing.assert_array_equal(a, b)
    before, after = np.asarray(levels.map_data), np.asarray(ours.map_data)
    assert (after >= before).all() and (after != before).any()  # SFL's "flip" only ever adds walls
    assert ((after - before).sum((1, 2)) <= n).all()
    assert (np.asarray(ours.goal_pos) != np.asarray(levels.goal_pos)).any()
    np.testing.assert_array_equal(ours.agent_pos, levels.agent_pos)  # the start never moves
    for i in range(8):
        gx, gy = np.floor(ours.goal_pos[i]).astype(int)
        assert after[i, gy, gx] == 0
    with pytest.raises(ValueError, match="n_edits"):
        make_nav_mutator(PARAMS)(-1)


def test_held_out_maps_are_sfls_test_sets():
    single = held_out("single")
    assert [h.name for h in single] == ["BlankTest", "MiddleTest", "SingleNav1", "SingleNav2", "SingleNav3"]
    sampled = held_out("sampled100")
    assert len(sampled) == 100 and len(held_out("sfl")) == 105
    levels = jax.tree.map(lambda *x: jnp.stack(x), *[h.fixed_level for h in single + sampled])
    assert levels.map_data.shape == (105, 11, 11) and levels.map_data.dtype == jnp.int32
    # SFL's sampled set was made with jaxmarl's path check: every goal is reachable on the grid.
    solvable = jax.vmap(lambda lv: level_metrics(lv)["solvable"])(levels)
    assert bool(jnp.all(solvable))
    with pytest.raises(ValueError, match="unknown JaxNav held-out suite 'hard'"):
        held_out("hard")


@pytest.mark.reference  # jaxmarl's env objects run live beside ours
def test_padded_singleton_plays_as_jaxmarls_own_singleton():
    """SingleNav1 (7 x 11) padded to 11 x 11 sees and scores exactly as jaxmarl's singleton object."""
    with known_warnings():
        their = make_jaxnav_singleton("SingleNav1", num_agents=1, **SFL_KWARGS)
    with known_warnings():
        _, their_state = their.reset()
    level = held_out("single")[2].fixed_level
    actions = jax.random.uniform(jax.random.key(4), (30, 2), minval=jnp.array([0.0, -0.6]),
                                 maxval=jnp.array([1.0, 0.6]))
    obs, rew, done, obs2, rew2, done2 = play_both(level, actions, their_env=their, their_state=their_state)
    np.testing.assert_allclose(obs, obs2, atol=1e-6)
    np.testing.assert_allclose(rew, rew2, atol=1e-6)


def test_reachability_on_hand_made_maps():
    walls = np.ones((11, 11), np.int32)
    walls[1:-1, 1:-1] = 0
    open_level = nav_level([1.5, 1.5], 0.0, [9.5, 9.5], walls)
    assert bool(level_metrics(open_level)["solvable"])
    walled = walls.copy()
    walled[5, 1:-1] = 1  # a wall across the map
    assert not bool(level_metrics(nav_level([1.5, 1.5], 0.0, [9.5, 9.5], walled))["solvable"])
    diagonal = walls.copy()
    diagonal[1, 2] = diagonal[2, 1] = 1  # the start cell's two exits: corners do not let the robot through
    cells = np.asarray(reachable_cells(nav_level([1.5, 1.5], 0.0, [9.5, 9.5], diagonal)))
    assert cells.sum() == 1 and cells[1, 1]
    assert float(level_metrics(open_level)["n_walls"]) == 0.0


def test_pictures_of_levels_and_episodes():
    levels = jax.tree.map(lambda *x: jnp.stack(x), *[h.fixed_level for h in held_out("single")])
    images = render_levels(levels)
    assert images.shape == (5, 132, 132, 3) and images.dtype == np.uint8
    level = held_out("single")[0].fixed_level
    trace = {"pos": np.linspace([1.5, 1.5], [5.5, 5.5], 9), "theta": np.full(9, np.pi / 4)}
    frames = render_episode(level, trace, PARAMS)
    assert frames.shape == (9, 264, 264, 3) and not np.array_equal(frames[0], frames[-1])


NAV = dict(env="jaxnav", recurrent_cell="none", mlp_hidden=16, num_envs=8, num_steps=16, num_updates=4, log_every=2,
           checkpoint_every=2, eval_every=2, eval_episodes=1, max_episode_steps=24)


@pytest.fixture(scope="module")
def nav_plr(tmp_path_factory):
    """Two seeds of robust PLR on JaxNav in one vmapped program."""
    cfg = tiny(tmp_path_factory.mktemp("jaxnav"), **NAV, method="robust_plr", num_seeds=2, buffer_size=16,
               min_fill_ratio=0.25, run_name="reference")
    train(cfg)
    return cfg


@pytest.mark.e2e
def test_robust_plr_on_jaxnav_trains_evaluates_and_resumes_exactly(nav_plr, tmp_path):
    rows = read_rows(nav_plr.run_dir)
    assert [r["update"] for r in rows] == [2, 2, 2, 4, 4, 4]
    last = rows[-1]
    assert last["buffer/size"] > 0 and np.isfinite(last["policy_loss"])
    assert 0 <= last["eval/mean_solved_rate"] <= 1 and "eval/SingleNav1/return" in last
    train(nav_plr.replace(out_dir=str(tmp_path), num_updates=2))
    main(["--resume", "--num-updates", "4", "--out-dir", str(tmp_path), "--run-name", "reference", "--no-progress"])
    assert without_timing(read_rows(tmp_path / "reference")) == without_timing(rows)
    evaluate_main([str(nav_plr.run_dir), "--episodes", "1", "--suite", "single", "--gif", "--cvar", "10",
                   "--alpha", "0.5", "1.0", "--cvar-set", "nav_valid_path_check=true", "--out", str(tmp_path / "e")])
    doc = json.loads((tmp_path / "e" / "results.json").read_text())
    assert len(doc["runs"]) == 2 and list(doc["runs"][0]["mazes"])[0] == "BlankTest"
    assert (tmp_path / "e" / "gifs" / "reference-seed0" / "SingleNav2.gif").exists()


@pytest.mark.e2e
@pytest.mark.parametrize("method", ["accel", "sfl"])
def test_accel_and_sfl_train_on_jaxnav(method, tmp_path):
    options = dict(buffer_size=16, min_fill_ratio=0.25, n_mutations=3) if method == "accel" else dict(
        sfl_batches=1, sfl_batch_levels=16, sfl_set_size=4, sfl_rollout_steps=48, sfl_refresh_every=2)
    cfg = tiny(tmp_path, **{**NAV, "eval_every": 0, "num_updates": 2}, method=method, **options)
    train(cfg)
    row = read_rows(cfg.run_dir)[-1]
    assert np.isfinite(row["policy_loss"]) and 0 <= row["collided"] <= 1
    if method == "accel":
        assert row.get("mutated/count") is not None
    else:  # half the envs play the learnability set, whose levels' statistics are logged
        assert row["set/count"] > 0 and 0 <= row["set/solvable"] <= 1


def test_methods_that_cannot_apply_are_refused(tmp_path, capsys):
    for extra, message in ((["--method", "paired"], "--env jaxnav has none"),
                           (["--method", "robust_plr", "--score-function", "oracle_regret"], "oracle_regret")):
        with pytest.raises(SystemExit):
            main(["--env", "jaxnav", *extra, "--out-dir", str(tmp_path), "--no-progress"])
        assert message in capsys.readouterr().err
    assert get_env("jaxnav").binary_outcome and not get_env("jaxnav").discrete_actions


def test_presets_are_sfls_jaxnav_configuration():
    """SFL's `config/env/jaxnav.yaml` + `learning/ippo-jaxnav.yaml` (+ `jaxnav-sfl.yaml`, `ued/plr.yaml`)."""
    from minimax.config import PRESETS

    dr, plr, sfl = (PRESETS[f"jaxnav_{m}"].options() for m in ("dr", "plr", "sfl"))
    want = dict(env="jaxnav", method="dr", num_envs=256, num_steps=512, num_updates=2250, lr=2.5e-4, anneal_lr=True,
                gamma=0.99, gae_lambda=0.95, n_epochs=4, n_minibatches=4, clip_eps=0.04, entropy_coef=0.0,
                value_coef=0.5, max_grad_norm=0.5, recurrent_cell="gru", recurrent_size=512, nav_fill=0.6,
                nav_actions="continuous")
    assert {k: dr[k] for k in want} == want
    want_plr = dict(method="robust_plr", buffer_size=4000, replay_prob=0.5, score_function="maxmc",
                    score_transform="top_k", top_k=1, staleness_coef=0.3, min_fill_ratio=1.0, unique_levels=False)
    assert {k: plr[k] for k in want_plr} == want_plr and plr["lr"] == dr["lr"]
    want_sfl = dict(method="sfl", sfl_batches=5, sfl_batch_levels=1000, sfl_rollout_steps=1000, sfl_set_size=100,
                    sfl_refresh_every=50, sfl_set_fraction=0.5)
    assert {k: sfl[k] for k in want_sfl} == want_sfl and sfl["clip_eps"] == 0.04


def test_importing_jaxmarl_prints_nothing_and_loses_nothing(capsys):
    """jaxmarl's import chatter is dropped without touching `print`; other output written meanwhile is passed on,
    and the streams are ours again afterwards (its MABrax module resets them to `sys.__stdout__`)."""
    import subprocess  # noqa: PLC0415
    import sys  # noqa: PLC0415

    from minimax.envs.jaxnav.env import JAXMARL_CHATTER, _quiet  # noqa: PLC0415

    out = subprocess.run([sys.executable, "-c", "import minimax.envs.jaxnav.env"], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0 and not any(line in out.stdout + out.stderr for line in JAXMARL_CHATTER), out.stdout

    before = sys.stdout, sys.stderr
    with _quiet():
        print(JAXMARL_CHATTER[0])
        print("a line of ours")
        sys.stdout = sys.__stdout__  # what MABrax's import does
        print("another", file=sys.stderr)
    assert (sys.stdout, sys.stderr) == before
    captured = capsys.readouterr()
    assert captured.out == "a line of ours\n" and captured.err == "another\n"
