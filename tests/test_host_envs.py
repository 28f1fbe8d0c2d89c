"""Host-environment adapters (minimax.envs.host): the HostEnv contract for Procgen and gymnasium.

Procgen checks are exact (bit for bit) against procgen's own single-level envs; they skip where
procgen is not importable (CI installs it: `pip install cffi imageio && pip install --no-deps
procgen-mirror gym3`).
"""

import subprocess
import sys

import gymnasium
import numpy as np
import pytest

from minimax.host.state_files import decode_state, encode_state
from minimax.envs.host import (
    PROCGEN_GAMES,
    HostEnv,
    HostStep,
    is_host_env,
    make_host_env,
)
from minimax.envs.host.procgen import (
    INSTALL_HINT,
    LevelStarts,
    import_procgen,
    procgen_modes,
)


@pytest.fixture(scope="module")
def procgen():
    """procgen itself (imported through the adapter, which works without `gym`), or skip."""
    pytest.importorskip("cffi")
    try:
        return import_procgen()
    except ModuleNotFoundError as e:
        pytest.skip(str(e))


def _reference(procgen, game, seed):
    """procgen's own env that plays only level `seed`: the ground truth of a forced level."""
    return procgen.ProcgenGym3Env(num=1, env_name=game, distribution_mode="easy", start_level=seed,
                                  num_levels=1, num_threads=0)


def _policy(game, rng, n):
    """Actions that end episodes quickly: coinrun mostly right/jump (reaches the coin or dies within
    ~30-150 steps), bigfish uniform (gets eaten)."""
    if game == "coinrun":
        return rng.choice([2, 5, 7, 8], size=n, p=[0.1, 0.1, 0.4, 0.4])
    return rng.integers(0, 15, n)


# ---------------------------------------------------------------- registry and input errors


def test_is_host_env():
    assert is_host_env("procgen-coinrun") and is_host_env("gym-CartPole-v1")
    assert not is_host_env("maze") and not is_host_env("cartpole") and not is_host_env(None)


@pytest.mark.parametrize("name, kwargs, needle", [
    ("procgen-pacman", {}, "'pacman'"),
    ("procgen-coinrun", {"distribution_mode": "extreme"}, "'extreme'"),
    ("procgen-coinrun", {"distribution_mode": "nightmare"}, "'nightmare'"),
    ("procgen-coinrun", {"distribution_mode": "exploration"}, "'exploration'"),
    ("procgen-coinrun", {"num_envs": 0}, "0"),
    ("procgen-coinrun", {"num_threads": -1}, "-1"),
    ("procgen-coinrun", {"use_generated_assets": True}, "'use_generated_assets'"),
    ("gym-CartPole-v1", {"num_envs": 0}, "0"),
    ("gym-NoSuchEnv-v0", {}, "'NoSuchEnv-v0'"),
    ("gym-Pendulum-v1", {}, "Discrete"),
    ("gym-CartPole-v1", {"distribution_mode": "hard"}, "'hard'"),
    ("atari-pong", {}, "'atari-pong'"),
])
def test_bad_input_is_a_one_line_value_error(name, kwargs, needle):
    kwargs = {"num_envs": 2, **kwargs}
    with pytest.raises(ValueError) as info:
        make_host_env(name, kwargs.pop("num_envs"), **kwargs)
    message = str(info.value)
    assert needle in message and "\n" not in message
    if name == "procgen-pacman":
        assert all(game in message for game in PROCGEN_GAMES)
    if kwargs.get("distribution_mode") == "extreme":
        assert "easy, hard" in message


def test_missing_procgen_names_the_install_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "procgen", None)      # makes `import procgen` fail
    with pytest.raises(ModuleNotFoundError) as info:
        make_host_env("procgen-coinrun", 1)
    assert "pip install cffi imageio && pip install --no-deps procgen-mirror gym3" in str(info.value)
    assert INSTALL_HINT in str(info.value)


