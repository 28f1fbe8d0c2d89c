"""Tests for minimax.envs.maze.render: tile colours, agent orientation, the view highlight,
jit/vmap agreement and the PNG/GIF writers. One small level shape and few tile sizes keep
the number of compilations low."""

from functools import partial
from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from PIL import Image

from minimax.envs.maze.level import Level
from minimax.envs.maze.render import (
    DIR_TO_VEC,
    GOAL_COLOR,
    WALL_COLOR,
    render_level,
    render_state,
    save_gif,
    save_png,
    tile_frames,
)

TS = 8  # tile size for most tests

# 4 rows x 6 columns (non-square, so a transposed image would be caught).
LEVEL_TEXT = """\
agent_dir: 0
..#...
.A#...
..#.G.
......
"""


@pytest.fixture(scope="module")
def level():
    return Level.from_text(LEVEL_TEXT)


def tile(frame, x, y, ts=TS):
    """The pixels of level cell (x, y); the outer ring shifts cells by one."""
    frame = np.asarray(frame)
    return frame[(y + 1) * ts:(y + 2) * ts, (x + 1) * ts:(x + 2) * ts]


def centre(frame, x, y, ts=TS):
    return tuple(int(v) for v in tile(frame, x, y, ts)[ts // 2, ts // 2])


def is_red(pixels):
    pixels = np.asarray(pixels, dtype=int)
    return (pixels[..., 0] > 100) & (pixels[..., 0] > 2 * pixels[..., 1] + 40) & (pixels[..., 1] == pixels[..., 2])


def test_shape_and_dtype(level):
    frame = render_level(level, tile_size=TS)
    assert frame.shape == ((4 + 2) * TS, (6 + 2) * TS, 3)
    assert frame.dtype == jnp.uint8


def test_tile_colours(level):
    frame = render_level(level, tile_size=TS)
    assert centre(frame, 2, 0) == WALL_COLOR
    assert centre(frame, 4, 2) == GOAL_COLOR
    assert centre(frame, 0, 0) == (0, 0, 0)  # floor
    floor = tile(frame, 0, 0)
    assert floor[0, TS // 2].tolist() != [0, 0, 0], "floor tiles have a grid line on top"
    assert is_red(tile(frame, 1, 1)).any()
    assert not is_red(np.delete(np.asarray(frame).reshape(6, TS, 8, TS, 3), 2, axis=2)).any(), \
        "red appears only in the agent's column"


def test_outer_ring_is_wall(level):
    frame = np.asarray(render_level(level, tile_size=TS))
    wall = np.array(WALL_COLOR, np.uint8)
    assert (frame[:TS] == wall).all() and (frame[-TS:] == wall).all()
    assert (frame[:, :TS] == wall).all() and (frame[:, -TS:] == wall).all()


@pytest.mark.parametrize("agent_dir", range(4))
def test_agent_points_along_dir(level, agent_dir):
    ts = 16
    frame = render_level(level.replace(agent_dir=jnp.int32(agent_dir)), tile_size=ts)
    t = tile(frame, 1, 1, ts)
    dx, dy = (int(v) for v in DIR_TO_VEC[agent_dir])

    def across(offset):
        """Pixels on the line perpendicular to the direction, `offset` tiles from the centre."""
        i = int(np.floor(ts / 2 + offset * ts * (dx + dy)))
        return t[:, i] if dx else t[i, :]

    def on_axis(offset):
        """The (two) pixels nearest the axis through the tip, `offset` tiles from the centre."""
        return across(offset)[ts // 2 - 1: ts // 2 + 1]

    assert is_red(on_axis(0.3)).any(), "pixel near the tip is red"
    assert not is_red(on_axis(-0.45)).any(), "opposite edge centre is not red"
    back, front = is_red(across(-0.25)).sum(), is_red(across(0.25)).sum()
    assert back > front > 0, "the triangle narrows towards the tip"


def test_agent_on_goal_keeps_goal_colour(level):
    on_goal = level.replace(agent_pos=level.goal_pos)
    t = tile(render_level(on_goal, tile_size=TS), 4, 2)
    assert is_red(t).any()
    assert (t == np.array(GOAL_COLOR, np.uint8)).all(-1).any()


def _batch():
    levels = [
        Level.from_text(LEVEL_TEXT),
        Level.from_text(LEVEL_TEXT.replace("A", "x").replace(".", "A", 1).replace("x", ".")),
        Level.create(np.eye(4, 6, dtype=bool), (5, 3), (0, 3), 3),
    ]
    return levels, jax.tree.map(lambda *xs: jnp.stack(xs), *levels)


def test_vmap_matches_per_level_and_jit():
    levels, batch = _batch()
    singles = np.stack([np.asarray(render_level(lv, tile_size=TS, agent_view_size=3)) for lv in levels])
    render = partial(render_level, tile_size=TS, agent_view_size=3)
    np.testing.assert_array_equal(np.asarray(jax.vmap(render)(batch)), singles)
    np.testing.assert_array_equal(np.asarray(jax.jit(jax.vmap(render))(batch)), singles)
    np.testing.assert_array_equal(np.asarray(render(batch)), singles)  # batch axes handled directly


def test_jit(level):
    eager = render_level(level, tile_size=TS)
    np.testing.assert_array_equal(jax.jit(lambda lv: render_level(lv, tile_size=TS))(level), eager)


def expected_view(agent_pos, agent_dir, v, gh, gw):
    """Cells of the padded grid in the view, straight from MiniGrid's (row, col) formula."""
    mask = np.zeros((gh, gw), bool)
    fwd, right = DIR_TO_VEC[agent_dir], DIR_TO_VEC[(agent_dir + 1) % 4]
    for r in range(v):
        for c in range(v):
            x, y = np.asarray(agent_pos) + 1 + (v - 1 - r) * fwd + (c - v // 2) * right
            if 0 <= x < gw and 0 <= y < gh:
                mask[y, x] = True
    return mask


@pytest.mark.parametrize("view", [3, 5])
def test_highlight_changes_exactly_the_view(level, view):
    for agent_dir in range(4):
        lv = level.replace(agent_dir=jnp.int32(agent_dir))
        plain = np.asarray(render_level(lv, tile_size=TS)).astype(int)
        lit = np.asarray(render_level(lv, tile_size=TS, agent_view_size=view)).astype(int)
        changed = (plain != lit).reshape(6, TS, 8, TS, 3).any(axis=(1, 3, 4))
        expected = expected_view(lv.agent_pos, agent_dir, view, 6, 8)
        np.testing.assert_array_equal(changed, expected, err_msg=f"agent_dir={agent_dir}")
        assert (lit >= plain).all(), "highlighting only lightens"
        every_pixel = (plain != lit).any(-1).reshape(6, TS, 8, TS).all(axis=(1, 3))
        assert every_pixel[expected].all(), "every pixel of a viewed cell is lightened"


def test_render_state_duck_typed(level):
    state = SimpleNamespace(wall_map=level.wall_map, goal_pos=level.goal_pos,
                            agent_pos=level.agent_pos, agent_dir=level.agent_dir, time=jnp.int32(3))
    np.testing.assert_array_equal(render_state(state, tile_size=TS, agent_view_size=3),
                                  render_level(level, tile_size=TS, agent_view_size=3))
    np.testing.assert_array_equal(render_state(state, tile_size=TS, highlight=False),
                                  render_level(level, tile_size=TS))


def test_png_roundtrip(level, tmp_path):
    frame = np.asarray(render_level(level, tile_size=TS))
    path = tmp_path / "sub" / "dir" / "level.png"
    save_png(frame, path)
    with Image.open(path) as im:
        assert im.size == (frame.shape[1], frame.shape[0])
        np.testing.assert_array_equal(np.asarray(im.convert("RGB")), frame)


def test_gif_frame_count(level, tmp_path):
    frames = np.stack([np.asarray(render_level(level.replace(agent_dir=jnp.int32(d)), tile_size=TS))
                       for d in range(4)])
    path = tmp_path / "new" / "rollout.gif"
    save_gif(frames, path, fps=4)
    with Image.open(path) as im:
        assert im.n_frames == 4
        assert im.size == (frames.shape[2], frames.shape[1])
        assert im.info["duration"] == 250


def test_bad_shapes_raise(tmp_path):
    with pytest.raises(ValueError, match=r"\(4, 5\)"):
        save_png(np.zeros((4, 5), np.uint8), tmp_path / "a.png")
    with pytest.raises(ValueError, match=r"\(4, 5, 3\)"):
        save_gif(np.zeros((4, 5, 3), np.uint8), tmp_path / "a.gif")
    with pytest.raises(ValueError, match="uint8"):
        save_png(np.zeros((4, 5, 3), np.float32), tmp_path / "a.png")
    with pytest.raises(ValueError, match="same shape"):
        save_gif([np.zeros((4, 5, 3), np.uint8), np.zeros((5, 4, 3), np.uint8)], tmp_path / "a.gif")
    assert not list(tmp_path.iterdir())


def test_tile_frames_layout_and_titles():
    a = np.full((10, 12, 3), 50, np.uint8)
    b = np.full((6, 8, 3), 150, np.uint8)
    grid = tile_frames([a, b, a], ncols=2, pad=2)
    assert grid.shape == (2 + 2 * (10 + 2), 2 + 2 * (12 + 2), 3)
    np.testing.assert_array_equal(grid[2:12, 2:14], a)
    np.testing.assert_array_equal(grid[2:8, 16:24], b)
    assert (grid[0] == 255).all() and (grid[14:, 16:] == 255).all(), "padding and the empty cell"

    titled = tile_frames(np.stack([a, a]), ncols=2, titles=["one", "two"])
    assert titled.shape[0] > 2 + 10 + 2 and titled.shape[1] == 2 + 2 * (12 + 2)
    title_band = titled[2:titled.shape[0] - 12, 2:14]
    assert (title_band < 128).any(), "title text is drawn"
    np.testing.assert_array_equal(titled[-12:-2, 2:14], a)
