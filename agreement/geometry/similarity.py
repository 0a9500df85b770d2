r"""Registry of localisation similarities between annotations, as matrices.

KαLOS (Tschirschwitz & Rodehorst) separates *where* from *what*: a
similarity :math:`s \in [0, 1]` between two annotations decides which
annotations of different raters describe the same object (candidates where
:math:`s \ge \tau`), and the distance :math:`1 - s` feeds the calibration of
τ. This module names the similarities and computes them for rows of a
:class:`~agreement.core.data.MultiRaterAnnotations` corpus:

================  ==========================================================  =================
name              similarity :math:`s(A, B)`                                  needs
================  ==========================================================  =================
``iou``           box IoU (:func:`~agreement.geometry.boxes.pairwise_iou`)    boxes
``giou``          :math:`(1 + \mathrm{GIoU}) / 2` of boxes                    boxes
``centroid``      :math:`1 - {}` box-centre distance over the image diagonal  boxes
``polygon_iou``   polygon IoU (shapely)                                       polygons
``polygon_giou``  :math:`(1 + \mathrm{GIoU}) / 2`, convex-hull enclosure      polygons
``mask_iou``      pixel IoU of instance masks                                 masks or polygons
``oks``           symmetric object keypoint similarity (COCO σ)               keypoints
================  ==========================================================  =================

Every value is in ``[0, 1]``, and 1 for identical annotations with two
exceptions: ``polygon_giou`` of an identical *non-convex* polygon is
:math:`(1 + |A| / |\operatorname{conv} A|) / 2` (the convex-hull enclosure
counts the concavities; as in the KαLOS reference tool), and the
``mask_iou`` of an empty mask is 0. The formulas, ranges and
degenerate cases are documented with the geometry functions in
:mod:`agreement.geometry`.

Conventions
-----------
* **Image size** comes from ``data.image_sizes`` of the sample of
  ``rows_a``. Rows of ``rows_b`` may belong to another sample (as for the
  expected disagreement of calibration): they are compared in relative
  coordinates in the frame of ``rows_a``'s image, so the matrix is then not
  necessarily the transpose of the swapped call. Where the size is unknown
  (NaN): ``centroid`` and ``oks`` use a unit square (the image diagonal is
  :math:`\sqrt 2`; OKS compares relative distances with relative areas);
  IoU and GIoU do not depend on it; ``mask_iou`` rasterises polygons on a
  :data:`DEFAULT_RASTER_SIZE` square and refuses stored masks (their
  placement needs the image size). ``rows_a`` must belong to one sample;
  ``rows_b`` may span several.
* **Polygons** are validated once per corpus and cached (shapely geometries,
  see :func:`agreement.geometry.polygons.validate_polygons`): rings with
  fewer than three distinct points or no area are dropped, self-intersections
  are repaired with ``make_valid``; the number of repaired annotations is in
  the report of :func:`check_similarity`. An annotation left without area is
  an :class:`~agreement.core.validation.AnnotationError` naming it.
* **mask_iou** uses ``data.masks[i]`` where present, and otherwise
  rasterises ``data.polygons[i]`` with OpenCV at the image's resolution (see
  :mod:`agreement.geometry.masks`); an annotation with neither is an error.
  Masks placed in their own image are cached per corpus, up to
  :data:`MASK_CACHE_BYTES`.
* **oks** uses ``data.keypoints`` with :data:`COCO_PERSON_SIGMAS` for 17
  keypoints (pass ``sigmas`` otherwise) and the boxes' pixel areas as object
  scale (COCO uses the segment area; see :mod:`agreement.geometry.keypoints`).
  An annotation with no labelled keypoint is an error.

References:
    .. [Tschirschwitz] D. Tschirschwitz and V. Rodehorst, "KαLOS finds Consensus:
       A Meta-Algorithm for Evaluating Inter-Annotator Agreement in Complex
       Vision Tasks".
    .. [Rezatofighi2019] H. Rezatofighi et al., "Generalized Intersection over
       Union: A Metric and a Loss for Bounding Box Regression", CVPR 2019.
    .. [Lin2014] T.-Y. Lin et al., "Microsoft COCO: Common Objects in Context",
       ECCV 2014 (mask IoU; keypoint OKS, https://cocodataset.org/#keypoints-eval).
"""

from __future__ import annotations

import math
import weakref
from collections import OrderedDict
from typing import Any, cast

import numpy as np
from numpy.typing import ArrayLike

