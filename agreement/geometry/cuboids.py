r"""3D geometry: oriented cuboids, 3D points, 3D polylines and point-index segments.

The cuboids' exact volumetric IoU lives here; their array form, rotations and
corners in :mod:`agreement.geometry.cuboid_frames`, points in
:mod:`agreement.geometry.points3d`, polylines in
:mod:`agreement.geometry.polylines3d` and segments in
:mod:`agreement.geometry.segments`, all importable from this module.

Cuboids follow FiftyOne's 3D detections: a ``location`` (the centre
``[x, y, z]`` in scene units), ``dimensions`` (the size ``[dx, dy, dz]`` along
the cuboid's own x, y and z axes) and a ``rotation`` ``[rx, ry, rz]`` in
radians. The pairwise functions take cuboids as ``(n, 9)`` float arrays of
rows ``[x, y, z, dx, dy, dz, rx, ry, rz]`` (see :func:`stack_cuboids`) and
return ``(n, m)`` float64 matrices, like :mod:`agreement.geometry.boxes`.

Rotation convention
-------------------
``rotation`` is read as **intrinsic XYZ Euler angles**,

.. math:: R = R_x(r_x)\, R_y(r_y)\, R_z(r_z),

which is what the FiftyOne App draws (three.js ``Euler(rx, ry, rz)`` in its
default ``"XYZ"`` order) and what ``fiftyone.core.labels.Detection``
documents ("the object rotation ``[x, y, z]`` around its center"). A point
``u`` in the cuboid's frame (``|u_k| <= d_k / 2``) is at ``location + R u`` in
the scene.

FiftyOne's own 3D evaluation utility (``fiftyone.utils.utils3d._Box``, used
by ``compute_cuboid_iou`` and ``evaluate_detections`` on 3D detections)
reads the same three numbers as a **rotation vector** (axis times angle,
``scipy.spatial.transform.Rotation.from_rotvec``). The two readings give the
same matrix when at most one angle is non-zero, and in general differ: for
``rotation = [pi/2, pi/2, 0]`` the Euler reading is a quarter turn about x
followed by a quarter turn about the new y, the rotation-vector reading a
turn of ``pi/sqrt(2)`` about the diagonal ``(1, 1, 0)``. Every function here
accepts ``convention="euler_xyz"`` (the default, as the App shows the
cuboids) or ``convention="rotvec"`` (to reproduce FiftyOne's evaluation).

Volumetric IoU
--------------
:func:`pairwise_cuboid_iou` is exact under any rotation: the intersection of
two cuboids is a convex polyhedron whose vertices are (i) corners of either
cuboid inside the other and (ii) the points where an edge of one cuboid
crosses a face of the other; its volume is that of the convex hull of these
points (Qhull through :class:`scipy.spatial.ConvexHull`). No bird's-eye view
times height approximation is made, so boxes tilted in pitch or roll, and
boxes separated vertically, are measured correctly (vertically separated
boxes score 0). Two fast paths give the same numbers: pairs whose
axis-aligned bounding boxes (and bounding spheres) do not meet score 0
without any polyhedron, and pairs whose orientations differ by a signed
permutation of the axes (in particular equal rotations, e.g. both
axis-aligned) use the closed form of axis-aligned boxes in the first cuboid's
frame.

References:
    .. [Everingham2010] M. Everingham et al., "The PASCAL Visual Object Classes
       (VOC) Challenge", IJCV 88(2), 303-338, 2010 (IoU).
    .. [Ahmadyan2021] A. Ahmadyan, L. Zhang, A. Ablavatski, J. Wei and
       M. Grundmann, "Objectron: A Large Scale Dataset of Object-Centric Videos
       in the Wild with Pose Annotations", CVPR 2021 (exact oriented 3D IoU by
       polyhedron clipping).
    .. [Barber1996] C. B. Barber, D. P. Dobkin and H. Huhdanpaa, "The Quickhull
       Algorithm for Convex Hulls", ACM TOMS 22(4), 469-483, 1996.
    .. [Csurka2013] G. Csurka, D. Larlus and F. Perronnin, "What is a good
       evaluation measure for semantic segmentation?", BMVC 2013 (boundary F1).
    .. [Braylan2022] A. Braylan, O. Alonso and M. Lease, "Measuring Annotator
       Agreement Generally across Complex Structured, Multi-object, and Free-text
       Annotation Tasks", WWW 2022.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from numpy.typing import ArrayLike
from scipy.spatial import ConvexHull, QhullError

from agreement.core.validation import AnnotationError
from agreement.geometry.cuboid_frames import (
    CONVENTIONS,
    CORNER_SIGNS,
    as_cuboids,
    check_convention,
    cuboid_corners,
    cuboid_rotation_matrices,
    cuboid_volume,
    rotation_matrix_xyz,
    rotation_vector_matrix,
    stack_cuboids,
)
from agreement.geometry.points3d import pairwise_point_distance, pairwise_point_similarity
from agreement.geometry.polylines3d import pairwise_polyline_boundary_f1, polyline_boundary_f1
from agreement.geometry.segments import pairwise_segment_jaccard, segment_jaccard, validate_segment_indices

__all__ = [
    "CONVENTIONS",
    "stack_cuboids",
    "rotation_matrix_xyz",
    "rotation_vector_matrix",
    "cuboid_rotation_matrices",
    "cuboid_corners",
    "cuboid_volume",
    "validate_cuboids",
    "pairwise_cuboid_intersection_volume",
    "pairwise_cuboid_iou",
    "pairwise_point_distance",
    "pairwise_point_similarity",
    "polyline_boundary_f1",
    "pairwise_polyline_boundary_f1",
    "segment_jaccard",
    "pairwise_segment_jaccard",
    "validate_segment_indices",
]

# The doctests of the functions re-exported here run with this module's (doctest.testmod).
__test__ = {f.__name__: f for f in (
    stack_cuboids, rotation_matrix_xyz, rotation_vector_matrix, cuboid_rotation_matrices, cuboid_corners,
    cuboid_volume, pairwise_point_distance, pairwise_point_similarity, polyline_boundary_f1,
    pairwise_polyline_boundary_f1, segment_jaccard, pairwise_segment_jaccard, validate_segment_indices)}

# The 12 edges join corners whose sign patterns differ in exactly one axis.
_EDGES = np.array(
    [(i, j) for i in range(8) for j in range(i + 1, 8) if np.sum(CORNER_SIGNS[i] != CORNER_SIGNS[j]) == 1]
)
# Relative tolerance (times the pair's largest half-size) for "on or inside":
# keeps vertices that rounding puts a hair outside; the hull volume moves by
# at most about this relative amount.
_INSIDE_RTOL = 1e-9
# Orientations closer than this (max abs entry of |R_a^T R_b| - P) to a
# permutation P use the axis-aligned closed form.
_ALIGNED_ATOL = 1e-12
# Pairs per chunk in the general (polyhedral) path.
_CHUNK = 2048
# Pairs per block of rows in the bounding-box rejection.
_REJECT_ELEMENTS = 1 << 16


# --------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------


def _where(where: str | Sequence[str], i: int) -> str:
    return where if isinstance(where, str) else str(where[i])


def validate_cuboids(cuboids: ArrayLike, where: str | Sequence[str]) -> np.ndarray:
    """Checks ``(n, 9)`` cuboids and returns them as float64.

    Rules: every one of the nine numbers must be finite (NaN or infinite
    location, dimensions or rotation is an error) and every dimension must be
    strictly positive (a zero or negative size has no volume, so its IoU
    would be ``0 / 0`` or meaningless). Angles are not range-checked: any
    finite angle is a valid rotation.

    Args:
        cuboids (array-like of shape (n, 9)): Rows ``[x, y, z, dx, dy, dz, rx, ry, rz]``.
        where (str or sequence of n str): Locates the cuboids in messages, e.g. ``"sample 'scene1.fo3d', field
            'rater_a'"``, or one string per cuboid.

    Returns:
        cuboids (ndarray of shape (n, 9), float64): The checked cuboids.

    Raises:
        AnnotationError: Naming ``where`` and the first offending cuboid.
        ValueError: If the array is not of shape ``(n, 9)``.
    """
    c = as_cuboids(cuboids)
    if not isinstance(where, str) and len(where) != len(c):
        raise ValueError(f"where must be a string or one string per cuboid ({len(c)}); got {len(where)}")
    finite = np.isfinite(c)
    if not finite.all():
        i, k = (int(v) for v in np.argwhere(~finite)[0])
        part = ("location", "dimensions", "rotation")[k // 3]
        raise AnnotationError(
            f"{_where(where, i)}: cuboid {i} has a non-finite {part} "
            f"(location={c[i, 0:3].tolist()}, dimensions={c[i, 3:6].tolist()}, rotation={c[i, 6:9].tolist()})"
        )
    bad = (c[:, 3:6] <= 0).any(axis=1)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise AnnotationError(
            f"{_where(where, i)}: cuboid {i} has a zero or negative dimension "
            f"(dimensions={c[i, 3:6].tolist()}); every size must be positive"
        )
    return c


# --------------------------------------------------------------------------
# Cuboid intersection
# --------------------------------------------------------------------------


def _aligned_volume(ha: np.ndarray, hb_in_a: np.ndarray, centre: np.ndarray) -> np.ndarray:
    """Intersection volume of two axis-aligned boxes, the first centred at 0.

    ``ha``, ``hb_in_a``: ``(k, 3)`` half-sizes; ``centre``: ``(k, 3)`` centre
    of the second. ``prod_k max(0, min(ha, c + hb) - max(-ha, c - hb))``.
    """
    lo = np.maximum(-ha, centre - hb_in_a)
    hi = np.minimum(ha, centre + hb_in_a)
    volume: np.ndarray = np.prod(np.maximum(hi - lo, 0.0), axis=1)
    return volume


def _edge_face_points(corners: np.ndarray, half: np.ndarray, tol: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Points where the edges of a polyhedron cross the faces of a centred box.

    ``corners``: ``(k, 8, 3)`` corners of one cuboid expressed in the frame
    of the other, a box ``|x_j| <= half_j``. Returns ``(points, valid)`` of
    shapes ``(k, 72, 3)`` and ``(k, 72)``: for each of 12 edges and 6 faces
    the crossing point and whether it lies on the edge and on the face (up to
    ``tol``).
    """
    p0 = corners[:, _EDGES[:, 0], :]  # (k, 12, 3)
    d = corners[:, _EDGES[:, 1], :] - p0
    k = len(corners)
    points = np.empty((k, 12, 6, 3))
    valid = np.zeros((k, 12, 6), dtype=bool)
    t_tol = 1e-12
    for axis in range(3):
        for side, sign in enumerate((-1.0, 1.0)):
            plane = sign * half[:, axis][:, None]  # (k, 1)
            denom = d[:, :, axis]
            ok = np.abs(denom) > 0
            with np.errstate(divide="ignore", invalid="ignore"):
                t = np.where(ok, (plane - p0[:, :, axis]) / np.where(ok, denom, 1.0), -1.0)
            pt = p0 + t[:, :, None] * d
            pt[:, :, axis] = plane  # exactly on the face
            inside = ok & (t >= -t_tol) & (t <= 1 + t_tol)
            for other in range(3):
                if other != axis:
                    inside &= np.abs(pt[:, :, other]) <= half[:, other][:, None] + tol[:, None]
            f = 2 * axis + side
            points[:, :, f, :] = pt
            valid[:, :, f] = inside
    return points.reshape(k, 72, 3), valid.reshape(k, 72)


