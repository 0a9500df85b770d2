r"""Object keypoint similarity (OKS) between keypoint annotations, all pairs.

A keypoint annotation is a ``(K, 2)`` array of relative ``(x, y)`` points
(FiftyOne's ``Keypoint.points``), with NaN for a point that is not labelled
(missing, or not visible and not annotated). A set of ``n`` annotations is
an ``(n, K, 2)`` array.

COCO's OKS
----------
COCO's keypoint evaluation (``COCOeval.computeOks`` in pycocotools, after
Lin et al., 2014) compares a detection :math:`d` to a ground truth :math:`g`
with

.. math::

    \mathrm{OKS}(d, g) = \frac{1}{|V_g|} \sum_{k \in V_g}
        \exp\!\Bigl(-\frac{\lVert d_k - g_k \rVert^2}{2\, s\, \kappa_k^2}\Bigr),
    \qquad \kappa_k = 2\sigma_k,

where :math:`V_g` are the keypoints labelled in the ground truth, distances
are in pixels, :math:`s` is the ground truth's area in pixels (its segment
area; pycocotools adds ``np.spacing(1)`` to it) and :math:`\sigma_k` the
per-keypoint constants (:data:`COCO_PERSON_SIGMAS` for the 17 COCO person
keypoints).

Symmetric OKS between two annotators
------------------------------------
Between two annotators neither is the ground truth, and either may have left
a point unlabelled. This module uses

.. math::

    \mathrm{OKS}(A, B) = \frac{1}{|V_A \cup V_B|} \sum_{k \in V_A \cap V_B}
        \exp\!\Bigl(-\frac{\lVert a_k - b_k \rVert^2}{2\, s\, \kappa_k^2}\Bigr),
    \qquad s = \tfrac12 (s_A + s_B):

a point labelled by both contributes COCO's per-keypoint similarity, a point
labelled by only one of them contributes 0 (one annotator saw a joint the
other did not: full disagreement on that joint), and a point labelled by
neither is ignored. The scale is the mean of the two objects' areas. The
measure is symmetric, lies in ``[0, 1]``, is 1 exactly when both label the
same points at the same places, and equals COCO's OKS whenever both label
the same points and have the same area. (The KαLOS reference tool treats
visibility mismatches the same way in its keypoint similarity.)

An annotation with **no labelled point** has no location to compare; it is
an error (a :class:`ValueError` naming it) rather than a made-up value.

Areas: COCO uses the object's segment area. When only boxes are known, pass
the boxes; their area in pixels is used (an upper bound on the segment area,
which makes OKS somewhat more lenient than COCO's).

Image size: distances and areas are in pixels of the ``(W, H)`` image. OKS is
invariant to scaling both axes by the same factor (numerator and
denominator are both squared lengths), but not to different factors, so an
unknown image size (``None``) means a square image: relative coordinates
are used as they are.

References:
    .. [Lin2014] T.-Y. Lin et al., "Microsoft COCO: Common Objects in Context",
       ECCV 2014; keypoint evaluation: https://cocodataset.org/#keypoints-eval
       and ``pycocotools.cocoeval.COCOeval.computeOks``.
    .. [Tschirschwitz] D. Tschirschwitz and V. Rodehorst, "KαLOS finds Consensus:
       A Meta-Algorithm for Evaluating Inter-Annotator Agreement in Complex
       Vision Tasks".
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["COCO_PERSON_KEYPOINTS", "COCO_PERSON_SIGMAS", "keypoint_scales", "pairwise_oks"]

#: Names of the 17 COCO person keypoints, in COCO's order.
COCO_PERSON_KEYPOINTS: tuple[str, ...] = (
    "nose", "left_eye", "right_eye", "left_ear", "right_ear",
    "left_shoulder", "right_shoulder", "left_elbow", "right_elbow",
    "left_wrist", "right_wrist", "left_hip", "right_hip",
    "left_knee", "right_knee", "left_ankle", "right_ankle",
)

#: Per-keypoint constants σ of the 17 COCO person keypoints (pycocotools'
#: ``kpt_oks_sigmas``), in the order of :data:`COCO_PERSON_KEYPOINTS`.
COCO_PERSON_SIGMAS: np.ndarray = np.array(
    [0.26, 0.25, 0.25, 0.35, 0.35, 0.79, 0.79, 0.72, 0.72, 0.62, 0.62, 1.07, 1.07, 0.87, 0.87, 0.89, 0.89]
) / 10.0
COCO_PERSON_SIGMAS.setflags(write=False)


def _as_keypoints(kps: ArrayLike, name: str) -> np.ndarray:
    arr = np.asarray(kps, dtype=np.float64)
    if arr.ndim != 3 or arr.shape[2] != 2:
        raise ValueError(f"{name} must be an (n, K, 2) array of relative (x, y) points; got shape {arr.shape}")
    if np.isinf(arr).any():
        raise ValueError(f"{name} has infinite coordinates (use NaN for missing points)")
    return arr


def _image_scale(image_size: tuple[float, float] | None) -> np.ndarray:
    if image_size is None:
        return np.ones(2)
    size = np.asarray(image_size, dtype=np.float64)
    if size.shape != (2,) or not np.all(np.isfinite(size)) or not np.all(size > 0):
        raise ValueError(
            "image_size must be (width, height) in pixels, two positive finite numbers, "
            f"or None when unknown; got {image_size!r}"
        )
    return size


def keypoint_scales(areas_or_boxes: ArrayLike, n: int, *, image_size: tuple[float, float] | None = None) -> np.ndarray:
    r"""Object scales ``s`` for OKS: areas in pixels, given directly or as boxes.

    Args:
        areas_or_boxes (array-like of shape (n,) or (n, 4)): Object areas in (squared) pixels of ``image_size``, or
            relative ``[x, y, w, h]`` boxes whose area :math:`wW \cdot hH` is used.
        n (int): Number of objects.
        image_size ((width, height) or None): ``None``: a unit square (box areas stay relative).

    Returns:
        s (ndarray of shape (n,), float64, non-negative): The object areas in pixels.

    Raises:
        ValueError: For a wrong shape or negative or non-finite values.
    """
    v = np.asarray(areas_or_boxes, dtype=np.float64)
    if v.ndim == 2 and v.shape == (n, 4):
        W, H = _image_scale(image_size)
        s = v[:, 2] * W * v[:, 3] * H
    elif v.shape == (n,):
        s = v
    elif v.size == 0 and n == 0:
        s = np.zeros(0)
    else:
        raise ValueError(f"areas must have shape ({n},) or be boxes of shape ({n}, 4); got {v.shape}")
    if not np.isfinite(s).all() or (s < 0).any():
        raise ValueError("object areas must be finite and non-negative")
    scales: np.ndarray = s
    return scales


def _checked_sigmas(sigmas: ArrayLike | None, K: int) -> np.ndarray:
    """Per-keypoint σ of :func:`pairwise_oks` as ``(K,)`` float64 (default :data:`COCO_PERSON_SIGMAS`, then
    ``K`` must be 17); ``ValueError`` unless ``K`` positive finite numbers."""
    if sigmas is None:
        if K != len(COCO_PERSON_SIGMAS):
            raise ValueError(
                f"the default sigmas are COCO's 17 person keypoints; give sigmas for K = {K} keypoints"
            )
        sigmas = COCO_PERSON_SIGMAS
    sig = np.asarray(sigmas, dtype=np.float64).reshape(-1)
    if sig.shape != (K,) or not np.all(np.isfinite(sig)) or not np.all(sig > 0):
        raise ValueError(f"sigmas must be {K} positive finite numbers; got {sigmas!r}")
    return sig


def _labelled(kps: np.ndarray, name: str) -> np.ndarray:
    """``(n, K)``: which points of each annotation are labelled (not NaN); ``ValueError`` naming the
    annotations with no labelled point (OKS is undefined for them)."""
    v = ~np.isnan(kps).any(axis=2)
    empty = np.flatnonzero(~v.any(axis=1))
    if len(empty):
        raise ValueError(
            f"{name}: annotations {empty[:5].tolist()} have no labelled keypoint (all NaN); "
            "OKS is undefined for them"
        )
    labelled: np.ndarray = v
    return labelled


def pairwise_oks(
    kps_a: ArrayLike,
    kps_b: ArrayLike,
    areas_a: ArrayLike,
    areas_b: ArrayLike,
    *,
    sigmas: ArrayLike | None = None,
    image_size: tuple[float, float] | None = None,
) -> np.ndarray:
    r"""Symmetric object keypoint similarity of two keypoint annotation sets, all pairs.

    .. math::

        \mathrm{OKS}(A, B) = \frac{1}{|V_A \cup V_B|} \sum_{k \in V_A \cap V_B}
            \exp\!\Bigl(-\frac{d_k^2}{2\, s\, (2\sigma_k)^2}\Bigr),
        \qquad s = \tfrac12 (s_A + s_B) + \epsilon

    with :math:`V` the labelled (non-NaN) points, :math:`d_k` the distance
    between the two annotations' point :math:`k` in pixels, :math:`s` the
    mean object area in pixels and :math:`\epsilon` = ``np.spacing(1)``, as
    in pycocotools' ``computeOks``. See the module docstring for why points
    labelled by one annotator only count as 0.

    Args:
        kps_a (array-like of shape (n, K, 2)): Relative ``(x, y)`` points, NaN where not labelled (a point with
            either coordinate NaN is not labelled).
        kps_b (array-like of shape (m, K, 2)): The second set, as ``kps_a``.
        areas_a (array-like of shape (n,) or (n, 4)): Object areas in pixels, or relative boxes (their pixel area is
            used).
        areas_b (array-like of shape (m,) or (m, 4)): The second set's areas, as ``areas_a``.
        sigmas (array-like of shape (K,), default=None): Per-keypoint σ; ``None`` means :data:`COCO_PERSON_SIGMAS` (then
            ``K`` must be 17).
        image_size ((width, height) or None, default=None): Image size in pixels; ``None`` means a unit square.

    Returns:
        oks (ndarray of shape (n, m), float64): In ``[0, 1]``: 1 when both label the same points at the same places,
            0 when they share no labelled point. Symmetric.

    Raises:
        ValueError: For wrong shapes, infinite coordinates, a ``sigmas`` of the wrong
            length or non-positive, or an annotation with no labelled point (its
            index is named).

    References:
        .. [1] T.-Y. Lin et al., "Microsoft COCO: Common Objects in Context",
           ECCV 2014; https://cocodataset.org/#keypoints-eval.

    Examples:
        >>> a = np.full((1, 17, 2), 0.5)
        >>> b = a.copy(); b[0, 0] = np.nan
        >>> pairwise_oks(a, np.concatenate([a, b]), [100.0], [100.0, 100.0], image_size=(10, 10)).round(6).tolist()
        [[1.0, 0.941176]]
    """
    a = _as_keypoints(kps_a, "kps_a")
    b = _as_keypoints(kps_b, "kps_b")
    n, m, K = len(a), len(b), a.shape[1]
    if b.shape[1] != K:
        raise ValueError(f"kps_a has {K} keypoints per object, kps_b has {b.shape[1]}")
    sig = _checked_sigmas(sigmas, K)
    sa = keypoint_scales(areas_a, n, image_size=image_size)
    sb = keypoint_scales(areas_b, m, image_size=image_size)
    scale = _image_scale(image_size)

    va = _labelled(a, "kps_a")  # (n, K)
    vb = _labelled(b, "kps_b")
    out = np.empty((n, m))
    if n == 0 or m == 0:
        return out
    pa = np.where(va[..., None], a, 0.0) * scale  # pixels, 0 where missing
    pb = np.where(vb[..., None], b, 0.0) * scale
    kappa2 = (2.0 * sig) ** 2  # pycocotools' "vars"
    union = (va[:, None, :] | vb[None, :, :]).sum(axis=2)  # (n, m) >= 1
    # Blocks of rows keep the (rows, m, K) temporaries small.
    rows = max(1, (1 << 18) // max(1, m * K))
    for start in range(0, n, rows):
        stop = min(n, start + rows)
        d2 = ((pa[start:stop, None, :, :] - pb[None, :, :, :]) ** 2).sum(axis=3)  # (r, m, K)
        s = 0.5 * (sa[start:stop, None] + sb[None, :]) + np.spacing(1)
        e = d2 / kappa2 / s[:, :, None] / 2.0
        both = va[start:stop, None, :] & vb[None, :, :]
        out[start:stop] = np.where(both, np.exp(-e), 0.0).sum(axis=2) / union[start:stop]
    return out
