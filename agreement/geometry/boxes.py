"""Pairwise geometry of axis-aligned boxes: IoU, GIoU and centroid distance.

Boxes follow FiftyOne's convention: an ``(n, 4)`` float array of relative
``[x, y, w, h]`` (top-left corner, width, height, in ``[0, 1]`` of the image
width and height). Every ``pairwise_*`` function takes two box sets ``a``
(``n`` boxes) and ``b`` (``m`` boxes) and returns an ``(n, m)`` float64 matrix
whose entry ``[i, j]`` compares ``a[i]`` with ``b[j]``. Empty sets are allowed
(``n = 0`` or ``m = 0`` gives an empty ``(n, m)`` matrix).

The computation is vectorised with numpy broadcasting, in float64. It runs
over blocks of rows so that, apart from the ``(n, m)`` result, only a few
cache-sized temporaries are allocated, whatever ``n`` and ``m``.

Inputs are assumed finite with non-negative widths and heights; checking
that, and repairing boxes that leave the image, is the job of
:mod:`agreement.core.validation`. Only the array shape is checked here.

Degenerate cases
----------------
Every function returns a defined number for every pair of valid boxes: no
``NaN``, no division ``0 / 0``. Below, "identical" means equal corner
coordinates, and a *zero-area* box is one with ``w == 0`` or ``h == 0``
(a segment or a point; also a box so thin that ``x + w`` rounds to ``x``).

=============================================  =====  ==============  ==========
pair                                           IoU    GIoU            distance
=============================================  =====  ==============  ==========
identical boxes (any area, even zero)          1      1               0
zero-area box vs a box of positive area        0      formula [1]     formula
two different zero-area boxes                  0      -1 [2]          formula
touching along a whole common edge             0      0 [3]           formula
touching at a corner or along part of an edge  0      < 0 [3]         formula
disjoint, far apart                            0      -> -1 [4]       formula
=============================================  =====  ==============  ==========

[1] With ``|A| = 0`` the intersection is empty, so IoU = 0 and
    GIoU = ``|A ∪ B| / |C| - 1``, which lies in ``[-1, 0]``.
[2] Here ``|A ∪ B| = 0``. When the enclosing box ``C`` has positive area
    the formula gives exactly -1; when ``C`` is degenerate too (two distinct
    points, or segments on one line) the formula is ``0 / 0`` and GIoU is
    *defined* as -1, the value the formula gives for every other pair of
    different zero-area boxes (nothing is shared). Identical zero-area boxes get
    IoU = GIoU = 1 by the first row.
[3] Touching boxes have no overlapping area. Side by side along a whole
    common edge the enclosing box is the union, so GIoU = 0; boxes that touch
    at a corner or along part of an edge leave empty space in the enclosing
    box, so their GIoU is negative.
[4] GIoU = ``-g / (2 + g)`` for two unit squares a gap ``g`` apart, which
    tends to -1 as ``g`` grows.

References:
    .. [Everingham2010] M. Everingham, L. Van Gool, C. K. I. Williams, J. Winn and
       A. Zisserman, "The PASCAL Visual Object Classes (VOC) Challenge",
       International Journal of Computer Vision 88(2), 303-338, 2010.
    .. [Rezatofighi2019] H. Rezatofighi, N. Tsoi, J. Gwak, A. Sadeghian, I. Reid and
       S. Savarese, "Generalized Intersection over Union: A Metric and a Loss for
       Bounding Box Regression", CVPR 2019, 658-666.
    .. [Braylan2022] A. Braylan, O. Alonso and M. Lease, "Measuring Annotator
       Agreement Generally across Complex Structured, Multi-object, and Free-text
       Annotation Tasks", The Web Conference (WWW) 2022.
"""

from __future__ import annotations

from typing import Iterator

import numpy as np
from numpy.typing import ArrayLike

__all__ = [
    "xywh_to_xyxy",
    "box_area",
    "pairwise_iou",
    "paired_iou",
    "pairwise_giou",
    "pairwise_centroid_distance",
    "pairwise_centroid_closeness",
    "giou_to_similarity",
]

