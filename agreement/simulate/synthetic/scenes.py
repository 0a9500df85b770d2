"""Synthetic scenes for the demo: rendered images and their true objects.

A *scene* is one image: a textured background with 0-12 filled shapes of six
classes drawn on it. Everything is derived from a seed with numpy's
:class:`~numpy.random.Generator`, so the same seed gives the same scenes, boxes
and pixels on any machine.

Classes (:data:`CLASSES`) and how they look:

==========  ==================================================  ===============
class       shape                                               colour (hue)
==========  ==================================================  ===============
circle      disc                                                orange-red, 8°
ellipse     rotated ellipse, aspect ratio 1.3-1.8               orange-red, 16°
square      square, rotated by up to ±20°                       blue, 215°
triangle    equilateral triangle, any rotation                  green, 120°
star        five-pointed star, any rotation                     yellow, 52°
cross       plus sign, any rotation                             purple, 285°
==========  ==================================================  ===============

``circle`` and ``ellipse`` are deliberately similar (:data:`SIMILAR_CLASSES`):
same colour family and a rounded outline, so that a rater confusing them is
plausible.

Object sizes are log-uniform between about 2 % and 40 % of the shorter image
side (so roughly a third of the objects are *small*, below COCO's 32 × 32 pixel
area at 640 × 480); boxes of one image overlap little (the intersection is at
most ``max_overlap`` of the smaller box). The number of objects is uniform in
``0..12``, so about one image in thirteen has no object at all.

Every shape is drawn as one filled integer polygon with :func:`cv2.fillPoly`
(no anti-aliasing), and its true box is the tight bounding box of the polygon's
pixels: ``[x_min / W, y_min / H, (x_max - x_min + 1) / W, (y_max - y_min + 1) / H]``
in FiftyOne's relative ``[x, y, w, h]`` convention (top-left corner, width,
height). Shapes are drawn from the largest to the smallest, so a small object is
never hidden under a large one.

This module does not import FiftyOne.
"""

from __future__ import annotations

import colorsys
import os
import struct
import zlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Iterable, Sequence

import cv2
import numpy as np

__all__ = [
    "CLASSES",
    "SIMILAR_CLASSES",
    "Scene",
    "generate_scenes",
    "render_scene",
    "write_scenes",
    "object_mask",
    "box_sizes",
]

CLASSES: tuple[str, ...] = ("circle", "ellipse", "square", "triangle", "star", "cross")
"""The object classes of the synthetic scenes."""

SIMILAR_CLASSES: tuple[str, str] = ("circle", "ellipse")
"""The two classes that look alike (a plausible confusion)."""

# Base hue in degrees per class; circle and ellipse are close on purpose.
_HUES: dict[str, float] = {
    "circle": 8.0,
    "ellipse": 16.0,
    "square": 215.0,
    "triangle": 120.0,
    "star": 52.0,
    "cross": 285.0,
}

_MAX_OBJECTS = 12
_MIN_SIZE_FRAC = 0.02
_MAX_SIZE_FRAC = 0.40
_PLACEMENT_TRIES = 60


@dataclass(frozen=True, eq=False)
class Scene:
    """One synthetic image and its true objects.

    Attributes:
        name: file name, e.g. ``"scene_0001.png"``; also the sample id.
        width: image width in pixels.
        height: image height in pixels.
        boxes: ``(n, 4)`` float64 relative ``[x, y, w, h]`` true boxes, each
            the tight bounding box of the drawn shape's pixels.
        labels: ``(n,)`` object array of class names (from :data:`CLASSES`).
        vertices: ``n`` int32 ``(k, 2)`` arrays, the pixel ``(x, y)``
            vertices of the polygon drawn for each object.
        colors: ``(n, 3)`` uint8 BGR fill colour of each object.
    """

    name: str
    width: int
    height: int
    boxes: np.ndarray
    labels: np.ndarray
    vertices: tuple[np.ndarray, ...]
    colors: np.ndarray

    def __len__(self) -> int:
        return len(self.boxes)

    @property
    def pixel_boxes(self) -> np.ndarray:
        """``(n, 4)`` int ``[x_min, y_min, x_max, y_max]`` inclusive pixel extents."""
        if not self.vertices:
            return np.zeros((0, 4), dtype=np.int64)
        return np.array(
            [[v[:, 0].min(), v[:, 1].min(), v[:, 0].max(), v[:, 1].max()] for v in self.vertices],
            dtype=np.int64,
        )

    def polygons(self) -> list[list[np.ndarray]]:
        """The drawn polygons in relative coordinates, one ring per object.

        In the layout of :class:`agreement.core.data.AnnotationSet`: entry ``i`` is a
        list holding one ``(k, 2)`` float array of relative ``(x, y)``. The
        polygon runs through pixel centres, so it is up to half a pixel inside
        the box.
        """
        scale = np.array([self.width, self.height], dtype=np.float64)
        return [[(v.astype(np.float64) + 0.5) / scale] for v in self.vertices]


