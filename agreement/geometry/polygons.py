r"""Pairwise geometry of polygon annotations: IoU and GIoU, with shapely 2.

A *polygon annotation* follows FiftyOne's ``Polyline`` (and COCO's polygon
segmentation): a list of rings, each a ``(k, 2)`` float array of relative
``(x, y)`` points in ``[0, 1]`` of the image width and height. Its region is
the **union** of the areas its rings enclose (a ring inside another ring adds
nothing; rings are not holes), i.e. a (Multi)Polygon. This is how COCO and
the KαLOS reference tool (Tschirschwitz & Rodehorst) read multi-part
segmentations.

Every ``pairwise_*`` function takes two sequences of polygon annotations
(``n`` and ``m`` of them) and returns an ``(n, m)`` float64 matrix. The work
is vectorised with shapely's array functions: an STR-tree finds the pairs
whose regions intersect, ``shapely.intersection`` and ``shapely.area`` run
over those pairs only, the union area is ``|A| + |B| - |A ∩ B|``, and the
GIoU enclosing shape (the convex hull of ``A ∪ B``, which is the convex hull
of the vertices of both convex hulls) is built for all pairs at once.

Coordinates and image size
--------------------------
IoU and GIoU are ratios of areas, and an affine map :math:`x \mapsto Mx + t`
multiplies every area by :math:`|\det M|` and maps convex hulls to convex
hulls. Both measures are therefore **invariant** to scaling the axes by the
image width and height, even by different factors: the aspect ratio does not
change them. The functions work in the coordinates they are given (relative
by default, which reproduces the KαLOS reference tool's numbers exactly);
the optional ``image_size`` scales to pixels first and changes the results
only by floating-point rounding.

Bad polygons (:func:`validate_polygons`)
----------------------------------------
* NaN or infinite coordinates: an :class:`~agreement.core.validation.AnnotationError`.
* A ring with fewer than three distinct points, or enclosing no area
  (collinear points): the ring is **dropped** (a repair).
* A self-intersecting ring (a bow tie, a loop): repaired with
  ``shapely.make_valid(method="structure", keep_collapsed=False)``, which keeps
  every enclosed lobe (a bow tie keeps both triangles; ``buffer(0)``, which
  the KαLOS reference tries first, keeps only one of them) and drops
  collapsed lines and points.
* An annotation left with no area at all (every ring dropped):
  an :class:`~agreement.core.validation.AnnotationError`, since IoU is undefined
  for it.

Repairs are counted per annotation and returned, so that callers can report
them; every error names the annotation through the caller's ``where``.

References:
    .. [Rezatofighi2019] H. Rezatofighi, N. Tsoi, J. Gwak, A. Sadeghian, I. Reid and
       S. Savarese, "Generalized Intersection over Union: A Metric and a Loss for
       Bounding Box Regression", CVPR 2019, 658-666.
    .. [Lin2014] T.-Y. Lin et al., "Microsoft COCO: Common Objects in Context",
       ECCV 2014 (polygon segmentations as lists of rings).
    .. [Tschirschwitz] D. Tschirschwitz and V. Rodehorst, "KαLOS finds Consensus:
       A Meta-Algorithm for Evaluating Inter-Annotator Agreement in Complex
       Vision Tasks" (polygon IoU and GIoU similarities).
"""

from __future__ import annotations

from typing import Sequence, cast

import numpy as np
import shapely

from agreement.core.validation import AnnotationError

__all__ = [
    "validate_polygons",
    "polygon_boxes",
    "pairwise_polygon_iou",
    "pairwise_polygon_giou",
]

Polygon = list  # list of rings, each an (k, 2) float array of relative (x, y)


# --------------------------------------------------------------------------
# Validation and conversion to shapely
# --------------------------------------------------------------------------


def _where(where: str | Sequence[str] | None, i: int) -> str:
    if where is None:
        return f"polygon {i}"
    if isinstance(where, str):
        return f"{where}, polygon {i}"
    return str(where[i])


