"""Demo data beyond boxes: instance-mask raters and 3D cuboid raters.

Pure numpy / OpenCV, deterministic per (seed, rater, sample) like
:mod:`agreement.simulate.synthetic.demo_raters`.

Mask raters (:data:`MASK_PROFILES`) redraw each true object's pixel mask:

=============  =====================================================================
``precise``    the object's pixels, 1 % of boundary pixels flipped
``outliner``   paints one to two pixels beyond the boundary (dilated)
``cautious``   stays two pixels inside the boundary (eroded)
``careless``   shifted by up to 4 px, with 15 % of the object's pixels flipped
=============  =====================================================================

3D raters (:func:`simulate_cuboid_raters`) annotate cars in a street scene:
``location`` in metres, ``dimensions`` (length, width, height), and a yaw in
``rotation`` (XYZ Euler, radians): ``lidar_expert`` (5 cm, 1°), ``casual``
(25 cm, 8°, misses 10 % of cars) and ``hurried`` (40 cm, 15°, misses 25 %,
sometimes boxes a parked car twice).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Sequence

import cv2
import numpy as np

from agreement.simulate.synthetic.scenes import Scene, object_mask

__all__ = ["MASK_PROFILES", "simulate_mask_raters", "CuboidScene", "generate_cuboid_scenes", "simulate_cuboid_raters",
           "CUBOID_PROFILES"]

MASK_PROFILES = ("precise", "outliner", "cautious", "careless")


def _rng(seed: int, rater: str, sample: str) -> np.random.Generator:
    return np.random.default_rng(
        np.random.SeedSequence([int(seed), zlib.crc32(rater.encode()), zlib.crc32(sample.encode())])
    )


def _redraw(mask: np.ndarray, profile: str, rng: np.random.Generator) -> np.ndarray:
    m = mask.astype(np.uint8)
    kernel = np.ones((3, 3), np.uint8)
    if profile == "precise":
        edge = cv2.morphologyEx(m, cv2.MORPH_GRADIENT, kernel).astype(bool)
        flip = edge & (rng.random(m.shape) < 0.01)
        return mask ^ flip
    if profile == "outliner":
        return cv2.dilate(m, kernel, iterations=int(rng.integers(1, 3))).astype(bool)
    if profile == "cautious":
        out = cv2.erode(m, kernel, iterations=2).astype(bool)
        return out if out.any() else mask
    if profile == "careless":
        dx, dy = rng.integers(-4, 5, size=2)
        shifted = np.roll(np.roll(mask, int(dy), axis=0), int(dx), axis=1)
        return shifted ^ (shifted & (rng.random(m.shape) < 0.15))
    raise ValueError(f"unknown mask profile {profile!r}; choose from {MASK_PROFILES}")


def simulate_mask_raters(
    scenes: Sequence[Scene], *, seed: int = 0, profiles: Sequence[str] = MASK_PROFILES
) -> dict[str, list[list[tuple[str, np.ndarray, np.ndarray]]]]:
    """Per mask rater, per scene: ``(label, relative box, mask inside the box)`` of every object.

    The box is the tight box of the rater's mask; objects whose redrawn mask is
    empty are left out.
    """
    out: dict[str, list] = {p: [] for p in profiles}
    for scene in scenes:
        W, H = scene.width, scene.height
        truth = [object_mask(scene, i) for i in range(len(scene.labels))]
        for p in profiles:
            rng = _rng(seed, p, scene.name)
            objs = []
            for label, m in zip(scene.labels, truth, strict=True):
                drawn = _redraw(m, p, rng)
                ys, xs = np.nonzero(drawn)
                if not len(xs):
                    continue
                x0, x1, y0, y1 = xs.min(), xs.max() + 1, ys.min(), ys.max() + 1
                objs.append((str(label), np.array([x0 / W, y0 / H, (x1 - x0) / W, (y1 - y0) / H]),
                             drawn[y0:y1, x0:x1]))
            out[p].append(objs)
    return out


@dataclass(frozen=True)
class CuboidScene:
    """True cars of one 3D scene: ``cuboids`` (n, 9) ``[x, y, z, l, w, h, rx, ry, rz]``."""

    name: str
    cuboids: np.ndarray


CUBOID_PROFILES = {
    "lidar_expert": {"pos": 0.05, "yaw": np.deg2rad(1), "miss": 0.0, "double": 0.0},
    "casual": {"pos": 0.25, "yaw": np.deg2rad(8), "miss": 0.10, "double": 0.0},
    "hurried": {"pos": 0.40, "yaw": np.deg2rad(15), "miss": 0.25, "double": 0.10},
}


def generate_cuboid_scenes(*, num_scenes: int = 30, seed: int = 0) -> list[CuboidScene]:
    """Street scenes with 2–8 cars each (4.5 × 1.8 × 1.5 m, any yaw), on the ground (z = height / 2)."""
    scenes = []
    for k in range(num_scenes):
        rng = _rng(seed, "cuboid-scenes", str(k))
        n = int(rng.integers(2, 9))
        cars: list[list[float]] = []
        while len(cars) < n:
            x, y = rng.uniform(-30, 30), rng.uniform(-15, 15)
            if all(np.hypot(x - c[0], y - c[1]) > 6 for c in cars):
                l, w, h = rng.normal(4.5, 0.3), rng.normal(1.8, 0.1), rng.normal(1.5, 0.1)
                cars.append([x, y, h / 2, l, w, h, 0.0, 0.0, rng.uniform(-np.pi, np.pi)])
        scenes.append(CuboidScene(f"street_{k:03d}.fo3d", np.array(cars)))
    return scenes


def simulate_cuboid_raters(scenes: Sequence[CuboidScene], *, seed: int = 0) -> dict[str, list[np.ndarray]]:
    """Per 3D rater (:data:`CUBOID_PROFILES`), per scene: its ``(m, 9)`` cuboids."""
    out: dict[str, list[np.ndarray]] = {}
    for name, p in CUBOID_PROFILES.items():
        per_scene = []
        for scene in scenes:
            rng = _rng(seed, name, scene.name)
            keep = rng.random(len(scene.cuboids)) >= p["miss"]
            cub = scene.cuboids[keep].copy()
            cub[:, :2] += rng.normal(0, p["pos"], (len(cub), 2))
            cub[:, 8] += rng.normal(0, p["yaw"], len(cub))
            doubles = cub[rng.random(len(cub)) < p["double"]].copy()
            doubles[:, :2] += rng.normal(0, 0.8, (len(doubles), 2))
            per_scene.append(np.concatenate([cub, doubles]))
        out[name] = per_scene
    return out
