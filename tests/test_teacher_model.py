"""The PAIRED teacher network (minimax/models/teacher.py) on the teacher's design observations."""

import jax
import jax.numpy as jnp
import numpy as np

from minimax.envs.maze.teacher import MazeTeacher, TeacherParams
from minimax.models import count_params
from minimax.models.teacher import MazeTeacherActorCritic

TEACHER, PARAMS = MazeTeacher(), TeacherParams()  # the report's 13x13 maze, 60 walls, 50 noise dims
MODEL = MazeTeacherActorCritic()


def design_obs(n_steps, key=jax.random.key(0)):
    """Observations `[T, 1]` of a design episode with random actions (the last: after the last step)."""
    obs, state = TEACHER.reset(key, PARAMS)

    def step(state, i):
        obs, state, _, _, _ = TEACHER.step(jax.random.fold_in(key, i), state, (7 * i) % 169, PARAMS)
        return state, obs

    _, trace = jax.jit(lambda s: jax.lax.scan(step, s, jnp.arange(n_steps)))(state)
    return jax.tree.map(lambda a, b: jnp.concatenate([a[None], b])[:, None], obs, trace)


def test_the_teacher_network_is_the_releases_default_teacher_cnn():
    obs = design_obs(PARAMS.num_steps)  # 63 observations: reset, then one per step
    reset = jnp.zeros(obs["time"].shape, bool).at[0].set(True)
    params = MODEL.init(jax.random.key(1), MODEL.initial_carry(1), obs, reset)
    assert count_params(params) == 22_502_038
    p = params["params"]
    assert p["conv"]["kernel"].shape == (3, 3, 3, 128) and p["time_embed"]["embedding"].shape == (62, 10)
    assert p["core"]["input_kernel"].shape == (13 * 13 * 128 + 10 + 50, 1024)
    carry, logits, value = jax.jit(MODEL.apply)(params, MODEL.initial_carry(1), obs, reset)
    assert logits.shape == (63, 1, 169) and value.shape == (63, 1)
    assert np.isfinite(np.asarray(logits)).all() and np.isfinite(np.asarray(value)).all()  # time 62 is clipped
    np.testing.assert_allclose(np.asarray(logits - logits[..., :1]), 0.0, atol=1e-6)  # uniform initial policy
    # A reset zeroes the carry: the second episode's outputs equal a fresh run's.
    both = jax.tree.map(lambda x: jnp.concatenate([x[:3], x[:3]]), obs)
    starts = jnp.zeros((6, 1), bool).at[0].set(True).at[3].set(True)
    _, _, v_both = MODEL.apply(params, MODEL.initial_carry(1), both, starts)
    _, _, v_one = MODEL.apply(params, MODEL.initial_carry(1), jax.tree.map(lambda x: x[:3], obs), starts[:3])
    np.testing.assert_allclose(np.asarray(v_both[3:]), np.asarray(v_one), rtol=1e-5, atol=1e-6)