def box_sizes(boxes: np.ndarray) -> np.ndarray:
    """Size of relative ``[x, y, w, h]`` boxes: ``sqrt(w * h)``.

    The square root of the fraction of the image area a box covers, in
    ``[0, 1]``; at 640 × 480, COCO's "small" (32 × 32 pixels) is about 0.058.
    """
    boxes = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
    return np.sqrt(np.clip(boxes[:, 2], 0, None) * np.clip(boxes[:, 3], 0, None))


# --------------------------------------------------------------------- shapes
def _shape_outline(cls: str, size: float, rng: np.random.Generator) -> np.ndarray:
    """Float ``(k, 2)`` outline of a shape of nominal extent ``size`` around 0."""
    r = size / 2.0
    if cls in ("circle", "ellipse"):
        n = int(np.clip(2 * np.pi * r / 3.0, 16, 96))
        t = np.linspace(0.0, 2 * np.pi, n, endpoint=False)
        if cls == "circle":
            a, b, theta = r, r, 0.0
        else:
            a, b, theta = r, r / rng.uniform(1.3, 1.8), rng.uniform(0.0, np.pi)
        pts = np.stack([a * np.cos(t), b * np.sin(t)], axis=1)
    elif cls == "square":
        h = 0.8 * r
        pts = np.array([[-h, -h], [h, -h], [h, h], [-h, h]])
        theta = np.deg2rad(rng.uniform(-20.0, 20.0))
    elif cls == "triangle":
        t = np.pi / 2 + np.arange(3) * 2 * np.pi / 3
        pts = r * np.stack([np.cos(t), np.sin(t)], axis=1)
        theta = rng.uniform(0.0, 2 * np.pi)
    elif cls == "star":
        t = np.arange(10) * np.pi / 5
        rad = np.where(np.arange(10) % 2 == 0, r, 0.42 * r)
        pts = np.stack([rad * np.cos(t), rad * np.sin(t)], axis=1)
        theta = rng.uniform(0.0, 2 * np.pi)
    elif cls == "cross":
        a, w = r, r / 3.0
        pts = np.array([
            [-w, -a], [w, -a], [w, -w], [a, -w], [a, w], [w, w],
            [w, a], [-w, a], [-w, w], [-a, w], [-a, -w], [-w, -w],
        ])
        theta = rng.uniform(0.0, np.pi / 2)
    else:  # pragma: no cover - CLASSES is closed
        raise ValueError(f"unknown class {cls!r}")
    c, s = np.cos(theta), np.sin(theta)
    return pts @ np.array([[c, s], [-s, c]])


def _class_color(cls: str, rng: np.random.Generator) -> np.ndarray:
    """A BGR uint8 colour near the class's hue."""
    spread = 3.0 if cls in SIMILAR_CLASSES else 8.0
    hue = ((_HUES[cls] + rng.normal(0.0, spread)) % 360.0) / 360.0
    r, g, b = colorsys.hsv_to_rgb(hue, rng.uniform(0.55, 0.95), rng.uniform(0.65, 1.0))
    return np.array([round(b * 255), round(g * 255), round(r * 255)], dtype=np.uint8)