def _scale(image_size: tuple[float, float] | None) -> np.ndarray | None:
    if image_size is None:
        return None
    size = np.asarray(image_size, dtype=np.float64)
    if size.shape != (2,) or not np.all(np.isfinite(size)) or not np.all(size > 0):
        raise ValueError(
            "image_size must be (width, height) in pixels, two positive finite numbers, "
            f"or None; got {image_size!r}"
        )
    return size


def _ring_points(
    polygons: Sequence[Polygon | None], where: str | Sequence[str] | None
) -> tuple[list, list, list, np.ndarray, np.ndarray]:
    """The rings of every annotation as ``(k, 2)`` float arrays, repeated consecutive points (and an explicit
    closing point) dropped: ``(coords, ring_ann, ring_len, repaired, has)``, with the annotation and length
    of each ring kept, ``repaired`` marking annotations that lost a ring (empty or fewer than three points)
    and ``has`` those with a polygon. Non-finite coordinates or a malformed ring raise
    :class:`~agreement.core.validation.AnnotationError` (named through ``where``)."""
    n = len(polygons)
    coords, ring_ann, ring_len = [], [], []
    repaired = np.zeros(n, dtype=bool)
    has = np.zeros(n, dtype=bool)
    for i, rings in enumerate(polygons):
        if rings is None or len(rings) == 0:
            continue
        has[i] = True
        for ring in rings:
            try:
                pts = np.asarray(ring, dtype=np.float64)
            except (TypeError, ValueError):
                raise AnnotationError(f"{_where(where, i)}: a ring is not an array of (x, y) points") from None
            if pts.size == 0:
                repaired[i] = True
                continue
            if pts.ndim != 2 or pts.shape[1] != 2:
                raise AnnotationError(
                    f"{_where(where, i)}: a ring must be a (k, 2) array of (x, y) points, got shape {pts.shape}"
                )
            if not np.isfinite(pts).all():
                raise AnnotationError(f"{_where(where, i)}: a ring has NaN or infinite coordinates")
            # Drop repeated consecutive points (including an explicit closing point).
            keep = np.ones(len(pts), dtype=bool)
            keep[1:] = np.any(pts[1:] != pts[:-1], axis=1)
            pts = pts[keep]
            if len(pts) > 1 and np.all(pts[0] == pts[-1]):
                pts = pts[:-1]
            if len(pts) < 3:  # repeated points further apart: no area, dropped below
                repaired[i] = True
                continue
            coords.append(pts)
            ring_ann.append(i)
            ring_len.append(len(pts))
    return coords, ring_ann, ring_len, repaired, has