from agreement.core.data import MultiRaterAnnotations
from agreement.geometry.boxes import (
    giou_to_similarity,
    pairwise_centroid_closeness,
    pairwise_giou,
    pairwise_iou,
)
from agreement.geometry.keypoints import COCO_PERSON_SIGMAS, pairwise_oks
from agreement.geometry.masks import PlacedMask, pairwise_placed_mask_iou, place_masks, rasterize_polygons
from agreement.geometry.polygons import pairwise_polygon_giou, pairwise_polygon_iou, validate_polygons

# The 3D parameters, importable from here too.
from agreement.geometry.similarity_3d import (  # noqa: F401
    POINT3D_SCALE,
    POLYLINE3D_TOLERANCE,
    SimilarityOptions,
    check_similarity_3d,
    similarity_matrix_3d,
)

__all__ = [
    "SIMILARITIES",
    "DEFAULT_RASTER_SIZE",
    "MASK_CACHE_BYTES",
    "similarity_matrix",
    "distance_matrix",
    "check_similarity",
    "supported_similarities",
    "declared_similarities",
    "SimilarityOptions",
]

#: The names accepted by :func:`similarity_matrix`.
SIMILARITIES: tuple[str, ...] = (
    "iou", "giou", "centroid", "polygon_iou", "polygon_giou", "mask_iou", "oks", "cuboid_iou",
    "point3d", "polyline3d_f1", "segment_jaccard",
)

#: Raster size (width, height) for ``mask_iou`` of polygons on samples of
#: unknown image size.
DEFAULT_RASTER_SIZE: tuple[int, int] = (1024, 1024)

_BOX = ("iou", "giou", "centroid")
_POLYGON = ("polygon_iou", "polygon_giou")
_3D = ("point3d", "polyline3d_f1", "segment_jaccard", "cuboid_iou")  # scene units, no image frame
_MAX_NAMED = 5  # annotations named in an error message


# --------------------------------------------------------------------------
# Per-corpus cache (shapely geometries, rasterised masks), freed with the corpus
# --------------------------------------------------------------------------

_CACHES: dict[int, dict] = {}


def _cache(data: MultiRaterAnnotations) -> dict:
    key = id(data)
    cache = _CACHES.get(key)
    if cache is None:
        cache = _CACHES[key] = {}
        weakref.finalize(data, _CACHES.pop, key, None)
    return cache


def _where(data: MultiRaterAnnotations, i: int) -> str:
    s, r = int(data.sample_index[i]), int(data.rater_index[i])
    lid = data.label_ids[i]
    label = f"label {lid!r}" if lid is not None else f"annotation {i - int(data.rows(s, r).start)}"
    return f"sample {data.sample_names[s]!r}, rater {data.raters[r]!r}, {label}"


def _has_polygon(entry: Any) -> bool:
    return entry is not None and len(entry) > 0


def _geometries(data: MultiRaterAnnotations) -> tuple[np.ndarray, int]:
    """Validated shapely geometries of every annotation (None where no polygon), cached."""
    cache = _cache(data)
    if "geometries" not in cache:
        if data.polygons is None:
            raise ValueError("the annotations have no polygons")
        where = [_where(data, i) for i in range(len(data))]
        cache["geometries"] = validate_polygons(data.polygons, where=where)
    return cast("tuple[np.ndarray, int]", cache["geometries"])


# --------------------------------------------------------------------------
# Checks
# --------------------------------------------------------------------------


def _lacking(data: MultiRaterAnnotations, rows: np.ndarray, what: str, name: str) -> ValueError:
    named = "; ".join(_where(data, int(i)) for i in rows[:_MAX_NAMED])
    more = f" and {len(rows) - _MAX_NAMED} more" if len(rows) > _MAX_NAMED else ""
    return ValueError(f"similarity {name!r} needs {what}, which {len(rows)} annotation(s) lack: {named}{more}")


def declared_similarities() -> dict:
    """The similarities that label kinds declared outside this module offer (:mod:`agreement.core.kinds`:
    a :class:`~agreement.core.kinds.ColumnKind` whose ``similarities`` map a name to a hook), as
    ``{name: (column, hook)}``; the hook gives ``(n, m)`` similarities in ``[0, 1]`` of two row sets."""
    from agreement.core.kinds import column_kinds

    return {name: (k.name, hook) for k in column_kinds() for name, hook in k.similarities.items()
            if hook is not None and name not in SIMILARITIES}