def _overlap_ok(box: np.ndarray, placed: list[np.ndarray], max_overlap: float) -> bool:
    """Whether pixel box ``[x0, y0, x1, y1]`` (inclusive) overlaps each placed
    box by at most ``max_overlap`` of the smaller box's area."""
    if not placed:
        return True
    other = np.asarray(placed)
    iw = np.minimum(box[2], other[:, 2]) - np.maximum(box[0], other[:, 0]) + 1
    ih = np.minimum(box[3], other[:, 3]) - np.maximum(box[1], other[:, 1]) + 1
    inter = np.clip(iw, 0, None) * np.clip(ih, 0, None)
    area = lambda b: (b[..., 2] - b[..., 0] + 1) * (b[..., 3] - b[..., 1] + 1)  # noqa: E731
    smaller = np.minimum(area(box), area(other))
    return bool(np.all(inter <= max_overlap * smaller))


def _make_scene(
    index: int, seed: int, width: int, height: int, max_overlap: float
) -> Scene:
    rng = np.random.default_rng(np.random.SeedSequence([seed, index, 0x5CE7E]))
    n_wanted = int(rng.integers(0, _MAX_OBJECTS + 1))
    side = min(width, height)
    lo, hi = np.log(_MIN_SIZE_FRAC * side), np.log(_MAX_SIZE_FRAC * side)
    sizes = np.sort(np.exp(rng.uniform(lo, hi, n_wanted)))[::-1]  # largest first
    placed: list[np.ndarray] = []
    verts: list[np.ndarray] = []
    labels: list[str] = []
    colors: list[np.ndarray] = []
    for size in sizes:
        cls = CLASSES[int(rng.integers(len(CLASSES)))]
        outline = np.rint(_shape_outline(cls, max(float(size), 6.0), rng)).astype(np.int32)
        lo_xy, hi_xy = outline.min(axis=0), outline.max(axis=0)
        span = hi_xy - lo_xy
        if span[0] >= width or span[1] >= height:
            continue
        for _ in range(_PLACEMENT_TRIES):
            off = np.array([
                rng.integers(-lo_xy[0], width - hi_xy[0]),
                rng.integers(-lo_xy[1], height - hi_xy[1]),
            ], dtype=np.int32)
            box = np.concatenate([lo_xy + off, hi_xy + off])
            if _overlap_ok(box, placed, max_overlap):
                placed.append(box)
                verts.append(outline + off)
                labels.append(cls)
                colors.append(_class_color(cls, rng))
                break
    pix = np.asarray(placed, dtype=np.float64).reshape(-1, 4)
    boxes = np.stack([
        pix[:, 0] / width,
        pix[:, 1] / height,
        (pix[:, 2] - pix[:, 0] + 1) / width,
        (pix[:, 3] - pix[:, 1] + 1) / height,
    ], axis=1) if len(pix) else np.zeros((0, 4))
    label_arr = np.empty(len(labels), dtype=object)
    label_arr[:] = labels
    return Scene(
        name=f"scene_{index + 1:04d}.png",
        width=width,
        height=height,
        boxes=boxes,
        labels=label_arr,
        vertices=tuple(verts),
        colors=np.asarray(colors, dtype=np.uint8).reshape(-1, 3),
    )


def generate_scenes(
    *,
    num_images: int = 300,
    seed: int = 0,
    image_size: tuple[int, int] = (640, 480),
    max_overlap: float = 0.15,
) -> list[Scene]:
    """Generates the true objects of ``num_images`` synthetic scenes.

    Deterministic: scene ``i`` depends only on ``seed``, ``i``, ``image_size``
    and ``max_overlap`` (so the first 10 of 300 scenes equal the 10 scenes of
    ``num_images=10``). No pixels are rendered here; see :func:`render_scene`.

    Args:
        num_images: number of scenes, named ``scene_0001.png`` onwards.
        seed: non-negative integer seed.
        image_size: ``(width, height)`` in pixels.
        max_overlap: largest allowed intersection of two boxes, as a fraction
            of the smaller box's area.

    Returns:
        The scenes, in name order.
    """
    width, height = (int(v) for v in image_size)
    if num_images < 0:
        raise ValueError(f"num_images must be >= 0, got {num_images}")
    if width < 32 or height < 32:
        raise ValueError(f"image_size must be at least 32 x 32 pixels, got {image_size}")
    if seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed}")
    if not 0.0 <= max_overlap <= 1.0:
        raise ValueError(f"max_overlap must be in [0, 1], got {max_overlap}")
    return [_make_scene(i, int(seed), width, height, float(max_overlap)) for i in range(num_images)]


