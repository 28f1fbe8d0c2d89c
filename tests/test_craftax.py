"""Craftax-Classic with worlds as levels: parity with craftax's own env, the episode contract
(deterministic starts, time limit, info), the generator, mutator, held-out worlds and metrics.

Compiling craftax's step is the cost here (~10-20 s per program on one core), so almost every
check reads one shared program (`rollouts`): a batch of worlds generated from keys, each played
for `STEPS` random actions by our env under `ReplayAutoReset` and, beside it in the same scan, by
craftax's `CraftaxClassicSymbolicEnvNoAutoReset.step_env` on craftax's own start state with the
same step keys (reset by hand to that same start when its episode ends, as a replay does).
The last world of the batch has lava put left of the start and begins by walking into it, so
the batch also holds a death (`terminated`) beside the time limits (`truncated`).
"""

import functools

import pytest

pytest.importorskip("craftax")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from craftax.craftax_classic.envs.craftax_symbolic_env import (  # noqa: E402
    CraftaxClassicSymbolicEnvNoAutoReset,
)
from craftax.craftax_classic.constants import Action, BlockType  # noqa: E402
from craftax.craftax_classic.world_gen import generate_world  # noqa: E402

from minimax.envs.craftax import (  # noqa: E402
    ACHIEVEMENT_NAMES, EDIT_TILES, MUTATORS, NUM_ACHIEVEMENTS, NUM_HELD_OUT_WORLDS, CraftaxClassic, CraftaxParams,
    canonical_world, held_out, make_world_generator, make_world_mutator,
)
from minimax.envs.wrappers import ReplayAutoReset  # noqa: E402

N_WORLDS = 4            # the last one is the lava world (module docstring)
LAVA_WORLD = N_WORLDS - 1
MAX_STEPS = 25          # small time limit: two whole episodes and a part in STEPS steps
STEPS = 60
PARAMS = CraftaxParams(max_steps=MAX_STEPS)
ENV = CraftaxClassic()
FAST_COMPILE = {"xla_backend_optimization_level": 0}


@functools.cache
def rollouts(with_theirs: bool = False):
    """`(generated levels, craftax generate_world of the same keys (canonical), first observations
    ours and theirs, trajectories)`: one compiled program over a batch of worlds. Without `with_theirs`
    (the unit tier's checks of our episode contract) craftax's side is left out, and its entries are None:
    its step is half the program's compile time, and the `reference` tests compare the two."""
    ours = ReplayAutoReset(ENV)
    theirs = CraftaxClassicSymbolicEnvNoAutoReset()
    generate = make_world_generator(PARAMS)

    def play(key, lava):
        key_world, key_actions, key_steps = jax.random.split(key, 3)
        generated = generate(key_world)
        row, col = generated.player_position[0], generated.player_position[1] - 1  # LEFT of the start
        level = generated.replace(map=generated.map.at[row, col].set(
            jnp.where(lava, BlockType.LAVA.value, generated.map[row, col])))
        obs0, state = ours.reset_to_level(key_world, level, PARAMS)
        actions = jax.random.randint(key_actions, (STEPS,), 0, 17)
        actions = actions.at[0].set(jnp.where(lava, Action.LEFT.value, actions[0]))

        def body(carry, step):
            state, their_state = carry
            action, key = step
            obs, state, reward, done, info = ours.step(key, state, action, PARAMS)
            out = dict(obs=obs, reward=reward, done=done, info=info, timestep=state.world.timestep)
            if with_theirs:
                _, their_state, their_reward, their_done, _ = theirs.step_env(
                    key, their_state, action, PARAMS.craftax_params)
                # craftax's leaves include Python ints (its `Inventory` defaults): select leaf by leaf.
                their_state = jax.tree.map(lambda a, b: jnp.where(their_done, a, b), their_start, their_state)
                out.update(their_obs=theirs.get_obs(their_state), their_reward=their_reward, their_done=their_done)
            return (state, their_state), out

        if not with_theirs:
            _, trajectory = jax.lax.scan(body, (state, None), (actions, jax.random.split(key_steps, STEPS)))
            return generated, None, obs0, None, trajectory
        their_generated = generate_world(key_world, PARAMS.craftax_params, PARAMS.craftax_static_params)
        their_start = their_generated.replace(map=level.map)
        _, trajectory = jax.lax.scan(body, (state, their_start), (actions, jax.random.split(key_steps, STEPS)))
        return generated, canonical_world(their_generated), obs0, theirs.get_obs(their_start), trajectory

    keys = jax.random.split(jax.random.key(0), N_WORLDS)
    lava = jnp.arange(N_WORLDS) == LAVA_WORLD
    # Unoptimised machine code: half the compile time of this one large program, for ~1 s of running.
    return jax.jit(jax.vmap(play), compiler_options=FAST_COMPILE)(keys, lava)


def world(levels, i):
    """The `i`-th level of a batch."""
    return jax.tree.map(lambda x: x[i], levels)


def assert_trees_equal(a, b):
    """Every leaf of `a` equals the matching leaf of `b` exactly."""
    jax.tree.map(np.testing.assert_array_equal, a, b)


