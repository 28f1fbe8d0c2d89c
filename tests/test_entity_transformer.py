"""The entity-transformer student (`models/entity_transformer.py`) against the Kinetix authors' module
(`kinetix/models/transformer_model.py: ActorCriticTransformer`, kinetix-env 3.0.2), and the invariances a
set model owes: the order of entities and the content of inactive ones change nothing.

The authors' module imports `distrax` for its output distributions, which does not import on jax >= 0.10
(tensorflow-probability's jax substrate); `their_network()` runs their network code unchanged with a
stand-in for the two distribution classes it builds (`Categorical(logits=...)` keeps its logits): the
outputs compared are their logits and values, which distrax does not touch."""

from __future__ import annotations

import functools
import sys
import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax.traverse_util import flatten_dict
from run_helpers import FULL_OPTIMISATION

pytest.importorskip("kinetix")

from minimax.envs.kinetix import KinetixParams  # noqa: E402
from minimax.envs.kinetix.env import KinetixSingle  # noqa: E402
from minimax.envs.kinetix.levels import held_out_levels, sample_level  # noqa: E402
from minimax.models import count_params  # noqa: E402
from minimax.models.entity_transformer import EntityTransformerActorCritic  # noqa: E402

AUTHORS_DEFAULT = dict(transformer_size=16, transformer_encoder_size=128, transformer_depth=2, num_heads=8,
                       actor_width=128, critic_width=128, actor_depth=5, critic_depth=5, activation="tanh",
                       aggregate_mode="dummy_and_mean", full_attention_mask=False, transformer_ffn=False,
                       multilayer_joint_thruster_mixing=False, joint_thruster_block_num_layers=2,
                       joint_thruster_block_hidden_dim_multiplication=4, recurrent=False)
"""The authors' `configs/model/model-base.yaml` + `model-transformer.yaml` as `make_network_from_config` passes
them (fc layers 5 x 128 tanh per head, feedforward)."""


def _distrax_stand_in() -> types.ModuleType:
    """What their modules take from distrax: the base class and two distributions, keeping their parameters."""
    module = types.ModuleType("distrax")

    class Distribution:
        pass

    class Categorical(Distribution):
        def __init__(self, logits=None, probs=None):
            self.logits, self.probs = logits, probs

    class MultivariateNormalDiag(Distribution):
        def __init__(self, loc=None, scale_diag=None):
            self.loc, self.scale_diag = loc, scale_diag

    module.Distribution, module.Categorical, module.MultivariateNormalDiag = (Distribution, Categorical,
                                                                              MultivariateNormalDiag)
    return module


def their_network(nvec):
    """The authors' `ActorCriticTransformer` at their default config for action dimensions `nvec`."""
    if "distrax" not in sys.modules:
        try:
            import distrax  # noqa: F401, PLC0415
        except Exception:  # noqa: BLE001 (absent, or failing to import on this jax)
            sys.modules["distrax"] = _distrax_stand_in()
    from kinetix.environment import ActionType  # noqa: PLC0415
    from kinetix.models.transformer_model import ActorCriticTransformer  # noqa: PLC0415

    return ActorCriticTransformer(action_dim=sum(nvec), action_mode=ActionType.MULTI_DISCRETE,
                                  hybrid_action_continuous_dim=sum(nvec),
                                  multi_discrete_number_of_dims_per_distribution=list(nvec), **AUTHORS_DEFAULT)


def their_outputs(net, params, obs):
    """`(flat logits [T, N, sum(nvec)], value [T, N])` of their module."""
    t, n = obs.polygon_mask.shape[:2]
    _, pi, value = net.apply(params, None, (obs, jnp.zeros((t, n), bool)))
    return jnp.concatenate([d.logits for d in pi.distributions], axis=-1), value


def our_outputs(model, params, obs):
    """Our `(flat logits, value)`: each dimension's first nvec[d] logits, in order."""
    t, n = obs.polygon_mask.shape[:2]
    _, policy, value = model.apply(params, model.initial_carry(n), obs, jnp.zeros((t, n), bool))
    flat = jnp.concatenate([policy.logits[..., d, :k] for d, k in enumerate(model.action_nvec)], axis=-1)
    return flat, value


