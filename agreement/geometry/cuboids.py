r"""3D geometry: oriented cuboids, 3D points, 3D polylines and point-index segments.

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

References
----------
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

import itertools
from typing import Sequence

import numpy as np
from numpy.typing import ArrayLike
from scipy import sparse
from scipy.spatial import ConvexHull, QhullError
from scipy.spatial.transform import Rotation

from agreement.arrays import unique_sorted
from agreement.validation import AnnotationError

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

#: Accepted readings of FiftyOne's ``rotation`` triple.
CONVENTIONS = ("euler_xyz", "rotvec")

# Corner k of a cuboid has the sign pattern _SIGNS[k] (x, y, z in {-1, +1});
# k = 4 * bx + 2 * by + bz with b = 0 for -1 and 1 for +1.
_SIGNS = np.array(list(itertools.product((-1.0, 1.0), repeat=3)))
# The 12 edges join corners whose sign patterns differ in exactly one axis.
_EDGES = np.array(
    [(i, j) for i in range(8) for j in range(i + 1, 8) if np.sum(_SIGNS[i] != _SIGNS[j]) == 1]
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
# Conversions and rotations
# --------------------------------------------------------------------------


def _as_cuboids(cuboids: ArrayLike, name: str = "cuboids") -> np.ndarray:
    """``cuboids`` as an ``(n, 9)`` float64 array; ``ValueError`` on a wrong shape."""
    arr = np.asarray(cuboids, dtype=np.float64)
    if arr.ndim == 1 and arr.size == 0:
        return arr.reshape(0, 9)
    if arr.ndim != 2 or arr.shape[1] != 9:
        raise ValueError(
            f"{name} must be an (n, 9) array of [x, y, z, dx, dy, dz, rx, ry, rz] cuboids; "
            f"got an array of shape {arr.shape}"
        )
    return arr


def _check_convention(convention: str) -> None:
    if convention not in CONVENTIONS:
        raise ValueError(f"convention must be one of {CONVENTIONS}, got {convention!r}")


def stack_cuboids(location: ArrayLike, dimensions: ArrayLike, rotation: ArrayLike) -> np.ndarray:
    """Stacks FiftyOne's ``location``, ``dimensions`` and ``rotation`` into rows.

    Parameters
    ----------
    location : array-like of shape (n, 3) or (3,)
        Cuboid centres ``[x, y, z]``.
    dimensions : array-like of shape (n, 3) or (3,)
        Sizes ``[dx, dy, dz]`` along the cuboid's own axes.
    rotation : array-like of shape (n, 3) or (3,)
        Angles ``[rx, ry, rz]`` in radians.

    Returns
    -------
    cuboids : ndarray of shape (n, 9), float64
        Rows ``[x, y, z, dx, dy, dz, rx, ry, rz]``.

    Examples
    --------
    >>> stack_cuboids([0, 0, 1], [2, 1, 1], [0, 0, 0.5]).tolist()
    [[0.0, 0.0, 1.0, 2.0, 1.0, 1.0, 0.0, 0.0, 0.5]]
    """
    parts = [np.asarray(x, dtype=np.float64).reshape(-1, 3) for x in (location, dimensions, rotation)]
    if len({len(p) for p in parts}) != 1:
        raise ValueError(
            "location, dimensions and rotation must have the same number of rows; "
            f"got {[len(p) for p in parts]}"
        )
    return np.hstack(parts)


def rotation_matrix_xyz(rotation: ArrayLike) -> np.ndarray:
    r"""Rotation matrix of intrinsic XYZ Euler angles, as the FiftyOne App reads them.

    .. math::

        R = R_x(r_x)\,R_y(r_y)\,R_z(r_z), \quad
        R_x(a) = \begin{pmatrix}1&0&0\\0&\cos a&-\sin a\\0&\sin a&\cos a\end{pmatrix},\;
        R_y(b) = \begin{pmatrix}\cos b&0&\sin b\\0&1&0\\-\sin b&0&\cos b\end{pmatrix},\;
        R_z(c) = \begin{pmatrix}\cos c&-\sin c&0\\\sin c&\cos c&0\\0&0&1\end{pmatrix}

    the same matrix as three.js ``Euler(rx, ry, rz, "XYZ")`` and scipy's
    ``Rotation.from_euler("XYZ", rotation)`` (upper case: intrinsic).

    Parameters
    ----------
    rotation : array-like of shape (3,) or (n, 3)
        Angles ``[rx, ry, rz]`` in radians.

    Returns
    -------
    R : ndarray of shape (3, 3) or (n, 3, 3), float64
        Proper rotation matrices (orthogonal, determinant 1).

    See Also
    --------
    rotation_vector_matrix : the reading of FiftyOne's 3D evaluation utility.

    References
    ----------
    .. [1] three.js ``Matrix4.makeRotationFromEuler`` (order ``"XYZ"``), the
       renderer of the FiftyOne App's 3D viewer.

    Examples
    --------
    >>> (rotation_matrix_xyz([0.0, 0.0, np.pi / 2]).round(12) + 0.0).tolist()
    [[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]
    """
    ang = np.asarray(rotation, dtype=np.float64)
    single = ang.shape == (3,)
    ang = ang.reshape(-1, 3)
    c, s = np.cos(ang), np.sin(ang)
    ca, cb, cc = c[:, 0], c[:, 1], c[:, 2]
    sa, sb, sc = s[:, 0], s[:, 1], s[:, 2]
    R = np.empty((len(ang), 3, 3))
    # Rx(a) @ Ry(b) @ Rz(c), expanded.
    R[:, 0, 0] = cb * cc
    R[:, 0, 1] = -cb * sc
    R[:, 0, 2] = sb
    R[:, 1, 0] = ca * sc + sa * sb * cc
    R[:, 1, 1] = ca * cc - sa * sb * sc
    R[:, 1, 2] = -sa * cb
    R[:, 2, 0] = sa * sc - ca * sb * cc
    R[:, 2, 1] = sa * cc + ca * sb * sc
    R[:, 2, 2] = ca * cb
    return R[0] if single else R


def rotation_vector_matrix(rotvec: ArrayLike) -> np.ndarray:
    r"""Rotation matrix of a rotation vector (axis times angle in radians).

    Rodrigues' formula, through ``scipy.spatial.transform.Rotation.from_rotvec``:
    with :math:`\theta = \lVert v \rVert` and :math:`K` the cross-product
    matrix of :math:`v / \theta`,

    .. math:: R = I + \sin\theta\, K + (1 - \cos\theta)\, K^2 .

    This is how FiftyOne's 3D evaluation utility
    (``fiftyone.utils.utils3d._Box``) reads a detection's ``rotation``. It
    equals :func:`rotation_matrix_xyz` of the same numbers when at most one
    of the three is non-zero, and differs otherwise (see the module
    docstring).

    Parameters
    ----------
    rotvec : array-like of shape (3,) or (n, 3)
        Rotation vectors.

    Returns
    -------
    R : ndarray of shape (3, 3) or (n, 3, 3), float64

    References
    ----------
    .. [1] O. Rodrigues, "Des lois géométriques qui régissent les déplacements
       d'un système solide dans l'espace", J. Math. Pures Appl. 5, 380-440, 1840.

    Examples
    --------
    >>> np.allclose(rotation_vector_matrix([0, 0, 0.3]), rotation_matrix_xyz([0, 0, 0.3]))
    True
    >>> np.allclose(rotation_vector_matrix([np.pi / 2, np.pi / 2, 0]),
    ...             rotation_matrix_xyz([np.pi / 2, np.pi / 2, 0]))
    False
    """
    v = np.asarray(rotvec, dtype=np.float64)
    single = v.shape == (3,)
    R = Rotation.from_rotvec(v.reshape(-1, 3)).as_matrix()
    return R[0] if single else R


def cuboid_rotation_matrices(cuboids: ArrayLike, convention: str = "euler_xyz") -> np.ndarray:
    """Rotation matrices ``(n, 3, 3)`` of ``(n, 9)`` cuboids under ``convention``.

    Parameters
    ----------
    cuboids : array-like of shape (n, 9)
        Rows ``[x, y, z, dx, dy, dz, rx, ry, rz]``.
    convention : {"euler_xyz", "rotvec"}, default="euler_xyz"
        See :func:`rotation_matrix_xyz` and :func:`rotation_vector_matrix`.

    Returns
    -------
    R : ndarray of shape (n, 3, 3), float64
    """
    _check_convention(convention)
    c = _as_cuboids(cuboids)
    if convention == "euler_xyz":
        return rotation_matrix_xyz(c[:, 6:9]).reshape(-1, 3, 3)
    if len(c) == 0:
        return np.empty((0, 3, 3))
    return rotation_vector_matrix(c[:, 6:9]).reshape(-1, 3, 3)


def cuboid_corners(
    location: ArrayLike, dimensions: ArrayLike, rotation: ArrayLike, convention: str = "euler_xyz"
) -> np.ndarray:
    r"""The eight corners of cuboids in scene coordinates.

    .. math:: p_k = \mathrm{location} + R\,(s_k \odot \mathrm{dimensions} / 2)

    with :math:`s_k \in \{-1, +1\}^3` in the order of
    ``itertools.product((-1, 1), repeat=3)``: corner ``k = 4 b_x + 2 b_y + b_z``
    has sign ``+1`` on axis ``a`` when ``b_a = 1``.

    Parameters
    ----------
    location : array-like of shape (3,) or (n, 3)
        Centres.
    dimensions : array-like of shape (3,) or (n, 3)
        Sizes along the cuboid's own axes.
    rotation : array-like of shape (3,) or (n, 3)
        Angles (or rotation vectors) in radians.
    convention : {"euler_xyz", "rotvec"}, default="euler_xyz"
        How ``rotation`` is read (see the module docstring).

    Returns
    -------
    corners : ndarray of shape (8, 3) or (n, 8, 3), float64

    Examples
    --------
    >>> cuboid_corners([0, 0, 0], [2, 4, 6], [0, 0, 0])[[0, 7]].tolist()
    [[-1.0, -2.0, -3.0], [1.0, 2.0, 3.0]]
    """
    single = np.asarray(location).shape == (3,)
    c = stack_cuboids(location, dimensions, rotation)
    R = cuboid_rotation_matrices(c, convention)
    local = _SIGNS[None, :, :] * (0.5 * c[:, None, 3:6])  # (n, 8, 3)
    corners = np.einsum("nij,nkj->nki", R, local) + c[:, None, 0:3]
    return corners[0] if single else corners


def cuboid_volume(cuboids: ArrayLike) -> np.ndarray:
    """Volume ``dx * dy * dz`` of each cuboid, ``(n,)`` float64 (rotation does not matter)."""
    c = _as_cuboids(cuboids)
    return c[:, 3] * c[:, 4] * c[:, 5]


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

    Parameters
    ----------
    cuboids : array-like of shape (n, 9)
        Rows ``[x, y, z, dx, dy, dz, rx, ry, rz]``.
    where : str or sequence of n str
        Locates the cuboids in messages, e.g. ``"sample 'scene1.fo3d', field
        'rater_a'"``, or one string per cuboid.

    Returns
    -------
    cuboids : ndarray of shape (n, 9), float64

    Raises
    ------
    AnnotationError
        Naming ``where`` and the first offending cuboid.
    ValueError
        If the array is not of shape ``(n, 9)``.
    """
    c = _as_cuboids(cuboids)
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
    return np.prod(np.maximum(hi - lo, 0.0), axis=1)


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
    a_corners = _SIGNS[None] * ha[:, None, :]  # in A's frame
    b_local = _SIGNS[None] * hb[:, None, :]
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
    _check_convention(convention)
    a, b = _as_cuboids(a, "a"), _as_cuboids(b, "b")
    return a, b, cuboid_rotation_matrices(a, convention), cuboid_rotation_matrices(b, convention)


def pairwise_cuboid_intersection_volume(
    a: ArrayLike, b: ArrayLike, convention: str = "euler_xyz", method: str = "auto"
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

    Parameters
    ----------
    a : array-like of shape (n, 9)
        Rows ``[x, y, z, dx, dy, dz, rx, ry, rz]``.
    b : array-like of shape (m, 9)
        Same layout.
    convention : {"euler_xyz", "rotvec"}, default="euler_xyz"
        How the rotation triple is read (see the module docstring).
    method : {"auto", "polyhedron"}, default="auto"
        ``"auto"`` uses the bounding-box rejection and the closed form for
        pairs with axis-permuted orientations; ``"polyhedron"`` sends every
        pair that is not rejected through the general path (for testing).

    Returns
    -------
    volume : ndarray of shape (n, m), float64
        In ``[0, min(|A_i|, |B_j|)]``; 0 for disjoint or touching cuboids.
        Symmetric: ``V(a, b) == V(b, a).T`` up to rounding.

    Raises
    ------
    ValueError
        If ``a`` or ``b`` is not of shape ``(k, 9)``, or on an unknown
        ``convention`` or ``method``.

    References
    ----------
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
    a: ArrayLike, b: ArrayLike, convention: str = "euler_xyz", method: str = "auto"
) -> np.ndarray:
    r"""Exact volumetric intersection over union of every pair of oriented cuboids.

    .. math::

        \mathrm{IoU}(A, B) = \frac{|A \cap B|}{|A| + |B| - |A \cap B|}

    with :math:`|A \cap B|` from :func:`pairwise_cuboid_intersection_volume`
    (the true 3D intersection under any rotation, not a bird's-eye-view area
    times a height overlap).

    Parameters
    ----------
    a : array-like of shape (n, 9)
        Rows ``[x, y, z, dx, dy, dz, rx, ry, rz]`` (FiftyOne's ``location``,
        ``dimensions``, ``rotation``; see :func:`stack_cuboids`).
    b : array-like of shape (m, 9)
        Same layout.
    convention : {"euler_xyz", "rotvec"}, default="euler_xyz"
        How the rotation triple is read: as the FiftyOne App draws it
        (``"euler_xyz"``) or as FiftyOne's 3D evaluation utility reads it
        (``"rotvec"``); see the module docstring.
    method : {"auto", "polyhedron"}, default="auto"
        See :func:`pairwise_cuboid_intersection_volume`.

    Returns
    -------
    iou : ndarray of shape (n, m), float64
        In ``[0, 1]``: exactly 1 for identical rows, 0 for disjoint or
        touching cuboids (vertically separated ones included). Symmetric up
        to rounding; invariant to a common rigid motion of both cuboids.
        Inputs should be validated (:func:`validate_cuboids`); a zero-volume
        cuboid, which validation rejects, scores 0 against anything.

    Raises
    ------
    ValueError
        As :func:`pairwise_cuboid_intersection_volume`.

    References
    ----------
    .. [1] M. Everingham et al., "The PASCAL Visual Object Classes (VOC)
       Challenge", IJCV 88(2), 2010.
    .. [2] A. Ahmadyan et al., "Objectron: A Large Scale Dataset of
       Object-Centric Videos in the Wild with Pose Annotations", CVPR 2021.

    Examples
    --------
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
    a, b = _as_cuboids(a, "a"), _as_cuboids(b, "b")
    inter = pairwise_cuboid_intersection_volume(a, b, convention, method)
    va, vb = cuboid_volume(a), cuboid_volume(b)
    union = va[:, None] + vb[None, :] - inter
    with np.errstate(divide="ignore", invalid="ignore"):
        iou = np.where(union > 0, inter / np.where(union > 0, union, 1.0), 0.0)
    np.clip(iou, 0.0, 1.0, out=iou)
    i, j = np.nonzero(inter > 0)
    same = np.all(a[i] == b[j], axis=1)
    iou[i[same], j[same]] = 1.0
    return iou


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

    Parameters
    ----------
    p : array-like of shape (n, 3)
    q : array-like of shape (m, 3)

    Returns
    -------
    distance : ndarray of shape (n, m), float64
        In ``[0, inf)`` scene units; 0 for equal points. Symmetric.

    Examples
    --------
    >>> pairwise_point_distance([[0, 0, 0]], [[3, 4, 0], [0, 0, 0]]).tolist()
    [[5.0, 0.0]]
    """
    p, q = _as_points(p, "p"), _as_points(q, "q")
    d = p[:, None, :] - q[None, :, :]
    return np.sqrt(np.einsum("nmk,nmk->nm", d, d))


def pairwise_point_similarity(p: ArrayLike, q: ArrayLike, scale: float = 2.0) -> np.ndarray:
    r"""Gaussian similarity of every pair of 3D points, with a falloff scale.

    .. math:: s(p, q) = \exp\!\left(-\frac{\lVert p - q \rVert^2}{2\,\mathrm{scale}^2}\right)

    a radial-basis similarity like the keypoint similarity of COCO's OKS with
    a fixed scale: 1 at distance 0, :math:`e^{-1/2} \approx 0.61` at one
    ``scale``, :math:`e^{-2} \approx 0.14` at two, tending to 0 far away.

    Parameters
    ----------
    p : array-like of shape (n, 3)
    q : array-like of shape (m, 3)
    scale : float, default=2.0
        Falloff in scene units (2 m for LiDAR scenes in metres); positive.

    Returns
    -------
    similarity : ndarray of shape (n, m), float64
        In ``(0, 1]`` (0 only after underflow, for points hundreds of scales
        apart). Symmetric; invariant to a common rigid motion.

    Raises
    ------
    ValueError
        On a wrong shape or a non-positive or non-finite ``scale``.

    References
    ----------
    .. [1] T.-Y. Lin et al., "Microsoft COCO: Common Objects in Context",
       ECCV 2014 (object keypoint similarity).
    .. [2] A. Braylan, O. Alonso and M. Lease, WWW 2022 (any distance with a
       chance baseline).

    Examples
    --------
    >>> pairwise_point_similarity([[0, 0, 0]], [[0, 0, 0], [2, 0, 0]]).round(6).tolist()
    [[1.0, 0.606531]]
    """
    if not (np.isfinite(scale) and scale > 0):
        raise ValueError(f"scale must be a positive finite number, got {scale!r}")
    d = pairwise_point_distance(p, q)
    d *= d
    d *= -0.5 / (scale * scale)
    return np.exp(d, out=d)


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

    Parameters
    ----------
    a, b : array-like of shape (k, 3), or a sequence of such
        Vertices ``[x, y, z]``; a sequence of arrays is one polyline made of
        several shapes (FiftyOne's ``Polyline.points3d``).
    tolerance : float
        Distance within which a point counts as matched, in scene units; positive.
    closed_a, closed_b : bool, default=False
        Whether each shape of ``a`` (``b``) closes back to its first vertex.
    spacing : float, optional
        Sampling step along the segments; default ``tolerance / 4``.

    Returns
    -------
    f1 : float
        In ``[0, 1]``: 1 when each polyline lies within ``tolerance`` of the
        other (identical polylines in particular), 0 when no part does.
        Symmetric (swapping ``a`` and ``b`` swaps P and R); invariant to a
        common rigid motion.

    Raises
    ------
    ValueError
        On a wrong shape, non-finite coordinates, an empty polyline, or a
        non-positive tolerance or spacing.

    References
    ----------
    .. [1] D. R. Martin, C. C. Fowlkes and J. Malik, "Learning to Detect
       Natural Image Boundaries Using Local Brightness, Color, and Texture
       Cues", IEEE TPAMI 26(5), 530-549, 2004 (boundary precision/recall).
    .. [2] G. Csurka, D. Larlus and F. Perronnin, "What is a good evaluation
       measure for semantic segmentation?", BMVC 2013 (BF score).

    Examples
    --------
    >>> a = [[0, 0, 0], [10, 0, 0]]
    >>> polyline_boundary_f1(a, [[0, 0, 0.1], [10, 0, 0.1]], tolerance=0.5)
    1.0
    >>> round(polyline_boundary_f1(a, [[0, 0, 0], [5, 0, 0]], tolerance=0.5), 3)  # P = 0.55, R = 1
    0.71
    """
    if not (np.isfinite(tolerance) and tolerance > 0):
        raise ValueError(f"tolerance must be a positive finite number, got {tolerance!r}")
    step = tolerance / 4.0 if spacing is None else float(spacing)
    if not (np.isfinite(step) and step > 0):
        raise ValueError(f"spacing must be a positive finite number, got {spacing!r}")
    sa, da = _segments(_as_shapes(a, "a"), closed_a)
    sb, db = _segments(_as_shapes(b, "b"), closed_b)
    pa, wa = _samples(sa, da, step)
    pb, wb = _samples(sb, db, step)
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

    Parameters
    ----------
    a : sequence of n polylines
    b : sequence of m polylines
    tolerance, spacing
        As :func:`polyline_boundary_f1`.
    closed_a, closed_b : bool or sequence of bool
        One flag for all polylines of the list, or one per polyline.

    Returns
    -------
    f1 : ndarray of shape (n, m), float64
        In ``[0, 1]``.
    """
    ca = [closed_a] * len(a) if isinstance(closed_a, (bool, np.bool_)) else list(closed_a)
    cb = [closed_b] * len(b) if isinstance(closed_b, (bool, np.bool_)) else list(closed_b)
    out = np.empty((len(a), len(b)))
    for i, pa in enumerate(a):
        for j, pb in enumerate(b):
            out[i, j] = polyline_boundary_f1(pa, pb, tolerance, bool(ca[i]), bool(cb[j]), spacing)
    return out


# --------------------------------------------------------------------------
# Point-index segments
# --------------------------------------------------------------------------


def validate_segment_indices(indices: ArrayLike, num_points: int, where: str = "segment") -> np.ndarray:
    """Checks point indices of a segment and returns them as sorted unique int64.

    Parameters
    ----------
    indices : array-like of int
        Indices into a point cloud of ``num_points`` points; duplicates are
        allowed (a segment is a set).
    num_points : int
        Number of points of the cloud; non-negative.
    where : str, default="segment"
        Names the segment in messages (sample, field, label).

    Returns
    -------
    indices : ndarray of int64, sorted and unique

    Raises
    ------
    AnnotationError
        On a non-integer index, or an index outside ``[0, num_points)``,
        naming ``where``, the index and the cloud size.
    ValueError
        If ``num_points`` is negative or not an integer.
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

    Parameters
    ----------
    indices_a, indices_b : array-like of int
        Indices into the same point cloud.
    num_points : int
        Number of points of the cloud; every index must be in ``[0, num_points)``.

    Returns
    -------
    jaccard : float
        In ``[0, 1]``: 1 for equal sets, 0 for disjoint ones. Two empty
        segments are identical and score 1, as identical zero-area boxes do
        in :mod:`agreement.geometry.boxes`; an empty segment against a
        non-empty one scores 0. Symmetric.

    Raises
    ------
    AnnotationError
        On an index out of range or not an integer (see
        :func:`validate_segment_indices`).

    References
    ----------
    .. [1] P. Jaccard, "The distribution of the flora in the alpine zone",
       New Phytologist 11(2), 37-50, 1912.

    Examples
    --------
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

    Parameters
    ----------
    a : sequence of n index arrays
    b : sequence of m index arrays
    num_points : int

    Returns
    -------
    jaccard : ndarray of shape (n, m), float64
        In ``[0, 1]``, with two empty segments scoring 1.

    Raises
    ------
    AnnotationError
        On an index out of range, naming the segment.
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