# ------------------------------------------------------------------- parity with craftax


@pytest.mark.reference  # craftax's own functions run live beside ours
def test_generator_is_craftax_generate_world():
    levels, their_starts, *_ = rollouts(with_theirs=True)
    assert_trees_equal(levels, their_starts)
    assert levels.map.shape == (N_WORLDS, *PARAMS.map_size) and levels.map.dtype == jnp.int32
    assert levels.state_rng.dtype == jnp.uint32  # raw key data: hashable, checkpointable


@pytest.mark.reference  # craftax's own functions run live beside ours
def test_step_equals_craftax_step():
    _, _, obs0, their_obs0, t = rollouts(with_theirs=True)
    np.testing.assert_allclose(obs0, their_obs0, atol=1e-6)
    np.testing.assert_allclose(t["obs"], t["their_obs"], atol=1e-6)
    np.testing.assert_allclose(t["reward"], t["their_reward"], atol=1e-6)
    np.testing.assert_array_equal(t["done"], t["their_done"])
    assert np.any(t["reward"] != 0)  # something happened: the comparison is not all zeros
    assert t["obs"].dtype == jnp.float32 and t["obs"].shape == (N_WORLDS, STEPS, 1345)
    space = ENV.observation_space(PARAMS)
    assert space.shape == (1345,) and bool(space.contains(t["obs"][0, 0]))
    assert ENV.action_space(PARAMS).n == 17


# ------------------------------------------------------------------------ episode contract


def test_time_limit_truncates_and_replay_restarts():
    _, _, obs0, _, t = rollouts()
    done, info = np.asarray(t["done"]), jax.tree.map(np.asarray, t["info"])
    for name in ("terminated", "truncated", "solved"):
        assert info[name].dtype == np.bool_ and info[name].shape == (N_WORLDS, STEPS)
    assert info["achievements"].shape == (N_WORLDS, STEPS, NUM_ACHIEVEMENTS)
    np.testing.assert_array_equal(info["terminated"] | info["truncated"], done)
    assert not np.any(info["terminated"] & info["truncated"]) and not np.any(info["solved"])
    expected = np.zeros(STEPS, bool)
    expected[MAX_STEPS - 1::MAX_STEPS] = True  # the MAX_STEPS-th step of every episode
    for i in range(N_WORLDS):
        if i == LAVA_WORLD:
            continue
        np.testing.assert_array_equal(done[i], expected)
        np.testing.assert_array_equal(info["truncated"][i], expected)
        assert not np.any(info["terminated"][i])
    # After a truncation the env is at the start of the same world: clock 0, first observation.
    timestep = np.asarray(t["timestep"])
    np.testing.assert_array_equal(timestep[done], 0)
    np.testing.assert_allclose(t["obs"][:LAVA_WORLD, MAX_STEPS - 1], obs0[:LAVA_WORLD])
    # A step unlocks something exactly when craftax's reward has its +1 (health moves it by 0.1s).
    unlocked = info["achievements"].sum(-1)
    np.testing.assert_array_equal(unlocked > 0, np.asarray(t["reward"]) > 0.25)


def test_episode_stats_are_the_achievements_each_episode_unlocked():
    """Where an episode ends, `info["episode_stats"]` holds what it unlocked: the union of the
    per-step unlocks since its start (recounted here), one entry per achievement and their total."""
    _, _, _, _, t = rollouts()
    info = jax.tree.map(np.asarray, t["info"])
    done, stats = np.asarray(t["done"]), info["episode_stats"]
    assert set(stats) == {f"achievements/{n}" for n in ACHIEVEMENT_NAMES} | {"achievements/total"}
    for i in range(N_WORLDS):
        unlocked = np.zeros(NUM_ACHIEVEMENTS, bool)
        for step in range(STEPS):
            unlocked |= info["achievements"][i, step]
            if done[i, step]:
                got = np.array([stats[f"achievements/{n}"][i, step] for n in ACHIEVEMENT_NAMES])
                np.testing.assert_array_equal(got, unlocked.astype(np.float32))
                assert stats["achievements/total"][i, step] == unlocked.sum()
                unlocked[:] = False
    assert any(stats["achievements/total"][done] > 0)  # some episode unlocked something: not all zeros


def test_walking_into_lava_terminates():
    _, _, obs0, _, t = rollouts()
    info = jax.tree.map(np.asarray, t["info"])
    assert t["done"][LAVA_WORLD, 0] and info["terminated"][LAVA_WORLD, 0] and not info["truncated"][LAVA_WORLD, 0]
    np.testing.assert_allclose(t["obs"][LAVA_WORLD, 0], obs0[LAVA_WORLD])  # replayed from the start