def observations(size: str, steps: int = 12):
    """Entity observations `[2, N]` for size class `size`: every hand-designed level's first one (and random
    levels' to make N = 12), then each after `steps` random actions (contacts, moved shapes)."""
    params = KinetixParams(size=size, obs="entity")
    env = KinetixSingle()
    levels = [lv for _, lv in held_out_levels(size)][:12]
    levels += [sample_level(k, params) for k in jax.random.split(jax.random.key(7), 12 - len(levels))]
    states = [env.init_state(lv, params) for lv in levels]
    first = jax.tree.map(lambda *x: jnp.stack(x), *[s.obs for s in states])
    space = env.action_space(params)

    @jax.jit
    def play(key, state):
        def step(state, k):
            k_act, k_step = jax.random.split(k)
            state, *_ = env.step_env(k_step, state, space.sample(k_act), params)
            return state, None
        return jax.lax.scan(step, state, jax.random.split(key, steps))[0].obs

    later = jax.vmap(play)(jax.random.split(jax.random.key(1), len(states)),
                           jax.tree.map(lambda *x: jnp.stack(x), *states))
    return jax.tree.map(lambda a, b: jnp.stack([a, b]), first, later), params


def recorded_observations():
    """The recording's observations (size s, `[2, 12]`, and m) and the recording: no Kinetix step compiled."""
    from reference_outputs import load, tree  # noqa: PLC0415

    arrays, meta = load("kinetix_transformer")
    params = KinetixParams(size="s", obs="entity")
    from kinetix.environment.utils import create_empty_env  # noqa: PLC0415

    empty = create_empty_env(params.objects()[2])  # the observation's structure (the leaves are recorded)
    like = jax.eval_shape(lambda: KinetixSingle().init_state(empty, params).obs)
    return {size: tree(like, arrays[f"obs_{size}"]) for size in ("s", "m")}, arrays, meta


@pytest.fixture(scope="module")
def case_s():
    """Our model at the authors' default shape for size s, initialised with key 0, and the recorded inputs."""
    from minimax.envs.kinetix import action_nvec  # noqa: PLC0415

    obs, arrays, meta = recorded_observations()
    model = EntityTransformerActorCritic(action_nvec=action_nvec(KinetixParams(size="s")))
    n = obs["s"].polygon_mask.shape[1]
    params = model.init(jax.random.key(0), model.initial_carry(n), obs["s"], jnp.zeros((2, n), bool))
    return model, params, obs["s"], obs, arrays, meta


def test_the_default_shape_has_the_authors_786369_parameters(case_s):
    params = case_s[1]
    assert count_params(params) == 786_369


def _permute(obs, polygons, circles, joints):
    """`obs` with its polygons, circles and joints reordered (their masks, the attention masks' rows and columns
    and the shape indexes of joints and thrusters moved with them)."""
    n_poly = obs.polygons.shape[-2]
    shapes = np.concatenate([polygons, n_poly + np.asarray(circles)])
    new_index = np.argsort(shapes)  # old shape index -> new
    remap = lambda idx: jnp.asarray(new_index)[idx]  # noqa: E731
    return obs.replace(
        polygons=obs.polygons[..., polygons, :], polygon_mask=obs.polygon_mask[..., polygons],
        circles=obs.circles[..., circles, :], circle_mask=obs.circle_mask[..., circles],
        joints=obs.joints[..., joints, :], joint_mask=obs.joint_mask[..., joints],
        joint_indexes=remap(obs.joint_indexes[..., joints, :]), thruster_indexes=remap(obs.thruster_indexes),
        attention_mask=obs.attention_mask[..., shapes, :][..., :, shapes])


def test_reordering_the_entities_changes_no_output(case_s):
    """Shapes and joints in another order (with their masks and indexes): the same policy and value."""
    model, params, obs = case_s[:3]
    n_poly, n_circ, n_joint = obs.polygons.shape[-2], obs.circles.shape[-2], obs.joints.shape[-2]
    rng = np.random.default_rng(0)
    moved = _permute(obs, rng.permutation(n_poly), rng.permutation(n_circ), rng.permutation(n_joint))
    assert not np.array_equal(np.asarray(moved.polygons), np.asarray(obs.polygons))
    for ours, theirs in zip(our_outputs(model, params, moved), our_outputs(model, params, obs)):
        np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-6)


