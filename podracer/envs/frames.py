"""Frames for videos of an agent playing: an environment's own `render`, or its observation when that is an image.

An environment that defines `render(state) -> uint8 [H, W, 3]` (one
environment's state, not a batch's) is drawn by it: that is how your own
environments make videos. Otherwise the observation is the frame when it is
an image: `[H, W]` (Catch's board), `[H, W, C]` with C up to 4 channels last
(RGB, RGBA, one grey channel), `[C, H, W]` with C up to 4 first (envpool
Atari's stack of grey frames: the newest is drawn), or `[H, W, C]` of more
channels, each an object layer (MinAtar's): every channel gets its own
colour, drawn where it is set. Anything else (a vector of numbers, a dict)
cannot be drawn, which `CannotRender` says. Small frames are scaled up by
whole pixels to at least `MIN_SIZE`, so a 10 x 10 board stays sharp.
"""

from typing import Any

import numpy as np

MIN_SIZE = 256
# Colours of object layers (channels), in order; a channel past the palette reuses it.
PALETTE = np.array(
    [[230, 25, 75], [60, 180, 75], [255, 225, 25], [0, 130, 200], [245, 130, 48], [145, 30, 180], [70, 240, 240],
     [240, 50, 230], [210, 245, 60], [250, 190, 212]],
    np.uint8,
)  # fmt: skip


class CannotRender(ValueError):
    """The environment has no `render` and its observations are not images."""


def frame(env: Any, state: Any, observation: Any) -> np.ndarray:
    """One uint8 RGB frame `[H, W, 3]` of one environment: its `render(state)`, or its observation as an image."""
    render = getattr(env, "render", None)
    image = np.asarray(render(state)) if callable(render) else image_of(observation)
    if image.dtype != np.uint8 or image.ndim != 3 or image.shape[-1] != 3:
        raise CannotRender(f"{type(env).__name__}.render gave {image.dtype} {image.shape}, not uint8 [H, W, 3]")
    scale = max(1, -(-MIN_SIZE // max(image.shape[:2])))
    return np.repeat(np.repeat(image, scale, axis=0), scale, axis=1)


def image_of(observation: Any) -> np.ndarray:
    """An observation drawn as an RGB image (see the module docstring); `CannotRender` if it is not one."""
    if not isinstance(observation, np.ndarray | np.generic) and not hasattr(observation, "__array__"):
        raise CannotRender(f"its observations are {type(observation).__name__}, not an image, and it has no render")
    observation = np.asarray(observation)
    if observation.ndim == 3 and observation.shape[0] <= 4 < observation.shape[-1]:  # Channels first: the newest.
        observation = observation[-1]
    if observation.ndim == 2:
        return np.repeat(_grey(observation)[..., None], 3, axis=-1)
    if observation.ndim == 3 and observation.shape[-1] in (1, 3, 4):
        grey_or_colour = _grey(observation[..., :3])
        return np.repeat(grey_or_colour, 3, axis=-1) if grey_or_colour.shape[-1] == 1 else grey_or_colour
    if observation.ndim == 3:  # Object layers.
        layers = observation.astype(bool)
        colours = PALETTE[np.arange(layers.shape[-1]) % len(PALETTE)]
        image = np.zeros(layers.shape[:2] + (3,), np.uint8)
        for channel in range(layers.shape[-1]):
            image[layers[..., channel]] = colours[channel]
        return image
    raise CannotRender(
        f"its observations are {observation.dtype} {observation.shape}, not an image, and it has no render"
    )


def _grey(values: np.ndarray) -> np.ndarray:
    """Values as uint8: unchanged if they already are, else scaled from their own range onto 0-255."""
    if values.dtype == np.uint8:
        return values
    values = values.astype(np.float64)
    low, high = values.min(), values.max()
    return np.zeros(values.shape, np.uint8) if high <= low else ((values - low) / (high - low) * 255).astype(np.uint8)