def test_procgen_imports_without_gym(procgen):
    """The gym shim: procgen imports with `gym` absent, and `import gym` still fails afterwards."""
    code = ("import sys; sys.modules['gym'] = None\n"
            "from minimax.envs.host import make_host_env\n"
            "env = make_host_env('procgen-coinrun', 2); obs = env.reset([3, 4]); env.step([1, 2])\n"
            "assert obs.shape == (2, 64, 64, 3)\n"
            "assert sys.modules['gym'] is None and 'gym.envs.registration' not in sys.modules\n"
            "print('ok')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr[-2000:]


# ---------------------------------------------------------------- procgen: exact forced levels


def test_start_states_are_byte_identical_to_fresh_envs(procgen):
    """For every game and mode, the patched start state of a seed is the fresh env's state."""
    for game in PROCGEN_GAMES:
        for mode in procgen_modes(game):
            starts = LevelStarts(procgen.ProcgenGym3Env, game, mode, {}, cache_size=8)
            assert starts.info()["patched"], (game, mode)
            for seed in (0, 41, 2**31 - 2):
                fresh = procgen.ProcgenGym3Env(num=1, env_name=game, distribution_mode=mode, start_level=seed,
                                               num_levels=1, num_threads=0, rand_seed=0)
                assert starts.get(seed) == fresh.callmethod("get_state")[0], (game, mode, seed)
                fresh.close()
            starts.close()


@pytest.mark.parametrize("game, seed", [("coinrun", 20), ("bigfish", 10)])
def test_forced_level_plays_like_a_fresh_single_level_env(procgen, game, seed):
    """Slot 2 of a 4-slot adapter forced to `seed` == ProcgenGym3Env(start_level=seed, num_levels=1),
    obs/reward/done bit for bit, across episode ends (where the adapter forces the seed again)."""
    env = make_host_env(f"procgen-{game}", 4, seed=1)
    ref = _reference(procgen, game, seed)
    rng = np.random.default_rng(7)
    obs = env.reset([100, 101, seed, 102])
    assert np.array_equal(obs[2], ref.observe()[1]["rgb"][0])
    ends = 0
    for _ in range(300):
        actions = _policy(game, rng, 4)
        step = env.step(actions)
        ref.act(actions[2:3])
        rew, ob, first = ref.observe()
        assert step.reward[2] == rew[0] and step.done[2] == bool(first[0])
        assert step.level[2] == seed and step.reward.dtype == np.float32 and step.level.dtype == np.int64
        assert np.array_equal(step.obs[2], ob["rgb"][0])
        if step.done[2]:                  # the reference auto-reset into `seed`; force it here
            ends += 1
            assert np.array_equal(env.set_levels([2], [seed])[0], ob["rgb"][0])
        others = [i for i in np.flatnonzero(step.done) if i != 2]
        if others:
            env.set_levels(others, rng.integers(0, 1000, len(others)))
    assert ends >= 5, "the action sequence should cross episode ends"
    ref.close()
    env.close()


def test_terminal_reward_and_level_survive_the_level_switch(procgen):
    """coinrun level 4 with mostly-right actions ends by reaching the coin (+10). The step that ends it
    reports reward 10, done, and level 4 (procgen's own prev_level_seed agrees); forcing the next
    level afterwards leaves that step's arrays untouched."""
    env = make_host_env("procgen-coinrun", 3, seed=0)
    env.reset([7, 4, 9])
    rng = np.random.default_rng(0)
    for _ in range(200):
        step = env.step(_policy("coinrun", rng, 3))
        if step.done[1]:
            break
    else:
        pytest.fail("level 4 did not end")
    assert step.reward[1] == 10.0 and step.level[1] == 4
    assert env._env.get_info()[1]["prev_level_seed"] == 4
    kept = [a.copy() for a in (step.obs, step.reward, step.done, step.level)]
    ended = np.flatnonzero(step.done)
    first = env.set_levels(ended, np.full(ended.size, 77))
    for before, after in zip(kept, (step.obs, step.reward, step.done, step.level)):
        assert np.array_equal(before, after)
    assert env.current_levels()[1] == 77
    assert np.array_equal(first[list(ended).index(1)], _reference(procgen, "coinrun", 77).observe()[1]["rgb"][0])
    env.close()


def _rollout(env, rng, steps):
    """Random actions; finished slots get levels from `rng` (a stand-in for PLR)."""
    out = []
    for _ in range(steps):
        step = env.step(rng.integers(0, env.num_actions, env.num_envs))
        ended = np.flatnonzero(step.done)
        first = env.set_levels(ended, rng.integers(0, 50, ended.size))
        out.append((step.obs.copy(), step.reward, step.done, step.level, first))
    return out


def _same(a, b):
    return all(np.array_equal(x, y) for ra, rb in zip(a, b) for x, y in zip(ra, rb))


def test_procgen_get_state_set_state_resumes_exactly(procgen):
    env = make_host_env("procgen-bigfish", 3, seed=0)
    env.reset([1, 2, 3])
    _rollout(env, np.random.default_rng(0), 40)
    snapshot = decode_state(encode_state(env.get_state()))  # data: stored without pickle
    first = _rollout(env, np.random.default_rng(1), 150)
    assert any(step[2].any() for step in first)
    env.set_state(snapshot)
    assert _same(first, _rollout(env, np.random.default_rng(1), 150))
    other = make_host_env("procgen-bigfish", 3, seed=99)       # a new process's env, resumed
    other.set_state(snapshot)
    assert _same(first, _rollout(other, np.random.default_rng(1), 150))
    with pytest.raises(ValueError, match="does not fit"):
        make_host_env("procgen-coinrun", 3).set_state(snapshot)
    env.close()
    other.close()


def test_procgen_contract_surface(procgen):
    env = make_host_env("procgen-coinrun", 2, seed=0, num_threads=1, cache_size=2)
    assert isinstance(env, HostEnv)
    assert (env.num_actions, env.obs_shape, env.obs_dtype, env.max_episode_steps) == (15, (64, 64, 3), np.uint8, 1000)
    assert make_host_env("procgen-bigfish", 1).max_episode_steps == 6000   # procgen's own timeout
    with pytest.raises(RuntimeError, match="reset"):
        env.step([0, 0])
    obs = env.reset([5, 6])
    assert obs.dtype == np.uint8 and obs.shape == (2, 64, 64, 3)
    assert np.array_equal(env.render(1), obs[1])
    step = env.step(np.array([1, 2], np.int32))
    assert isinstance(step, HostStep) and step.done.dtype == bool
    env.set_levels([0, 1], [7, 8])
    assert env.current_levels().tolist() == [7, 8]
    assert env.cache_info()["size"] == 2 and env.cache_info()["misses"] == 4
    for bad in ([0, 0], [2]):
        with pytest.raises(ValueError, match="env_ids"):
            env.set_levels(bad, [1] * len(bad))
    for bad in ([15, 0], [0.5, 1], [0]):
        with pytest.raises(ValueError, match="actions"):
            env.step(bad)
    with pytest.raises(ValueError, match="levels"):
        env.set_levels([0], [-1])
    env.close()


# ---------------------------------------------------------------- gymnasium


def _cartpole(level):
    return gymnasium.make("CartPole-v1").reset(seed=int(level))[0]


def test_gym_levels_are_reset_seeds_and_episodes_auto_reset():
    env = make_host_env("gym-CartPole-v1", 3, seed=0)
    assert isinstance(env, HostEnv)
    assert (env.num_actions, env.obs_shape, env.obs_dtype, env.max_episode_steps) == (2, (4,), np.float32, 500)
    obs = env.reset([10, 11, 12])
    for i, level in enumerate([10, 11, 12]):
        assert np.array_equal(obs[i], _cartpole(level))
    twin = gymnasium.make("CartPole-v1")            # replays slot 0 to check its terminal transition
    twin.reset(seed=10)
    for _ in range(200):
        step = env.step(np.zeros(3, np.int64))      # always push left: falls within ~10 steps
        o, r, term, _, _ = twin.step(0)
        if step.done[0]:
            break
    assert step.done[0] and term and step.reward[0] == r == 1.0 and step.level[0] == 10
    assert np.array_equal(step.obs[0], o)           # lazy reset: the terminal obs stays
    placeholder = env.current_levels()[0]
    assert placeholder != 10
    nxt = env.step(np.ones(3, np.int64))            # not replaced: the placeholder starts, action ignored
    assert np.array_equal(nxt.obs[0], _cartpole(placeholder))
    assert (nxt.reward[0], nxt.done[0], nxt.level[0]) == (0.0, False, placeholder)
    env.close()


def test_gym_set_levels_and_done_reward_survive():
    for lazy in (True, False):
        env = make_host_env("gym-CartPole-v1", 2, seed=3, lazy_reset=lazy)
        env.reset([1, 2])
        while not (step := env.step(np.zeros(2, np.int64))).done.any():
            pass
        ended = np.flatnonzero(step.done)
        if not lazy:
            for i in ended:
                assert np.array_equal(step.obs[i], _cartpole(env.current_levels()[i]))
        kept = (step.reward.copy(), step.done.copy(), step.level.copy())
        first = env.set_levels(ended, ended + 500)
        assert all(np.array_equal(a, b) for a, b in zip(kept, (step.reward, step.done, step.level)))
        assert np.all(step.reward[ended] == 1.0) and set(step.level[ended]) <= {1, 2}
        for k, i in enumerate(ended):
            assert np.array_equal(first[k], _cartpole(i + 500)) and env.current_levels()[i] == i + 500
        env.close()


def test_gym_get_state_set_state_resumes_exactly():
    env = make_host_env("gym-CartPole-v1", 4, seed=0)
    env.reset([1, 2, 3, 4])
    _rollout(env, np.random.default_rng(0), 30)
    snapshot = decode_state(encode_state(env.get_state()))  # data: stored without pickle
    first = _rollout(env, np.random.default_rng(1), 120)
    assert any(step[2].any() for step in first)
    env.set_state(snapshot)
    assert _same(first, _rollout(env, np.random.default_rng(1), 120))
    env.set_state(snapshot)                          # a snapshot can be restored twice
    assert _same(first, _rollout(env, np.random.default_rng(1), 120))
    other = make_host_env("gym-CartPole-v1", 4, seed=99)   # a new process's env, resumed by replaying actions
    other.set_state(snapshot)
    assert _same(first, _rollout(other, np.random.default_rng(1), 120))
    other.close()
    with pytest.raises(ValueError, match="does not fit"):
        make_host_env("gym-CartPole-v1", 3).set_state(snapshot)
    with pytest.raises(RuntimeError, match="rgb_array"):
        env.render(0)
    env.close()


def test_a_bad_procgen_mode_is_refused_naming_the_flag_the_user_wrote():
    from minimax.host.config import host_env_problem  # noqa: PLC0415

    for mode in ("exploration", "extreme"):
        problem = host_env_problem("procgen-bigfish", mode, 4)
        assert problem.startswith("--env procgen-bigfish: --distribution-mode '" + mode)
        assert "distribution_mode" not in problem  # the library's argument name, not what the command line takes


def test_a_long_host_run_says_its_cost_after_the_first_update():
    """Procgen at its default sizes takes minutes per update on a CPU: the run says what the rest will take,
    once, after its first update (unless --progress shows it), and says nothing for a run of minutes."""
    from minimax.host.loop import pace_note  # noqa: PLC0415

    note = pace_note(420.0, 1, 24_999, "updates")
    assert note.startswith("note: the first update took 420 s here; the 24999 updates left take about 2916.6 hours")
    assert pace_note(30.0, 1, 19, "updates") is None  # under 10 minutes left
    assert "about 20 minutes" in pace_note(60.0, 2, 40, "updates")