def _check_name(name: str) -> None:
    if name not in SIMILARITIES and name not in declared_similarities():
        known = (*SIMILARITIES, *declared_similarities())
        raise ValueError(f"unknown similarity {name!r}; choose one of {', '.join(known)}")


def _oks_sigmas(data: MultiRaterAnnotations, sigmas: ArrayLike | None) -> np.ndarray:
    K = data.keypoints.shape[1]
    if sigmas is None:
        if K != len(COCO_PERSON_SIGMAS):
            raise ValueError(
                f"similarity 'oks' uses COCO's 17 person keypoint sigmas by default, but the keypoints "
                f"have K = {K} points; pass sigmas with {K} values"
            )
        return COCO_PERSON_SIGMAS
    sig = np.asarray(sigmas, dtype=np.float64).reshape(-1)
    if sig.shape != (K,) or not np.all(np.isfinite(sig)) or not np.all(sig > 0):
        raise ValueError(f"sigmas must be {K} positive finite numbers, one per keypoint; got {sigmas!r}")
    return sig


def supported_similarities(data: MultiRaterAnnotations, *, sigmas: ArrayLike | None = None) -> tuple[str, ...]:
    """The similarities of :data:`SIMILARITIES` computable on every annotation of ``data``, in that order.

    A name is kept when :func:`check_similarity` accepts the corpus: the box
    similarities need a finite 2D box on every label (3D cuboids have none),
    ``polygon_*`` polygons, ``mask_iou`` masks (and image sizes), ``oks``
    keypoints with known σ (17 COCO points, or ``sigmas``), the 3D ones their
    geometry. What the labels carry decides; nothing is computed but the
    checks (polygons are validated and cached, as a run would).

    Raises:
        AnnotationError:
            For a label whose geometry cannot be repaired (a broken polygon is an
            error to show, not a reason to leave its similarity out).
    """
    from agreement.core.validation import AnnotationError

    kept = []
    for name in (*SIMILARITIES, *declared_similarities()):
        try:
            check_similarity(name, data, sigmas=sigmas)
        except AnnotationError:
            raise
        except ValueError:
            continue
        kept.append(name)
    return tuple(kept)


def check_similarity(
    name: str, data: MultiRaterAnnotations, *, sigmas: ArrayLike | None = None
) -> dict:
    """Checks that similarity ``name`` is known and computable on every annotation of ``data``.

    Call it once before a corpus-wide computation: it fails early with a
    message naming samples, raters and labels, and it validates (and caches)
    polygons, so that its report can be shown with the results.

    Args:
        name (str):
            One of :data:`SIMILARITIES`.
        data (MultiRaterAnnotations):
            The corpus.
        sigmas (array-like of shape (K,), optional):
            Per-keypoint σ for ``"oks"``; default :data:`COCO_PERSON_SIGMAS`.

    Returns:
        dict:
            ``{"similarity": name, "repaired_polygons": int}``: the number of
            polygon annotations repaired (rings dropped or self-intersections
            resolved; 0 when polygons are not used).

    Raises:
        ValueError:
            For an unknown name; for data lacking the geometry (no polygons, masks
            or keypoints, or some annotations without them: the first few are
            named); for ``"oks"`` with ``K != 17`` and no ``sigmas``, or
            annotations without any labelled keypoint; for ``"mask_iou"`` on
            stored masks of samples with unknown image size.
        AnnotationError:
            For a polygon that cannot be repaired (a subclass of ``ValueError``).
    """
    _check_name(name)
    report = {"similarity": name, "repaired_polygons": 0}
    N = len(data)
    declared = declared_similarities().get(name)
    if declared is not None:
        if getattr(data, declared[0]) is None:
            raise ValueError(f"similarity {name!r} needs {declared[0]}, and the annotations have none")
        return report
    if name in _BOX:
        bad = np.flatnonzero(~np.isfinite(data.boxes).all(axis=1))
        if len(bad):
            what = "a 2D box (3D labels: use 'cuboid_iou')" if data.cuboids is not None else "a finite 2D box"
            raise _lacking(data, bad, what, name)
        return report
    if name in _3D:
        check_similarity_3d(name, data)
        return report
    if name in _POLYGON:
        if data.polygons is None:
            raise ValueError(f"similarity {name!r} needs polygons, and the annotations have none")
        missing = np.array([i for i in range(N) if not _has_polygon(data.polygons[i])], dtype=np.intp)
        if len(missing):
            raise _lacking(data, missing, "polygons", name)
        report["repaired_polygons"] = _geometries(data)[1]
        return report
    if name == "mask_iou":
        _check_masks(data, name, report)
        return report
    # oks
    if data.keypoints is None:
        raise ValueError("similarity 'oks' needs keypoints, and the annotations have none")
    _oks_sigmas(data, sigmas)
    if np.isinf(data.keypoints).any():
        bad = np.flatnonzero(np.isinf(data.keypoints).any(axis=(1, 2)))
        raise _lacking(data, bad, "finite keypoint coordinates (NaN marks a missing point)", name)
    labelled = ~np.isnan(data.keypoints).any(axis=2)
    empty = np.flatnonzero(~labelled.any(axis=1))
    if len(empty):
        raise _lacking(data, empty, "at least one labelled keypoint (OKS is undefined without)", name)
    return report


