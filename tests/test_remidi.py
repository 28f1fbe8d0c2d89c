"""ReMiDi (issue 57, `--method remidi`, `curricula/consistency.py`, `runners/remidi.py`): the trajectory
consistency masks against the authors' `ParallelStepWrapper` run step by step (from their repository's
snapshot where one is on this machine; always against a transcription of its rule), the masked PPO
update, the stage clock, and runs that train vmapped and resume."""

import functools
import importlib.util
import os
import subprocess
import sys
import tempfile
import types
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from minimax.agents.ppo import PPOConfig, masked_moments, ppo_loss
from minimax.config import PRESETS, TrainConfig
from minimax.curricula.consistency import train_mask
from minimax.runners.plr_parts import new_levels, play
from minimax.runners.rollout import env_slice
from minimax.training.builder import build_runner
from run_helpers import trains_resumes_and_makes_train

pytestmark = pytest.mark.contract  # tests/conftest.py's tiers: training programs at their tiny size

SMALL = dict(method="remidi", maze_height=5, maze_width=5, n_walls=3, max_episode_steps=12, n_actions=3,
             recurrent_size=16, num_envs=4, num_steps=24, n_epochs=2, lr=3e-3, buffer_size=8, min_fill_ratio=0.25,
             replay_prob=0.5, num_updates=4, log_every=2, eval_every=0, checkpoint_every=2, progress=False,
             remidi_stages=3, remidi_stage_cycles=2)
REFERENCE = Path(os.environ.get("REMIDI_REPO", "/work/.mirror/Michael-Beukman+ReMiDi/repo"))


CASE = {**SMALL, "maze_height": 9, "maze_width": 9, "n_walls": 12}


@pytest.fixture(scope="module")
def case():
    return make_case()


def make_case():
    """Four played 9x9 levels and, as the earlier stages' levels, copies of the first three (the third with
    its goal moved, seen only once it comes into view) and two unrelated levels; a rollout of 24 steps."""
    runner = build_runner(TrainConfig.from_options(**CASE))
    state = runner.init(jax.random.key(0))
    _, levels = new_levels(runner, jax.random.key(1), state.training_set, runner.n)
    moved = levels.replace(goal_pos=levels.goal_pos.at[2].set(9 - 1 - levels.goal_pos[2]))
    _, others = new_levels(runner, jax.random.key(7), state.training_set, 2)
    earlier = jax.tree.map(lambda a, b: jnp.concatenate([a, b]), moved, others)
    played = jax.jit(functools.partial(play, runner))(jax.random.key(2), state.train_state.params, state.buffer,
                                                      levels)
    return runner, levels, played.rollout, earlier


def _transcribed(env, params, rollout, earlier, considered):
    """Each env's masks as an online tracker beside the env computes them, the authors' rule transcribed:
    recomputed from the first observation at an episode's start, then ANDed with "some considered earlier
    level shows this observation" after every step."""
    t_len, n = rollout.actions.shape
    start = jax.vmap(env.init_state, in_axes=(0, None))(earlier, params)
    start_obs = jax.vmap(env.get_obs, in_axes=(0, None))(start, params)
    step = jax.jit(jax.vmap(env.step_env, in_axes=(None, 0, None, None)))
    observe = jax.jit(jax.vmap(env.get_obs, in_axes=(0, None)))

    def seen(par_obs, obs):
        same = jax.tree.map(lambda p, o: (p == o).reshape(p.shape[0], -1).all(-1), par_obs, obs)
        return bool((jnp.stack(jax.tree.leaves(same)).all(0) & considered).any())

    masks = np.zeros((t_len, n), bool)
    for i in range(n):
        for t in range(t_len):
            obs = jax.tree.map(lambda x: x[t, i], rollout.obs)
            if bool(rollout.reset[t, i]):
                par, consistent = start, seen(start_obs, obs)
            masks[t, i] = not consistent
            par = step(jax.random.key(t), par, rollout.actions[t, i], params)[0]
            if t + 1 < t_len:
                consistent = consistent and seen(observe(par, params), jax.tree.map(lambda x: x[t + 1, i], rollout.obs))
    return masks


