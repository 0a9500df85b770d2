"""Building the corpus from the label values read, shared by both rater layouts of :mod:`agreement.fo.reading`.

The rows (one per label, already in corpus order) become geometry (boxes,
polygons from polylines, keypoints, 3D cuboids and points, 3D polylines,
point-cloud segments, instance masks, temporal segments as boxes in relative
time: :mod:`agreement.fo.temporal`), are validated (see
:mod:`agreement.core.validation`: errors name the sample, the field and the label;
repairs are counted per rater) and are assembled into a
:class:`agreement.core.data.MultiRaterAnnotations` (:func:`_corpus`).
"""

from __future__ import annotations

import os

import numpy as np

import fiftyone.core.labels as fol

from agreement.core.data import MultiRaterAnnotations
from agreement.fo.label_schema import _sample_label
from agreement.core.validation import AnnotationError, RepairReport, check_boxes
from agreement.fo.temporal import is_temporal, temporal_boxes


def _boxes_from_polylines(points_per_label: list) -> tuple[np.ndarray, list]:
    boxes = np.zeros((len(points_per_label), 4))
    polygons = []
    for i, rings in enumerate(points_per_label):
        arrs = [np.asarray(r, dtype=np.float64).reshape(-1, 2) for r in (rings or []) if len(r)]
        polygons.append(arrs)
        if arrs:
            pts = np.concatenate(arrs)
            lo, hi = pts.min(axis=0), pts.max(axis=0)
            boxes[i] = [lo[0], lo[1], hi[0] - lo[0], hi[1] - lo[1]]
        else:
            boxes[i] = np.nan
    return boxes, polygons


def _boxes_from_keypoints(points_per_label: list, where: list[str]) -> tuple[np.ndarray, np.ndarray]:
    if not points_per_label:
        return np.zeros((0, 4)), np.zeros((0, 0, 2))
    sizes = {len(p or []) for p in points_per_label}
    if len(sizes) > 1:
        raise AnnotationError(
            f"keypoint labels have different numbers of points ({sorted(sizes)}); every label of a skeleton "
            f"must list the same K points (use NaN for missing ones), e.g. {where[0]}"
        )
    kps = np.array([[[np.nan, np.nan] if pt is None else pt for pt in (p or [])] for p in points_per_label],
                   dtype=np.float64).reshape(len(points_per_label), -1, 2)
    labelled = np.isfinite(kps).all(axis=2)
    empty = ~labelled.any(axis=1)
    if empty.any():
        i = int(np.flatnonzero(empty)[0])
        raise AnnotationError(f"{where[i]}: a keypoint label has no labelled point (all are missing)")
    lo = np.where(labelled[..., None], kps, np.inf).min(axis=1)
    hi = np.where(labelled[..., None], kps, -np.inf).max(axis=1)
    boxes = np.concatenate([lo, hi - lo], axis=1)
    return boxes, kps


def _sizes(values: list, image_sizes: bool, n: int) -> np.ndarray | None:
    if not image_sizes:
        return None
    w = np.array([np.nan if v is None else v for v in values[2]], dtype=np.float64)
    h = np.array([np.nan if v is None else v for v in values[3]], dtype=np.float64)
    return np.stack([w, h], axis=1).reshape(n, 2)


def _three_d(extra: dict, where, n: int) -> tuple[np.ndarray | None, np.ndarray | None]:
    """``(cuboids, points3d)`` from the location/dimensions/rotation columns, validated.

    Labels with a ``location`` and no ``dimensions`` at all are 3D points.
    """
    if "location" not in extra:
        return None, None
    if n and all(d is None for d in extra["dimensions"]):
        pts = np.zeros((n, 3))
        for i, v in enumerate(extra["location"]):
            vals = np.asarray(v if v is not None else [np.nan] * 3, dtype=np.float64).reshape(-1)
            if vals.size != 3 or not np.isfinite(vals).all():
                raise AnnotationError(f"{where[i]}: a 3D point needs a finite 'location' of 3 numbers, got {v!r}")
            pts[i] = vals
        return None, pts
    return _cuboids(extra, where, n), None