def test_init_state_is_deterministic_and_restart_returns_to_it():
    level = world(rollouts()[0], 0)

    @jax.jit
    def starts(level):
        start = ENV.init_state(level, PARAMS)
        again = ENV.reset_to_level(jax.random.key(1), level, PARAMS)[1]
        other_key = ENV.reset_to_level(jax.random.key(2), level, PARAMS)[1]
        moved = start.replace(world=start.world.replace(timestep=jnp.int32(7),
                                                        player_position=jnp.array([3, 3], jnp.int32)))
        return start, again, other_key, ENV.restart_state(moved, PARAMS)

    start, again, other_key, restarted = starts(level)
    assert int(start.world.timestep) == 0
    for state in (again, other_key, restarted):
        assert_trees_equal(state, start)
    assert_trees_equal(ENV.level_of(start), level)  # generated levels are canonical already


def test_levels_from_different_keys_differ():
    levels, *_ = rollouts()
    maps = np.asarray(levels.map).reshape(N_WORLDS, -1)
    for i in range(N_WORLDS):
        for j in range(i + 1, N_WORLDS):
            assert np.any(maps[i] != maps[j])


def test_params():
    params = ENV.default_params()
    assert params.max_steps == 10000 and params.craftax_params.max_timesteps == 10000
    assert hash(params) == hash(CraftaxParams()) and params == CraftaxParams()
    assert jax.tree.leaves(params) == []
    assert ENV.default_params(max_steps=7).craftax_params.max_timesteps == 7
    with pytest.raises(ValueError, match="map_size"):
        CraftaxParams(map_size=(40, 64))
    with pytest.raises(ValueError, match="max_steps"):
        CraftaxParams(max_steps=0)
    with pytest.raises(ValueError, match="map has shape"):
        ENV.init_state(world(rollouts()[0], 0), CraftaxParams(map_size=(32, 32)))


# ------------------------------------------------------------------------------- mutator


def test_mutator_edits_at_most_n_tiles_never_the_start():
    levels, *_ = rollouts()
    n_edits = 6
    mutate = jax.jit(jax.vmap(make_world_mutator(n_edits)))
    children = mutate(jax.random.split(jax.random.key(5), N_WORLDS), levels)
    assert children.map.shape == levels.map.shape and children.map.dtype == levels.map.dtype
    changed = np.asarray(children.map != levels.map).reshape(N_WORLDS, -1).sum(-1)
    assert np.all(changed <= n_edits) and np.any(changed > 0)
    rows, cols = np.asarray(levels.player_position).T
    idx = np.arange(N_WORLDS)
    np.testing.assert_array_equal(np.asarray(children.map)[idx, rows, cols], np.asarray(levels.map)[idx, rows, cols])
    assert set(np.unique(np.asarray(children.map)[np.asarray(children.map != levels.map)])) <= {t.value for t in EDIT_TILES}
    assert_trees_equal(children.replace(map=levels.map), levels)  # only the map changes
    assert MUTATORS["tiles"] is make_world_mutator
    with pytest.raises(ValueError, match="n_edits"):
        make_world_mutator(-1)


def test_mutator_never_touches_the_start_even_when_it_hits_every_other_cell():
    level = world(rollouts()[0], 0)
    tiny = level.replace(map=jnp.full((3, 4), 2, level.map.dtype), player_position=jnp.array([1, 2], jnp.int32))
    child = jax.jit(make_world_mutator(300))(jax.random.key(3), tiny)
    assert int(child.map[1, 2]) == 2
    assert np.sum(np.asarray(child.map) != 2) >= 8  # nearly every other cell was rewritten


# -------------------------------------------------------------------- held out, metrics


def test_held_out_worlds_are_fixed_and_distinct():
    suite = held_out("worlds")
    assert [h.name for h in suite] == [f"world{i}" for i in range(NUM_HELD_OUT_WORLDS)]
    for h in suite:
        assert h.is_fixed
        assert h.sample(jax.random.key(9)) is h.fixed_level
        assert h.params_for(PARAMS).max_steps == MAX_STEPS
    again = held_out("worlds")
    for a, b in zip(suite, again):
        assert_trees_equal(a.fixed_level, b.fixed_level)
    maps = [np.asarray(h.fixed_level.map) for h in suite]
    assert all(np.any(maps[i] != maps[j]) for i in range(len(maps)) for j in range(i + 1, len(maps)))
    training = np.asarray(rollouts()[0].map)
    assert not any(np.array_equal(m, t) for m in maps for t in training)
    with pytest.raises(ValueError, match="worlds"):
        held_out("mazes")


def test_the_runs_checks_read_the_suite_without_generating_its_worlds(tmp_path, monkeypatch):
    """A run's checks name a bad suite at once and pass a good one without the 8 worlds' generation (about 12 s
    here, `UEDEnv.check_suite`); training builds them when it first evaluates."""
    import minimax.envs.craftax.env as craftax_env
    from minimax.config import TrainConfig
    from minimax.core.options import ConfigError

    monkeypatch.setattr(craftax_env, "_held_out_worlds", lambda: pytest.fail("generated the held-out worlds"))
    TrainConfig.from_options(env="craftax", eval_suite="worlds", eval_every=10, out_dir=str(tmp_path))  # checked
    with pytest.raises(ConfigError, match="--eval-suite: unknown Craftax evaluation suite 'mazes'; known suites"):
        TrainConfig.from_options(env="craftax", eval_suite="mazes", eval_every=10, out_dir=str(tmp_path))