def _check_masks(data: MultiRaterAnnotations, name: str, report: dict) -> None:
    """:func:`check_similarity` of ``"mask_iou"``: every annotation has a 2-D instance mask (in an image
    of known size) or a polygon; the polygons' repairs go to ``report``."""
    N = len(data)
    has_mask = np.array(
        [data.masks is not None and data.masks[i] is not None for i in range(N)], dtype=bool
    )
    has_poly = np.array(
        [data.polygons is not None and _has_polygon(data.polygons[i]) for i in range(N)], dtype=bool
    )
    missing = np.flatnonzero(~has_mask & ~has_poly)
    if len(missing):
        raise _lacking(data, missing, "an instance mask or a polygon", name)
    unsized = ~np.isfinite(data.image_sizes).all(axis=1) | (data.image_sizes <= 0).any(axis=1)
    no_size = np.flatnonzero(has_mask & unsized[data.sample_index])
    if len(no_size):
        raise _lacking(data, no_size, "the image size (width, height) to place its instance mask", name)
    bad = [i for i in np.flatnonzero(has_mask) if np.ndim(data.masks[i]) != 2]
    if bad:
        raise _lacking(data, np.asarray(bad), "a 2-D instance mask", name)
    if has_poly[~has_mask].any():
        report["repaired_polygons"] = _geometries(data)[1]


# --------------------------------------------------------------------------
# Matrices
# --------------------------------------------------------------------------


def _rows(data: MultiRaterAnnotations, rows: ArrayLike, which: str) -> np.ndarray:
    idx = rows if isinstance(rows, np.ndarray) else np.asarray(rows)
    if idx.dtype.kind not in "iu":
        if idx.size or idx.dtype == bool:
            raise ValueError(f"{which} must be integer row indices into the corpus arrays; got dtype {idx.dtype}")
        return np.zeros(0, dtype=np.intp)
    idx = idx.reshape(-1)
    if idx.size and (idx.min() < 0 or idx.max() >= len(data)):
        raise ValueError(f"{which} has row indices outside [0, {len(data)})")
    return idx


def _frame(data: MultiRaterAnnotations, ra: np.ndarray) -> tuple[float, float] | None:
    """The image size of the sample of rows ``ra`` (non-empty), or None when unknown."""
    samples = data.sample_index[ra]
    s = samples[0]
    if len(samples) > 1 and (samples != s).any():
        raise ValueError(
            "rows_a must all belong to one sample; got rows of samples "
            f"{sorted({str(data.sample_names[k]) for k in samples})[:_MAX_NAMED]}"
        )
    w, h = data.image_sizes[s].tolist()
    if not (math.isfinite(w) and math.isfinite(h) and w > 0 and h > 0):
        return None
    return w, h


def _polygon_geoms(data: MultiRaterAnnotations, rows: np.ndarray, name: str) -> np.ndarray:
    if data.polygons is None:
        raise ValueError(f"similarity {name!r} needs polygons, and the annotations have none")
    geoms = _geometries(data)[0][rows]
    missing = rows[np.array([g is None for g in geoms], dtype=bool)]
    if len(missing):
        raise _lacking(data, missing, "polygons", name)
    return cast(np.ndarray, geoms)


#: Bytes of placed masks kept per corpus by ``mask_iou`` (least recently used evicted).
MASK_CACHE_BYTES = 256 << 20


def _own_frame(data: MultiRaterAnnotations, i: int) -> tuple[int, int]:
    size = data.image_sizes[data.sample_index[i]]
    if not np.all(np.isfinite(size)) or not np.all(size > 0):
        return DEFAULT_RASTER_SIZE
    return int(round(size[0])), int(round(size[1]))