def test_an_inactive_entity_changes_nothing(case_s):
    """Whatever an inactive polygon, circle, joint or thruster holds, the outputs are the same."""
    model, params, obs = case_s[:3]
    noise = lambda x, m, k: jnp.where(m[..., None], x, jax.random.normal(k, x.shape) * 5)  # noqa: E731
    keys = jax.random.split(jax.random.key(3), 4)
    assert not obs.polygon_mask.all() and not obs.joint_mask.all()  # the case has inactive slots to fill
    filled = obs.replace(polygons=noise(obs.polygons, obs.polygon_mask, keys[0]),
                         circles=noise(obs.circles, obs.circle_mask, keys[1]),
                         joints=noise(obs.joints, obs.joint_mask, keys[2]),
                         thrusters=noise(obs.thrusters, obs.thruster_mask, keys[3]))
    for ours, before in zip(our_outputs(model, params, filled), our_outputs(model, params, obs)):
        np.testing.assert_allclose(ours, before, rtol=1e-5, atol=1e-7)


def test_parameters_and_outputs_are_the_authors_module_as_recorded(case_s):
    """The same key initialises the authors' parameters (recorded per leaf: sum, sum of squares, first values)
    under the same names, and on the recorded observations (sizes s and m) our outputs equal their module's."""
    model, params, _, obs_by_size, arrays, meta = case_s
    assert_as_recorded(model, params, obs_by_size, arrays, meta)


