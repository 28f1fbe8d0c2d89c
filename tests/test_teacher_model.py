"""The PAIRED teacher network (minimax/models/teacher.py) on the teacher's design observations."""

import math

import jax
import jax.numpy as jnp
import numpy as np

from minimax.envs.maze.teacher import MazeTeacher, TeacherParams
from minimax.models.teacher import MazeTeacherActorCritic

TEACHER = MazeTeacher()


def design_obs(params, key=jax.random.key(0)):
    """Observations `[T + 1, 1]` of a design episode with fixed actions (the last: after the last step)."""
    obs, state = TEACHER.reset(key, params)

    def step(state, i):
        obs, state, _, _, _ = TEACHER.step(jax.random.fold_in(key, i), state, (7 * i) % 49, params)
        return state, obs

    _, trace = jax.lax.scan(step, state, jnp.arange(params.num_steps))
    return jax.tree.map(lambda a, b: jnp.concatenate([a[None], b])[:, None], obs, trace)


def test_the_report_sized_teacher_is_the_releases_default_teacher_cnn():
    """Shapes only (no initialisation is computed): 13x13 maze, 60 walls, 50 noise dimensions."""
    params = TeacherParams()
    obs = jax.eval_shape(lambda: jax.tree.map(lambda x: x[:1, :1], design_obs(params)))
    model = MazeTeacherActorCritic()
    shapes = jax.eval_shape(model.init, jax.random.key(0), model.initial_carry(1), obs, jnp.ones((1, 1), bool))
    p = shapes["params"]
    assert sum(math.prod(x.shape) for x in jax.tree.leaves(shapes)) == 22_502_038
    assert p["conv"]["kernel"].shape == (3, 3, 3, 128) and p["time_embed"]["embedding"].shape == (62, 10)
    assert p["core"]["input_kernel"].shape == (13 * 13 * 128 + 10 + 50, 1024)
    assert p["policy_out"]["kernel"].shape == (32, 169)


def test_a_small_teacher_acts_uniformly_at_first_and_resets_its_carry():
    params = TeacherParams(height=7, width=7, n_walls=12, noise_dim=5)
    model = MazeTeacherActorCritic(n_cells=49, num_steps=params.num_steps, conv_filters=8, recurrent_size=16)
    obs = jax.jit(design_obs, static_argnums=0)(params)  # 15 observations: reset, then one per step
    reset = jnp.zeros(obs["time"].shape, bool).at[0].set(True)
    weights = model.init(jax.random.key(1), model.initial_carry(1), obs, reset)
    apply = jax.jit(model.apply)
    _, policy, value = apply(weights, model.initial_carry(1), obs, reset)
    logits = policy.logits
    assert logits.shape == (15, 1, 49) and value.shape == (15, 1)
    assert np.isfinite(np.asarray(logits)).all() and np.isfinite(np.asarray(value)).all()  # time 14 is clipped
    np.testing.assert_allclose(np.asarray(logits - logits[..., :1]), 0.0, atol=1e-6)  # uniform initial policy
    # A reset zeroes the carry: the second episode's outputs equal a fresh run's.
    both = jax.tree.map(lambda x: jnp.concatenate([x[:3], x[:3]]), obs)
    starts = jnp.zeros((6, 1), bool).at[0].set(True).at[3].set(True)
    _, _, v_both = apply(weights, model.initial_carry(1), both, starts)
    _, _, v_one = apply(weights, model.initial_carry(1), jax.tree.map(lambda x: x[:3], obs), starts[:3])
    np.testing.assert_allclose(np.asarray(v_both[3:]), np.asarray(v_one), rtol=1e-5, atol=1e-6)