def _general_volume(
    ha: np.ndarray, hb: np.ndarray, centre: np.ndarray, M: np.ndarray
) -> np.ndarray:
    """Exact intersection volume of cuboid pairs by convex-hull of the intersection vertices.

    Everything is in the frame of the first cuboid ``A`` (centred at 0, half
    sizes ``ha``); the second, ``B``, has half sizes ``hb``, centre ``centre``
    and rotation ``M = R_a^T R_b`` (B's frame to A's frame). All ``(k, ...)``.
    """
    k = len(ha)
    out = np.zeros(k)
    tol = _INSIDE_RTOL * np.maximum(ha.max(axis=1), hb.max(axis=1))  # (k,)
    a_corners = CORNER_SIGNS[None] * ha[:, None, :]  # in A's frame
    b_local = CORNER_SIGNS[None] * hb[:, None, :]
    b_corners = np.einsum("kij,knj->kni", M, b_local) + centre[:, None, :]  # in A's frame
    # A's corners in B's frame: M^T (p - centre).
    a_in_b = np.einsum("kji,knj->kni", M, a_corners - centre[:, None, :])
    # (i) corners inside the other cuboid.
    a_inside = np.all(np.abs(a_in_b) <= hb[:, None, :] + tol[:, None, None], axis=2)
    b_inside = np.all(np.abs(b_corners) <= ha[:, None, :] + tol[:, None, None], axis=2)
    # (ii) edges of A crossing faces of B (computed in B's frame, mapped back),
    # and edges of B crossing faces of A (in A's frame).
    pa, va = _edge_face_points(a_in_b, hb, tol)
    pa = np.einsum("kij,knj->kni", M, pa) + centre[:, None, :]
    pb, vb = _edge_face_points(b_corners, ha, tol)
    points = np.concatenate([a_corners, b_corners, pa, pb], axis=1)  # (k, 160, 3)
    valid = np.concatenate([a_inside, b_inside, va, vb], axis=1)
    for i in range(k):
        p = points[i, valid[i]]
        if len(p) < 4:
            continue
        # Clamp to A (the intersection lies inside A; removes tolerance slack).
        p = np.clip(p, -ha[i], ha[i])
        try:
            out[i] = ConvexHull(p).volume
        except QhullError:
            out[i] = 0.0  # flat: the cuboids touch along a face, an edge or a corner
    return out