# ------------------------------------------------------------------ rendering
def _render_rng(scene: Scene, seed: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence([int(seed), zlib.crc32(scene.name.encode()), 0xB6]))


def _background(rng: np.random.Generator, width: int, height: int) -> np.ndarray:
    """A uint8 BGR ``(H, W, 3)`` texture: gradient, fractal noise, stripes, lines, grain.

    Built channel by channel on 2-D float32 arrays (broadcasting over a trailing
    colour axis is several times slower).
    """
    # Linear gradient between two muted colours in a random direction.
    c0, c1 = rng.uniform(35.0, 190.0, size=(2, 3))
    angle = rng.uniform(0.0, 2 * np.pi)
    xs = np.linspace(0.0, 1.0, width, dtype=np.float32)
    ys = np.linspace(0.0, height / width, height, dtype=np.float32)
    t = np.float32(np.cos(angle)) * xs[None, :] + np.float32(np.sin(angle)) * ys[:, None]
    t = (t - t.min()) / np.float32(max(float(t.max() - t.min()), 1e-6))

    # Fractal value noise: random grids of doubling resolution, upsampled.
    noise = np.zeros((height, width), dtype=np.float32)
    amp, persistence = rng.uniform(12.0, 35.0), rng.uniform(0.4, 0.65)
    base = int(rng.integers(2, 5))
    for octave in range(5):
        gw = base * 2 ** octave + 1
        gh = max(2, round(gw * height / width))
        grid = rng.standard_normal((gh, gw)).astype(np.float32)
        noise += np.float32(amp) * cv2.resize(grid, (width, height), interpolation=cv2.INTER_CUBIC)
        amp *= persistence
    tint = rng.uniform(0.6, 1.0, 3)

    # Colour-independent part: sometimes a woven / striped pattern, and grain.
    common = (rng.random((height, width), dtype=np.float32) - np.float32(0.5)) * np.float32(rng.uniform(2.0, 5.0))
    if rng.random() < 0.5:
        freq = rng.uniform(0.02, 0.12)
        phi = rng.uniform(0.0, np.pi)
        xx = np.arange(width, dtype=np.float32)[None, :]
        yy = np.arange(height, dtype=np.float32)[:, None]
        wave = np.sin(np.float32(2 * np.pi * freq) * (np.float32(np.cos(phi)) * xx + np.float32(np.sin(phi)) * yy))
        common += np.float32(rng.uniform(4.0, 14.0)) * wave

    channels = [
        np.float32(c0[k]) + np.float32(c1[k] - c0[k]) * t + np.float32(tint[k]) * noise
        for k in range(3)
    ]
    # Random lines (clutter).
    for _ in range(int(rng.integers(4, 30))):
        p1 = (int(rng.integers(-50, width + 50)), int(rng.integers(-50, height + 50)))
        p2 = (int(rng.integers(-50, width + 50)), int(rng.integers(-50, height + 50)))
        color = rng.uniform(20.0, 230.0, 3)
        thickness = int(rng.integers(1, 4))
        for k in range(3):
            cv2.line(channels[k], p1, p2, float(color[k]), thickness, lineType=cv2.LINE_AA)
    for ch in channels:
        ch += common
        np.clip(ch, 0.0, 255.0, out=ch)
    return cv2.merge([ch.astype(np.uint8) for ch in channels])


