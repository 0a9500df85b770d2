"""Point-cloud segments given as point indices: their validation and the Jaccard index of their
point sets, for one pair and for every pair.

References:
    .. [Braylan2022] A. Braylan, O. Alonso and M. Lease, "Measuring Annotator
       Agreement Generally across Complex Structured, Multi-object, and Free-text
       Annotation Tasks", WWW 2022.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from numpy.typing import ArrayLike
from scipy import sparse

from agreement.core.arrays import unique_sorted
from agreement.core.validation import AnnotationError

# --------------------------------------------------------------------------
# Point-index segments
# --------------------------------------------------------------------------


def validate_segment_indices(indices: ArrayLike, num_points: int, where: str = "segment") -> np.ndarray:
    """Checks point indices of a segment and returns them as sorted unique int64.

    Args:
        indices (array-like of int): Indices into a point cloud of ``num_points`` points; duplicates are
            allowed (a segment is a set).
        num_points (int): Number of points of the cloud; non-negative.
        where (str, default="segment"): Names the segment in messages (sample, field, label).

    Returns:
        indices (ndarray of int64, sorted and unique): The segment's points.

    Raises:
        AnnotationError: On a non-integer index, or an index outside ``[0, num_points)``,
            naming ``where``, the index and the cloud size.
        ValueError: If ``num_points`` is negative or not an integer.
    """
    if isinstance(num_points, bool) or not isinstance(num_points, (int, np.integer)) or num_points < 0:
        raise ValueError(f"num_points must be a non-negative integer, got {num_points!r}")
    arr = np.asarray(indices)
    if arr.size == 0:
        return np.empty(0, dtype=np.int64)
    arr = arr.reshape(-1)
    if arr.dtype.kind == "f":
        bad = ~np.isfinite(arr) | (arr != np.round(arr))
        if bad.any():
            raise AnnotationError(f"{where}: point index {arr[bad][0]!r} is not an integer")
    elif arr.dtype.kind not in "iub":
        raise AnnotationError(f"{where}: point indices must be integers, got dtype {arr.dtype}")
    out_of_range = (arr < 0) | (arr >= num_points)
    if out_of_range.any():
        raise AnnotationError(
            f"{where}: point index {arr[out_of_range][0]!r} is out of range for a point cloud "
            f"of {num_points} points (valid: 0 to {num_points - 1})"
        )
    return unique_sorted(arr.astype(np.int64))


def segment_jaccard(indices_a: ArrayLike, indices_b: ArrayLike, num_points: int) -> float:
    r"""Jaccard index of two point-cloud segments given as point indices.

    .. math:: J(A, B) = \frac{|A \cap B|}{|A \cup B|}

    over the sets of point indices (duplicates ignored).

    Args:
        indices_a (array-like of int): Indices of the first segment's points in the point cloud.
        indices_b (array-like of int): Indices of the second segment's points in the same cloud.
        num_points (int): Number of points of the cloud; every index must be in ``[0, num_points)``.

    Returns:
        jaccard (float): In ``[0, 1]``: 1 for equal sets, 0 for disjoint ones. Two empty
            segments are identical and score 1, as identical zero-area boxes do
            in :mod:`agreement.geometry.boxes`; an empty segment against a
            non-empty one scores 0. Symmetric.

    Raises:
        AnnotationError: On an index out of range or not an integer (see
            :func:`validate_segment_indices`).

    References:
        .. [1] P. Jaccard, "The distribution of the flora in the alpine zone",
           New Phytologist 11(2), 37-50, 1912.

    Examples:
        >>> segment_jaccard([0, 1, 2, 3], [2, 3, 4], num_points=10)
        0.4
    """
    a = validate_segment_indices(indices_a, num_points, "segment a")
    b = validate_segment_indices(indices_b, num_points, "segment b")
    union = len(np.union1d(a, b))
    if union == 0:
        return 1.0
    return len(np.intersect1d(a, b, assume_unique=True)) / union


def pairwise_segment_jaccard(
    a: Sequence[ArrayLike], b: Sequence[ArrayLike], num_points: int
) -> np.ndarray:
    """:func:`segment_jaccard` of every pair of two lists of segments of one point cloud.

    Computed with sparse incidence matrices (segments by points):
    ``|A ∩ B|`` is their product, ``|A ∪ B| = |A| + |B| - |A ∩ B|``.

    Args:
        a (sequence of n index arrays): Segments, each as ``indices_a`` of :func:`segment_jaccard`.
        b (sequence of m index arrays): Segments of the same point cloud.
        num_points (int): Number of points of the cloud; every index must be in ``[0, num_points)``.

    Returns:
        jaccard (ndarray of shape (n, m), float64): In ``[0, 1]``, with two empty segments scoring 1.

    Raises:
        AnnotationError: On an index out of range, naming the segment.
    """

    def incidence(segments: Sequence[ArrayLike], name: str) -> sparse.csr_matrix:
        rows = [validate_segment_indices(idx, num_points, f"segment {name}[{k}]") for k, idx in enumerate(segments)]
        indptr = np.concatenate([[0], np.cumsum([len(r) for r in rows])]).astype(np.int64)
        indices = np.concatenate(rows) if rows else np.empty(0, dtype=np.int64)
        data = np.ones(len(indices))
        return sparse.csr_matrix((data, indices, indptr), shape=(len(segments), num_points))

    A, B = incidence(a, "a"), incidence(b, "b")
    inter = np.asarray((A @ B.T).todense(), dtype=np.float64).reshape(len(a), len(b))
    union = np.asarray(A.sum(axis=1)).reshape(-1, 1) + np.asarray(B.sum(axis=1)).reshape(1, -1) - inter
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(union > 0, inter / np.where(union > 0, union, 1.0), 1.0)
