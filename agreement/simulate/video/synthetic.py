"""Synthetic reference videos: boxes moving smoothly across the frame, with track ids and segments.

Video ``i`` of :func:`generate_videos` has ``num_objects`` tracks, ids
``1 .. num_objects``. Each object:

* has a class drawn uniformly from ``classes``;
* has a fixed size: ``s = sqrt(w h)`` log-uniform in ``[0.05, 0.25]`` of the
  frame and aspect ratio ``w / h = exp(U(-0.4, 0.4))``;
* is visible for ``L = round(F U(min_lifetime, 1))`` consecutive frames
  (at least one) starting at a uniform frame, so with ``min_lifetime = 1``
  (the default) every object is in every frame;
* moves smoothly: velocity ``v_t = v_0 + 0.5 speed z_t``, with ``|v_0|``
  uniform in ``[0.5, 1.5] speed`` in a uniform direction and ``z_t`` white
  noise smoothed by a Gaussian of 10 frames (unit standard deviation);
  the top-left corner is ``p_0 + sum v`` folded back into ``[0, 1 - w]`` by
  reflection at the frame's borders (the box bounces and never leaves it).

The temporal segments are the objects' lifetimes: ``[first, last]`` frames
of track ``j`` with its class, so a ``TemporalDetections`` field says when
each object is visible.

Deterministic: video ``i`` depends only on ``seed``, ``i`` and the
parameters, so the first 10 of 1,000 videos equal the 10 videos of
``num_videos=10``.

This module does not import FiftyOne.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.ndimage import gaussian_filter1d

from agreement.simulate.video.data import VideoLabels

__all__ = ["VIDEO_CLASSES", "fold", "generate_videos"]

VIDEO_CLASSES: tuple[str, ...] = ("person", "car", "bicycle", "dog", "ball")
"""The default object classes of the synthetic videos."""

_MIN_SIZE, _MAX_SIZE = 0.05, 0.25
_WOBBLE_FRAMES = 10.0


def fold(u: np.ndarray, upper: np.ndarray | float) -> np.ndarray:
    """``u`` reflected into ``[0, upper]`` at both ends (a triangle wave of period ``2 upper``).

    ``fold(u) = upper - |mod(u, 2 upper) - upper|``; identity on ``[0, upper]``;
    0 where ``upper <= 0``.
    """
    upper = np.broadcast_to(np.asarray(upper, dtype=np.float64), np.shape(u))
    safe = np.where(upper > 0, upper, 1.0)
    out = safe - np.abs(np.mod(u, 2.0 * safe) - safe)
    return np.where(upper > 0, out, 0.0)


def _smooth_noise(rng: np.random.Generator, shape: tuple[int, ...], sigma: float) -> np.ndarray:
    """White noise smoothed along the last axis by a Gaussian of ``sigma`` frames, rescaled to unit std."""
    z = rng.standard_normal(shape)
    if sigma <= 0 or shape[-1] < 2:
        return z
    z = gaussian_filter1d(z, sigma, axis=-1, mode="nearest")
    # std of white noise through a normalised Gaussian kernel: 1 / sqrt(sum k^2) = (4 pi sigma^2)^(1/4)
    return z * (4.0 * np.pi * sigma ** 2) ** 0.25


def _make_video(index: int, seed: int, num_frames: int, num_objects: int, classes: Sequence[str],
                frame_size: tuple[int, int], frame_rate: float, min_lifetime: float, speed: float) -> VideoLabels:
    rng = np.random.default_rng(np.random.SeedSequence([seed, index, 0x71DE0]))
    F, k = num_frames, num_objects
    labels = np.asarray([classes[i] for i in rng.integers(len(classes), size=k)], dtype=object)
    size = np.exp(rng.uniform(np.log(_MIN_SIZE), np.log(_MAX_SIZE), k))
    aspect = np.exp(rng.uniform(-0.4, 0.4, k))
    wh = np.stack([size * np.sqrt(aspect), size / np.sqrt(aspect)], axis=1).clip(0.01, 0.5)
    lifetime = np.maximum(1, np.rint(F * rng.uniform(min_lifetime, 1.0, k)).astype(np.int64))
    lifetime = np.minimum(lifetime, F)
    first = 1 + np.floor(rng.random(k) * (F - lifetime + 1)).astype(np.int64)
    angle = rng.uniform(0.0, 2 * np.pi, k)
    v0 = speed * rng.uniform(0.5, 1.5, k)[:, None] * np.stack([np.cos(angle), np.sin(angle)], axis=1)
    start = rng.random((k, 2)) * (1.0 - wh)
    wobble = _smooth_noise(rng, (k, 2, F), _WOBBLE_FRAMES)  # (k, 2, F)
    velocity = v0[:, :, None] + 0.5 * speed * wobble
    pos = start[:, :, None] + np.cumsum(velocity, axis=2) - velocity[:, :, :1]  # frame 1 at `start`
    pos = fold(pos, (1.0 - wh)[:, :, None])  # (k, 2, F)
    t = np.arange(1, F + 1)
    alive = (t[None, :] >= first[:, None]) & (t[None, :] < (first + lifetime)[:, None])  # (k, F)
    frame_idx, track_idx = np.nonzero(alive.T)  # sorted by frame, then track
    boxes = np.concatenate([pos[track_idx, :, frame_idx], wh[track_idx]], axis=1)
    segments = np.stack([first, first + lifetime - 1], axis=1)
    return VideoLabels(
        name=f"video_{index + 1:04d}.mp4", num_frames=F, frames=frame_idx + 1, tracks=track_idx + 1,
        labels=labels[track_idx], boxes=boxes, segments=segments, segment_labels=labels,
        frame_rate=frame_rate, width=frame_size[0], height=frame_size[1],
        sources=np.arange(len(frame_idx)), segment_sources=np.arange(k),
    )


def generate_videos(
    *,
    num_videos: int = 10,
    num_frames: int = 300,
    num_objects: int = 5,
    seed: int = 0,
    classes: Sequence[str] = VIDEO_CLASSES,
    frame_size: tuple[int, int] = (640, 480),
    frame_rate: float = 30.0,
    min_lifetime: float = 1.0,
    speed: float = 0.005,
) -> list[VideoLabels]:
    """Generates ``num_videos`` synthetic reference videos of moving boxes.

    See the module docstring for the motion model. ``num_videos x num_frames x
    num_objects`` boxes in all when ``min_lifetime = 1``.

    Args:
        num_videos: number of videos, named ``video_0001.mp4`` onwards.
        num_frames: ``F >= 1`` frames per video.
        num_objects: ``k >= 0`` tracks per video (ids ``1 .. k``).
        seed: non-negative integer seed.
        classes: the class names objects are drawn from (non-empty).
        frame_size: ``(width, height)`` in pixels (recorded; boxes are relative).
        frame_rate: frames per second (recorded).
        min_lifetime: each object is visible for a uniform fraction in
            ``[min_lifetime, 1]`` of the video, in ``(0, 1]``.
        speed: mean speed of an object, in frame widths/heights per frame
            (``0.005``: about 1.5 frame widths in 300 frames).

    Returns:
        The videos (rows sorted by frame then track), in name order.
    """
    for name, v, lo in (("num_videos", num_videos, 0), ("num_frames", num_frames, 1), ("num_objects", num_objects, 0)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
            raise ValueError(f"{name} must be an integer >= {lo}, got {v!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    if not classes or not all(isinstance(c, str) and c for c in classes):
        raise ValueError(f"classes must be a non-empty sequence of names, got {classes!r}")
    if not 0.0 < min_lifetime <= 1.0:
        raise ValueError(f"min_lifetime must be in (0, 1], got {min_lifetime!r}")
    if not (np.isfinite(speed) and speed >= 0):
        raise ValueError(f"speed must be a finite number >= 0, got {speed!r}")
    if not (np.isfinite(frame_rate) and frame_rate > 0) or min(frame_size) < 1:
        raise ValueError(f"frame_rate and frame_size must be positive, got {frame_rate!r}, {frame_size!r}")
    size = (int(frame_size[0]), int(frame_size[1]))
    return [_make_video(i, int(seed), num_frames=int(num_frames), num_objects=int(num_objects), classes=tuple(classes),
                        frame_size=size, frame_rate=float(frame_rate), min_lifetime=float(min_lifetime),
                        speed=float(speed)) for i in range(int(num_videos))]