def validate_polygons(
    polygons: Sequence[Polygon | None],
    *,
    where: str | Sequence[str] | None = None,
    image_size: tuple[float, float] | None = None,
) -> tuple[np.ndarray, int]:
    """Checks polygon annotations, repairs what can be repaired, and converts them to shapely.

    Rules (see the module docstring): non-finite coordinates are an error;
    rings with fewer than three distinct points or no enclosed area are
    dropped; self-intersecting rings are repaired with
    ``shapely.make_valid(method="structure", keep_collapsed=False)``; the
    annotation's region is the union of its rings; an annotation left
    without area is an error. ``None`` (or an empty list: no polygon) stays
    ``None``.

    Args:
        polygons (sequence of polygon annotations or None): Each a list of rings, a ring a ``(k, 2)`` array of
            relative ``(x, y)``.
        where (str, sequence of str, or None): Locates annotations in error messages: one string per annotation
            (e.g. ``"sample 'a.jpg', rater 'r1', label 3"``), or one prefix to
            which ``", polygon i"`` is appended.
        image_size ((width, height) or None, default=None): Scales coordinates to pixels first (IoU and GIoU do not
            change, see the module docstring); ``None`` keeps them relative.

    Returns:
        geometries (ndarray of shape (n,), object): Valid shapely ``Polygon`` or ``MultiPolygon`` of positive area, one
            per annotation, or ``None`` where the annotation has no polygon.
        n_repaired (int): Number of annotations that were changed (a ring dropped or a
            self-intersection resolved).

    Raises:
        AnnotationError: Naming (through ``where``) the first annotation with non-finite
            coordinates, a malformed ring, or no area left.

    Examples:
        >>> bowtie = [np.array([[0, 0], [1, 1], [1, 0], [0, 1]], float)]
        >>> geoms, n = validate_polygons([bowtie, None])
        >>> float(geoms[0].area), geoms[1], n
        (0.5, None, 1)
    """
    scale = _scale(image_size)
    n = len(polygons)
    out = np.full(n, None, dtype=object)
    coords, ring_list, ring_len, repaired, has = _ring_points(polygons, where)
    if coords:
        flat = np.concatenate(coords)
        if scale is not None:
            flat = flat * scale
        ring_ann = np.asarray(ring_list, dtype=np.intp)
        rings = shapely.polygons(
            shapely.linearrings(flat, indices=np.repeat(np.arange(len(ring_len)), ring_len))
        )
        invalid = ~shapely.is_valid(rings)
        if invalid.any():
            rings[invalid] = shapely.make_valid(rings[invalid], method="structure", keep_collapsed=False)
            repaired[ring_ann[invalid]] = True
        empty = shapely.area(rings) <= 0.0
        if empty.any():
            repaired[ring_ann[empty]] = True
            rings, ring_ann = rings[~empty], ring_ann[~empty]
        # Union of the rings of each annotation; most annotations have one ring.
        starts = np.flatnonzero(np.r_[True, ring_ann[1:] != ring_ann[:-1]]) if len(ring_ann) else ring_ann
        sizes = np.diff(np.r_[starts, len(ring_ann)])
        single = sizes == 1
        out[ring_ann[starts[single]]] = rings[starts[single]]
        for s, k in zip(starts[~single], sizes[~single], strict=True):
            out[ring_ann[s]] = shapely.union_all(rings[s: s + k])
    idx = np.flatnonzero(has)
    areas = shapely.area(out[idx])  # NaN where None
    bad = idx[~(areas > 0.0)]
    if len(bad):
        i = int(bad[0])
        raise AnnotationError(
                f"{_where(where, int(i))}: the polygon encloses no area (every ring has fewer than "
                "three distinct points or collinear points)"
            )
    return out, int(repaired.sum())


def _as_geometries(
    polygons: Sequence[Polygon] | np.ndarray, image_size: tuple[float, float] | None, name: str
) -> np.ndarray:
    """Validated shapely geometries for polygon annotations (or pass-through)."""
    if isinstance(polygons, np.ndarray) and polygons.dtype == object and all(
        isinstance(g, shapely.Geometry) for g in polygons
    ):
        geoms = polygons
        if image_size is not None:
            geoms = shapely.transform(geoms, lambda xy: xy * _scale(image_size))
    else:
        geoms, _ = validate_polygons(cast("Sequence[Polygon | None]", polygons), where=name, image_size=image_size)
    missing = [i for i, g in enumerate(geoms) if g is None]
    if missing:
        raise ValueError(f"{name}: annotations {missing[:5]} have no polygon")
    return np.asarray(geoms, dtype=object).reshape(-1)


def polygon_boxes(polygons: Sequence[Polygon | None]) -> np.ndarray:
    """Bounding boxes of polygon annotations as relative ``[x, y, w, h]``.

    Args:
        polygons (sequence of polygon annotations or None): Lists of ``(k, 2)`` relative ``(x, y)`` rings, ``None``
            for an annotation without polygon.

    Returns:
        boxes (ndarray of shape (n, 4), float64): The tight box around every point of every ring; NaN where an
            annotation has no polygon.

    Examples:
        >>> polygon_boxes([[np.array([[0.1, 0.2], [0.5, 0.2], [0.3, 0.6]])], None]).round(6).tolist()
        [[0.1, 0.2, 0.4, 0.4], [nan, nan, nan, nan]]
    """
    boxes = np.full((len(polygons), 4), np.nan)
    for i, rings in enumerate(polygons):
        if rings is None or len(rings) == 0:
            continue
        pts = np.concatenate([np.asarray(r, dtype=np.float64).reshape(-1, 2) for r in rings])
        if len(pts):
            lo, hi = pts.min(axis=0), pts.max(axis=0)
            boxes[i] = [lo[0], lo[1], hi[0] - lo[0], hi[1] - lo[1]]
    return boxes


