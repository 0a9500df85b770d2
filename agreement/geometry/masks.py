r"""Pairwise IoU of instance masks, and rasterisation of polygons with OpenCV.

FiftyOne stores an instance mask on a ``Detection``: a 2-D boolean (or
0/1 integer) array that spans the detection's bounding box, not the image.
To compare two masks both are placed in the image's pixel grid:

* **Pixel extent of a box.** A relative box ``[x, y, w, h]`` in an image of
  ``(W, H)`` pixels covers the pixel columns ``c0 = ⌊xW + ½⌋`` to
  ``c1 = ⌊(x + w)W + ½⌋`` (exclusive), i.e. the pixels whose centres lie in
  the box, and the rows likewise; the extent is clipped to the image. For a
  box derived from a mask (integer pixel edges, as FiftyOne makes them) this
  recovers the mask's own pixels exactly, whatever the floating-point noise.
* **Placing a mask.** A mask whose shape differs from its box's pixel extent is
  resized to it with ``cv2.INTER_NEAREST`` (FiftyOne's
  ``Detection.to_segmentation`` renders masks the same way, up to its choice
  of interpolation); parts of the box outside the image are cropped.

IoU is counted over pixels, and only inside the overlap of two extents:
pairs whose extents do not overlap are 0 without touching the masks.

Polygons are rasterised with ``cv2.fillPoly``, ring by ring (so the region is
the union of the rings, as in :mod:`agreement.geometry.polygons`), with
vertices at sub-pixel precision (4 fractional bits). ``cv2.fillPoly`` fills
every pixel its outline touches, which grows a region by about half a pixel
(for a 10-pixel-wide object, about a fifth of its area). To remove most of
that bias the fill runs on a 4 x 4 sub-pixel grid (2 x 2 or 1 x 1 for canvases
above 2**24 sub-pixels) and a pixel is set when more than half of its
sub-pixels are: on random polygons 5 to 70 pixels across the rasterised area
is within about 2 % of the polygon's area (bias about +0.5 %). Mask IoU of
rasterised polygons approaches the polygon IoU as objects get large relative
to a pixel (see the tests for the tolerance).

References:
    .. [Lin2014] T.-Y. Lin et al., "Microsoft COCO: Common Objects in Context",
       ECCV 2014 (mask IoU for instance segmentation).
    .. [Tschirschwitz] D. Tschirschwitz and V. Rodehorst, "KαLOS finds Consensus:
       A Meta-Algorithm for Evaluating Inter-Annotator Agreement in Complex
       Vision Tasks" (mask IoU as a localisation similarity).
"""

from __future__ import annotations

from typing import NamedTuple, Sequence

import cv2
import numpy as np
from numpy.typing import ArrayLike

__all__ = [
    "PlacedMask",
    "box_pixel_extent",
    "place_masks",
    "polygons_to_masks",
    "rasterize_polygons",
    "pairwise_mask_iou",
    "pairwise_placed_mask_iou",
    "pairwise_polygon_mask_iou",
]

_SHIFT = 4  # fractional bits of cv2.fillPoly vertex coordinates


class PlacedMask(NamedTuple):
    """A mask in image pixel coordinates: ``mask`` covers rows ``y0:y0 + h`` and
    columns ``x0:x0 + w`` of the image, with ``(h, w) = mask.shape``; ``area``
    is its number of set pixels."""

    x0: int
    y0: int
    mask: np.ndarray
    area: int


def _image_size(image_size: tuple[float, float]) -> tuple[int, int]:
    size = np.asarray(image_size, dtype=np.float64)
    if size.shape != (2,) or not np.all(np.isfinite(size)) or not np.all(size >= 1):
        raise ValueError(
            f"image_size must be (width, height) in pixels, two finite numbers >= 1; got {image_size!r}"
        )
    return int(round(size[0])), int(round(size[1]))


def _as_boxes(boxes: ArrayLike, n: int, name: str) -> np.ndarray:
    arr = np.asarray(boxes, dtype=np.float64)
    if arr.size == 0 and n == 0:
        return arr.reshape(0, 4)
    if arr.shape != (n, 4):
        raise ValueError(f"{name} must be an ({n}, 4) array of relative [x, y, w, h] boxes; got shape {arr.shape}")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} has NaN or infinite coordinates")
    return arr