def _cuboids(extra: dict, where, n: int) -> np.ndarray:
    """``(N, 9)`` cuboids from the location/dimensions/rotation columns, validated."""
    from agreement.geometry.cuboids import validate_cuboids

    out = np.zeros((n, 9))
    for k, (name, width) in enumerate((("location", 3), ("dimensions", 3), ("rotation", 3))):
        for i, v in enumerate(extra[name]):
            if v is None:
                if name == "rotation":
                    continue  # no rotation: axis-aligned
                raise AnnotationError(f"{where[i]}: a 3D detection has no {name!r}")
            vals = np.asarray(v, dtype=np.float64).reshape(-1)
            if vals.size != width:
                raise AnnotationError(f"{where[i]}: {name!r} must have 3 numbers, got {list(vals)}")
            out[i, 3 * k: 3 * k + 3] = vals
    if n:
        validate_cuboids(out, [where[i] for i in range(n)])
    return out


class _Where:
    """Lazily builds "sample ..., field ..." locations for error messages."""

    def __init__(self, s_idx, field_of_row, sample_ids, filepaths, raters_of_row):
        self.s_idx, self.field_of_row = s_idx, field_of_row
        self.sample_ids, self.filepaths, self.raters_of_row = sample_ids, filepaths, raters_of_row

    def __getitem__(self, i: int) -> str:
        s = self.s_idx[i]
        rater = f" (rater {self.raters_of_row[i]!r})" if self.raters_of_row is not None else ""
        return f"{_sample_label(self.sample_ids[s], self.filepaths[s])}, field {self.field_of_row[i]!r}{rater}"


#: Image-level label types: their rows have no geometry (NaN boxes).
_IMAGE_LEVEL = (fol.Classification, fol.Classifications, fol.Segmentation)


def _geometry(flat_geo: list, ltype: type, where) -> tuple[np.ndarray, list | None, np.ndarray | None]:
    if ltype in _IMAGE_LEVEL:
        return np.full((len(flat_geo), 4), np.nan), None, None
    if ltype is fol.Detections:
        if any(b is None or len(b) != 4 for b in flat_geo):  # 3D detections carry no 2D box
            flat_geo = [[np.nan] * 4 if b is None or len(b) != 4 else b for b in flat_geo]
        boxes = np.array(flat_geo, dtype=np.float64).reshape(-1, 4) if flat_geo else np.zeros((0, 4))
        return boxes, None, None
    if ltype is fol.Keypoints:
        boxes, kps = _boxes_from_keypoints(flat_geo, where)
        return boxes, None, kps
    boxes, polygons = _boxes_from_polylines(flat_geo)
    return boxes, polygons, None


def _masks(flat_masks: list | None) -> list | None:
    if flat_masks is None or not any(m is not None for m in flat_masks):
        return None
    return [None if m is None else np.asarray(m).astype(bool) for m in flat_masks]


