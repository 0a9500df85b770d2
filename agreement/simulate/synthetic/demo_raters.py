"""Simulated raters for the demo, each with a distinct, documented profile.

Every rater sees the true objects of a scene (:mod:`agreement.simulate.synthetic.scenes`)
and turns them into their own annotations through the steps of a
:class:`RaterProfile`, in this order:

1. **assignment**: with probability ``1 - assignment_rate`` the rater is not
   assigned the image at all (implicit absence: no entry for this rater);
2. **misses**: each true object is dropped with probability ``miss_rate``, and
   additionally with probability ``small_miss_rate`` if its size
   ``sqrt(w * h)`` (relative, see :func:`~agreement.simulate.synthetic.scenes.box_sizes`)
   is below ``small_threshold``;
3. **box noise**: the centre moves by ``N(0, position_jitter)`` times the box's
   width / height, and width and height are multiplied by
   ``exp(N(0, size_jitter))`` independently;
4. **class confusion**: an object whose class is in one of the ``confusions``
   pairs gets the other class of the pair with probability ``confusion_rate``;
5. **false positives**: ``Poisson(false_positive_rate)`` spurious boxes of a
   random class, placed uniformly, with sizes like the true objects';
6. the boxes are clipped to the image (at least one pixel wide and high) and
   shuffled, so that a rater's order carries no information.

An assigned rater who keeps nothing gives an empty set: explicit absence.

The demo raters (:data:`DEMO_PROFILES`):

=================  ========  ======  ==========  ===========  ====================  ==========
name               assigned  misses  small-miss  pos / size   confusion             false pos.
                                                 jitter                             per image
=================  ========  ======  ==========  ===========  ====================  ==========
careful            100 %     1 %     --          1 % / 1 %    --                    0.02
sloppy             100 %     5 %     --          15 % / 15 %  --                    0.30
misses_small       100 %     3 %     85 %        4 % / 4 %    --                    0.05
confuses_classes   100 %     3 %     --          4 % / 4 %    circle↔ellipse, 60 %  0.05
part_time          ~67 %     3 %     --          4 % / 4 %    --                    0.05
=================  ========  ======  ==========  ===========  ====================  ==========

(``misses_small`` uses ``small_threshold = 0.06``, about COCO's 32 × 32 pixel
"small" at 640 × 480.)

Randomness: each (rater, image) cell draws from its own generator seeded with
``(seed, crc32(rater name), crc32(image name))``, so the result does not depend
on the order of the profiles or of the scenes, and adding a rater leaves the
others unchanged.

This module does not import FiftyOne.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from agreement.core.data import AnnotationSet, MultiRaterAnnotations
from agreement.simulate.synthetic.scenes import CLASSES, SIMILAR_CLASSES, Scene, box_sizes

__all__ = [
    "RaterProfile",
    "DEMO_PROFILES",
    "TRUTH_RATER",
    "simulate_rater",
    "simulate_demo_raters",
    "ground_truth",
]

TRUTH_RATER = "truth"
"""Rater name of :func:`ground_truth`."""


@dataclass(frozen=True)
class RaterProfile:
    """How a simulated rater deviates from the truth.

    Attributes:
        name: rater name (unique within a simulation).
        description: one line a person can read.
        assignment_rate: probability that the rater is assigned an image; an
            unassigned image is implicit absence.
        miss_rate: probability of dropping any true object.
        small_miss_rate: extra probability of dropping an object whose size
            ``sqrt(w * h)`` is below ``small_threshold``.
        small_threshold: relative size below which an object counts as small.
        position_jitter: standard deviation of the centre shift, as a fraction
            of the box's width (for x) and height (for y).
        size_jitter: standard deviation of the log of the width and height
            scale factors (0.15 is about ±15 %).
        confusions: pairs of classes the rater mixes up (both directions).
        confusion_rate: probability of giving an object of a confused class
            the other class of its pair.
        false_positive_rate: expected number of spurious boxes per assigned
            image (Poisson).
    """

    name: str
    description: str = ""
    assignment_rate: float = 1.0
    miss_rate: float = 0.0
    small_miss_rate: float = 0.0
    small_threshold: float = 0.06
    position_jitter: float = 0.0
    size_jitter: float = 0.0
    confusions: tuple[tuple[str, str], ...] = ()
    confusion_rate: float = 0.0
    false_positive_rate: float = 0.0

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("a rater profile needs a name")
        for attr in ("assignment_rate", "miss_rate", "small_miss_rate", "confusion_rate"):
            v = getattr(self, attr)
            if not 0.0 <= v <= 1.0:
                raise ValueError(f"profile {self.name!r}: {attr} must be in [0, 1], got {v}")
        for attr in ("small_threshold", "position_jitter", "size_jitter", "false_positive_rate"):
            v = getattr(self, attr)
            if not (np.isfinite(v) and v >= 0.0):
                raise ValueError(f"profile {self.name!r}: {attr} must be finite and >= 0, got {v}")
        pairs = tuple(tuple(p) for p in self.confusions)
        for p in pairs:
            if len(p) != 2 or p[0] == p[1]:
                raise ValueError(f"profile {self.name!r}: confusions must be pairs of distinct classes, got {p}")
        seen = [c for p in pairs for c in p]
        if len(seen) != len(set(seen)):
            raise ValueError(f"profile {self.name!r}: a class may appear in at most one confusion pair")
        object.__setattr__(self, "confusions", pairs)

    @property
    def swap_map(self) -> dict[str, str]:
        """``{class: confused class}`` in both directions of every pair."""
        out: dict[str, str] = {}
        for a, b in self.confusions:
            out[a], out[b] = b, a
        return out


DEMO_PROFILES: tuple[RaterProfile, ...] = (
    RaterProfile(
        name="careful",
        description="Near-perfect: tiny box jitter (~1 %), misses ~1 % of objects.",
        miss_rate=0.01,
        position_jitter=0.01,
        size_jitter=0.01,
        false_positive_rate=0.02,
    ),
    RaterProfile(
        name="sloppy",
        description="Finds the objects but draws loose boxes: ~15 % jitter of position and size.",
        miss_rate=0.05,
        position_jitter=0.15,
        size_jitter=0.15,
        false_positive_rate=0.3,
    ),
    RaterProfile(
        name="misses_small",
        description="Good boxes, but overlooks ~85 % of small objects (sqrt(w*h) < 0.06).",
        miss_rate=0.03,
        small_miss_rate=0.85,
        small_threshold=0.06,
        position_jitter=0.04,
        size_jitter=0.04,
        false_positive_rate=0.05,
    ),
    RaterProfile(
        name="confuses_classes",
        description="Good boxes, but labels circles as ellipses and vice versa 60 % of the time.",
        miss_rate=0.03,
        position_jitter=0.04,
        size_jitter=0.04,
        confusions=(SIMILAR_CLASSES,),
        confusion_rate=0.6,
        false_positive_rate=0.05,
    ),
    RaterProfile(
        name="part_time",
        description="Decent, but not assigned to about a third of the images (implicit absence).",
        assignment_rate=2.0 / 3.0,
        miss_rate=0.03,
        position_jitter=0.04,
        size_jitter=0.04,
        false_positive_rate=0.05,
    ),
)
"""The five demo raters; see the module docstring for a table."""


def _cell_rng(seed: int, rater: str, sample: str) -> np.random.Generator:
    """The generator of one (rater, image) cell, independent of any ordering."""
    return np.random.default_rng(
        np.random.SeedSequence([int(seed), zlib.crc32(rater.encode("utf-8")), zlib.crc32(sample.encode("utf-8"))])
    )


def _clip_boxes(boxes: np.ndarray, width: int, height: int) -> np.ndarray:
    """Clips relative ``[x, y, w, h]`` to the image, keeping at least one pixel."""
    min_w, min_h = 1.0 / width, 1.0 / height
    x0 = np.clip(boxes[:, 0], 0.0, 1.0 - min_w)
    y0 = np.clip(boxes[:, 1], 0.0, 1.0 - min_h)
    x1 = np.clip(boxes[:, 0] + boxes[:, 2], x0 + min_w, 1.0)
    y1 = np.clip(boxes[:, 1] + boxes[:, 3], y0 + min_h, 1.0)
    return np.stack([x0, y0, x1 - x0, y1 - y0], axis=1)


def simulate_rater(
    scene: Scene,
    profile: RaterProfile,
    *,
    seed: int = 0,
    classes: Sequence[str] = CLASSES,
) -> AnnotationSet | None:
    """One simulated rater's annotations on one scene.

    Args:
        scene: the scene with its true objects.
        profile: the rater's profile.
        seed: non-negative integer seed; the cell's generator also depends on
            the rater's and the scene's names.
        classes: classes that false positives are drawn from.

    Returns:
        ``None`` if the rater is not assigned the scene (implicit absence),
        otherwise the rater's possibly empty :class:`AnnotationSet` (label ids
        are ``None``).
    """
    rng = _cell_rng(seed, profile.name, scene.name)
    if not rng.random() < profile.assignment_rate:
        return None
    n = len(scene)
    # Fixed number of draws per object, so that one step's outcome does not
    # shift the random stream of the others.
    u_miss, u_small, u_conf = rng.random((3, n))
    noise = rng.standard_normal((4, n))

    small = box_sizes(scene.boxes) < profile.small_threshold
    keep = (u_miss >= profile.miss_rate) & ~(small & (u_small < profile.small_miss_rate))

    boxes = scene.boxes.copy()
    w, h = boxes[:, 2], boxes[:, 3]
    cx = boxes[:, 0] + w / 2 + noise[0] * profile.position_jitter * w
    cy = boxes[:, 1] + h / 2 + noise[1] * profile.position_jitter * h
    w = w * np.exp(noise[2] * profile.size_jitter)
    h = h * np.exp(noise[3] * profile.size_jitter)
    boxes = np.stack([cx - w / 2, cy - h / 2, w, h], axis=1)

    labels = scene.labels.copy()
    swap = profile.swap_map
    if swap:
        for i in range(n):
            if labels[i] in swap and u_conf[i] < profile.confusion_rate:
                labels[i] = swap[labels[i]]

    boxes, labels = boxes[keep], labels[keep]

    n_fp = int(rng.poisson(profile.false_positive_rate)) if profile.false_positive_rate > 0 else 0
    if n_fp:
        side = min(scene.width, scene.height)
        size = np.exp(rng.uniform(np.log(0.02 * side), np.log(0.3 * side), n_fp))
        aspect = np.exp(rng.uniform(-0.4, 0.4, n_fp))
        fw = size * aspect / scene.width
        fh = size / aspect / scene.height
        fx = rng.uniform(0.0, 1.0, n_fp) * (1.0 - fw)
        fy = rng.uniform(0.0, 1.0, n_fp) * (1.0 - fh)
        fl = np.empty(n_fp, dtype=object)
        fl[:] = [classes[int(k)] for k in rng.integers(len(classes), size=n_fp)]
        boxes = np.concatenate([boxes, np.stack([fx, fy, fw, fh], axis=1)])
        labels = np.concatenate([labels, fl])

    boxes = _clip_boxes(boxes.reshape(-1, 4), scene.width, scene.height)
    order = rng.permutation(len(boxes))
    return AnnotationSet(boxes[order], labels[order], np.full(len(boxes), None, dtype=object))


def _image_sizes(scenes: Sequence[Scene]) -> np.ndarray:
    return np.array([[s.width, s.height] for s in scenes], dtype=np.float64).reshape(-1, 2)


def simulate_demo_raters(
    scenes: Sequence[Scene],
    *,
    profiles: Sequence[RaterProfile] = DEMO_PROFILES,
    seed: int = 0,
) -> MultiRaterAnnotations:
    """Simulates every profile on every scene.

    Args:
        scenes: scenes from :func:`~agreement.simulate.synthetic.scenes.generate_scenes`.
        profiles: rater profiles with unique names (default: the five demo
            raters).
        seed: non-negative integer seed.

    Returns:
        A corpus with ``sample_ids`` = scene names and ``raters`` = profile
        names (sorted, as :class:`MultiRaterAnnotations` keeps them). An
        unassigned rater is implicit absence; an assigned rater who annotated
        nothing is explicit absence (an empty set). Image sizes are filled in.
        The result depends on ``seed`` and the profiles, not on their order.
    """
    names = [p.name for p in profiles]
    if len(set(names)) != len(names):
        raise ValueError(f"rater profile names must be unique: {names}")
    if seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed}")
    sets = []
    for scene in scenes:
        cell: dict[str, AnnotationSet | None] = {}
        for profile in profiles:
            aset = simulate_rater(scene, profile, seed=seed)
            if aset is not None:
                cell[profile.name] = aset
        sets.append(cell)
    return MultiRaterAnnotations.from_sets(
        [s.name for s in scenes], names, sets, image_sizes=_image_sizes(scenes)
    )


def ground_truth(scenes: Sequence[Scene], *, with_polygons: bool = False) -> MultiRaterAnnotations:
    """The true objects as a corpus with the single rater ``"truth"``.

    Every scene is assigned; a scene without objects is explicit absence.
    Useful as the reference field of the demo dataset.

    Args:
        scenes: the scenes.
        with_polygons: also attach the drawn polygons (relative coordinates,
            see :meth:`Scene.polygons`).
    """
    sets = [
        {
            TRUTH_RATER: AnnotationSet(
                s.boxes,
                s.labels,
                np.full(len(s), None, dtype=object),
                s.polygons() if with_polygons else None,
            )
        }
        for s in scenes
    ]
    return MultiRaterAnnotations.from_sets(
        [s.name for s in scenes], [TRUTH_RATER], sets, image_sizes=_image_sizes(scenes)
    )