def _their_wrapper():
    """The authors' `ParallelStepWrapper` and `ParallelStepLevel` from their repository's snapshot (jaxued's
    base class stubbed; their `jax.tree_map`, gone from today's jax, is shimmed by the test), or None where
    no snapshot is on this machine."""
    source = REFERENCE / "lib" / "wrappers" / "parallel_step.py"
    if not source.is_file():  # a bare snapshot (`fetch`): the file from its git objects
        try:
            text = subprocess.run(["git", "-C", str(REFERENCE), "show", "HEAD:lib/wrappers/parallel_step.py"],
                                  capture_output=True, text=True, check=True, timeout=60).stdout
        except (OSError, subprocess.SubprocessError):
            return None
        source = Path(tempfile.mkdtemp()) / "parallel_step.py"
        source.write_text(text)
    jaxued = types.ModuleType("jaxued")
    envs = types.ModuleType("jaxued.environments")
    under = types.ModuleType("jaxued.environments.underspecified_env")
    envs.UnderspecifiedEnv = object
    for name in ("EnvState", "Observation", "Level", "EnvParams"):
        setattr(under, name, object)
    modules = {"jaxued": jaxued, "jaxued.environments": envs, "jaxued.environments.underspecified_env": under}
    saved = {k: sys.modules.get(k) for k in modules}
    sys.modules.update(modules)
    try:
        spec = importlib.util.spec_from_file_location("remidi_parallel_step", source)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v
    return module


class _JaxuedEnv:
    """Our env behind the interface their wrapper calls: jaxued's `step` and `reset_to_level` of a bare env
    (no auto-reset): `(obs, state, reward, done, info)` and `(obs, state)`."""

    def __init__(self, env):
        self.env = env

    def step(self, key, state, action, params):
        state, reward, done, info = self.env.step_env(key, state, action, params)
        return self.env.get_obs(state, params), state, reward, done, dict(info)

    def reset_to_level(self, key, level, params):
        state = self.env.init_state(level, params)
        return self.env.get_obs(state, params), state


def _their_masks(module, env, params, levels, rollout, earlier, considered):
    """Their wrapper run beside each env: the played level stepped with the rollout's actions (AMaze is
    deterministic, so it shows the rollout's observations), reset to its level where an episode starts
    (their `AutoReplayWrapper`), every earlier level stepped in parallel; the masks are its
    `info['should_train_on_mask']`."""
    wrapper = module.ParallelStepWrapper(_JaxuedEnv(env))
    start = jax.vmap(env.init_state, in_axes=(0, None))(earlier, params)
    start_obs = jax.vmap(env.get_obs, in_axes=(0, None))(start, params)
    reset = jax.jit(wrapper.reset_env_to_level)
    step = jax.jit(lambda k, s, a: wrapper.step_env(k, s, a, params)[1:5:3])
    t_len, n = rollout.actions.shape
    masks = np.zeros((t_len, n), bool)
    for i in range(n):
        level = module.ParallelStepLevel(level=jax.tree.map(lambda x: x[i], levels), par_env_states=start,
                                         par_env_obs=start_obs, mask_of_levels_to_consider=considered)
        for t in range(t_len):
            if bool(rollout.reset[t, i]):
                _, state = reset(jax.random.key(0), level, params)
            state, info = step(jax.random.key(t), state, rollout.actions[t, i])
            masks[t, i] = bool(info["should_train_on_mask"])
    return masks


CONSIDERED = jnp.asarray([True, True, True, False, True, True])
SKIPPING = jnp.asarray([False, False, False, True, False, True])


def test_the_masks_follow_the_authors_rule(case):
    runner, levels, rollout, earlier = case
    env, params = runner.env, runner.env_params
    masks = np.asarray(jax.jit(lambda r, e, c: train_mask(env, params, r.obs, r.actions, r.reset, e, c))(
        rollout, earlier, CONSIDERED))
    # envs 0 and 1 replay an earlier level step for step; env 3's copy is not considered: it left from the start
    assert not masks[:, :2].any() and masks[:, 3].all()
    np.testing.assert_array_equal(masks, _transcribed(env, params, rollout, earlier, CONSIDERED))
    assert np.asarray(train_mask(env, params, rollout.obs, rollout.actions, rollout.reset, earlier,
                                 jnp.zeros(6, bool), group=3)).all()  # the first stage trains on every step
    # Stepped a stage's buffer at a time, skipping the stages with nothing considered: the same masks.
    grouped = jax.jit(lambda r, e, c, g: train_mask(env, params, r.obs, r.actions, r.reset, e, c, group=g),
                      static_argnames="g")
    np.testing.assert_array_equal(grouped(rollout, earlier, CONSIDERED, 2), masks)
    np.testing.assert_array_equal(grouped(rollout, earlier, SKIPPING, 3),
                                  _transcribed(env, params, rollout, earlier, SKIPPING))


