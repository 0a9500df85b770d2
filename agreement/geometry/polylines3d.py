"""3D polylines: boundary F1 within a distance tolerance (the share of each polyline's length within
the tolerance of the other, and their harmonic mean), for one pair and for every pair.

References:
    .. [Csurka2013] G. Csurka, D. Larlus and F. Perronnin, "What is a good
       evaluation measure for semantic segmentation?", BMVC 2013 (boundary F1).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from numpy.typing import ArrayLike

# --------------------------------------------------------------------------
# 3D polylines
# --------------------------------------------------------------------------


def _as_shapes(polyline: ArrayLike | Sequence[ArrayLike], name: str) -> list[np.ndarray]:
    """A polyline as a list of ``(k, 3)`` vertex arrays (FiftyOne's ``points3d``)."""
    arr = None
    try:
        arr = np.asarray(polyline, dtype=np.float64)
    except (ValueError, TypeError):
        pass  # ragged: a list of shapes
    if arr is not None and arr.ndim == 2:
        shapes = [arr]
    elif arr is not None and arr.ndim == 3:
        shapes = list(arr)
    else:
        shapes = [np.asarray(s, dtype=np.float64) for s in polyline]  # type: ignore[union-attr]
    out = []
    for k, s in enumerate(shapes):
        if s.ndim != 2 or s.shape[1] != 3:
            raise ValueError(f"{name}: shape {k} must be a (k, 3) array of [x, y, z] vertices; got {s.shape}")
        if not np.all(np.isfinite(s)):
            raise ValueError(f"{name}: shape {k} has NaN or infinite coordinates")
        if len(s):
            out.append(s)
    if not out:
        raise ValueError(f"{name} has no vertices")
    return out


def _segments(shapes: list[np.ndarray], closed: bool) -> tuple[np.ndarray, np.ndarray]:
    """Start points and direction vectors of all segments; a lone vertex is a zero-length segment."""
    starts, dirs = [], []
    for s in shapes:
        if len(s) == 1:
            starts.append(s)
            dirs.append(np.zeros_like(s))
            continue
        ends = np.vstack([s[1:], s[:1]]) if closed and len(s) > 2 else s[1:]
        starts.append(s[: len(ends)])
        dirs.append(ends - s[: len(ends)])
    return np.vstack(starts), np.vstack(dirs)


def _samples(starts: np.ndarray, dirs: np.ndarray, spacing: float) -> tuple[np.ndarray, np.ndarray]:
    """Midpoints of sub-pieces of length <= spacing along the segments, with their lengths as weights.

    A zero-length polyline gives its vertices with weight 1 each.
    """
    lengths = np.linalg.norm(dirs, axis=1)
    if lengths.sum() == 0:
        return starts, np.ones(len(starts))
    pieces = np.maximum(np.ceil(lengths / spacing), 1).astype(np.int64)
    pieces[lengths == 0] = 0
    seg = np.repeat(np.arange(len(starts)), pieces)
    first = np.cumsum(pieces) - pieces
    k = np.arange(pieces.sum()) - np.repeat(first, pieces)
    t = (k + 0.5) / pieces[seg]
    return starts[seg] + t[:, None] * dirs[seg], (lengths / np.maximum(pieces, 1))[seg]


def _distance_to_segments(points: np.ndarray, starts: np.ndarray, dirs: np.ndarray) -> np.ndarray:
    """Exact Euclidean distance from each point to the nearest segment, ``(n,)``."""
    out = np.empty(len(points))
    len2 = np.einsum("sk,sk->s", dirs, dirs)
    safe = np.where(len2 > 0, len2, 1.0)
    block = max(1, (1 << 16) // max(len(starts), 1))
    for lo in range(0, len(points), block):
        p = points[lo : lo + block, None, :] - starts[None, :, :]  # (b, s, 3)
        t = np.clip(np.einsum("bsk,sk->bs", p, dirs) / safe, 0.0, 1.0)
        r = p - t[:, :, None] * dirs[None, :, :]
        out[lo : lo + block] = np.sqrt(np.einsum("bsk,bsk->bs", r, r).min(axis=1))
    return out


def polyline_boundary_f1(
    a: ArrayLike | Sequence[ArrayLike],
    b: ArrayLike | Sequence[ArrayLike],
    tolerance: float,
    closed_a: bool = False,
    closed_b: bool = False,
    spacing: float | None = None,
) -> float:
    r"""Boundary F1 of two 3D polylines within a distance tolerance.

    Precision is the share of the length of ``a`` that lies within
    ``tolerance`` of ``b``, recall the share of the length of ``b`` within
    ``tolerance`` of ``a``, and the score their harmonic mean:

    .. math::

        P = \frac{|\{x \in a : d(x, b) \le t\}|}{|a|},\quad
        R = \frac{|\{y \in b : d(y, a) \le t\}|}{|b|},\quad
        F_1 = \frac{2 P R}{P + R}\ (0 \text{ when } P + R = 0)

    with :math:`|\cdot|` arc length and :math:`d` the exact Euclidean
    distance in 3D from a point to the other polyline's segments. The
    lengths are measured by the midpoint rule on pieces of length at most
    ``spacing`` (default ``tolerance / 4``), so the estimate is within about
    ``spacing / |a|`` of the continuous share. A polyline of zero length (one
    vertex, or repeated vertices) counts its vertices instead of its length.

    Args:
        a (array-like of shape (k, 3), or a sequence of such): Vertices ``[x, y, z]``; a sequence of arrays is one
            polyline made of several shapes (FiftyOne's ``Polyline.points3d``).
        b (array-like of shape (k, 3), or a sequence of such): The other polyline, as ``a``.
        tolerance (float): Distance within which a point counts as matched, in scene units; positive.
        closed_a (bool, default=False): Whether each shape of ``a`` closes back to its first vertex.
        closed_b (bool, default=False): Whether each shape of ``b`` closes back to its first vertex.
        spacing (float, optional): Sampling step along the segments; default ``tolerance / 4``.

    Returns:
        f1 (float): In ``[0, 1]``: 1 when each polyline lies within ``tolerance`` of the
            other (identical polylines in particular), 0 when no part does.
            Symmetric (swapping ``a`` and ``b`` swaps P and R); invariant to a
            common rigid motion.

    Raises:
        ValueError: On a wrong shape, non-finite coordinates, an empty polyline, or a
            non-positive tolerance or spacing.

    References:
        .. [1] D. R. Martin, C. C. Fowlkes and J. Malik, "Learning to Detect
           Natural Image Boundaries Using Local Brightness, Color, and Texture
           Cues", IEEE TPAMI 26(5), 530-549, 2004 (boundary precision/recall).
        .. [2] G. Csurka, D. Larlus and F. Perronnin, "What is a good evaluation
           measure for semantic segmentation?", BMVC 2013 (BF score).

    Examples:
        >>> a = [[0, 0, 0], [10, 0, 0]]
        >>> polyline_boundary_f1(a, [[0, 0, 0.1], [10, 0, 0.1]], tolerance=0.5)
        1.0
        >>> round(polyline_boundary_f1(a, [[0, 0, 0], [5, 0, 0]], tolerance=0.5), 3)  # P = 0.55, R = 1
        0.71
    """
    step = _check_step(tolerance, spacing)
    return _f1(_prepared(a, "a", closed_a, step), _prepared(b, "b", closed_b, step), tolerance)


def _check_step(tolerance: float, spacing: float | None) -> float:
    """The sampling step (default ``tolerance / 4``), after checking both are positive and finite."""
    if not (np.isfinite(tolerance) and tolerance > 0):
        raise ValueError(f"tolerance must be a positive finite number, got {tolerance!r}")
    step = tolerance / 4.0 if spacing is None else float(spacing)
    if not (np.isfinite(step) and step > 0):
        raise ValueError(f"spacing must be a positive finite number, got {spacing!r}")
    return step


def _prepared(polyline: ArrayLike | Sequence[ArrayLike], name: str, closed: bool, step: float) -> tuple:
    """A polyline's segments, its length samples with their weights, and its bounding box."""
    shapes = _as_shapes(polyline, name)
    starts, dirs = _segments(shapes, closed)
    points, weights = _samples(starts, dirs, step)
    every = np.vstack(shapes)
    return starts, dirs, points, weights, every.min(axis=0), every.max(axis=0)


def _f1(a: tuple, b: tuple, tolerance: float) -> float:
    """Boundary F1 of two prepared polylines (:func:`_prepared`)."""
    sa, da, pa, wa = a[:4]
    sb, db, pb, wb = b[:4]
    precision = float(np.sum(wa[_distance_to_segments(pa, sb, db) <= tolerance]) / np.sum(wa))
    recall = float(np.sum(wb[_distance_to_segments(pb, sa, da) <= tolerance]) / np.sum(wb))
    if precision + recall == 0:
        return 0.0
    return min(1.0, 2.0 * precision * recall / (precision + recall))

def pairwise_polyline_boundary_f1(
    a: Sequence[ArrayLike | Sequence[ArrayLike]],
    b: Sequence[ArrayLike | Sequence[ArrayLike]],
    tolerance: float,
    closed_a: bool | Sequence[bool] = False,
    closed_b: bool | Sequence[bool] = False,
    spacing: float | None = None,
) -> np.ndarray:
    """:func:`polyline_boundary_f1` of every pair of two lists of 3D polylines.

    Args:
        a (sequence of n polylines): Each as ``a`` of :func:`polyline_boundary_f1`.
        b (sequence of m polylines): Each as ``b`` of :func:`polyline_boundary_f1`.
        tolerance: As in :func:`polyline_boundary_f1`.
        closed_a (bool or sequence of bool): One flag for all polylines of ``a``, or one per polyline.
        closed_b (bool or sequence of bool): One flag for all polylines of ``b``, or one per polyline.
        spacing: As in :func:`polyline_boundary_f1`.

    Returns:
        f1 (ndarray of shape (n, m), float64): In ``[0, 1]``.
    """
    step = _check_step(tolerance, spacing)
    ca = [closed_a] * len(a) if isinstance(closed_a, (bool, np.bool_)) else list(closed_a)
    cb = [closed_b] * len(b) if isinstance(closed_b, (bool, np.bool_)) else list(closed_b)
    prep_a = [_prepared(p, "a", bool(c), step) for p, c in zip(a, ca, strict=True)]
    prep_b = [_prepared(p, "b", bool(c), step) for p, c in zip(b, cb, strict=True)]
    out = np.zeros((len(a), len(b)))
    if not len(a) or not len(b):
        return out
    # two polylines whose bounding boxes are further apart than the tolerance share no point within it: F1 = 0
    lo_a, hi_a = np.array([p[4] for p in prep_a]), np.array([p[5] for p in prep_a])
    lo_b, hi_b = np.array([p[4] for p in prep_b]), np.array([p[5] for p in prep_b])
    gap = np.maximum(lo_a[:, None, :] - hi_b[None, :, :], 0) + np.maximum(lo_b[None, :, :] - hi_a[:, None, :], 0)
    near = np.einsum("ijk,ijk->ij", gap, gap) <= tolerance * tolerance
    for i, j in zip(*np.nonzero(near), strict=True):
        out[i, j] = _f1(prep_a[i], prep_b[j], tolerance)
    return out
