"""Cuboids as arrays and their frames (:mod:`agreement.geometry.cuboids`): rows
``[x, y, z, dx, dy, dz, rx, ry, rz]`` (:func:`stack_cuboids`), the two readings of FiftyOne's
``rotation`` triple (intrinsic XYZ Euler angles ``R = R_x(r_x) R_y(r_y) R_z(r_z)``, as the App draws
them, or a rotation vector, as FiftyOne's 3D evaluation reads them; see the module docstring of
:mod:`agreement.geometry.cuboids`), the corners and the volume.
"""

from __future__ import annotations

import itertools

import numpy as np
from numpy.typing import ArrayLike
from scipy.spatial.transform import Rotation

#: Accepted readings of FiftyOne's ``rotation`` triple.
CONVENTIONS = ("euler_xyz", "rotvec")

#: ``(8, 3)``: corner ``k`` of a cuboid has the sign pattern ``CORNER_SIGNS[k]`` (x, y, z in {-1, +1}),
#: ``k = 4 bx + 2 by + bz`` with ``b = 0`` for -1 and 1 for +1.
CORNER_SIGNS = np.array(list(itertools.product((-1.0, 1.0), repeat=3)))


# --------------------------------------------------------------------------
# Conversions and rotations
# --------------------------------------------------------------------------


def as_cuboids(cuboids: ArrayLike, name: str = "cuboids") -> np.ndarray:
    """``cuboids`` as an ``(n, 9)`` float64 array (an empty sequence is zero cuboids); the shape only is checked.

    Args:
        cuboids: rows ``[x, y, z, dx, dy, dz, rx, ry, rz]``.
        name: what the error message calls them.

    Returns:
        ``(n, 9)`` float64 (the input itself when it already is one).

    Raises:
        ValueError: on a shape other than ``(n, 9)``.
    """
    arr = np.asarray(cuboids, dtype=np.float64)
    if arr.ndim == 1 and arr.size == 0:
        return arr.reshape(0, 9)
    if arr.ndim != 2 or arr.shape[1] != 9:
        raise ValueError(
            f"{name} must be an (n, 9) array of [x, y, z, dx, dy, dz, rx, ry, rz] cuboids; "
            f"got an array of shape {arr.shape}"
        )
    return arr


def check_convention(convention: str) -> None:
    """Checks that ``convention`` is one of :data:`CONVENTIONS`.

    Args:
        convention: ``"euler_xyz"`` or ``"rotvec"``.

    Raises:
        ValueError: for any other value.
    """
    if convention not in CONVENTIONS:
        raise ValueError(f"convention must be one of {CONVENTIONS}, got {convention!r}")


def stack_cuboids(location: ArrayLike, dimensions: ArrayLike, rotation: ArrayLike) -> np.ndarray:
    """Stacks FiftyOne's ``location``, ``dimensions`` and ``rotation`` into rows.

    Args:
        location (array-like of shape (n, 3) or (3,)): Cuboid centres ``[x, y, z]``.
        dimensions (array-like of shape (n, 3) or (3,)): Sizes ``[dx, dy, dz]`` along the cuboid's own axes.
        rotation (array-like of shape (n, 3) or (3,)): Angles ``[rx, ry, rz]`` in radians.

    Returns:
        cuboids (ndarray of shape (n, 9), float64): Rows ``[x, y, z, dx, dy, dz, rx, ry, rz]``.

    Examples:
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

    Args:
        rotation (array-like of shape (3,) or (n, 3)): Angles ``[rx, ry, rz]`` in radians.

    Returns:
        R (ndarray of shape (3, 3) or (n, 3, 3), float64): Proper rotation matrices (orthogonal, determinant 1).

    See Also:
        rotation_vector_matrix : the reading of FiftyOne's 3D evaluation utility.

    References:
        .. [1] three.js ``Matrix4.makeRotationFromEuler`` (order ``"XYZ"``), the
           renderer of the FiftyOne App's 3D viewer.

    Examples:
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

    Args:
        rotvec (array-like of shape (3,) or (n, 3)): Rotation vectors.

    Returns:
        R (ndarray of shape (3, 3) or (n, 3, 3), float64): The rotation matrix of each rotation vector.

    References:
        .. [1] O. Rodrigues, "Des lois géométriques qui régissent les déplacements
           d'un système solide dans l'espace", J. Math. Pures Appl. 5, 380-440, 1840.

    Examples:
        >>> np.allclose(rotation_vector_matrix([0, 0, 0.3]), rotation_matrix_xyz([0, 0, 0.3]))
        True
        >>> np.allclose(rotation_vector_matrix([np.pi / 2, np.pi / 2, 0]),
        ...             rotation_matrix_xyz([np.pi / 2, np.pi / 2, 0]))
        False
    """
    v = np.asarray(rotvec, dtype=np.float64)
    single = v.shape == (3,)
    R: np.ndarray = Rotation.from_rotvec(v.reshape(-1, 3)).as_matrix()
    out: np.ndarray = R[0] if single else R
    return out


def cuboid_rotation_matrices(cuboids: ArrayLike, convention: str = "euler_xyz") -> np.ndarray:
    """Rotation matrices ``(n, 3, 3)`` of ``(n, 9)`` cuboids under ``convention``.

    Args:
        cuboids (array-like of shape (n, 9)): Rows ``[x, y, z, dx, dy, dz, rx, ry, rz]``.
        convention ({"euler_xyz", "rotvec"}, default="euler_xyz"): See :func:`rotation_matrix_xyz` and
            :func:`rotation_vector_matrix`.

    Returns:
        R (ndarray of shape (n, 3, 3), float64): The rotation matrix of each cuboid.
    """
    check_convention(convention)
    c = as_cuboids(cuboids)
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

    Args:
        location (array-like of shape (3,) or (n, 3)): Centres.
        dimensions (array-like of shape (3,) or (n, 3)): Sizes along the cuboid's own axes.
        rotation (array-like of shape (3,) or (n, 3)): Angles (or rotation vectors) in radians.
        convention ({"euler_xyz", "rotvec"}, default="euler_xyz"): How ``rotation`` is read (see the module docstring).

    Returns:
        corners (ndarray of shape (8, 3) or (n, 8, 3), float64): The corners, in the order above.

    Examples:
        >>> cuboid_corners([0, 0, 0], [2, 4, 6], [0, 0, 0])[[0, 7]].tolist()
        [[-1.0, -2.0, -3.0], [1.0, 2.0, 3.0]]
    """
    single = np.asarray(location).shape == (3,)
    c = stack_cuboids(location, dimensions, rotation)
    R = cuboid_rotation_matrices(c, convention)
    local = CORNER_SIGNS[None, :, :] * (0.5 * c[:, None, 3:6])  # (n, 8, 3)
    corners: np.ndarray = np.einsum("nij,nkj->nki", R, local) + c[:, None, 0:3]
    out: np.ndarray = corners[0] if single else corners
    return out


def cuboid_volume(cuboids: ArrayLike) -> np.ndarray:
    """Volume ``dx * dy * dz`` of each cuboid, ``(n,)`` float64 (rotation does not matter)."""
    c = as_cuboids(cuboids)
    volume: np.ndarray = c[:, 3] * c[:, 4] * c[:, 5]
    return volume
