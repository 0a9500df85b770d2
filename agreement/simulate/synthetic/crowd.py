"""Synthetic crowd corpora: many raters, a few assigned per sample.

Crowdsourced annotation hands each image to ``k`` of ``R`` workers (``k``
around 10, ``R`` in the hundreds). This generator builds such a corpus
directly as :class:`~agreement.core.data.MultiRaterAnnotations`, fast enough for
benchmarks of hundreds of thousands of annotations:

* each sample has ``n ~ U{min_objects..max_objects}`` true boxes (relative
  ``[x, y, w, h]``, sides log-uniform in ``[0.03, 0.3]``) with a class from
  ``num_classes``;
* ``k = raters_per_sample`` distinct raters are drawn uniformly per sample
  (the others are not assigned: implicit absence);
* each assigned rater misses each object with probability ``miss``, draws it
  with Gaussian jitter of ``jitter`` × the box size on its centre and sides,
  relabels it with probability ``confusion``, and adds a false positive with
  probability ``false_positive`` (a random box): the :class:`CrowdNoise`.

Every box lies in the image (a corpus holds relative boxes in ``[0, 1]``;
boxes past the border are a FiftyOne dataset's matter, repaired by
``box_policy`` when it is read).

Everything is derived from ``seed``. This module does not import FiftyOne.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from agreement.core.data import MultiRaterAnnotations

__all__ = ["CrowdNoise", "crowd_corpus"]


@dataclass(frozen=True)
class CrowdNoise:
    """The noise of every rater of a crowd (module docstring).

    Attributes:
        miss: the probability of missing a true object, in ``[0, 1]``.
        jitter: the standard deviation of the Gaussian jitter of a drawn box's centre and sides, relative
            to its size (``>= 0``).
        confusion: the probability of relabelling a drawn object with a random class, in ``[0, 1]``.
        false_positive: the probability of adding one random box per assigned sample, in ``[0, 1]``.
    """

    miss: float = 0.15
    jitter: float = 0.05
    confusion: float = 0.05
    false_positive: float = 0.1


def _true_objects(rng: np.random.Generator, S: int, lo: int, hi: int, C: int):
    n = rng.integers(lo, hi + 1, size=S)
    N = int(n.sum())
    side = np.exp(rng.uniform(np.log(0.03), np.log(0.3), size=(N, 2)))
    xy = rng.uniform(0, 1, size=(N, 2)) * (1 - side)
    return n, np.concatenate([xy, side], axis=1), rng.integers(0, C, size=N)


def _draws(rng, boxes, classes, C, jitter, confusion):
    wh = boxes[:, 2:]
    centre = boxes[:, :2] + wh / 2 + rng.normal(0, jitter, size=wh.shape) * wh
    size = np.clip(wh * (1 + rng.normal(0, jitter, size=wh.shape)), 1e-3, 1)
    xy = np.clip(centre - size / 2, 0, 1 - size)
    out_cls = np.where(rng.random(len(classes)) < confusion, rng.integers(0, C, size=len(classes)), classes)
    return np.concatenate([xy, size], axis=1), out_cls


def crowd_corpus(
    num_samples: int,
    num_raters: int,
    *,
    raters_per_sample: int = 10,
    min_objects: int = 0,
    max_objects: int = 8,
    num_classes: int = 3,
    noise: CrowdNoise = CrowdNoise(),
    seed: int = 0,
) -> tuple[MultiRaterAnnotations, MultiRaterAnnotations]:
    """A crowd corpus and its truth (see the module docstring for the model).

    Args:
        num_samples: S samples.
        num_raters: R raters in all (names ``w000``, ``w001``, ...).
        raters_per_sample: k raters assigned per sample, ``2 <= k <= R``.
        min_objects: the fewest true objects of a sample.
        max_objects: the most true objects of a sample.
        num_classes: classes ``c0``, ``c1``, ...
        noise: the raters' :class:`CrowdNoise`.
        seed: the random seed.

    Returns:
        ``(corpus, truth)``: the raters' annotations and a single-rater
        corpus ``"truth"`` of the true objects; both with 640 × 480 image sizes.
    """
    if not 2 <= raters_per_sample <= num_raters:
        raise ValueError(f"need 2 <= raters_per_sample <= num_raters, got {raters_per_sample} of {num_raters}")
    rng = np.random.default_rng(seed)
    S, R, k, C = int(num_samples), int(num_raters), int(raters_per_sample), int(num_classes)
    n, true_boxes, true_cls = _true_objects(rng, S, min_objects, max_objects, C)
    obj_sample = np.repeat(np.arange(S), n)
    # k distinct raters per sample: the k smallest of R uniform keys
    assigned_raters = np.argsort(rng.random((S, R)), axis=1)[:, :k]
    assigned = np.zeros((S, R), dtype=bool)
    np.put_along_axis(assigned, assigned_raters, True, axis=1)
    # every (assigned rater, object of the sample) combination, then misses
    starts = np.concatenate([[0], np.cumsum(n)[:-1]])
    block = n * k  # per sample, n_s objects x k rater slots, row-major by object
    s_of = np.repeat(np.arange(S), block)
    local = np.arange(int(block.sum())) - np.repeat(np.cumsum(block) - block, block)
    obj = np.repeat(starts, block) + local // k
    rater = np.sort(assigned_raters, axis=1)[s_of, local % k]
    keep = rng.random(len(obj)) >= noise.miss
    obj, rater, s_of = obj[keep], rater[keep], s_of[keep]
    boxes, cls = _draws(rng, true_boxes[obj], true_cls[obj], C, noise.jitter, noise.confusion)
    # false positives: per assigned (sample, rater), one random box with probability false_positive
    fs, fr = np.nonzero(assigned)
    fp = rng.random(len(fs)) < noise.false_positive
    fs, fr = fs[fp], fr[fp]
    fp_side = np.exp(rng.uniform(np.log(0.03), np.log(0.3), size=(len(fs), 2)))
    fp_boxes = np.concatenate([rng.uniform(0, 1, size=(len(fs), 2)) * (1 - fp_side), fp_side], axis=1)
    boxes = np.concatenate([boxes, fp_boxes])
    cls = np.concatenate([cls, rng.integers(0, C, size=len(fs))])
    s_idx = np.concatenate([s_of, fs])
    r_idx = np.concatenate([rater, fr])
    names = np.array([f"c{c}" for c in range(C)], dtype=object)
    raters = tuple(f"w{r:03d}" for r in range(R))
    ids = np.array([f"a{i}" for i in range(len(boxes))], dtype=object)
    sample_ids = np.array([f"s{s:06d}" for s in range(S)], dtype=object)
    sizes = np.tile([640.0, 480.0], (S, 1))
    corpus = MultiRaterAnnotations(
        sample_ids=sample_ids, raters=raters, assigned=assigned, boxes=boxes, labels=names[cls],
        label_ids=ids, sample_index=s_idx, rater_index=r_idx, image_sizes=sizes,
    )
    truth = MultiRaterAnnotations(
        sample_ids=sample_ids, raters=("truth",), assigned=np.ones((S, 1), dtype=bool), boxes=true_boxes,
        labels=names[true_cls], label_ids=np.array([f"t{i}" for i in range(len(true_boxes))], dtype=object),
        sample_index=obj_sample, rater_index=np.zeros(len(true_boxes), dtype=np.intp), image_sizes=sizes,
    )
    return corpus, truth