def recorded_case():
    """The recording of the authors' wrapper (tests/data/reference/remidi_masks.*, `python
    tests/record_references.py remidi`): the played levels, the earlier stages' levels, the rollout's
    observations, actions and episode starts, and the masks their wrapper gave for `CONSIDERED` and `SKIPPING`.
    AMaze's observations are integers, so our masks on the recorded inputs are exact on every CPU."""
    from reference_outputs import load, tree  # noqa: PLC0415

    from minimax.envs.maze import make_dr_generator  # noqa: PLC0415
    from minimax.training.builder import make  # noqa: PLC0415

    env, params = make("maze", **{k: v for k, v in CASE.items() if k in ("maze_height", "maze_width", "n_walls",
                                                                         "max_episode_steps", "n_actions")})
    like = make_dr_generator(9, 9, 12)(jax.random.key(0))
    arrays, meta = load("remidi_masks")
    obs_like = env.get_obs(env.init_state(like, params), params)
    return (env, params, tree(like, arrays["levels"]), tree(like, arrays["earlier"]), tree(obs_like, arrays["obs"]),
            arrays, meta)


def test_the_masks_are_the_authors_wrappers_as_recorded():
    """Our masks on the recorded rollout equal the masks the authors' `ParallelStepWrapper`, run beside each
    env, gave on it (recorded from their repository at the commit in the recording's JSON)."""
    env, params, _, earlier, obs, arrays, meta = recorded_case()
    assert meta["source"].startswith("Michael-Beukman/ReMiDi@")
    for name, considered in (("considered", CONSIDERED), ("skipping", SKIPPING)):
        masks = train_mask(env, params, obs, jnp.asarray(arrays["actions"]), jnp.asarray(arrays["reset"]), earlier,
                           considered)
        np.testing.assert_array_equal(np.asarray(masks), arrays[f"masks_{name}"], err_msg=name)
    assert arrays["masks_considered"][:, 3].all() and not arrays["masks_considered"][:, :2].any()


@pytest.mark.reference  # the authors' wrapper run live beside the env
def test_the_masks_match_the_authors_wrapper_run_beside_the_env(case, monkeypatch):
    """Live: on this run's rollout, and on the recorded one (so the recording is still what their code gives)."""
    module = _their_wrapper()
    if module is None:
        pytest.skip(f"no snapshot of Michael-Beukman/ReMiDi at {REFERENCE} (set REMIDI_REPO)")
    monkeypatch.setattr(jax, "tree_map", jax.tree.map, raising=False)  # their code's name for jax.tree.map
    runner, levels, rollout, earlier = case
    masks = np.asarray(train_mask(runner.env, runner.env_params, rollout.obs, rollout.actions, rollout.reset,
                                  earlier, CONSIDERED))
    theirs = _their_masks(module, runner.env, runner.env_params, levels, rollout, earlier, CONSIDERED)
    np.testing.assert_array_equal(masks, theirs)
    env, params, rec_levels, rec_earlier, rec_obs, arrays, _ = recorded_case()
    recorded_rollout = rollout.replace(obs=rec_obs, actions=jnp.asarray(arrays["actions"]),
                                       reset=jnp.asarray(arrays["reset"]))
    for name, considered in (("considered", CONSIDERED), ("skipping", SKIPPING)):
        again = _their_masks(module, env, params, rec_levels, recorded_rollout, rec_earlier, considered)
        np.testing.assert_array_equal(again, arrays[f"masks_{name}"], err_msg=name)