# Number of matrix elements per block of rows: 2**16 float64 = 512 KiB per
# temporary, so that the few temporaries of a block stay in the CPU cache.
_BLOCK_ELEMENTS = 1 << 16


# --------------------------------------------------------------------------
# Conversions
# --------------------------------------------------------------------------


def _as_boxes(boxes: ArrayLike, name: str = "boxes") -> np.ndarray:
    """``boxes`` as an ``(n, 4)`` float64 array; ``ValueError`` on a wrong shape.

    An empty sequence (``[]``, shape ``(0,)``) is accepted as zero boxes.
    """
    arr = np.asarray(boxes, dtype=np.float64)
    if arr.ndim == 1 and arr.size == 0:
        return arr.reshape(0, 4)
    if arr.ndim != 2 or arr.shape[1] != 4:
        raise ValueError(
            f"{name} must be an (n, 4) array of [x, y, w, h] boxes; got an array of shape {arr.shape}"
        )
    return arr


def xywh_to_xyxy(boxes: ArrayLike) -> np.ndarray:
    """Converts ``[x, y, w, h]`` boxes to corner form ``[x1, y1, x2, y2]``.

    ``x1 = x``, ``y1 = y``, ``x2 = x + w``, ``y2 = y + h``.

    Args:
        boxes (array-like of shape (n, 4)): Boxes as ``[x, y, w, h]`` (top-left corner, width, height).

    Returns:
        xyxy (ndarray of shape (n, 4), float64): A new array; the input is not modified.

    Raises:
        ValueError: If ``boxes`` is not of shape ``(n, 4)``.

    Examples:
        >>> xywh_to_xyxy([[0.1, 0.2, 0.3, 0.4]]).round(6).tolist()
        [[0.1, 0.2, 0.4, 0.6]]
    """
    arr = _as_boxes(boxes)
    out: np.ndarray = arr.copy()
    out[:, 2:] += arr[:, :2]
    return out


def box_area(boxes: ArrayLike) -> np.ndarray:
    """Area ``w * h`` of each ``[x, y, w, h]`` box.

    Args:
        boxes (array-like of shape (n, 4)): Boxes as ``[x, y, w, h]``.

    Returns:
        area (ndarray of shape (n,), float64): In relative units (a fraction of the image area for relative boxes);
            ``>= 0`` for valid boxes, 0 for zero-area boxes.

    Raises:
        ValueError: If ``boxes`` is not of shape ``(n, 4)``.

    Examples:
        >>> box_area([[0.0, 0.0, 0.5, 0.5], [0.2, 0.2, 0.0, 0.3]]).tolist()
        [0.25, 0.0]
    """
    arr = _as_boxes(boxes)
    area: np.ndarray = arr[:, 2] * arr[:, 3]
    return area


# --------------------------------------------------------------------------
# Internals
# --------------------------------------------------------------------------


class _Corners:
    """Corner coordinates and areas of a box set, shaped for broadcasting.

    Widths and areas are recomputed from the corners (``x2 - x1``) rather than
    taken from ``w``, so that the intersection computed from the same corners
    never exceeds either area (floating-point rounding is monotone), which
    keeps IoU in ``[0, 1]`` without clipping and makes identical boxes give
    exactly 1.
    """

    __slots__ = ("xyxy", "x1", "y1", "x2", "y2", "area", "zero", "zero_xyxy")

    def __init__(self, boxes: np.ndarray, column: bool) -> None:
        xyxy = boxes.copy()
        xyxy[:, 2:] += boxes[:, :2]
        self.xyxy = xyxy
        shape = (-1, 1) if column else (1, -1)
        self.x1, self.y1, self.x2, self.y2 = (xyxy[:, k].reshape(shape) for k in range(4))
        self.area = (self.x2 - self.x1) * (self.y2 - self.y1)
        # Indices of zero-area boxes (sorted): the only ones that can give a
        # zero union or a zero enclosing area.
        self.zero = np.flatnonzero(self.area.reshape(-1) == 0)
        self.zero_xyxy = xyxy[self.zero]


