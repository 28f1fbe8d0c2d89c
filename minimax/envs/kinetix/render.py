"""Pictures of Kinetix levels and episodes, drawn by the authors' own pixel renderer.

`kinetix.render.renderer_pixels.make_render_pixels` rasterises a scene with `jaxgl` (shapes coloured
by role: green the agent's goal shape, blue the goal, red the danger; grey the fixed ones; joints
and thrusters on top) at its screen size over `downscale` (500 x 500 / 4 here: 125 x 125 pixels,
`DOWNSCALE`). An episode is recorded as the scene's moving parts per step (`trace_state`: shape,
joint and thruster positions and rotations), put back into its level to draw each frame.
"""

from __future__ import annotations

import functools

import jax
import numpy as np

from minimax.envs.kinetix.env import KinetixParams, fit_level, size_of

DOWNSCALE = 4


@functools.lru_cache(maxsize=None)
def _renderer(size: str):
    """`jit(vmap(render_pixels))` for a size class (built eagerly, like the env objects)."""
    from kinetix.render.renderer_pixels import make_render_pixels  # noqa: PLC0415 (imported with the engine)

    _, env_params, static = KinetixParams(size=size).objects()
    with jax.ensure_compile_time_eval():
        render = make_render_pixels(env_params, static.replace(downscale=DOWNSCALE))
    return jax.jit(jax.vmap(render))


def _to_uint8(pixels) -> np.ndarray:
    """The renderer's float [0, 255] images, x-major with y up, as uint8 rows top-down."""
    img = np.clip(np.asarray(pixels), 0, 255).astype(np.uint8)
    return np.ascontiguousarray(np.flip(np.swapaxes(img, -3, -2), axis=-3))


def render_levels(levels) -> np.ndarray:
    """uint8[B, h, w, 3]: a batch of levels at their start (the buffer pictures)."""
    return _to_uint8(_renderer(size_of(levels))(levels))


def trace_state(state) -> dict:
    """What a rendered episode needs of each step's state: where the shapes, joints and thrusters are."""
    scene = state.scene
    return {"polygon_position": scene.polygon.position, "polygon_rotation": scene.polygon.rotation,
            "circle_position": scene.circle.position, "circle_rotation": scene.circle.rotation,
            "joint_position": scene.joint.global_position, "thruster_position": scene.thruster.global_position,
            "thruster_rotation": scene.thruster.rotation}


def render_episode(level, trace, params, max_frames: int = 100) -> np.ndarray:
    """uint8[T, h, w, 3]: an episode's frames from `trace_state` records cut to its length (at most
    `max_frames`, evenly spaced, the last one kept)."""
    level = fit_level(level, params)  # a smaller class's level played in the run's slots (held-out suites)
    n = len(np.asarray(trace["polygon_position"]))
    steps = np.unique(np.linspace(0, n - 1, min(n, max_frames)).round().astype(int))
    pick = {k: np.asarray(v)[steps] for k, v in trace.items()}
    scenes = jax.tree.map(lambda x: np.broadcast_to(np.asarray(x), (len(steps), *np.shape(x))), level)
    scenes = scenes.replace(
        polygon=scenes.polygon.replace(position=pick["polygon_position"], rotation=pick["polygon_rotation"]),
        circle=scenes.circle.replace(position=pick["circle_position"], rotation=pick["circle_rotation"]),
        joint=scenes.joint.replace(global_position=pick["joint_position"]),
        thruster=scenes.thruster.replace(global_position=pick["thruster_position"],
                                         rotation=pick["thruster_rotation"]))
    return _to_uint8(_renderer(size_of(level))(scenes))
