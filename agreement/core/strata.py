"""Chance strata: which samples a chance baseline may pair.

Every chance-corrected statistic of the library (αOT, geometry agreement's σ,
distance α and KS, calibration's expected disagreement) compares what raters
say on one sample with what they say on *another* sample, in relative
coordinates. That is a fair picture of chance only when the two samples put
labels of the same relative sizes on equal terms: a 30-frame segment is half
of a 60-frame clip and 0.5 % of a 6,000-frame one; an object of 100 px is a
large part of a 128 px image and a speck on a 4,096 px one. Within one sample
both raters' labels share its relative-size distribution; across samples of
very different scales they do not, and the baseline then rewards chance.

So the baselines pair only samples of the same *stratum*, samples of
comparable scale (docs/temporal-agreement.md, docs/method-geometry.md):

* :func:`scale_strata`: the rule, on any positive scale (a clip's frame
  count, an image's size);
* :func:`image_scales`: the scale of an image, the geometric mean
  ``sqrt(W H)`` of its sides;
* :func:`corpus_strata`: the strata of a corpus from what is known of it
  (frame counts for clips, image sizes for images), ``None`` when that is one
  stratum;
* :func:`chance_strata_of`: the ``strata`` argument of the pure library's
  functions resolved on a :class:`~agreement.core.data.MultiRaterAnnotations`
  (``"image_size"``, an array, or ``None``);
* :func:`stratum_ranks`: the strata as ``0 .. K - 1``.

This module does not import FiftyOne.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["STRATUM_FACTOR", "STRATUM_MIN_SIZE", "IMAGE_SIZE", "scale_strata", "image_scales", "corpus_strata",
           "chance_strata_of", "stratum_ranks"]

#: Default largest ratio of scales inside one chance stratum (:func:`scale_strata`).
STRATUM_FACTOR = 1.25
#: Default fewest samples of a chance stratum; a smaller one is merged with its nearest neighbour.
STRATUM_MIN_SIZE = 2
#: The ``strata`` value that asks a function to stratify by the corpus' image sizes (:func:`chance_strata_of`).
IMAGE_SIZE = "image_size"


def scale_strata(scales: ArrayLike, *, factor: float = STRATUM_FACTOR, min_size: int = STRATUM_MIN_SIZE) -> np.ndarray:
    r"""Chance strata of samples by scale: samples of comparable scale share a stratum.

    The rule (one-dimensional, on positive scales ``L``):

    1. the distinct scales are sorted; a stratum starts at the smallest scale ``L0`` not yet
       placed and takes every scale ``L <= factor * L0`` (within a stratum, the largest scale is
       at most ``factor`` times the smallest);
    2. while some stratum holds fewer than ``min_size`` samples (and there are two or more), the
       smallest (ties: the smaller scales) is merged with the neighbour nearer in log scale
       (the gap ``log(L_first / L_last)`` between their facing ends; ties: the smaller one);
    3. samples of unknown scale (NaN) join the stratum with the most samples (ties: the smaller
       scales).

    The rule is scale invariant (scales ``c L`` give the strata of ``L``: a frame rate or an image
    resolution changed for every sample changes nothing but rounding) and depends on the multiset
    of scales only (not on the order of the samples). A corpus whose scales are all within
    ``factor`` of each other is one stratum: its chance baselines are exactly those without
    strata.

    Args:
        scales: ``(S,)`` positive scales (frames, pixels, or any unit proportional to them); NaN
            where unknown.
        factor: largest scale ratio inside a stratum, ``>= 1``.
        min_size: fewest samples of a stratum, ``>= 1``.

    Returns:
        ``(S,)`` int64 stratum of each sample, ``0 .. K - 1`` in increasing scale.

    Raises:
        ValueError: a scale that is not positive, ``factor < 1`` or ``min_size < 1``.

    Reference: stratified chance baselines, as in stratified permutation tests (Good,
    *Permutation Tests*, 2nd ed., 2000, §3.5): exchange only within comparable units.
    """
    n = np.asarray(scales, dtype=np.float64).reshape(-1)
    if not (np.isfinite(factor) and factor >= 1.0):
        raise ValueError(f"factor must be a number >= 1, got {factor!r}")
    if isinstance(min_size, bool) or int(min_size) != min_size or min_size < 1:
        raise ValueError(f"min_size must be a positive integer, got {min_size!r}")
    known = np.isfinite(n)
    if (n[known] <= 0).any():
        raise ValueError("every scale must be positive (NaN where unknown)")
    out = np.zeros(len(n), np.int64)
    if not known.any():
        return out
    values, inv, count = np.unique(n[known], return_inverse=True, return_counts=True)
    # 1. greedy strata of the sorted distinct scales: each within ``factor`` of its first
    first = []
    i = 0
    while i < len(values):
        first.append(i)
        i = int(np.searchsorted(values, values[i] * factor, side="right"))
    bounds = first + [len(values)]
    lo, hi = list(bounds[:-1]), list(bounds[1:])  # stratum k: distinct scales lo[k] .. hi[k] - 1
    size = [int(count[a:b].sum()) for a, b in zip(lo, hi, strict=True)]
    # 2. merge strata too small to pair with their nearest neighbour in log scale
    while len(size) > 1 and min(size) < min_size:
        k = int(np.argmin(size))
        gaps = [np.log(values[lo[k]] / values[hi[k - 1] - 1]) if k > 0 else np.inf,
                np.log(values[lo[k + 1]] / values[hi[k] - 1]) if k + 1 < len(size) else np.inf]
        j = k - 1 if gaps[0] <= gaps[1] else k + 1
        a, b = min(j, k), max(j, k)
        lo[a:b + 1], hi[a:b + 1], size[a:b + 1] = [lo[a]], [hi[b]], [size[a] + size[b]]
    of_value = np.repeat(np.arange(len(size)), np.subtract(hi, lo))
    out[known] = of_value[inv.reshape(-1)]
    out[~known] = int(np.argmax(size))
    return out


def image_scales(image_sizes: ArrayLike | None, *, n: int | None = None) -> np.ndarray:
    r"""The scale of each image: the geometric mean of its sides, ``sqrt(W H)`` pixels.

    An object of ``a`` pixels covers ``a / (W H) = a / scale^2`` of its image, so images of one
    scale give objects of one pixel size the same relative area (what IoU-type similarities
    measure), whatever their orientation (``W x H`` and ``H x W`` share a scale) or aspect ratio.

    Args:
        image_sizes: ``(S, 2)`` ``(width, height)`` in pixels, NaN where unknown; ``None``: all unknown.
        n: the number of samples when ``image_sizes`` is ``None``.

    Returns:
        ``(S,)`` float scales, NaN where a side is unknown or not positive.
    """
    if image_sizes is None:
        return np.full(int(n or 0), np.nan)
    wh = np.asarray(image_sizes, dtype=np.float64).reshape(-1, 2)
    ok = np.isfinite(wh).all(axis=1) & (wh > 0).all(axis=1)
    with np.errstate(invalid="ignore"):
        return np.where(ok, np.sqrt(np.abs(wh[:, 0] * wh[:, 1])), np.nan)


def corpus_strata(*, image_sizes: ArrayLike | None = None, frame_counts: ArrayLike | None = None,
                  factor: float = STRATUM_FACTOR, min_size: int = STRATUM_MIN_SIZE) -> np.ndarray | None:
    """The chance strata of a corpus (:func:`scale_strata`): clips by frame count when ``frame_counts`` is
    given (temporal segments: relative time), otherwise images by :func:`image_scales`.

    A scale that is not finite or not positive counts as unknown (it joins the largest stratum).

    Returns:
        ``(S,)`` int64 strata, or ``None`` when the corpus is one stratum (every known scale within
        ``factor``, or none known): the chance baselines then join any two samples, exactly as without
        strata.
    """
    if frame_counts is not None:
        s = np.asarray(frame_counts, dtype=np.float64).reshape(-1)
        s = np.where(np.isfinite(s) & (s > 0), s, np.nan)
    else:
        s = image_scales(image_sizes)
    st = scale_strata(s, factor=factor, min_size=min_size)
    return None if not len(st) or st.max() == 0 else st


def chance_strata_of(data: Any, *, strata: ArrayLike | str | None = IMAGE_SIZE) -> np.ndarray | None:
    """The ``strata`` argument of a pure-library function resolved on its corpus ``data``.

    Args:
        data: a :class:`~agreement.core.data.MultiRaterAnnotations` (its ``image_sizes`` and
            ``num_samples`` are read).
        strata: ``"image_size"`` (:data:`IMAGE_SIZE`): images of comparable size
            (:func:`corpus_strata` of ``data.image_sizes``: ``None`` when one stratum, e.g. a
            corpus of one image size or of unknown sizes); an array: one integer per sample, as
            given; ``None``: one stratum.

    Returns:
        ``(S,)`` integers or ``None``.

    Raises:
        ValueError: an unknown string.
    """
    if strata is None:
        return None
    if isinstance(strata, str):
        if strata != IMAGE_SIZE:
            raise ValueError(f"strata must be {IMAGE_SIZE!r}, None or one integer per sample, got {strata!r}")
        return corpus_strata(image_sizes=data.image_sizes)
    return np.asarray(strata)


def stratum_ranks(strata: ArrayLike | None, S: int) -> np.ndarray:
    """The stratum of every one of ``S`` samples as ``0 .. K - 1`` (the rank of its value in ``strata``, one
    integer per sample); all 0 without strata.

    Raises:
        ValueError: a wrong length or values that are not integers.
    """
    if strata is None:
        return np.zeros(S, np.intp)
    arr = np.asarray(strata).reshape(-1)
    if len(arr) != S:
        raise ValueError(f"strata has {len(arr)} values for {S} samples: give one integer per sample")
    if arr.dtype.kind not in "iu":
        raise ValueError(f"strata must be integers (one per sample), got dtype {arr.dtype}")
    return np.unique(arr, return_inverse=True)[1].reshape(-1).astype(np.intp)
