r"""Temporal segments of videos as one-dimensional boxes in relative time.

A temporal segment is FiftyOne's ``TemporalDetection.support = [first, last]``:
frame numbers, 1-based and inclusive, of a clip of ``N`` frames. Frame ``k``
covers the time interval ``[(k - 1) / N, k / N)`` of the clip in *relative
time* ``t in [0, 1]``, so the segment covers ``[(first - 1) / N, last / N)``;
as a box of the data model (:mod:`agreement.core.data`: relative ``[x, y, w, h]``)

.. math::

    \operatorname{box}([f, l], N) = \left[\frac{f - 1}{N},\ 0,\ \frac{l - f + 1}{N},\ 1\right]

Every box spans the full height, so for two segments of the same clip

* box IoU is the temporal IoU exactly:
  :math:`|A \cap B| / |A \cup B|` in frames (:func:`temporal_iou`);
* box GIoU is the one-dimensional GIoU:
  :math:`IoU - |C \setminus (A \cup B)| / |C|`, ``C`` the smallest interval
  holding both;

and every method that measures boxes (OT and αOT, KαLOS, geometry agreement,
consensus) measures segments unchanged. Their chance baselines compare a set on
one sample with a set on another sample in the same relative coordinates; for
segments that means *mapped by relative time*, and only between clips of
comparable length (:func:`length_strata`: a 30-frame segment is half of a
60-frame clip and 0.5 % of a 6,000-frame one, so relative time compares such
clips unfairly). It does not depend on the frame rate: a clip resampled to
another rate keeps each segment's relative times up to the rounding of its
boundaries to whole frames (at most half a frame at each end,
:math:`1 / (2N)` in relative time), and scaling every length keeps the strata.

:func:`boxes_to_supports` is the inverse (a consensus segment back to frames):
``first = round(x N) + 1``, ``last = round((x + w) N)`` (halves rounded up),
clipped to ``[1, N]``, and ``last >= first``.

This module does not import FiftyOne.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
from numpy.typing import ArrayLike

from agreement.core.strata import STRATUM_FACTOR, STRATUM_MIN_SIZE, scale_strata
from agreement.core.validation import BOX_POLICIES, AnnotationError, RepairReport

__all__ = ["supports_to_boxes", "boxes_to_supports", "temporal_iou", "check_supports", "length_strata",
           "STRATUM_FACTOR", "STRATUM_MIN_SIZE"]


def _supports(supports: ArrayLike) -> np.ndarray:
    return np.asarray(supports, dtype=np.float64).reshape(-1, 2)


def _counts(frame_counts: ArrayLike, n: int) -> np.ndarray:
    counts = np.broadcast_to(np.asarray(frame_counts, dtype=np.float64), (n,)) if n else np.zeros(0)
    if n and (~np.isfinite(counts) | (counts < 1)).any():
        raise ValueError("every frame count must be a positive number of frames")
    return counts


def supports_to_boxes(supports: ArrayLike, frame_counts: ArrayLike) -> np.ndarray:
    """Segments ``[first, last]`` (frames, 1-based inclusive) as relative boxes ``[(first - 1) / N, 0,
    (last - first + 1) / N, 1]`` (module docstring).

    Args:
        supports: ``(n, 2)`` frame numbers; ``first <= last`` (see :func:`check_supports`).
        frame_counts: ``(n,)`` (or one) number of frames ``N >= 1`` of each segment's clip.

    Returns:
        ``(n, 4)`` float64 boxes in ``[0, 1]`` for supports within ``[1, N]``.
    """
    s = _supports(supports)
    n = _counts(frame_counts, len(s))
    boxes = np.empty((len(s), 4))
    boxes[:, 0] = (s[:, 0] - 1.0) / n if len(s) else 0.0
    boxes[:, 1] = 0.0
    boxes[:, 2] = (s[:, 1] - s[:, 0] + 1.0) / n if len(s) else 0.0
    boxes[:, 3] = 1.0
    return boxes


def boxes_to_supports(boxes: ArrayLike, frame_counts: ArrayLike) -> np.ndarray:
    """Relative boxes back to segments of frames: ``first = floor(x N + 1/2) + 1``, ``last = floor((x + w) N +
    1/2)``, both clipped to ``[1, N]``, and ``last = max(last, first)`` (a box shorter than a frame is the
    frame it starts in). The inverse of :func:`supports_to_boxes` on its boxes; ``y`` and ``h`` are ignored.

    Args:
        boxes: ``(n, 4)`` relative ``[x, y, w, h]``, finite.
        frame_counts: ``(n,)`` (or one) number of frames ``N >= 1``.

    Returns:
        ``(n, 2)`` int64 supports with ``1 <= first <= last <= N``.
    """
    b = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
    n = _counts(frame_counts, len(b))
    if not np.isfinite(b[:, [0, 2]]).all():
        raise ValueError("boxes must be finite to be turned into frame supports")
    first = np.clip(np.floor(b[:, 0] * n + 0.5) + 1.0, 1.0, n)
    last = np.clip(np.floor((b[:, 0] + b[:, 2]) * n + 0.5), 1.0, n)
    return np.stack([first, np.maximum(last, first)], axis=1).astype(np.int64)


def temporal_iou(a: ArrayLike, b: ArrayLike) -> np.ndarray:
    r"""Pairwise temporal IoU of segments of one clip, counted in frames.

    .. math:: IoU(A, B) = \frac{\max(0, \min(l_A, l_B) - \max(f_A, f_B) + 1)}{(l_A - f_A + 1) + (l_B - f_B + 1)
              - \max(0, \min(l_A, l_B) - \max(f_A, f_B) + 1)}

    Range ``[0, 1]``: 1 for the same frames, 0 for disjoint segments. Equal to the box IoU of
    :func:`supports_to_boxes` of both (the boxes span the full height); the tests use it as that oracle.

    Args:
        a: ``(n, 2)`` supports ``[first, last]``, ``first <= last``.
        b: ``(m, 2)`` supports.

    Returns:
        ``(n, m)`` float64.
    """
    a, b = _supports(a), _supports(b)
    inter = np.maximum(0.0, np.minimum(a[:, None, 1], b[None, :, 1]) - np.maximum(a[:, None, 0], b[None, :, 0]) + 1)
    union = (a[:, None, 1] - a[:, None, 0] + 1) + (b[None, :, 1] - b[None, :, 0] + 1) - inter
    jaccard: np.ndarray = inter / union
    return jaccard


def check_supports(
    supports: ArrayLike,
    frame_counts: ArrayLike,
    where: Callable[[int], str] | Sequence[str],
    *,
    policy: str = "clip",
    report: RepairReport | None = None,
    raters: ArrayLike | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Checks segments ``[first, last]`` against their clips' ``[1, N]`` frames; repairs or drops those outside.

    The temporal form of :func:`agreement.core.validation.check_boxes` (the same ``box_policy``, the same
    repair counts: ``clipped_boxes``, ``outside_boxes``, ``dropped_boxes`` count segments here, with
    messages in frames). Under every policy a missing or non-finite frame number, a fractional one, or
    ``first > last`` is an error. A segment reaching before frame 1 or past frame ``N`` is

    * ``"clip"``: clipped to ``[1, N]``; one entirely outside the clip becomes the one-frame segment at
      the end nearest to it (still that rater's annotation, so its disagreement is kept);
    * ``"drop"``: left out of the computation (the label in the dataset is untouched);
    * ``"error"``: refused.

    Args:
        supports: ``(n, 2)`` frame numbers (``NaN`` where a label has none).
        frame_counts: ``(n,)`` frames ``N >= 1`` of each segment's clip.
        where: locates segment ``i`` in messages (sample, field, rater, label): a sequence or a function.
        policy: ``"clip"``, ``"drop"`` or ``"error"``.
        report: collects the repairs, per rater.
        raters: ``n`` rater names, for the per-rater counts.

    Returns:
        ``(supports, keep)``: ``(n, 2)`` float64 supports within ``[1, N]`` (a copy when clipped) and the
        ``(n,)`` bool mask of those kept (all ``True`` except under ``"drop"``).

    Raises:
        AnnotationError: naming the first offending segment, its frames and the clip's length.
    """
    if policy not in BOX_POLICIES:
        raise ValueError(f"box_policy must be one of {BOX_POLICIES}, got {policy!r}")
    s = _supports(supports)
    n = np.asarray(frame_counts, dtype=np.float64).reshape(-1)
    keep = np.ones(len(s), dtype=bool)
    if not len(s):
        return s, keep
    at = where.__getitem__ if not callable(where) else where
    bad = ~np.isfinite(s).all(axis=1) | (s != np.round(s)).any(axis=1)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise AnnotationError(f"{at(i)}: a temporal segment needs a support [first, last] of two whole frame "
                              f"numbers, got {_frames(s[i])}")
    reversed_ = s[:, 0] > s[:, 1]
    if reversed_.any():
        i = int(np.flatnonzero(reversed_)[0])
        raise AnnotationError(f"{at(i)}: support {_frames(s[i])} starts after it ends (first frame > last "
                              f"frame; {int(reversed_.sum())} such segment(s) in all): write it as [first, last]")
    disjoint = (s[:, 1] < 1) | (s[:, 0] > n)
    outside = (s[:, 0] < 1) | (s[:, 1] > n)
    if not outside.any():
        return s, keep
    idx = np.flatnonzero(outside)
    if policy == "error":
        i = int(idx[0])
        what = "lies entirely outside" if disjoint[i] else "reaches outside"
        raise AnnotationError(
            f"{at(i)}: support {_frames(s[i])} {what} the video's frames [1, {int(n[i])}] ({len(idx)} such "
            "segment(s) in all); use box_policy='clip' to clip supports to the video's frames or "
            "box_policy='drop' to leave them out")
    rater_of = np.asarray(raters, dtype=object) if raters is not None else np.full(len(s), None, dtype=object)
    if policy == "drop":
        keep[idx] = False
        if report is not None:
            report.count("dropped_boxes", rater_of[idx])
            for i in idx[: report.max_examples]:
                report.example(f"{at(i)}: support {_frames(s[i])} outside the video's frames [1, {int(n[i])}], "
                               "dropped")
        return s, keep
    fixed = s.copy()
    fixed[:, 0] = np.clip(s[:, 0], 1, n)
    fixed[:, 1] = np.clip(s[:, 1], 1, n)
    if report is not None:
        report.count("clipped_boxes", rater_of[outside & ~disjoint])
        report.count("outside_boxes", rater_of[disjoint])
        for i in idx[: report.max_examples]:
            how = (f"entirely outside the video's frames [1, {int(n[i])}]: kept as the one-frame segment "
                   f"{_frames(fixed[i])}") if disjoint[i] else f"clipped to {_frames(fixed[i])} (video of {int(n[i])} frames)"
            report.example(f"{at(i)}: support {_frames(s[i])} {how}")
    return fixed, keep