def _validated(boxes, labels, s_idx, field_of_row, sample_ids, filepaths, policy, repairs, raters_of_row):
    """Validates boxes, building location strings only for boxes that need a message.

    Returns ``(boxes, keep)`` (see :func:`agreement.core.validation.check_boxes`).
    """
    missing_label = np.array([lab is None for lab in labels], dtype=bool)
    if missing_label.any():
        i = int(np.flatnonzero(missing_label)[0])
        s = s_idx[i]
        raise AnnotationError(
            f"{_sample_label(sample_ids[s], filepaths[s])}, field {field_of_row[i]!r}: a label has no class name"
        )
    keep = np.ones(len(boxes), dtype=bool)
    if not len(boxes):
        return boxes, keep
    ok = np.isfinite(boxes).all(axis=1) & (boxes[:, 2] >= 0) & (boxes[:, 3] >= 0)
    ok &= (boxes[:, 0] >= -1e-6) & (boxes[:, 1] >= -1e-6)
    ok &= (boxes[:, 0] + boxes[:, 2] <= 1 + 1e-6) & (boxes[:, 1] + boxes[:, 3] <= 1 + 1e-6)
    if ok.all():
        return boxes, keep
    bad = np.flatnonzero(~ok)
    where = []
    for i in bad:
        s = s_idx[i]
        rater = f" (rater {raters_of_row[i]!r})" if raters_of_row is not None else ""
        where.append(
            f"{_sample_label(sample_ids[s], filepaths[s])}, field {field_of_row[i]!r}{rater}, "
            f"label {labels[i]!r}"
        )
    rater_names = (raters_of_row if raters_of_row is not None else field_of_row)[bad]
    fixed, kept = check_boxes(boxes[bad], where, policy=policy, report=repairs, raters=rater_names)
    boxes = boxes.copy()
    boxes[bad] = fixed
    keep[bad] = kept
    return boxes, keep


def _drop_rows(keep: np.ndarray, rows: dict) -> dict:
    """``rows`` (per-annotation arrays and lists, ``None`` allowed) restricted to ``keep``."""
    idx = np.flatnonzero(keep)
    out = {}
    for name, value in rows.items():
        if value is None:
            out[name] = None
        elif isinstance(value, np.ndarray):
            out[name] = value[idx]
        else:
            out[name] = [value[i] for i in idx]
    return out


def _corpus(values, image_sizes, sample_ids, filepaths, raters, assigned, flat_geo, labels, ids, extra,
            s_idx, r_idx, field_of_row, raters_of_row, ltype, box_policy, repairs,
            num_points=None, classes=None, frame_counts=None) -> MultiRaterAnnotations:
    """Geometry, validation and the corpus, shared by both layouts (rows already in corpus order);
    ``frame_counts``: per sample, the frame count of its video (temporal segments)."""
    where = _Where(s_idx, field_of_row, sample_ids, filepaths, raters_of_row)
    n = len(labels)
    polylines3d = None
    if "points3d" in extra and any(p for p in extra["points3d"]):
        polylines3d = [[np.asarray(line, dtype=np.float64).reshape(-1, 3) for line in (p or [])]
                       for p in extra["points3d"]]
        empty = [i for i, p in enumerate(polylines3d) if not p or not any(len(line) for line in p)]
        if empty:
            raise AnnotationError(f"{where[empty[0]]}: a 3D polyline has no points")
        flat_geo = [[] for _ in range(n)]
    segments = None
    if "point_indices" in extra and any(v is not None for v in extra["point_indices"]):
        segments = [np.asarray(v if v is not None else [], dtype=np.int64).reshape(-1) for v in extra["point_indices"]]
    keep_segments = None
    if is_temporal(ltype):  # supports checked in frames (box_policy), then boxes in relative time
        boxes, keep_segments = temporal_boxes(flat_geo, frame_counts, s_idx, where, labels, field_of_row,
                                              box_policy, repairs, raters_of_row if raters_of_row is not None
                                              else field_of_row)
        polygons = keypoints = None
    else:
        boxes, polygons, keypoints = _geometry(flat_geo, ltype, where)
    cuboids, points3d = _three_d(extra, where, len(boxes))
    no_2d = ltype in _IMAGE_LEVEL or cuboids is not None or points3d is not None or polylines3d is not None or (
        segments is not None and not np.isfinite(boxes).all()  # point-cloud segments without a 2D box
    )
    if polylines3d is not None:
        boxes, polygons = np.full((n, 4), np.nan), None
    checked, keep = _validated(np.zeros((0, 4)) if no_2d else boxes, labels, s_idx, field_of_row, sample_ids,
                               filepaths, box_policy, repairs, raters_of_row)
    boxes = np.full_like(boxes, np.nan) if no_2d else checked  # 3D rows have no 2D box
    if keep_segments is not None:  # box_policy="drop" of supports outside the video's frames
        keep &= keep_segments
    rows = dict(boxes=boxes, labels=labels, label_ids=ids, sample_index=s_idx, rater_index=r_idx,
                polygons=polygons, masks=extra.get("mask"), keypoints=keypoints, cuboids=cuboids,
                points3d=points3d, polylines3d=polylines3d, segments=segments)
    if not no_2d and not keep.all():  # box_policy="drop"
        rows = _drop_rows(keep, rows)
        where = _Where(rows["sample_index"], field_of_row[keep],  sample_ids, filepaths,
                       raters_of_row[keep] if raters_of_row is not None else None)
    semantic = ltype is fol.Segmentation
    rows["masks"] = _semantic_masks(extra["mask"], extra["mask_path"], where) if semantic else _masks(rows["masks"])
    if rows["masks"] is not None and not semantic:
        _check_masks(rows["masks"], rows["boxes"], rows["sample_index"],
                     _sizes(values, image_sizes, len(sample_ids)), where, repairs)
    return MultiRaterAnnotations(
        sample_ids=np.asarray(sample_ids, dtype=object),
        raters=raters,
        assigned=assigned,
        image_sizes=_sizes(values, image_sizes, len(sample_ids)),
        sample_names=np.asarray([os.path.basename(p) for p in filepaths], dtype=object),
        num_points=num_points,
        classes=classes,
        **rows,
    )