def assert_as_recorded(model, params, obs_by_size, arrays, meta):
    """`params` (key 0) have the recorded names and statistics, and `model`'s outputs on the recorded observations
    equal the recorded ones."""
    assert meta["source"].startswith("kinetix-env==")
    flat = {"/".join(k): np.asarray(v) for k, v in flatten_dict(params["params"]).items()}
    assert sorted(flat) == sorted(str(n) for n in arrays["param_names"])
    for i, name in enumerate(arrays["param_names"]):
        leaf = flat[str(name)].ravel()
        np.testing.assert_allclose([leaf.sum(), (leaf ** 2).sum()], arrays["param_stats"][i], rtol=1e-5, atol=1e-5,
                                   err_msg=str(name))
        np.testing.assert_allclose(leaf[:4], arrays["param_heads"][i][:leaf[:4].size], rtol=1e-6, atol=1e-7)
    for size, obs in obs_by_size.items():  # one parameter tree serves every size class (same feature widths)
        logits, value = our_outputs(model, params, obs)
        np.testing.assert_allclose(logits, arrays[f"logits_{size}"], rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(value, arrays[f"value_{size}"], rtol=1e-4, atol=1e-6)


def record(obs_by_size: dict) -> dict:
    """The arrays of the recording: their parameters' statistics per leaf (key 0) and their outputs."""
    from minimax.envs.kinetix import action_nvec  # noqa: PLC0415

    net = their_network(action_nvec(KinetixParams(size="s")))
    first = obs_by_size["s"]
    params = net.init(jax.random.key(0), None, (first, jnp.zeros(first.polygon_mask.shape[:2], bool)))
    flat = {"/".join(k): np.asarray(v).ravel() for k, v in flatten_dict(params["params"]).items()}
    out = {"param_names": np.array(sorted(flat)),
           "param_stats": np.array([[flat[n].sum(), (flat[n].astype(np.float64) ** 2).sum()] for n in sorted(flat)]),
           "param_heads": np.array([np.pad(flat[n][:4], (0, 4 - flat[n][:4].size)) for n in sorted(flat)])}
    for size, obs in obs_by_size.items():
        sized = their_network(action_nvec(KinetixParams(size=size)))
        logits, value = their_outputs(sized, params, obs)
        out |= {f"obs_{size}": obs, f"logits_{size}": np.asarray(logits), f"value_{size}": np.asarray(value)}
    return out


@pytest.mark.reference  # the authors' module beside ours, and a Kinetix step compiled for fresh observations
def test_outputs_equal_the_authors_module_run_live(case_s):
    """Live, on this CPU: their module and ours initialise the same parameters and give the same outputs, on fresh
    observations and on the recorded ones (so the recording is still what their module gives)."""
    model, params, _, recorded, arrays, meta = case_s
    fresh = observations("s")[0]
    theirs = their_network(model.action_nvec)
    their_params = theirs.init(jax.random.key(0), None, (fresh, jnp.zeros(fresh.polygon_mask.shape[:2], bool)))
    their_params = {"params": their_params["params"]}  # without what their heads `sow` (dormancy statistics)
    assert jax.tree.structure(their_params) == jax.tree.structure(params)
    for a, b in zip(jax.tree.leaves(their_params), jax.tree.leaves(params)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    for obs in (fresh, *recorded.values()):
        for ours, reference in zip(our_outputs(model, params, obs), their_outputs(theirs, params, obs)):
            np.testing.assert_allclose(ours, reference, rtol=1e-5, atol=1e-7)
    assert_as_recorded(model, params, recorded, record(recorded), meta)


@pytest.mark.e2e  # 60 PPO updates of 16 envs x 64 steps with a small transformer: about 90 s here
def test_the_transformer_learns_two_size_s_levels():
    """DR on two of the hand-designed size-s levels (unicycle left, thrust aim) with a small entity transformer:
    the mean return of 64 episodes on them more than doubles its random start, and so does the solved rate;
    the training episodes' returns rise too (this test can fail)."""
    from minimax.config import TrainConfig  # noqa: PLC0415
    from minimax.core.parallel import NO_SHARD  # noqa: PLC0415
    from minimax.curricula.training_set import LevelSet  # noqa: PLC0415
    from minimax.runners.eval import evaluate_levels  # noqa: PLC0415
    from minimax.training.budget import make_chunk  # noqa: PLC0415
    from minimax.training.builder import RunParts, env_params, make_env, make_model, runner_from  # noqa: PLC0415

    by_name = dict(held_out_levels("s"))
    levels = jax.tree.map(lambda *x: jnp.stack(x), *[by_name[n] for n in ("s/h7_unicycle_left", "s/h4_thrust_aim")])
    cfg = TrainConfig.from_options(
        env="kinetix", kinetix_obs="entity", student="transformer", recurrent_cell="none", transformer_width=32,
        transformer_qkv=16, transformer_head_width=32, transformer_head_layers=2, num_envs=16, num_steps=64,
        n_minibatches=4, n_epochs=4, lr=3e-4, gamma=0.995, gae_lambda=0.9, entropy_coef=0.01, num_updates=60,
        eval_every=0, method="dr", max_episode_steps=64)
    runner = runner_from(RunParts(cfg, LevelSet(levels), NO_SHARD))  # DR draws from these two levels
    model, n = make_model(cfg), 64
    played = jax.tree.map(lambda x: jnp.repeat(x, n // 2, axis=0), levels)

    @functools.partial(jax.jit, compiler_options=FULL_OPTIMISATION)  # it runs for seconds: see run_helpers
    def score(params):
        out = evaluate_levels(jax.random.key(7), model.apply, params, model.initial_carry(n), make_env(cfg),
                              env_params(cfg), played)
        return out["return"].mean(), out["solved"].mean()

    state = jax.jit(runner.init)(jax.random.key(0))
    return_before, solved_before = score(state.train_state.params)
    state, metrics = jax.jit(make_chunk(runner, 60), compiler_options=FULL_OPTIMISATION)(state)
    return_after, solved_after = score(state.train_state.params)
    assert return_after > 2 * return_before and return_after > return_before + 0.25, (return_before, return_after)
    assert solved_after > 2 * solved_before and solved_after > solved_before + 0.1, (solved_before, solved_after)
    returns = np.asarray(metrics["episode_return_sum"]) / np.maximum(np.asarray(metrics["episodes"]), 1)
    assert returns[-10:].mean() > returns[:10].mean() + 0.15