def render_scene(scene: Scene, *, seed: int = 0) -> np.ndarray:
    """Renders a scene to pixels.

    The background texture (a gradient, fractal noise, sometimes stripes,
    random lines and grain) is drawn from an RNG seeded with ``seed`` and the
    scene's name, so it differs between images and is reproducible. Objects are
    drawn largest first, each as a filled polygon (:func:`cv2.fillPoly`, no
    anti-aliasing) with a light linear shading, so every true box is the tight
    bounding box of its shape's pixels.

    Args:
        scene: the scene from :func:`generate_scenes`.
        seed: non-negative integer seed of the texture and shading.

    Returns:
        ``(H, W, 3)`` uint8 image in OpenCV's BGR channel order (ready for
        :func:`cv2.imwrite`; reverse the last axis for RGB).
    """
    rng = _render_rng(scene, seed)
    img = _background(rng, scene.width, scene.height)
    for verts, color in zip(scene.vertices, scene.colors, strict=False):
        x0, y0 = verts.min(axis=0)
        x1, y1 = verts.max(axis=0)
        h, w = int(y1 - y0 + 1), int(x1 - x0 + 1)
        mask = np.zeros((h, w), dtype=np.uint8)
        cv2.fillPoly(mask, [verts - np.array([x0, y0], dtype=np.int32)], 1)
        # Light shading: brightness varies linearly across the object.
        angle = rng.uniform(0.0, 2 * np.pi)
        gx = np.linspace(-1.0, 1.0, w, dtype=np.float32)[None, :] * np.float32(np.cos(angle))
        gy = np.linspace(-1.0, 1.0, h, dtype=np.float32)[:, None] * np.float32(np.sin(angle))
        shade = 1.0 + np.float32(rng.uniform(0.05, 0.2)) * (gx + gy)
        fill = np.clip(color.astype(np.float32)[None, None, :] * shade[..., None], 0, 255).astype(np.uint8)
        roi = img[y0:y1 + 1, x0:x1 + 1]
        on = mask.astype(bool)
        roi[on] = fill[on]
    return img


def object_mask(scene: Scene, i: int) -> np.ndarray:
    """``(H, W)`` bool mask of object ``i`` as drawn, ignoring occlusion."""
    mask = np.zeros((scene.height, scene.width), dtype=np.uint8)
    cv2.fillPoly(mask, [scene.vertices[i]], 1)
    return mask.astype(bool)


def _png_size(path: str) -> tuple[int, int] | None:
    """``(width, height)`` from a PNG header, or ``None`` if not a readable PNG."""
    try:
        with open(path, "rb") as f:
            head = f.read(24)
    except OSError:
        return None
    if len(head) < 24 or head[:8] != b"\x89PNG\r\n\x1a\n" or head[12:16] != b"IHDR":
        return None
    return struct.unpack(">II", head[16:24])


def write_scenes(
    scenes: Sequence[Scene],
    directory: str | os.PathLike,
    *,
    seed: int = 0,
    overwrite: bool = False,
    workers: int | None = None,
) -> list[str]:
    """Renders scenes and writes them as PNG files ``directory/scene.name``.

    A file that already exists with the scene's width and height is assumed to
    be a previous rendering and is kept unless ``overwrite`` is true (a cheap
    header check; pass ``overwrite=True`` after changing ``seed``).

    Args:
        scenes: scenes from :func:`generate_scenes`.
        directory: output directory, created if missing.
        seed: rendering seed, passed to :func:`render_scene`.
        overwrite: re-render files that already exist.
        workers: threads used for rendering and encoding (OpenCV releases the
            GIL); default ``min(8, os.cpu_count())``.

    Returns:
        Absolute file paths, in the order of ``scenes``.
    """
    directory = os.path.abspath(os.fspath(directory))
    os.makedirs(directory, exist_ok=True)
    paths = [os.path.join(directory, s.name) for s in scenes]

    def work(item: tuple[Scene, str]) -> None:
        scene, path = item
        if not overwrite and _png_size(path) == (scene.width, scene.height):
            return
        img = render_scene(scene, seed=seed)
        tmp = path + ".tmp.png"
        if not cv2.imwrite(tmp, img, [cv2.IMWRITE_PNG_COMPRESSION, 1]):
            raise OSError(f"could not write image {tmp}")
        os.replace(tmp, path)

    items: Iterable[tuple[Scene, str]] = zip(scenes, paths, strict=False)
    n_workers = workers if workers is not None else min(8, os.cpu_count() or 1)
    if n_workers <= 1:
        for item in items:
            work(item)
    else:
        with ThreadPoolExecutor(max_workers=n_workers) as pool:
            list(pool.map(work, items))
    return paths