def _placed(data: MultiRaterAnnotations, rows: np.ndarray, size: tuple[float, float] | None) -> list[PlacedMask]:
    """Masks of ``rows`` placed in an image of ``size`` (stored masks or rasterised
    polygons). Placements in a row's own image are cached (bounded LRU)."""
    frame = size if size is not None else DEFAULT_RASTER_SIZE
    frame = (int(round(frame[0])), int(round(frame[1])))
    cache = _cache(data)
    lru: OrderedDict = cache.setdefault("placed", OrderedDict())
    out: dict[int, PlacedMask] = {}
    todo = []
    for i in map(int, rows):
        p = lru.get(i) if _own_frame(data, i) == frame else None
        if p is None:
            todo.append(i)
        else:
            lru.move_to_end(i)
            out[i] = p
    todo = list(dict.fromkeys(todo))
    if todo:
        use_mask = [data.masks is not None and data.masks[i] is not None for i in todo]
        from_masks = [i for i, u in zip(todo, use_mask, strict=True) if u]
        from_polys = [i for i, u in zip(todo, use_mask, strict=True) if not u]
        if from_masks:
            if size is None:
                raise _lacking(
                    data, np.asarray(from_masks), "the image size (width, height) to place its instance mask", "mask_iou"
                )
            out.update(zip(from_masks, place_masks([data.masks[i] for i in from_masks], data.boxes[from_masks], frame), strict=True))
        if from_polys:
            lacking = [i for i in from_polys if data.polygons is None or not _has_polygon(data.polygons[i])]
            if lacking:
                raise _lacking(data, np.asarray(lacking), "an instance mask or a polygon", "mask_iou")
            _geometries(data)  # validation: unrepairable polygons are errors here too
            out.update(zip(from_polys, rasterize_polygons([data.polygons[i] for i in from_polys], frame), strict=True))
        used = cache.get("placed_bytes", 0)
        for i in todo:
            if _own_frame(data, i) == frame:
                lru[i] = out[i]
                used += out[i].mask.nbytes
        while used > MASK_CACHE_BYTES and lru:
            used -= lru.popitem(last=False)[1].mask.nbytes
        cache["placed_bytes"] = used
    return [out[int(i)] for i in rows]