def box_pixel_extent(boxes: ArrayLike, image_size: tuple[float, float]) -> np.ndarray:
    r"""Pixel extent of relative boxes, unclipped: ``(n, 4)`` int ``[c0, r0, c1, r1]``.

    .. math:: c_0 = \lfloor xW + \tfrac12 \rfloor,\quad
              c_1 = \lfloor (x + w)W + \tfrac12 \rfloor

    and the rows likewise with ``y``, ``h`` and ``H``: the pixels whose
    centres lie in the box (``c1``, ``r1`` exclusive). Not clipped to the
    image, so that a mask can be resized to the box before it is cropped.

    Args:
        boxes (array-like of shape (n, 4)): Relative ``[x, y, w, h]``.
        image_size ((width, height)): Image size in pixels.

    Returns:
        extent (ndarray of shape (n, 4), int64): ``[c0, r0, c1, r1]`` of each box (``c1``, ``r1`` exclusive).

    Examples:
        >>> box_pixel_extent([[0.1, 0.2, 0.5, 0.25]], (100, 40)).tolist()
        [[10, 8, 60, 18]]
    """
    W, H = _image_size(image_size)
    b = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
    scale = np.array([W, H, W, H], dtype=np.float64)
    corners = np.concatenate([b[:, :2], b[:, :2] + b[:, 2:]], axis=1) * scale
    return np.floor(corners + 0.5).astype(np.int64)


def _crop(x0: int, y0: int, mask: np.ndarray, W: int, H: int) -> PlacedMask:
    """Crops a mask at ``(x0, y0)`` to the image ``[0, W) x [0, H)``."""
    h, w = mask.shape
    cx0, cy0 = max(x0, 0), max(y0, 0)
    cx1, cy1 = min(x0 + w, W), min(y0 + h, H)
    if cx1 <= cx0 or cy1 <= cy0:
        return PlacedMask(min(max(x0, 0), W), min(max(y0, 0), H), np.zeros((0, 0), dtype=bool), 0)
    if (cx0, cy0, cx1, cy1) != (x0, y0, x0 + w, y0 + h):
        mask = mask[cy0 - y0: cy1 - y0, cx0 - x0: cx1 - x0]
    return PlacedMask(cx0, cy0, mask, int(np.count_nonzero(mask)))


def place_masks(
    masks: Sequence[ArrayLike], boxes: ArrayLike, image_size: tuple[float, float]
) -> list[PlacedMask]:
    """Places box-relative instance masks in the image's pixel grid.

    Each mask is resized with ``cv2.INTER_NEAREST`` to its box's pixel extent
    (:func:`box_pixel_extent`) unless it already has that shape, then cropped
    to the image. Non-boolean masks count their non-zero pixels.

    Args:
        masks (sequence of n 2-D arrays): Instance masks spanning their boxes (FiftyOne's ``Detection.mask``).
        boxes (array-like of shape (n, 4)): Relative ``[x, y, w, h]`` boxes of the masks.
        image_size ((width, height)): Image size in pixels.

    Returns:
        placed (list of n :class:`PlacedMask`): A box with no pixel extent (narrower than a pixel) gives an empty
            mask of area 0.

    Raises:
        ValueError: For a mask that is not 2-D, a wrong box shape or non-finite boxes.
    """
    W, H = _image_size(image_size)
    boxes = _as_boxes(boxes, len(masks), "boxes")
    ext = box_pixel_extent(boxes, (W, H))
    out = []
    for i, m in enumerate(masks):
        if m is None:
            raise ValueError(f"mask {i} is None")
        m = np.asarray(m)
        if m.ndim != 2:
            raise ValueError(f"mask {i} must be a 2-D array, got shape {m.shape}")
        c0, r0, c1, r1 = (int(v) for v in ext[i])
        w, h = c1 - c0, r1 - r0
        if w <= 0 or h <= 0 or m.size == 0:
            out.append(PlacedMask(min(max(c0, 0), W), min(max(r0, 0), H), np.zeros((0, 0), dtype=bool), 0))
            continue
        m = m != 0 if m.dtype != bool else m
        if m.shape != (h, w):
            m = cv2.resize(np.ascontiguousarray(m, dtype=np.uint8), (w, h), interpolation=cv2.INTER_NEAREST).view(bool)
        out.append(_crop(c0, r0, m, W, H))
    return out