def _row_blocks(n: int, m: int) -> Iterator[tuple[int, int]]:
    """Yields ``(start, stop)`` row ranges of about ``_BLOCK_ELEMENTS`` elements."""
    rows = max(1, _BLOCK_ELEMENTS // max(m, 1))
    for start in range(0, n, rows):
        yield start, min(n, start + rows)


def _block_rows(n: int, m: int) -> int:
    return min(n, max(1, _BLOCK_ELEMENTS // max(m, 1)))


def _zero_pairs(ca: _Corners, cb: _Corners, start: int, stop: int) -> tuple[np.ndarray, np.ndarray] | None:
    """The pairs of the block ``start:stop`` where both boxes have zero area.

    Returns ``(rows, identical)`` with ``rows`` the block-local row indices of
    the zero-area boxes of ``a`` (to be combined with ``cb.zero`` through
    ``np.ix_``) and ``identical`` the ``(len(rows), len(cb.zero))`` boolean
    matrix of equal corners, or ``None`` if the block has no such pair.
    """
    if cb.zero.size == 0:
        return None
    lo, hi = np.searchsorted(ca.zero, [start, stop])
    if lo == hi:
        return None
    za = ca.zero[lo:hi]
    identical = np.all(ca.xyxy[za][:, None, :] == cb.zero_xyxy[None, :, :], axis=-1)
    return za - start, identical


def _prepare(a: ArrayLike, b: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    return _as_boxes(a, "a"), _as_boxes(b, "b")


# --------------------------------------------------------------------------
# Overlap measures
# --------------------------------------------------------------------------


def pairwise_iou(a: ArrayLike, b: ArrayLike) -> np.ndarray:
    r"""Intersection over union (Jaccard index) of every pair of boxes.

    .. math::

        \mathrm{IoU}(A, B) = \frac{|A \cap B|}{|A \cup B|}
                           = \frac{|A \cap B|}{|A| + |B| - |A \cap B|}

    Args:
        a (array-like of shape (n, 4)): Boxes as ``[x, y, w, h]``.
        b (array-like of shape (m, 4)): Boxes as ``[x, y, w, h]``.

    Returns:
        iou (ndarray of shape (n, m), float64): ``iou[i, j]`` is the IoU of ``a[i]`` and ``b[j]``, in ``[0, 1]``: 1 for
            identical boxes (zero-area ones included), 0 for disjoint or touching boxes and for a zero-area box against
            any other box (see the module docstring). Symmetric: ``pairwise_iou(a, b) == pairwise_iou(b, a).T`` up to
            rounding.

    Raises:
        ValueError: If ``a`` or ``b`` is not of shape ``(k, 4)``.

    See Also:
        pairwise_giou : IoU minus a penalty for empty space, informative for
            disjoint boxes.

    References:
        .. [1] P. Jaccard, "The distribution of the flora in the alpine zone",
           New Phytologist 11(2), 37-50, 1912.
        .. [2] M. Everingham et al., "The PASCAL Visual Object Classes (VOC)
           Challenge", IJCV 88(2), 303-338, 2010.

    Examples:
        >>> a = [[0.0, 0.0, 0.5, 0.5]]
        >>> b = [[0.0, 0.0, 0.5, 0.5], [0.25, 0.0, 0.5, 0.5], [0.5, 0.0, 0.5, 0.5]]
        >>> pairwise_iou(a, b).round(6).tolist()
        [[1.0, 0.333333, 0.0]]
    """
    a, b = _prepare(a, b)
    n, m = len(a), len(b)
    out = np.empty((n, m), dtype=np.float64)
    if n == 0 or m == 0:
        return out
    ca, cb = _Corners(a, column=True), _Corners(b, column=False)
    rows = _block_rows(n, m)
    t1 = np.empty((rows, m))
    t2 = np.empty((rows, m))
    for start, stop in _row_blocks(n, m):
        k = stop - start
        o, u, v = out[start:stop], t1[:k], t2[:k]
        x1, y1, x2, y2, area = ca.x1[start:stop], ca.y1[start:stop], ca.x2[start:stop], ca.y2[start:stop], ca.area[start:stop]
        # Intersection width and height, clipped at 0.
        np.minimum(x2, cb.x2, out=o)
        o -= np.maximum(x1, cb.x1, out=u)
        np.maximum(o, 0.0, out=o)
        np.minimum(y2, cb.y2, out=u)
        u -= np.maximum(y1, cb.y1, out=v)
        np.maximum(u, 0.0, out=u)
        o *= u  # |A ∩ B|
        np.add(area, cb.area, out=u)
        u -= o  # |A ∪ B|, zero only when both areas are zero
        zero = _zero_pairs(ca, cb, start, stop)
        if zero is not None:
            u[np.ix_(zero[0], cb.zero)] = 1.0  # no 0 / 0 (the intersection is 0 there)
        np.divide(o, u, out=o)
        if zero is not None:
            o[np.ix_(zero[0], cb.zero)] = zero[1]
    return out


def paired_iou(a: ArrayLike, b: ArrayLike) -> np.ndarray:
    r"""Intersection over union of the box pairs ``(a[k], b[k])``: the paired (diagonal) form of :func:`pairwise_iou`.

    .. math::

        \mathrm{IoU}(A_k, B_k) = \frac{|A_k \cap B_k|}{|A_k| + |B_k| - |A_k \cap B_k|}

    The same operations in the same order as :func:`pairwise_iou` (corners ``x2 = x + w``, areas from the
    corners, two zero-area boxes: 1 if their corners are equal, else 0), so ``paired_iou(a, b)[k]`` equals
    ``pairwise_iou(a, b)[k, k]`` bit for bit, in time and memory linear in the number of pairs.

    Args:
        a: ``(n, 4)`` boxes as ``[x, y, w, h]``.
        b: ``(n, 4)`` boxes as ``[x, y, w, h]``, paired with ``a`` row by row.

    Returns:
        ``(n,)`` float64 IoU in ``[0, 1]``: 1 for identical boxes (zero-area ones included), 0 for disjoint
        or touching boxes and for a zero-area box against any other box.

    Raises:
        ValueError: If ``a`` or ``b`` is not of shape ``(n, 4)``, or their lengths differ.

    References:
        P. Jaccard, "The distribution of the flora in the alpine zone", New Phytologist 11(2), 37-50, 1912.

    Examples:
        >>> paired_iou([[0.0, 0.0, 0.5, 0.5], [0.0, 0.0, 0.5, 0.5]],
        ...            [[0.25, 0.0, 0.5, 0.5], [0.5, 0.0, 0.5, 0.5]]).round(6).tolist()
        [0.333333, 0.0]
    """
    a, b = _prepare(a, b)
    if len(a) != len(b):
        raise ValueError(f"paired boxes: a has {len(a)} boxes and b has {len(b)}; give one b per a")
    xa1, ya1, xb1, yb1 = a[:, 0], a[:, 1], b[:, 0], b[:, 1]
    xa2, ya2, xb2, yb2 = a[:, 2] + xa1, a[:, 3] + ya1, b[:, 2] + xb1, b[:, 3] + yb1
    inter = np.minimum(xa2, xb2)
    inter -= np.maximum(xa1, xb1)
    np.maximum(inter, 0.0, out=inter)
    h = np.minimum(ya2, yb2)
    h -= np.maximum(ya1, yb1)
    np.maximum(h, 0.0, out=h)
    inter *= h  # |A ∩ B|
    union = (xa2 - xa1) * (ya2 - ya1) + (xb2 - xb1) * (yb2 - yb1)
    union -= inter  # |A ∪ B|, zero only when both areas are zero
    zero = np.flatnonzero(union == 0.0)
    union[zero] = 1.0  # no 0 / 0 (the intersection is 0 there)
    np.divide(inter, union, out=inter)
    if zero.size:
        same = ((xa1[zero] == xb1[zero]) & (ya1[zero] == yb1[zero])
                & (xa2[zero] == xb2[zero]) & (ya2[zero] == yb2[zero]))
        inter[zero] = same.astype(np.float64)
    iou: np.ndarray = inter
    return iou


def pairwise_giou(a: ArrayLike, b: ArrayLike) -> np.ndarray:
    r"""Generalised intersection over union of every pair of boxes.

    .. math::

        \mathrm{GIoU}(A, B) = \mathrm{IoU}(A, B) - \frac{|C \setminus (A \cup B)|}{|C|}
                            = \mathrm{IoU}(A, B) - 1 + \frac{|A \cup B|}{|C|}

    where :math:`C` is the smallest axis-aligned box enclosing :math:`A` and
    :math:`B`. Unlike IoU it keeps decreasing as disjoint boxes move apart,
    and :math:`1 - \mathrm{GIoU}` is a metric [1]_.

    Args:
        a (array-like of shape (n, 4)): Boxes as ``[x, y, w, h]``.
        b (array-like of shape (m, 4)): Boxes as ``[x, y, w, h]``.

    Returns:
        giou (ndarray of shape (n, m), float64): ``giou[i, j]`` is the GIoU of ``a[i]`` and ``b[j]``, in ``[-1, 1]``,
            and never above the IoU: 1 for identical boxes (zero-area ones
            included), 0 for boxes touching along a full edge, tending to -1 as
            boxes move apart, and -1 for two different zero-area boxes, including
            when their enclosing box has zero area (see the module docstring).
            Symmetric up to rounding.

    Raises:
        ValueError: If ``a`` or ``b`` is not of shape ``(k, 4)``.

    See Also:
        pairwise_iou
        giou_to_similarity : maps GIoU to ``[0, 1]``.

    References:
        .. [1] H. Rezatofighi, N. Tsoi, J. Gwak, A. Sadeghian, I. Reid and
           S. Savarese, "Generalized Intersection over Union: A Metric and a Loss
           for Bounding Box Regression", CVPR 2019, 658-666.

    Examples:
        >>> a = [[0.0, 0.0, 0.25, 0.25]]
        >>> b = [[0.0, 0.0, 0.25, 0.25], [0.25, 0.0, 0.25, 0.25], [0.75, 0.0, 0.25, 0.25]]
        >>> pairwise_giou(a, b).round(6).tolist()
        [[1.0, 0.0, -0.5]]
    """
    a, b = _prepare(a, b)
    n, m = len(a), len(b)
    out = np.empty((n, m), dtype=np.float64)
    if n == 0 or m == 0:
        return out
    ca, cb = _Corners(a, column=True), _Corners(b, column=False)
    rows = _block_rows(n, m)
    t1, t2, t3 = (np.empty((rows, m)) for _ in range(3))
    for start, stop in _row_blocks(n, m):
        k = stop - start
        o, u, v, w = out[start:stop], t1[:k], t2[:k], t3[:k]
        x1, y1, x2, y2, area = ca.x1[start:stop], ca.y1[start:stop], ca.x2[start:stop], ca.y2[start:stop], ca.area[start:stop]
        # Intersection width (o) and enclosing width (u).
        np.minimum(x2, cb.x2, out=o)
        o -= np.maximum(x1, cb.x1, out=v)
        np.maximum(o, 0.0, out=o)
        np.maximum(x2, cb.x2, out=u)
        u -= np.minimum(x1, cb.x1, out=v)
        # Intersection height (v), times width: |A ∩ B| in o.
        np.minimum(y2, cb.y2, out=v)
        v -= np.maximum(y1, cb.y1, out=w)
        np.maximum(v, 0.0, out=v)
        o *= v
        # Enclosing height (v), times width: |C| in u.
        np.maximum(y2, cb.y2, out=v)
        v -= np.minimum(y1, cb.y1, out=w)
        u *= v
        # |A ∪ B| in v.
        np.add(area, cb.area, out=v)
        v -= o
        zero = _zero_pairs(ca, cb, start, stop)
        if zero is not None:
            # Both areas zero: |A ∪ B| = 0 and possibly |C| = 0. Avoid 0 / 0;
            # the values are set below.
            cells = np.ix_(zero[0], cb.zero)
            v[cells] = 1.0
            u[cells] = 1.0
        np.divide(o, v, out=o)  # IoU
        np.divide(v, u, out=v)  # |A ∪ B| / |C|, <= 1 up to rounding
        np.minimum(v, 1.0, out=v)
        np.subtract(1.0, v, out=v)  # penalty |C \ (A ∪ B)| / |C|, in [0, 1]
        o -= v  # in [-1, 1] and <= IoU also after rounding
        if zero is not None:
            o[cells] = np.where(zero[1], 1.0, -1.0)
    return out


def giou_to_similarity(giou: ArrayLike) -> np.ndarray:
    r"""Maps GIoU from ``[-1, 1]`` to a similarity in ``[0, 1]``.

    .. math:: s = \frac{1 + \mathrm{GIoU}}{2}

    so that :math:`1 - s = (1 - \mathrm{GIoU}) / 2` is the GIoU distance of
    Rezatofighi et al. (CVPR 2019) scaled to ``[0, 1]``.

    Args:
        giou (array-like): GIoU values, e.g. from :func:`pairwise_giou`.

    Returns:
        similarity (ndarray of the same shape, float64): In ``[0, 1]`` for GIoU in ``[-1, 1]``: 1 for identical boxes,
            1/2 for boxes touching along an edge, towards 0 for boxes far apart.

    Examples:
        >>> giou_to_similarity([1.0, 0.0, -1.0]).tolist()
        [1.0, 0.5, 0.0]
    """
    s = np.array(giou, dtype=np.float64)  # a copy, modified in place
    s += 1.0
    s *= 0.5
    return s


# --------------------------------------------------------------------------
# Centroid distance
# --------------------------------------------------------------------------


def _scaled_centres(boxes: np.ndarray, image_size: tuple[float, float] | None) -> np.ndarray:
    """Box centres in units of the image diagonal, ``(n, 2)``."""
    if image_size is None:
        scale = np.full(2, 1.0 / np.sqrt(2.0))
    else:
        size = np.asarray(image_size, dtype=np.float64)
        if size.shape != (2,) or not np.all(np.isfinite(size)) or not np.all(size > 0):
            raise ValueError(
                "image_size must be (width, height) in pixels, two positive finite numbers, "
                f"or None when unknown; got {image_size!r}"
            )
        scale = size / np.hypot(size[0], size[1])
    centroids: np.ndarray = (boxes[:, :2] + 0.5 * boxes[:, 2:]) * scale
    return centroids


def pairwise_centroid_distance(
    a: ArrayLike, b: ArrayLike, *, image_size: tuple[float, float] | None = None
) -> np.ndarray:
    r"""Distance between box centres, normalised by the image diagonal.

    With box centres :math:`c = (x + w/2, y + h/2)` in relative coordinates
    and the image of ``(W, H)`` pixels,

    .. math::

        d(A, B) = \frac{\sqrt{W^2 (c^A_x - c^B_x)^2 + H^2 (c^A_y - c^B_y)^2}}
                       {\sqrt{W^2 + H^2}}

    i.e. the Euclidean distance in pixels divided by the image diagonal, so
    that the aspect ratio counts. Without ``image_size`` the image is taken
    as a unit square (``W = H = 1``, diagonal :math:`\sqrt 2`). Unlike IoU
    and GIoU it ignores the boxes' sizes, which makes it usable for points
    and tiny boxes; any such distance can feed chance-corrected agreement
    [1]_.

    Args:
        a (array-like of shape (n, 4)): Boxes as relative ``[x, y, w, h]``.
        b (array-like of shape (m, 4)): Boxes as relative ``[x, y, w, h]``.
        image_size ((width, height) or None, default=None): Image size in pixels; ``None`` means a unit square.

    Returns:
        distance (ndarray of shape (n, m), float64): In ``[0, 1]`` for boxes whose centres lie inside the image: 0 for
            boxes with the same centre (identical boxes in particular), 1 only
            for centres at opposite corners. Symmetric.

    Raises:
        ValueError: If ``a`` or ``b`` is not of shape ``(k, 4)``, or ``image_size`` is not
            two positive finite numbers.

    See Also:
        pairwise_centroid_closeness : ``1 - distance``, a similarity.

    References:
        .. [1] A. Braylan, O. Alonso and M. Lease, "Measuring Annotator Agreement
           Generally across Complex Structured, Multi-object, and Free-text
           Annotation Tasks", WWW 2022.

    Examples:
        >>> a = [[0.0, 0.0, 0.0, 0.0]]
        >>> b = [[1.0, 1.0, 0.0, 0.0], [0.5, 0.0, 0.0, 0.0]]
        >>> pairwise_centroid_distance(a, b).round(6).tolist()
        [[1.0, 0.353553]]
        >>> pairwise_centroid_distance(a, b, image_size=(1920, 1080)).round(6).tolist()
        [[1.0, 0.435788]]
    """
    a, b = _prepare(a, b)
    ca = _scaled_centres(a, image_size)
    cb = _scaled_centres(b, image_size)
    n, m = len(a), len(b)
    out = np.empty((n, m), dtype=np.float64)
    if n == 0 or m == 0:
        return out
    ax, ay = ca[:, :1], ca[:, 1:]
    bx, by = cb[:, 0], cb[:, 1]
    tmp = np.empty((_block_rows(n, m), m))
    for start, stop in _row_blocks(n, m):
        o, t = out[start:stop], tmp[: stop - start]
        np.subtract(ax[start:stop], bx, out=o)
        np.subtract(ay[start:stop], by, out=t)
        # sqrt(dx² + dy²); np.hypot guards against overflow, which cannot
        # happen here (centres are scaled to about the unit range) and is
        # slower.
        o *= o
        t *= t
        o += t
        np.sqrt(o, out=o)
    return out


def pairwise_centroid_closeness(
    a: ArrayLike, b: ArrayLike, *, image_size: tuple[float, float] | None = None
) -> np.ndarray:
    r"""Similarity of box centres: one minus the normalised centroid distance.

    .. math:: s(A, B) = \max\bigl(0,\; 1 - d(A, B)\bigr)

    with :math:`d` from :func:`pairwise_centroid_distance` (Euclidean
    distance between centres in pixels over the image diagonal).

    Args:
        a (array-like of shape (n, 4)): Boxes as relative ``[x, y, w, h]``.
        b (array-like of shape (m, 4)): Boxes as relative ``[x, y, w, h]``.
        image_size ((width, height) or None, default=None): Image size in pixels; ``None`` means a unit square.

    Returns:
        closeness (ndarray of shape (n, m), float64): In ``[0, 1]``: 1 for boxes with the same centre, 0 for centres at
            opposite corners of the image. The clip at 0 only acts on centres
            outside the image, which validated input does not have.

    Raises:
        ValueError: As :func:`pairwise_centroid_distance`.

    Examples:
        >>> pairwise_centroid_closeness([[0.0, 0.0, 0.5, 0.5]], [[0.0, 0.0, 0.5, 0.5], [0.5, 0.5, 0.5, 0.5]]).round(6).tolist()
        [[1.0, 0.5]]
    """
    s = pairwise_centroid_distance(a, b, image_size=image_size)
    np.subtract(1.0, s, out=s)
    np.maximum(s, 0.0, out=s)
    return s