# --------------------------------------------------------------------------
# Pairwise measures on shapely geometries
# --------------------------------------------------------------------------


def _intersection_areas(ga: np.ndarray, gb: np.ndarray) -> np.ndarray:
    """``(n, m)`` areas of ``ga[i] ∩ gb[j]``, computed only where they intersect."""
    inter = np.zeros((len(ga), len(gb)))
    if len(ga) == 0 or len(gb) == 0:
        return inter
    ia, ib = shapely.STRtree(gb).query(ga, predicate="intersects")
    if len(ia):
        inter[ia, ib] = shapely.area(shapely.intersection(ga[ia], gb[ib]))
    return inter


def _iou_parts(ga: np.ndarray, gb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """IoU and union area matrices."""
    area_a, area_b = shapely.area(ga), shapely.area(gb)
    inter = _intersection_areas(ga, gb)
    union = area_a[:, None] + area_b[None, :] - inter
    # Validated geometries have positive area, so union > 0; guard anyway.
    iou = np.divide(inter, union, out=np.zeros_like(inter), where=union > 0)
    np.clip(iou, 0.0, 1.0, out=iou)
    return iou, union


# Pairs per block in _hull_areas, to bound the temporary object arrays.
_HULL_BLOCK_PAIRS = 1 << 16


def _hull_areas(ga: np.ndarray, gb: np.ndarray) -> np.ndarray:
    """``(n, m)`` areas of the convex hull of ``ga[i] ∪ gb[j]``.

    The hull of a union is the hull of both hulls, so each pair's enclosing
    shape is the hull of a two-member collection of hulls: built and hulled
    by vectorised shapely calls over blocks of rows (no polygon overlay).
    """
    n, m = len(ga), len(gb)
    out = np.zeros((n, m))
    if n == 0 or m == 0:
        return out
    ha, hb = shapely.convex_hull(ga), shapely.convex_hull(gb)
    rows = max(1, _HULL_BLOCK_PAIRS // m)
    for start in range(0, n, rows):
        stop = min(n, start + rows)
        k = (stop - start) * m
        pairs = np.empty((k, 2), dtype=object)
        pairs[:, 0] = np.repeat(ha[start:stop], m)
        pairs[:, 1] = np.tile(hb, stop - start)
        hulls = shapely.convex_hull(
            shapely.geometrycollections(pairs.reshape(-1), indices=np.repeat(np.arange(k), 2))
        )
        out[start:stop] = shapely.area(hulls).reshape(stop - start, m)
    return out


def pairwise_polygon_iou(
    a: Sequence[Polygon] | np.ndarray,
    b: Sequence[Polygon] | np.ndarray,
    *,
    image_size: tuple[float, float] | None = None,
) -> np.ndarray:
    r"""Intersection over union of polygon annotations, all pairs.

    .. math:: \mathrm{IoU}(A, B) = \frac{|A \cap B|}{|A \cup B|}

    where :math:`A` and :math:`B` are the regions of the annotations (the
    union of their rings, see the module docstring) and :math:`|\cdot|` is
    area. The polygon analogue of the box IoU used by PASCAL VOC and COCO.

    Args:
        a (sequence of n polygon annotations, or ndarray of shapely geometries): Lists of ``(k, 2)`` relative rings
            (validated and repaired with :func:`validate_polygons`), or geometries it returned.
        b (sequence of m polygon annotations, or ndarray of shapely geometries): The second set, as ``a``.
        image_size ((width, height) or None, default=None): Scales to pixels first; changes the result only by rounding
            (IoU is affine invariant).

    Returns:
        iou (ndarray of shape (n, m), float64): In ``[0, 1]``: 1 for equal regions, 0 for regions that do not overlap
            (touching included). Symmetric up to rounding.

    Raises:
        AnnotationError: For polygons that cannot be repaired (see :func:`validate_polygons`).
        ValueError: If an annotation has no polygon (``None``).

    See Also:
        agreement.geometry.boxes.pairwise_iou : the box version; equal for
            axis-aligned rectangles.

    Examples:
        >>> sq = lambda x, y, s: [np.array([[x, y], [x + s, y], [x + s, y + s], [x, y + s]])]
        >>> pairwise_polygon_iou([sq(0, 0, 0.5)], [sq(0, 0, 0.5), sq(0.25, 0, 0.5), sq(0.5, 0, 0.5)]).round(6).tolist()
        [[1.0, 0.333333, 0.0]]
    """
    ga = _as_geometries(a, image_size, "a")
    gb = _as_geometries(b, image_size, "b")
    return _iou_parts(ga, gb)[0]


def pairwise_polygon_giou(
    a: Sequence[Polygon] | np.ndarray,
    b: Sequence[Polygon] | np.ndarray,
    *,
    image_size: tuple[float, float] | None = None,
) -> np.ndarray:
    r"""Generalized IoU of polygon annotations, all pairs.

    .. math::

        \mathrm{GIoU}(A, B) = \mathrm{IoU}(A, B)
            - \frac{|C \setminus (A \cup B)|}{|C|},
        \qquad C = \operatorname{conv}(A \cup B)

    the GIoU of Rezatofighi et al. (2019) with their general enclosing
    shape, the smallest *convex* shape containing both regions (their convex
    hull), in place of the enclosing box; the KαLOS reference tool computes
    the same. For axis-aligned rectangles this is *not* the box GIoU: the
    convex hull of two boxes is smaller than their enclosing box unless they
    are aligned (so polygon GIoU >= box GIoU).

    **Non-convex regions**: the penalty also counts the concavities of the
    union, so two *identical* non-convex regions get
    :math:`\mathrm{GIoU}(A, A) = |A| / |\operatorname{conv} A| < 1`, not 1.
    This follows the definition (and the reference tool); use
    :func:`pairwise_polygon_iou` when identical shapes must score 1.

    Args:
        a (sequence of n polygon annotations, or ndarray of shapely geometries): As in :func:`pairwise_polygon_iou`.
        b (sequence of m polygon annotations, or ndarray of shapely geometries): The second set, as ``a``.
        image_size ((width, height) or None, default=None): Scales to pixels first; changes the result only by rounding
            (GIoU is affine invariant since convex hulls commute with affine maps).

    Returns:
        giou (ndarray of shape (n, m), float64): In ``(-1, 1]``, never above the IoU: 1 for equal convex regions
            (:math:`|A| / |\operatorname{conv} A|` for equal non-convex ones), 0
            for two convex regions that touch along an edge and fill their hull,
            tending to -1 as the regions move apart. Symmetric. Map it to
            ``[0, 1]`` with :func:`agreement.geometry.boxes.giou_to_similarity`.

    Raises:
        AnnotationError, ValueError: As :func:`pairwise_polygon_iou`.

    References:
        .. [1] H. Rezatofighi et al., "Generalized Intersection over Union: A
           Metric and a Loss for Bounding Box Regression", CVPR 2019.

    Examples:
        >>> sq = lambda x, y, s: [np.array([[x, y], [x + s, y], [x + s, y + s], [x, y + s]])]
        >>> pairwise_polygon_giou([sq(0, 0, 0.25)], [sq(0, 0, 0.25), sq(0.25, 0, 0.25), sq(0.75, 0, 0.25)]).round(6).tolist()
        [[1.0, 0.0, -0.5]]
    """
    ga = _as_geometries(a, image_size, "a")
    gb = _as_geometries(b, image_size, "b")
    iou, union = _iou_parts(ga, gb)
    hull = _hull_areas(ga, gb)
    # The hull contains the union; rounding may put it a hair below.
    hull = np.maximum(hull, union)
    penalty = np.divide(hull - union, hull, out=np.zeros_like(hull), where=hull > 0)
    giou = iou - penalty
    np.clip(giou, -1.0, 1.0, out=giou)
    out: np.ndarray = giou
    return out
