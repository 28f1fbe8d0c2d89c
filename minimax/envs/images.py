"""Images of any environment on the host: frame checks, a grid of frames with titles, PNG and GIF files.

Environments render their own frames (AMaze: `envs/maze/render.py`, in JAX); everything
after that, laying frames out and writing them, is shared here so that buffer pictures and
episode GIFs work the same for every registered environment.
"""

from __future__ import annotations

import os
from typing import Sequence

import numpy as np
from PIL import Image, ImageDraw, ImageFont


def _check_frame(frame, what: str = "frame") -> np.ndarray:
    frame = np.asarray(frame)
    if frame.ndim != 3 or frame.shape[-1] != 3:
        raise ValueError(f"{what} must have shape [height, width, 3], got shape {frame.shape}")
    if frame.dtype != np.uint8:
        raise ValueError(f"{what} must be uint8, got {frame.dtype} (shape {frame.shape})")
    return frame


def _check_frames(frames) -> list[np.ndarray]:
    """An array [N, h, w, 3] or a sequence of [h, w, 3] frames -> list of uint8 frames."""
    if isinstance(frames, (list, tuple)):
        out = [_check_frame(f, f"frame {i}") for i, f in enumerate(frames)]
    else:
        arr = np.asarray(frames)
        if arr.ndim != 4 or arr.shape[-1] != 3:
            raise ValueError(f"frames must have shape [N, height, width, 3], got shape {arr.shape}")
        out = [_check_frame(f, f"frame {i}") for i, f in enumerate(arr)]
    if not out:
        raise ValueError("frames is empty")
    return out


def tile_frames(frames, ncols: int, pad: int = 2, titles: Sequence[str] | None = None,
                pad_value: int = 255) -> np.ndarray:
    """Lay frames out in a grid with `ncols` columns, for a one-image overview.

    `frames` is an array [N, h, w, 3] or a list of frames of possibly different sizes
    (each cell is as large as the largest frame; smaller ones sit top-left). `pad`
    pixels of `pad_value` separate and surround the frames. `titles` (one per frame)
    are written in Pillow's default font above each frame."""
    frames = _check_frames(frames)
    if ncols < 1:
        raise ValueError(f"ncols must be >= 1, got {ncols}")
    if titles is not None and len(titles) != len(frames):
        raise ValueError(f"got {len(titles)} titles for {len(frames)} frames")
    font = ImageFont.load_default()
    title_h = 0
    if titles is not None:
        title_h = max(font.getbbox(t or " ")[3] for t in titles) + 2
    cell_h = max(f.shape[0] for f in frames) + title_h
    cell_w = max(f.shape[1] for f in frames)
    nrows = -(-len(frames) // ncols)
    ncols = min(ncols, len(frames))
    out = np.full((pad + nrows * (cell_h + pad), pad + ncols * (cell_w + pad), 3),
                  pad_value, np.uint8)
    for i, frame in enumerate(frames):
        top = pad + (i // ncols) * (cell_h + pad)
        left = pad + (i % ncols) * (cell_w + pad)
        out[top + title_h: top + title_h + frame.shape[0], left: left + frame.shape[1]] = frame
    if titles is not None:
        image = Image.fromarray(out)
        draw = ImageDraw.Draw(image)
        ink = (0, 0, 0) if pad_value >= 128 else (255, 255, 255)
        for i, title in enumerate(titles):
            top = pad + (i // ncols) * (cell_h + pad)
            left = pad + (i % ncols) * (cell_w + pad)
            draw.text((left, top), title, fill=ink, font=font)
        out = np.asarray(image)
    return out


def _make_parent(path) -> None:
    parent = os.path.dirname(os.fspath(path))
    if parent:
        os.makedirs(parent, exist_ok=True)


def save_png(frame, path) -> None:
    """Write one uint8[h, w, 3] frame as a PNG (parent folders are created)."""
    frame = _check_frame(frame)
    _make_parent(path)
    Image.fromarray(frame).save(path, format="PNG")


def save_gif(frames, path, fps: float = 8) -> None:
    """Write frames ([N, h, w, 3] uint8, or a list of equally sized frames) as a looping GIF.

    Pillow merges identical consecutive frames into one longer frame, so the timing is
    kept but the stored frame count can be lower than N."""
    frames = _check_frames(frames)
    shapes = {f.shape for f in frames}
    if len(shapes) != 1:
        raise ValueError(f"GIF frames must all have the same shape, got shapes {sorted(shapes)}")
    if fps <= 0:
        raise ValueError(f"fps must be positive, got {fps}")
    _make_parent(path)
    images = [Image.fromarray(f) for f in frames]
    images[0].save(path, format="GIF", save_all=True, append_images=images[1:],
                   duration=max(1, round(1000 / fps)), loop=0)
