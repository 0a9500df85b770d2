"""3D points: Euclidean distance and Gaussian (radial-basis) similarity of every pair of points,
in scene units.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

# --------------------------------------------------------------------------
# 3D points
# --------------------------------------------------------------------------


def _as_points(points: ArrayLike, name: str) -> np.ndarray:
    arr = np.asarray(points, dtype=np.float64)
    if arr.ndim == 1 and arr.size == 0:
        return arr.reshape(0, 3)
    if arr.ndim != 2 or arr.shape[1] != 3:
        raise ValueError(f"{name} must be an (n, 3) array of [x, y, z] points; got an array of shape {arr.shape}")
    return arr


def pairwise_point_distance(p: ArrayLike, q: ArrayLike) -> np.ndarray:
    r"""Euclidean distance between every pair of 3D points.

    .. math:: d(p, q) = \lVert p - q \rVert_2

    Args:
        p (array-like of shape (n, 3)): Points ``[x, y, z]`` in scene units.
        q (array-like of shape (m, 3)): Points ``[x, y, z]`` in the same units.

    Returns:
        distance (ndarray of shape (n, m), float64): In ``[0, inf)`` scene units; 0 for equal points. Symmetric.

    Examples:
        >>> pairwise_point_distance([[0, 0, 0]], [[3, 4, 0], [0, 0, 0]]).tolist()
        [[5.0, 0.0]]
    """
    p, q = _as_points(p, "p"), _as_points(q, "q")
    d = p[:, None, :] - q[None, :, :]
    distance: np.ndarray = np.sqrt(np.einsum("nmk,nmk->nm", d, d))
    return distance


def pairwise_point_similarity(p: ArrayLike, q: ArrayLike, scale: float = 2.0) -> np.ndarray:
    r"""Gaussian similarity of every pair of 3D points, with a falloff scale.

    .. math:: s(p, q) = \exp\!\left(-\frac{\lVert p - q \rVert^2}{2\,\mathrm{scale}^2}\right)

    a radial-basis similarity like the keypoint similarity of COCO's OKS with
    a fixed scale: 1 at distance 0, :math:`e^{-1/2} \approx 0.61` at one
    ``scale``, :math:`e^{-2} \approx 0.14` at two, tending to 0 far away.

    Args:
        p (array-like of shape (n, 3)): Points ``[x, y, z]`` in scene units.
        q (array-like of shape (m, 3)): Points ``[x, y, z]`` in the same units.
        scale (float, default=2.0): Falloff in scene units (2 m for LiDAR scenes in metres); positive.

    Returns:
        similarity (ndarray of shape (n, m), float64): In ``(0, 1]`` (0 only after underflow, for points hundreds of
            scales apart). Symmetric; invariant to a common rigid motion.

    Raises:
        ValueError: On a wrong shape or a non-positive or non-finite ``scale``.

    References:
        .. [1] T.-Y. Lin et al., "Microsoft COCO: Common Objects in Context",
           ECCV 2014 (object keypoint similarity).
        .. [2] A. Braylan, O. Alonso and M. Lease, WWW 2022 (any distance with a
           chance baseline).

    Examples:
        >>> pairwise_point_similarity([[0, 0, 0]], [[0, 0, 0], [2, 0, 0]]).round(6).tolist()
        [[1.0, 0.606531]]
    """
    if not (np.isfinite(scale) and scale > 0):
        raise ValueError(f"scale must be a positive finite number, got {scale!r}")
    d = pairwise_point_distance(p, q)
    d *= d
    d *= -0.5 / (scale * scale)
    similarity: np.ndarray = np.exp(d, out=d)
    return similarity
