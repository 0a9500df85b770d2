"""Corpora of the 'images' part of the validation matrix: simulated raters on every instance label type.

Every corpus is first a corpus of *objects*: per (sample, rater) a set of relative boxes ``[x, y, w, h]`` with
a class and a unique label id, which names the object's *shape* (:data:`SHAPE_DIM` numbers in ``[0, 1)``
drawn once per object). :func:`realise` turns such a box corpus into one label type, the geometry placed in
each (possibly perturbed) box from its object's shape:

* boxes: the box itself;
* polygons: a star-shaped octagon inscribed in the box (radii from the shape);
* instance masks: an ellipse rasterised over the box at the image's pixel size;
* keypoints: 17 points (COCO's person skeleton size) at shape-given places in the box;
* 3D cuboids, points and polylines: the box read as a ground-plane footprint in a 50-unit scene
  (``x, y = 50 * centre``, sizes ``50 * w, 50 * h``), height, yaw and line shape from the shape. A 3D
  corpus has no image sizes (NaN), as the bridge reads 3D scenes (``agreement.fo.runs.chance_strata``: one
  chance stratum). On the heterogeneous design its scenes therefore mix scales: an object of ``p`` pixels
  on an image of scale ``L`` becomes ``50 p / L`` units, so the relative size of objects in their scene
  varies 64-fold from scene to scene, as a tabletop scan and a street scene do.

So the simulator's perturbations of the boxes (:func:`agreement.simulate.noise.perturbation_series`: shift,
drop, swap, coupled across levels, perturbed boxes keep their source's label id) perturb every label type
equivalently: a shift by γ box sizes translates the polygon, mask, keypoints and 3D geometry by γ object
sizes, a drop removes the object, a swap exchanges classes.

Random raters (:func:`random_raters`) draw their own objects independently of each other: positions, sizes,
counts and classes. The homogeneous design has one image size and a few objects; the heterogeneous one
mixes image sizes from 64 to 4,096 px (√(W·H) log-uniform, aspect ratios from 1:2 to 2:1, as photos,
scans and video frames have), 1 to 50 objects per item, object sizes in pixels (so that one
object is a large part of a small image and a small part of a large one), rare classes (Zipf) and a crowd
of up to 200 raters, each item labelled by 2 to 5 of them.

Nothing here imports FiftyOne.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np

from agreement.core.data import MultiRaterAnnotations

KINDS: tuple[str, ...] = ("boxes", "polygons", "instance masks", "keypoints", "3D cuboids", "3D polylines",
                          "3D points")
KINDS_3D: frozenset[str] = frozenset({"3D cuboids", "3D polylines", "3D points"})
SHAPE_DIM = 40
SCENE = 50.0  # scene units spanned by the relative frame of a 3D sample
NUM_KEYPOINTS = 17
_ANGLES = np.linspace(0.0, 2.0 * np.pi, 8, endpoint=False)


@dataclass(frozen=True)
class Design:
    """A random-rater design.

    Attributes:
        samples: number of items.
        crowd: number of raters in the corpus.
        per_item: ``(lo, hi)`` raters assigned per item (inclusive); ``(crowd, crowd)``: fully crossed.
        objects: ``(lo, hi)`` objects per item and rater (see ``poisson``).
        image_px: ``(lo, hi)`` of the image sides in pixels (log-uniform per side).
        object_px: ``None``: object sides relative, uniform in ``[0.05, 0.3]``; ``(lo, hi)``: sides in
            pixels, log-uniform, at most 0.9 of the image side.
        classes: number of classes.
        zipf: class probabilities ``∝ 1 / k**zipf`` (0: uniform).
        poisson: each rater draws ``max(1, Poisson(level))`` objects on an item (the item's level drawn from
            ``objects``: raters then agree on how crowded an item is); otherwise each rater draws its count
            log-uniformly in ``objects``, independently of the item and of the other raters.
    """

    samples: int
    crowd: int
    per_item: tuple[int, int]
    objects: tuple[int, int]
    image_px: tuple[int, int]
    object_px: tuple[int, int] | None
    classes: int
    zipf: float
    poisson: bool


HOMOGENEOUS = Design(samples=120, crowd=2, per_item=(2, 2), objects=(2, 6), image_px=(640, 640),
                     object_px=None, classes=4, zipf=0.0, poisson=False)
HETEROGENEOUS = Design(samples=150, crowd=200, per_item=(2, 5), objects=(1, 50), image_px=(64, 4096),
                       object_px=(8, 512), classes=12, zipf=1.5, poisson=False)


@dataclass(frozen=True)
class Objects:
    """A box corpus and the shapes of its objects (``shapes[label_id]``)."""

    data: MultiRaterAnnotations
    shapes: dict


def _log_uniform(rng: np.random.Generator, lo: float, hi: float, size=None) -> np.ndarray:
    return np.exp(rng.uniform(np.log(lo), np.log(hi), size))


def _draw_set(rng: np.random.Generator, n: int, size: np.ndarray, d: Design, probs: np.ndarray,
              prefix: str, shapes: dict) -> tuple[np.ndarray, list, list]:
    """``n`` random objects on an image of ``size`` (width, height): boxes, classes, ids (shapes stored)."""
    if d.object_px is None:
        wh = rng.uniform(0.05, 0.3, (n, 2))
    else:
        wh = np.minimum(_log_uniform(rng, *d.object_px, (n, 2)) / size, 0.9)
    xy = rng.uniform(0.0, 1.0, (n, 2)) * (1.0 - wh)
    classes = [f"c{k}" for k in rng.choice(len(probs), size=n, p=probs)]
    ids = [f"{prefix}:{k}" for k in range(n)]
    for i, sh in zip(ids, rng.random((n, SHAPE_DIM))):
        shapes[i] = sh
    return np.concatenate([xy, wh], axis=1), classes, ids


def _columns(sample_ids, raters, assigned, cells, sizes) -> MultiRaterAnnotations:
    """A corpus from ``cells[(s, r)] = (boxes, classes, ids)``."""
    keys = sorted(cells)
    boxes = [cells[k][0] for k in keys]
    return MultiRaterAnnotations(
        sample_ids=np.asarray(sample_ids, dtype=object), raters=tuple(raters), assigned=assigned,
        boxes=np.concatenate(boxes) if boxes else np.zeros((0, 4)),
        labels=np.asarray([c for k in keys for c in cells[k][1]], dtype=object),
        label_ids=np.asarray([i for k in keys for i in cells[k][2]], dtype=object),
        sample_index=np.asarray([k[0] for k in keys for _ in cells[k][1]], dtype=np.intp),
        rater_index=np.asarray([k[1] for k in keys for _ in cells[k][1]], dtype=np.intp),
        image_sizes=sizes)


def random_raters(d: Design, seed: int) -> Objects:
    """Independent random raters under design ``d``: each assigned rater draws its own objects."""
    rng = np.random.default_rng([seed, zlib.crc32(repr(d).encode())])
    S, R = d.samples, d.crowd
    if d.image_px[0] != d.image_px[1]:  # scale √(W·H) log-uniform, aspect W/H log-uniform in [1/2, 2]
        scale, aspect = _log_uniform(rng, *d.image_px, S), _log_uniform(rng, 0.5, 2.0, S)
        sizes = np.round(np.clip(np.stack([scale * np.sqrt(aspect), scale / np.sqrt(aspect)], axis=1),
                                 *d.image_px))
    else:
        sizes = np.full((S, 2), float(d.image_px[0]))
    level = np.round(_log_uniform(rng, d.objects[0], d.objects[1] + 0.999, S) - 0.499).clip(*d.objects)
    probs = 1.0 / np.arange(1, d.classes + 1) ** d.zipf
    probs /= probs.sum()
    assigned = np.zeros((S, R), dtype=bool)
    k = rng.integers(d.per_item[0], d.per_item[1] + 1, S)
    for s in range(S):
        assigned[s, rng.choice(R, size=k[s], replace=False)] = True
    raters = [f"r{r:03d}" for r in range(R)]
    shapes: dict = {}
    cells = {}
    for s, r in zip(*np.nonzero(assigned)):
        n = max(1, int(rng.poisson(level[s]))) if d.poisson else int(
            np.clip(np.floor(_log_uniform(rng, d.objects[0], d.objects[1] + 1)), *d.objects))
        cells[(int(s), int(r))] = _draw_set(rng, n, sizes[s], d, probs, f"{seed}:{s}:{r}", shapes)
    return Objects(_columns([f"img{s:04d}" for s in range(S)], raters, assigned, cells, sizes), shapes)


def reference(samples: int, seed: int, classes: int = 4, name: str = "ref", objects: tuple[int, int] = (2, 6),
              image: float = 640.0) -> Objects:
    """One reference rater (the input of the simulator's perturbations) on a homogeneous corpus."""
    rng = np.random.default_rng([seed, 7])
    probs = np.full(classes, 1.0 / classes)
    shapes: dict = {}
    d = HOMOGENEOUS
    cells = {(s, 0): _draw_set(rng, int(rng.integers(objects[0], objects[1] + 1)), np.array([image, image]), d,
                               probs, f"ref{seed}:{s}", shapes) for s in range(samples)}
    return Objects(_columns([f"img{s:04d}" for s in range(samples)], [name], np.ones((samples, 1), bool), cells,
                            np.full((samples, 2), image)), shapes)


# --------------------------------------------------------------------------
# Label types from a box corpus
# --------------------------------------------------------------------------


def _shape_rows(obj: Objects) -> np.ndarray:
    data = obj.data
    if not len(data):
        return np.zeros((0, SHAPE_DIM))
    return np.stack([obj.shapes[i] for i in data.label_ids.tolist()])


def _polygons(boxes: np.ndarray, sh: np.ndarray) -> list:
    radius = 0.6 + 0.4 * sh[:, :8]  # (N, 8) star radii in half-box units
    cx = boxes[:, 0, None] + boxes[:, 2, None] * 0.5 * (1.0 + radius * np.cos(_ANGLES))
    cy = boxes[:, 1, None] + boxes[:, 3, None] * 0.5 * (1.0 + radius * np.sin(_ANGLES))
    return [[np.stack([x, y], axis=1)] for x, y in zip(cx, cy)]


def _grid(data: MultiRaterAnnotations, boxes: np.ndarray) -> MultiRaterAnnotations:
    return MultiRaterAnnotations(sample_ids=data.sample_ids, raters=data.raters, assigned=data.assigned, boxes=boxes,
                                 labels=data.labels, label_ids=data.label_ids, sample_index=data.sample_index,
                                 rater_index=data.rater_index, image_sizes=data.image_sizes)


def _masks(data: MultiRaterAnnotations, upscale: int = 1) -> list:
    """An ellipse over each box at its image's pixel size (``upscale``: every pixel a block of that side)."""
    out = []
    size = data.image_sizes[data.sample_index] if len(data) else np.zeros((0, 2))
    for b, (W, H) in zip(data.boxes, size):
        w, h = max(1, int(round(b[2] * W))), max(1, int(round(b[3] * H)))
        yy, xx = np.mgrid[0:h, 0:w]
        m = ((xx + 0.5 - w / 2) / (w / 2)) ** 2 + ((yy + 0.5 - h / 2) / (h / 2)) ** 2 <= 1.0
        m[h // 2, w // 2] = True  # never empty
        out.append(np.kron(m, np.ones((upscale, upscale), bool)) if upscale > 1 else m)
    return out


def _keypoints(boxes: np.ndarray, sh: np.ndarray) -> np.ndarray:
    u = 0.1 + 0.8 * sh[:, 6:6 + NUM_KEYPOINTS]
    v = 0.1 + 0.8 * sh[:, SHAPE_DIM - NUM_KEYPOINTS:]
    return np.stack([boxes[:, 0, None] + u * boxes[:, 2, None], boxes[:, 1, None] + v * boxes[:, 3, None]], axis=2)


def _three_d(kind: str, boxes: np.ndarray, sh: np.ndarray) -> dict:
    cx, cy = SCENE * (boxes[:, 0] + boxes[:, 2] / 2), SCENE * (boxes[:, 1] + boxes[:, 3] / 2)
    dx, dy = SCENE * boxes[:, 2], SCENE * boxes[:, 3]
    z = 2.0 * sh[:, 0]
    if kind == "3D points":
        return {"points3d": np.stack([cx, cy, z], axis=1)}
    if kind == "3D cuboids":
        dz = 1.0 + 2.0 * sh[:, 1]
        yaw = np.pi * (sh[:, 2] - 0.5) * 0.5
        zeros = np.zeros_like(cx)
        return {"cuboids": np.stack([cx, cy, z + dz / 2, dx, dy, dz, zeros, zeros, yaw], axis=1)}
    t = np.linspace(-0.5, 0.5, 5)  # a 5-point line along the footprint's diagonal, bent by the shape
    bend = (sh[:, 3:8] - 0.5) * 0.3
    lines = np.stack([cx[:, None] + dx[:, None] * t, cy[:, None] + dy[:, None] * (t + bend),
                      z[:, None] + 0.0 * t], axis=2)
    return {"polylines3d": [[ln] for ln in lines]}


def realise(obj: Objects, kind: str, upscale: int = 1) -> MultiRaterAnnotations:
    """The corpus of label type ``kind`` whose objects are the boxes of ``obj`` (module docstring);
    ``upscale``: image sizes multiplied by it (the same relative geometry at a higher resolution)."""
    data = obj.data
    sizes = data.image_sizes * upscale
    if kind == "boxes" and upscale == 1:
        return data
    sh = _shape_rows(obj)
    kw: dict = {}
    boxes = data.boxes
    if kind == "polygons":
        kw["polygons"] = _polygons(boxes, sh)
    elif kind == "instance masks":  # boxes on the pixel grid, so that the masks span them exactly
        W, H = (data.image_sizes[data.sample_index] if len(data) else np.ones((0, 2))).T
        boxes = np.stack([np.round(boxes[:, 0] * W) / W, np.round(boxes[:, 1] * H) / H,
                          np.maximum(np.round(boxes[:, 2] * W), 1) / W, np.maximum(np.round(boxes[:, 3] * H), 1) / H],
                         axis=1)
        boxes[:, 2:] = np.minimum(boxes[:, 2:], 1.0 - boxes[:, :2])
        kw["masks"] = _masks(_grid(data, boxes), upscale)
    elif kind == "keypoints":
        kw["keypoints"] = _keypoints(boxes, sh).reshape(len(data), NUM_KEYPOINTS, 2)
    elif kind in KINDS_3D:  # a 3D scene has no image size: as the bridge reads it (no chance strata)
        kw = _three_d(kind, boxes, sh)
        boxes = np.full_like(boxes, np.nan)
        sizes = np.full_like(sizes, np.nan)
    elif kind != "boxes":
        raise ValueError(f"unknown label type {kind!r}")
    return MultiRaterAnnotations(
        sample_ids=data.sample_ids, raters=data.raters, assigned=data.assigned, boxes=boxes, labels=data.labels,
        label_ids=data.label_ids, sample_index=data.sample_index, rater_index=data.rater_index,
        image_sizes=sizes, sample_names=data.sample_names, **kw)