def _supersampling(h: int, w: int) -> int:
    """Sub-pixels per pixel side: 4, fewer for huge canvases (at most 2**24 sub-pixels)."""
    for factor in (4, 2):
        if h * w * factor * factor <= 1 << 24:
            return factor
    return 1


def _fill(rings: Sequence[ArrayLike], shape: tuple[int, int], x0: int, y0: int, W: int, H: int) -> np.ndarray:
    """Rasterises the union of ``rings`` (relative coordinates) into a canvas whose
    pixel ``(0, 0)`` is image pixel ``(y0, x0)``.

    Filled at ``f`` x ``f`` sub-pixels per pixel (``f = 4`` unless the canvas is
    huge); a pixel is set when more than half of its sub-pixels are.
    """
    h, w = shape
    f = _supersampling(h, w)
    canvas = np.zeros((h * f, w * f), dtype=np.uint8)
    scale = np.array([W, H], dtype=np.float64)
    origin = np.array([x0, y0], dtype=np.float64)
    for ring in rings:
        pts = np.asarray(ring, dtype=np.float64).reshape(-1, 2)
        if len(pts) == 0:
            continue
        if not np.isfinite(pts).all():
            raise ValueError("a polygon ring has NaN or infinite coordinates")
        # Sub-pixel centres are at half-integers of the sub-pixel grid,
        # fillPoly's at integers: shift by half a sub-pixel.
        p = ((pts * scale - origin) * f - 0.5) * (1 << _SHIFT)
        # One ring per call: overlapping rings unite (no even-odd holes).
        cv2.fillPoly(canvas, [np.round(p).astype(np.int32)], 255, lineType=cv2.LINE_8, shift=_SHIFT)
    if f == 1:
        return canvas > 0
    # INTER_AREA at an integer factor is the mean over each f x f block:
    # 255 k / f² for k set sub-pixels, rounded. "More than half set" is
    # k > f²/2, i.e. a mean above 255 (f²/2 + 1/2) / f², between the
    # rounded means of k = f²/2 and k = f²/2 + 1.
    mean = cv2.resize(canvas, (w, h), interpolation=cv2.INTER_AREA)
    return mean > int(255 * (f * f // 2 + 0.5) / (f * f))


def polygons_to_masks(
    polygons: Sequence[Sequence[ArrayLike]], boxes: ArrayLike, image_size: tuple[float, float]
) -> list[np.ndarray]:
    """Rasterises polygon annotations into FiftyOne-style instance masks spanning their boxes.

    Every ring of an annotation is filled with ``cv2.fillPoly`` (the region
    is the union of the rings) on a canvas of the box's pixel extent
    (:func:`box_pixel_extent`), so that :func:`place_masks` puts the result
    back unchanged; parts of a polygon outside its box are cut off. See the
    module docstring for the pixel convention and the sub-pixel fill.

    Args:
        polygons (sequence of n polygon annotations): Lists of ``(k, 2)`` relative ``(x, y)`` rings.
        boxes (array-like of shape (n, 4)): Relative ``[x, y, w, h]`` boxes the masks span (e.g. from
            :func:`agreement.geometry.polygons.polygon_boxes`).
        image_size ((width, height)): Image size in pixels.

    Returns:
        masks (list of n bool arrays): Mask ``i`` has shape ``(r1 - r0, c1 - c0)`` of box ``i``'s pixel extent
            (``(0, 0)`` for a box narrower than a pixel).

    Examples:
        >>> tri = [np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])]
        >>> polygons_to_masks([tri], [[0.0, 0.0, 1.0, 1.0]], (4, 4))[0].astype(int).tolist()
        [[1, 1, 1, 1], [1, 1, 1, 0], [1, 1, 0, 0], [1, 0, 0, 0]]
    """
    W, H = _image_size(image_size)
    boxes = _as_boxes(boxes, len(polygons), "boxes")
    ext = box_pixel_extent(boxes, (W, H))
    out = []
    for rings, (c0, r0, c1, r1) in zip(polygons, ext, strict=True):
        w, h = max(int(c1 - c0), 0), max(int(r1 - r0), 0)
        if w == 0 or h == 0 or rings is None:
            out.append(np.zeros((h, w), dtype=bool))
            continue
        out.append(_fill(rings, (h, w), int(c0), int(r0), W, H))
    return out


def rasterize_polygons(
    polygons: Sequence[Sequence[ArrayLike]], image_size: tuple[float, float]
) -> list[PlacedMask]:
    """Rasterises polygon annotations into placed masks covering the whole polygon.

    Like :func:`polygons_to_masks`, but each canvas is the polygon's own pixel
    bounds (grown by a pixel, clipped to the image),
    so nothing of the polygon is cut off.

    Args:
        polygons (sequence of n polygon annotations): Lists of ``(k, 2)`` relative ``(x, y)`` rings.
        image_size ((width, height)): Image size in pixels.

    Returns:
        placed (list of n :class:`PlacedMask`): One per polygon annotation, in order.

    Raises:
        ValueError: For an annotation without rings (``None`` or empty) or non-finite
            coordinates.
    """
    W, H = _image_size(image_size)
    out = []
    for i, rings in enumerate(polygons):
        if rings is None or len(rings) == 0:
            raise ValueError(f"polygon {i} has no rings")
        pts = np.concatenate([np.asarray(r, dtype=np.float64).reshape(-1, 2) for r in rings])
        if not np.isfinite(pts).all():
            raise ValueError(f"polygon {i} has NaN or infinite coordinates")
        lo = np.floor(pts.min(axis=0) * [W, H]).astype(np.int64) - 1
        hi = np.ceil(pts.max(axis=0) * [W, H]).astype(np.int64) + 1
        x0, y0 = max(int(lo[0]), 0), max(int(lo[1]), 0)
        x1, y1 = min(int(hi[0]), W), min(int(hi[1]), H)
        if x1 <= x0 or y1 <= y0:
            out.append(PlacedMask(min(x0, W), min(y0, H), np.zeros((0, 0), dtype=bool), 0))
            continue
        m = _fill(rings, (y1 - y0, x1 - x0), x0, y0, W, H)
        out.append(PlacedMask(x0, y0, m, int(np.count_nonzero(m))))
    return out


def pairwise_placed_mask_iou(a: Sequence[PlacedMask], b: Sequence[PlacedMask]) -> np.ndarray:
    r"""Pixel IoU of placed masks, all pairs.

    .. math:: \mathrm{IoU}(A, B) = \frac{|A \cap B|}{|A| + |B| - |A \cap B|}

    with :math:`|\cdot|` the number of pixels. Which pairs can overlap is
    decided from the extents, vectorised; only those pairs' overlapping
    windows are intersected.

    Args:
        a (sequence of n :class:`PlacedMask`): Masks of one image (from :func:`place_masks` or
            :func:`rasterize_polygons`).
        b (sequence of m :class:`PlacedMask`): Masks of the same image.

    Returns:
        iou (ndarray of shape (n, m), float64): In ``[0, 1]``: 1 for equal non-empty masks, 0 for disjoint ones. A
            pair of two empty masks has no pixels to agree on and gets 0 (as in
            the KαLOS reference tool), so an empty mask is not similar even to
            itself. Symmetric.
    """
    n, m = len(a), len(b)
    out = np.zeros((n, m))
    if n == 0 or m == 0:
        return out

    def ext(ps: Sequence[PlacedMask]) -> tuple[np.ndarray, np.ndarray]:
        e = np.array([(p.x0, p.y0, p.x0 + p.mask.shape[1], p.y0 + p.mask.shape[0]) for p in ps], dtype=np.int64)
        return e.reshape(-1, 4), np.array([p.area for p in ps], dtype=np.float64)

    ea, area_a = ext(a)
    eb, area_b = ext(b)
    x0 = np.maximum(ea[:, None, 0], eb[None, :, 0])
    y0 = np.maximum(ea[:, None, 1], eb[None, :, 1])
    x1 = np.minimum(ea[:, None, 2], eb[None, :, 2])
    y1 = np.minimum(ea[:, None, 3], eb[None, :, 3])
    candidates = (x1 > x0) & (y1 > y0) & (area_a[:, None] > 0) & (area_b[None, :] > 0)
    inter = np.zeros((n, m))
    for i, j in zip(*np.nonzero(candidates), strict=True):
        pa, pb = a[i], b[j]
        X0, Y0, X1, Y1 = x0[i, j], y0[i, j], x1[i, j], y1[i, j]
        wa = pa.mask[Y0 - pa.y0: Y1 - pa.y0, X0 - pa.x0: X1 - pa.x0]
        wb = pb.mask[Y0 - pb.y0: Y1 - pb.y0, X0 - pb.x0: X1 - pb.x0]
        inter[i, j] = np.count_nonzero(wa & wb)
    union = area_a[:, None] + area_b[None, :] - inter
    np.divide(inter, union, out=out, where=union > 0)
    return out


def pairwise_mask_iou(
    masks_a: Sequence[ArrayLike],
    boxes_a: ArrayLike,
    masks_b: Sequence[ArrayLike],
    boxes_b: ArrayLike,
    image_size: tuple[float, float],
) -> np.ndarray:
    r"""Pixel IoU of FiftyOne-style instance masks (each spanning its box), all pairs.

    .. math:: \mathrm{IoU}(A, B) = \frac{|A \cap B|}{|A \cup B|}

    over image pixels, after placing each mask in the image with
    :func:`place_masks` (resize to the box's pixel extent with
    ``cv2.INTER_NEAREST``). Pairs whose boxes do not overlap are 0 without
    touching the masks. The mask IoU of COCO instance segmentation
    evaluation (Lin et al., 2014).

    Args:
        masks_a (sequence of n 2-D arrays): Instance masks spanning ``boxes_a``.
        boxes_a (array-like of shape (n, 4)): Relative ``[x, y, w, h]``.
        masks_b (sequence of m 2-D arrays): Instance masks spanning ``boxes_b``.
        boxes_b (array-like of shape (m, 4)): Relative ``[x, y, w, h]``.
        image_size ((width, height)): Image size in pixels.

    Returns:
        iou (ndarray of shape (n, m), float64): In ``[0, 1]``; see :func:`pairwise_placed_mask_iou` for empty masks.

    Raises:
        ValueError: For masks that are not 2-D, boxes of the wrong shape, or a bad image size.

    Examples:
        >>> full = np.ones((2, 2), bool)
        >>> pairwise_mask_iou([full], [[0.0, 0.0, 0.5, 0.5]], [full, full], [[0.0, 0.0, 0.5, 0.5], [0.25, 0.0, 0.5, 0.5]], (4, 4)).round(6).tolist()
        [[1.0, 0.333333]]
    """
    return pairwise_placed_mask_iou(
        place_masks(masks_a, boxes_a, image_size), place_masks(masks_b, boxes_b, image_size)
    )


def pairwise_polygon_mask_iou(
    polygons_a: Sequence[Sequence[ArrayLike]],
    polygons_b: Sequence[Sequence[ArrayLike]],
    image_size: tuple[float, float],
) -> np.ndarray:
    r"""Pixel IoU of polygon annotations rasterised with OpenCV, all pairs.

    .. math:: \mathrm{IoU}(A, B) = \frac{|R(A) \cap R(B)|}{|R(A) \cup R(B)|}

    with :math:`R` the rasterisation of :func:`rasterize_polygons`. Close to
    :func:`agreement.geometry.polygons.pairwise_polygon_iou` for objects many
    pixels across; the exact polygon IoU is the better choice when polygons
    are the source, this one compares them like masks.

    Args:
        polygons_a (sequence of n polygon annotations): Lists of ``(k, 2)`` relative ``(x, y)`` rings.
        polygons_b (sequence of m polygon annotations): The second set, as ``polygons_a``.
        image_size ((width, height)): Image size in pixels: the raster resolution.

    Returns:
        iou (ndarray of shape (n, m), float64): In ``[0, 1]``.
    """
    return pairwise_placed_mask_iou(
        rasterize_polygons(polygons_a, image_size), rasterize_polygons(polygons_b, image_size)
    )