def _check_masks(masks, boxes, s_idx, sizes, where, repairs: RepairReport) -> None:
    """Masks must be 2-D; those whose shape differs from their box's pixel extent are counted
    (they are stretched to the box when placed, as FiftyOne draws them)."""
    from agreement.geometry.masks import box_pixel_extent

    for i, m in enumerate(masks):
        if m is None:
            continue
        if m.ndim != 2:
            raise AnnotationError(f"{where[i]}: an instance mask must be 2-D, got shape {m.shape}")
        if sizes is None or not np.isfinite(sizes[s_idx[i]]).all():
            continue
        c0, r0, c1, r1 = box_pixel_extent(boxes[i:i + 1], tuple(sizes[s_idx[i]]))[0]
        if m.shape != (max(r1 - r0, 1), max(c1 - c0, 1)):
            repairs.resized_masks += 1
            if len(repairs.examples) < repairs.max_examples:
                repairs.examples.append(
                    f"{where[i]}: mask of shape {m.shape} stretched to its box ({r1 - r0} x {c1 - c0} pixels)"
                )


def _semantic_masks(masks: list, paths: list, where) -> list:
    """The semantic mask of every row: stored (``mask``) or read from ``mask_path``, as a 2-D integer array
    (an ``(H, W, 1)`` mask is squeezed). A row with neither, or with a file that cannot be read, or a mask
    that is not 2-D, is an error naming the sample and the rater."""
    from fiftyone.core.labels import Segmentation

    out = []
    for i, (m, p) in enumerate(zip(masks, paths)):
        if m is None and p:
            if not os.path.isfile(p):
                raise AnnotationError(f"{where[i]}: the mask file {p!r} does not exist")
            m = Segmentation(mask_path=p).get_mask()
        if m is None:
            raise AnnotationError(f"{where[i]}: the Segmentation has neither a mask nor a mask_path")
        m = np.asarray(m)
        if m.ndim == 3 and m.shape[2] == 1:
            m = m[:, :, 0]
        if m.ndim != 2 or not np.issubdtype(m.dtype, np.integer):
            raise AnnotationError(
                f"{where[i]}: a semantic mask must be a 2-D array of integer class values, got shape {m.shape} "
                f"of {m.dtype} (RGB masks are not read: store class values with mask_targets)"
            )
        out.append(m)
    return out