def _prepare_pairs(
    a: ArrayLike, b: ArrayLike, convention: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    check_convention(convention)
    a, b = as_cuboids(a, "a"), as_cuboids(b, "b")
    return a, b, cuboid_rotation_matrices(a, convention), cuboid_rotation_matrices(b, convention)


def pairwise_cuboid_intersection_volume(
    a: ArrayLike, b: ArrayLike, *, convention: str = "euler_xyz", method: str = "auto"
) -> np.ndarray:
    r"""Exact volume of the intersection of every pair of oriented cuboids.

    .. math:: V_{ij} = \lvert A_i \cap B_j \rvert

    computed as the volume of the convex hull of the intersection's vertices
    (corners of one cuboid inside the other and edge-face crossings), which
    is exact for convex polyhedra up to floating-point rounding. A vertex
    counts as on a face when within ``1e-9`` times the larger cuboid's
    largest half-size, so that rounding never drops one; the volume can
    therefore be off by at most about ``6e-9 * s_max / s_min`` relative (for
    cuboids of sizes ``s_max`` and ``s_min``), i.e. negligibly.

    Args:
        a (array-like of shape (n, 9)): Rows ``[x, y, z, dx, dy, dz, rx, ry, rz]``.
        b (array-like of shape (m, 9)): Same layout.
        convention ({"euler_xyz", "rotvec"}, default="euler_xyz"): How the rotation triple is read (see the module
            docstring).
        method ({"auto", "polyhedron"}, default="auto"): ``"auto"`` uses the bounding-box rejection and the closed form
            for pairs with axis-permuted orientations; ``"polyhedron"`` sends every pair that is not rejected through
            the general path (for testing).

    Returns:
        volume (ndarray of shape (n, m), float64): In ``[0, min(|A_i|, |B_j|)]``; 0 for disjoint or touching cuboids.
            Symmetric: ``V(a, b) == V(b, a).T`` up to rounding.

    Raises:
        ValueError: If ``a`` or ``b`` is not of shape ``(k, 9)``, or on an unknown
            ``convention`` or ``method``.

    References:
        .. [1] A. Ahmadyan et al., "Objectron", CVPR 2021 (polyhedron clipping).
        .. [2] C. B. Barber et al., "The Quickhull Algorithm for Convex Hulls",
           ACM TOMS 22(4), 1996.
    """
    if method not in ("auto", "polyhedron"):
        raise ValueError(f"method must be 'auto' or 'polyhedron', got {method!r}")
    a, b, Ra, Rb = _prepare_pairs(a, b, convention)
    n, m = len(a), len(b)
    out = np.zeros((n, m))
    if n == 0 or m == 0:
        return out
    ha, hb = 0.5 * a[:, 3:6], 0.5 * b[:, 3:6]
    # Rejection: world axis-aligned bounding boxes (half extents |R| h) and
    # bounding spheres (radius |h|) must both meet.
    ea = np.einsum("nij,nj->ni", np.abs(Ra), ha)
    eb = np.einsum("nij,nj->ni", np.abs(Rb), hb)
    ra, rb = np.linalg.norm(ha, axis=1), np.linalg.norm(hb, axis=1)
    rows = max(1, _REJECT_ELEMENTS // m)
    found = []
    for lo in range(0, n, rows):  # blocks of rows bound the (rows, m, 3) temporaries
        diff = b[None, :, 0:3] - a[lo : lo + rows, None, 0:3]
        overlap = np.all(np.abs(diff) < ea[lo : lo + rows, None, :] + eb[None, :, :], axis=2)
        radius = ra[lo : lo + rows, None] + rb[None, :]
        overlap &= np.einsum("nmk,nmk->nm", diff, diff) < radius * radius
        i, j = np.nonzero(overlap)
        found.append((i + lo, j))
    ii = np.concatenate([f[0] for f in found])
    jj = np.concatenate([f[1] for f in found])
    for start in range(0, len(ii), _CHUNK):
        i, j = ii[start : start + _CHUNK], jj[start : start + _CHUNK]
        M = np.einsum("kji,kjl->kil", Ra[i], Rb[j])  # R_a^T R_b
        centre = np.einsum("kji,kj->ki", Ra[i], b[j, 0:3] - a[i, 0:3])  # R_a^T (c_b - c_a)
        vol = np.empty(len(i))
        absM = np.abs(M)
        perm = np.rint(absM)
        aligned = np.all(np.abs(absM - perm) <= _ALIGNED_ATOL, axis=(1, 2)) & np.all(
            perm.sum(axis=1) == 1, axis=1
        ) & np.all(perm.sum(axis=2) == 1, axis=1)
        if method == "polyhedron":
            aligned[:] = False
        if aligned.any():
            hb_in_a = np.einsum("kij,kj->ki", perm[aligned], hb[j[aligned]])
            vol[aligned] = _aligned_volume(ha[i[aligned]], hb_in_a, centre[aligned])
        rest = ~aligned
        if rest.any():
            vol[rest] = _general_volume(ha[i[rest]], hb[j[rest]], centre[rest], M[rest])
        out[i, j] = vol
    return out


def pairwise_cuboid_iou(
    a: ArrayLike, b: ArrayLike, *, convention: str = "euler_xyz", method: str = "auto"
) -> np.ndarray:
    r"""Exact volumetric intersection over union of every pair of oriented cuboids.

    .. math::

        \mathrm{IoU}(A, B) = \frac{|A \cap B|}{|A| + |B| - |A \cap B|}

    with :math:`|A \cap B|` from :func:`pairwise_cuboid_intersection_volume`
    (the true 3D intersection under any rotation, not a bird's-eye-view area
    times a height overlap).

    Args:
        a (array-like of shape (n, 9)): Rows ``[x, y, z, dx, dy, dz, rx, ry, rz]`` (FiftyOne's ``location``,
            ``dimensions``, ``rotation``; see :func:`stack_cuboids`).
        b (array-like of shape (m, 9)): Same layout.
        convention ({"euler_xyz", "rotvec"}, default="euler_xyz"): How the rotation triple is read: as the FiftyOne App
            draws it (``"euler_xyz"``) or as FiftyOne's 3D evaluation utility reads it (``"rotvec"``); see the module
            docstring.
        method ({"auto", "polyhedron"}, default="auto"): See :func:`pairwise_cuboid_intersection_volume`.

    Returns:
        iou (ndarray of shape (n, m), float64): In ``[0, 1]``: exactly 1 for identical rows, 0 for disjoint or
            touching cuboids (vertically separated ones included). Symmetric up
            to rounding; invariant to a common rigid motion of both cuboids.
            Inputs should be validated (:func:`validate_cuboids`); a zero-volume
            cuboid, which validation rejects, scores 0 against anything.

    Raises:
        ValueError: As :func:`pairwise_cuboid_intersection_volume`.

    References:
        .. [1] M. Everingham et al., "The PASCAL Visual Object Classes (VOC)
           Challenge", IJCV 88(2), 2010.
        .. [2] A. Ahmadyan et al., "Objectron: A Large Scale Dataset of
           Object-Centric Videos in the Wild with Pose Annotations", CVPR 2021.

    Examples:
        A unit cube against itself turned 45 degrees about z: the intersection
        is a regular octagonal prism of volume ``2 (sqrt(2) - 1)`` and the IoU is
        ``1 / sqrt(2)``.

        >>> cube = [0, 0, 0, 1, 1, 1, 0, 0, 0]
        >>> turned = [0, 0, 0, 1, 1, 1, 0, 0, np.pi / 4]
        >>> round(float(pairwise_cuboid_iou([cube], [turned])[0, 0]), 9)
        0.707106781
        >>> float(pairwise_cuboid_iou([cube], [[0, 0, 1.5, 1, 1, 1, 0, 0, 0]])[0, 0])  # stacked above
        0.0
    """
    a, b = as_cuboids(a, "a"), as_cuboids(b, "b")
    inter = pairwise_cuboid_intersection_volume(a, b, convention=convention, method=method)
    va, vb = cuboid_volume(a), cuboid_volume(b)
    union = va[:, None] + vb[None, :] - inter
    with np.errstate(divide="ignore", invalid="ignore"):
        iou = np.where(union > 0, inter / np.where(union > 0, union, 1.0), 0.0)
    np.clip(iou, 0.0, 1.0, out=iou)
    i, j = np.nonzero(inter > 0)
    same = np.all(a[i] == b[j], axis=1)
    iou[i[same], j[same]] = 1.0
    return iou