@pytest.mark.e2e  # over 20 s here (the default run leaves it out; --slow runs it)
def test_the_masked_update_averages_the_masked_steps_only():
    rng = np.random.default_rng(0)
    adv = jnp.asarray(rng.normal(size=(5, 3)), jnp.float32)
    mask = jnp.asarray(rng.random((5, 3)) < 0.5)
    mean, std, average = masked_moments(adv, mask)
    kept = np.asarray(adv)[np.asarray(mask)]
    np.testing.assert_allclose([mean, std], [kept.mean(), kept.std()], rtol=1e-5)
    np.testing.assert_allclose(average(adv), kept.mean(), rtol=1e-5)
    runner = build_runner(TrainConfig.from_options(**SMALL))
    state = runner.init(jax.random.key(0))
    _, levels = new_levels(runner, jax.random.key(1), state.training_set, runner.n)
    batch = play(runner, jax.random.key(2), state.train_state.params, state.buffer, levels).batch
    cfg = PPOConfig(entropy_coef=0.0)

    def same_losses(masked, plain):
        """The policy loss at fresh parameters is a near-zero mean of unit-sized normalised advantages, so it
        gets an absolute term on that unit scale; the value loss is compared relatively."""
        (_, a), (_, b) = (ppo_loss(state.train_state.params, runner.model.apply, x, cfg) for x in (masked, plain))
        np.testing.assert_allclose(a["policy_loss"], b["policy_loss"], rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(a["value_loss"], b["value_loss"], rtol=1e-4, atol=1e-7)

    same_losses(batch.replace(mask=jnp.ones(batch.reset.shape, bool)), batch)
    half = jnp.zeros(batch.reset.shape, bool).at[:, :2].set(True)  # the first two envs' steps only
    same_losses(batch.replace(mask=half), env_slice(batch, 0, 2))


def test_stages_last_their_cycles_and_start_empty():
    runner = build_runner(TrainConfig.from_options(**SMALL))
    state = runner.init(jax.random.key(0))
    full = state.buffer.replace(filled=jnp.ones_like(state.buffer.filled))
    cycles = []
    for _ in range(8):
        stage, clock, earlier, buffer = runner.next_stage(state, full)
        cycles.append((int(stage), int(clock), int(buffer.filled.sum())))
        state = state.replace(stage=stage, stage_cycles=clock, earlier=earlier, buffer=buffer)
    # 2 cycles a stage: the clock passes 2 on the third, which files the buffer and starts the next, empty
    assert cycles[:4] == [(0, 1, 8), (0, 2, 8), (1, 0, 0), (1, 1, 8)]
    assert [c[0] for c in cycles] == [0, 0, 1, 1, 1, 2, 2, 2]  # the last stage stays
    assert np.asarray(state.earlier.filled[:2]).all()
    levels, considered = runner.considered(state)
    assert considered.shape == (3 * 8,) and np.asarray(considered).tolist() == [True] * 16 + [False] * 8


def test_an_environment_with_random_steps_is_refused_in_one_line():
    from minimax.core.options import ConfigError  # noqa: PLC0415
    from minimax.envs.registry import get_env  # noqa: PLC0415

    try:
        get_env("craftax")
    except ValueError as err:  # craftax is optional
        pytest.skip(str(err))
    with pytest.raises(ConfigError, match="--method remidi replays each trajectory's actions .* --env craftax's "
                                          "steps draw random numbers"):
        TrainConfig.from_options(method="remidi", env="craftax", buffer_size=8, num_envs=4)


def test_the_remidi_preset_is_robust_plr_by_true_regret_in_four_stages():
    remidi, plr = PRESETS["remidi"].options(), PRESETS["plr"].options()
    assert (remidi["method"], remidi["score_function"], remidi["remidi_stages"], remidi["remidi_stage_cycles"]) == \
        ("remidi", "perfect_regret", 4, 1000)
    assert {k for k in plr if k in remidi and remidi[k] != plr[k]} == {"preset", "method", "score_function"}


@pytest.mark.e2e  # two programs of the loop: about a minute of compiling on 2 cores
def test_two_vmapped_seeds_train_resume_exactly_and_make_train_runs_them(tmp_path):
    cfg = TrainConfig.from_options(**SMALL, seeds="0,1", out_dir=str(tmp_path), run_name="remidi")
    rows, state = trains_resumes_and_makes_train(cfg)
    assert max(r["remidi/stage"] for r in rows) > 0
    assert state.earlier.filled.shape == (2, 3, 8)