def _frames(support: np.ndarray) -> str:
    return "[" + ", ".join("nan" if not np.isfinite(v) else f"{v:g}" for v in support) + "]"


def length_strata(frame_counts: ArrayLike, *, factor: float = STRATUM_FACTOR,
                  min_size: int = STRATUM_MIN_SIZE) -> np.ndarray:
    r"""Chance strata of clips by length: :func:`agreement.core.strata.scale_strata` of the frame counts.

    Segments are boxes in relative time, so a chance pair (a set of one clip against a set of
    another) compares them by relative time; between clips of very different lengths that pairs
    a 30-frame segment covering half of a 60-frame clip with one covering 0.5 % of a 6,000-frame
    clip, pairs that never occur within a clip. The chance baselines therefore pair only clips of
    the same stratum, clips of comparable length (docs/temporal-agreement.md): every length of a
    stratum within ``factor`` of its shortest, strata of fewer than ``min_size`` clips merged with
    the neighbour nearer in log length, unknown lengths (NaN) in the largest stratum. The same rule
    stratifies images by size (:func:`agreement.core.strata.image_scales`).

    Args:
        frame_counts: ``(S,)`` clip lengths (frames, or any unit proportional to duration);
            positive, NaN where unknown.
        factor: largest length ratio inside a stratum, ``>= 1``.
        min_size: fewest samples of a stratum, ``>= 1``.

    Returns:
        ``(S,)`` int64 stratum of each sample, ``0 .. K - 1`` in increasing length.

    Raises:
        ValueError: a length that is not positive, ``factor < 1`` or ``min_size < 1``.
    """
    return scale_strata(frame_counts, factor=factor, min_size=min_size)