def similarity_matrix(
    name: str,
    data: MultiRaterAnnotations,
    rows_a: np.ndarray,
    rows_b: np.ndarray,
    *,
    sigmas: ArrayLike | None = None,
    options: SimilarityOptions | None = None,
) -> np.ndarray:
    r"""Similarity ``name`` between the annotations in rows ``rows_a`` and ``rows_b``.

    Entry ``[i, j]`` compares annotation ``rows_a[i]`` with ``rows_b[j]``
    (rows of ``data.boxes``, ``data.polygons``, ...):

    * ``"iou"``: :math:`|A \cap B| / |A \cup B|` of the boxes;
    * ``"giou"``: :math:`(1 + \mathrm{GIoU}) / 2` of the boxes (Rezatofighi
      et al., 2019);
    * ``"centroid"``: :math:`\max(0, 1 - d / D)`, box-centre distance over
      the image diagonal;
    * ``"polygon_iou"``, ``"polygon_giou"``: the same on polygon regions,
      GIoU enclosing both with their convex hull;
    * ``"mask_iou"``: pixel IoU of instance masks (stored masks, or polygons
      rasterised at the image's resolution);
    * ``"oks"``: symmetric COCO object keypoint similarity.

    See the module docstring for image sizes, caching and the fallbacks.

    Args:
        name (str):
            One of :data:`SIMILARITIES`.
        data (MultiRaterAnnotations):
            The corpus.
        rows_a (ndarray of n ints):
            Row indices of annotations, all of one sample.
        rows_b (ndarray of m ints):
            Row indices of annotations, usually of the same sample.
        sigmas (array-like of shape (K,), optional):
            Per-keypoint σ for ``"oks"``; default :data:`COCO_PERSON_SIGMAS`.
        options (SimilarityOptions, optional):
            The 3D similarities' parameters (``point3d_scale``, ``polyline3d_tolerance``); default
            :data:`POINT3D_SCALE` and :data:`POLYLINE3D_TOLERANCE`.

    Returns:
        ndarray of shape (n, m), float64:
            In ``[0, 1]``; 1 for identical annotations (except ``polygon_giou`` of
            non-convex polygons and ``mask_iou`` of empty masks, see above).
            Symmetric when both row sets come from the same sample.

    Raises:
        ValueError:
            For an unknown name, bad rows, ``rows_a`` spanning several samples,
            or annotations lacking the geometry (named).
        AnnotationError:
            For polygons that cannot be repaired.

    References:
        .. [1] D. Tschirschwitz and V. Rodehorst, "KαLOS finds Consensus".
        .. [2] H. Rezatofighi et al., CVPR 2019 (GIoU).
        .. [3] T.-Y. Lin et al., ECCV 2014 (COCO mask IoU and OKS).

    Examples:
        >>> from agreement.core.data import AnnotationSet
        >>> box = AnnotationSet([[0.0, 0.0, 0.5, 0.5]], ["cat"], ["a"])
        >>> moved = AnnotationSet([[0.25, 0.0, 0.5, 0.5]], ["cat"], ["b"])
        >>> data = MultiRaterAnnotations.from_sets(["s"], ["r1", "r2"], [{"r1": box, "r2": moved}])
        >>> similarity_matrix("iou", data, np.array([0]), np.array([0, 1])).round(6).tolist()
        [[1.0, 0.333333]]
    """
    _check_name(name)
    ra, rb = _rows(data, rows_a, "rows_a"), _rows(data, rows_b, "rows_b")
    n, m = len(ra), len(rb)
    if n == 0 or m == 0:
        return np.zeros((n, m))
    declared = declared_similarities().get(name)
    if declared is not None:  # a similarity declared by a label kind (agreement.core.kinds)
        return np.clip(np.asarray(declared[1](data, ra, rb), dtype=np.float64).reshape(n, m), 0.0, 1.0)
    if name in _3D:
        return similarity_matrix_3d(name, data, ra, rb, options=options)
    size = _frame(data, ra)
    if name == "iou":
        return pairwise_iou(data.boxes[ra], data.boxes[rb])
    if name == "giou":
        return cast(np.ndarray, np.clip(giou_to_similarity(pairwise_giou(data.boxes[ra], data.boxes[rb])), 0.0, 1.0))
    if name == "centroid":
        return pairwise_centroid_closeness(data.boxes[ra], data.boxes[rb], image_size=size)
    if name in _POLYGON:
        ga, gb = _polygon_geoms(data, ra, name), _polygon_geoms(data, rb, name)
        if name == "polygon_iou":
            return pairwise_polygon_iou(ga, gb)
        return cast(np.ndarray, np.clip(giou_to_similarity(pairwise_polygon_giou(ga, gb)), 0.0, 1.0))
    if name == "mask_iou":
        return pairwise_placed_mask_iou(_placed(data, ra, size), _placed(data, rb, size))
    return _oks_similarity(data, ra, rb, sigmas, size)


def _oks_similarity(data: MultiRaterAnnotations, ra: np.ndarray, rb: np.ndarray, sigmas: ArrayLike | None,
                    size: tuple[float, float] | None) -> np.ndarray:
    """:func:`similarity_matrix` of ``"oks"``: rows without a labelled keypoint are named."""
    if data.keypoints is None:
        raise ValueError("similarity 'oks' needs keypoints, and the annotations have none")
    sig = _oks_sigmas(data, sigmas)
    kps_a, kps_b = data.keypoints[ra], data.keypoints[rb]
    for rows, kps in ((ra, kps_a), (rb, kps_b)):
        empty = rows[np.isnan(kps).any(axis=2).all(axis=1)]
        if len(empty):
            raise _lacking(data, empty, "at least one labelled keypoint (OKS is undefined without)", "oks")
    return pairwise_oks(kps_a, kps_b, data.boxes[ra], data.boxes[rb], sigmas=sig, image_size=size)


def distance_matrix(
    name: str,
    data: MultiRaterAnnotations,
    rows_a: np.ndarray,
    rows_b: np.ndarray,
    *,
    sigmas: ArrayLike | None = None,
    options: SimilarityOptions | None = None,
) -> np.ndarray:
    """Distance ``1 - similarity_matrix(name, data, rows_a, rows_b)``, in ``[0, 1]``.

    Parameters and errors as :func:`similarity_matrix`; 0 for identical
    annotations, 1 for annotations with nothing in common (no overlap for the
    IoUs, centres at opposite image corners for ``"centroid"``, no shared
    keypoint for ``"oks"``).
    """
    d = similarity_matrix(name, data, rows_a, rows_b, sigmas=sigmas, options=options)
    np.subtract(1.0, d, out=d)
    return d
