"""The instance label types: ``Detections`` (boxes, and their instance masks), ``Polylines`` (polygons) and
``Keypoints``, declared once (:mod:`agreement.fo.kinds.base`).

Boxes are FiftyOne's relative ``[x, y, w, h]`` (a 3D detection carries none:
NaN); a polyline's box is the bounding box of its points and its rings are the
corpus' ``polygons``; a keypoint label's box is the bounding box of its
labelled points (the object scale of OKS) and its points the corpus'
``keypoints`` (NaN where missing). Instance masks are read on request and
checked against their boxes once the rows are final.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import fiftyone.core.labels as fol

from agreement.core.validation import AnnotationError, RepairReport
from agreement.fo.kinds.base import (
    FinishContext,
    GeometryVariant,
    LabelType,
    register_label_type,
    register_variant,
)

__all__ = ["boxes_from_polylines", "boxes_from_keypoints", "detection_boxes", "check_masks"]


def detection_boxes(flat_geo: list, where: Any) -> tuple[np.ndarray, dict]:
    """The ``(N, 4)`` boxes of detections (NaN for a detection without a 2D box: 3D labels); no column."""
    if flat_geo:  # every label a 2D box (the usual case): one conversion, no per-label check in Python
        try:
            boxes = np.array(flat_geo, dtype=np.float64)
        except (TypeError, ValueError):  # None or boxes of other lengths among them
            boxes = None
        if boxes is not None and boxes.ndim == 2 and boxes.shape[1] == 4:
            return boxes, {}
    if any(b is None or len(b) != 4 for b in flat_geo):  # 3D detections carry no 2D box
        flat_geo = [[np.nan] * 4 if b is None or len(b) != 4 else b for b in flat_geo]
    boxes = np.array(flat_geo, dtype=np.float64).reshape(-1, 4) if flat_geo else np.zeros((0, 4))
    return boxes, {}


def boxes_from_polylines(points_per_label: list, where: Any = None) -> tuple[np.ndarray, dict]:
    """The bounding boxes of polylines (NaN for one without points) and their rings as ``polygons``."""
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
    return boxes, {"polygons": polygons}


def boxes_from_keypoints(points_per_label: list, where: Any) -> tuple[np.ndarray, dict]:
    """The bounding boxes of the labelled points of keypoint labels and the ``(N, K, 2)`` ``keypoints``.

    Raises:
        AnnotationError: labels with different numbers of points, or a label with no labelled point.
    """
    if not points_per_label:
        return np.zeros((0, 4)), {"keypoints": np.zeros((0, 0, 2))}
    sizes = {len(p or []) for p in points_per_label}
    if len(sizes) > 1:
        raise AnnotationError(
            f"keypoint labels have different numbers of points ({sorted(sizes)}); every label of a skeleton "
            f"must list the same K points (use NaN for missing ones), e.g. {where[0]}"
        )
    kps = np.array([[[np.nan, np.nan] if pt is None else pt for pt in (p or [])] for p in points_per_label],
                   dtype=np.float64).reshape(len(points_per_label), -1, 2)
    labelled = np.asarray(np.isfinite(kps).all(axis=2))
    empty = ~labelled.any(axis=1)
    if empty.any():
        i = int(np.flatnonzero(empty)[0])
        raise AnnotationError(f"{where[i]}: a keypoint label has no labelled point (all are missing)")
    lo = np.where(labelled[..., None], kps, np.inf).min(axis=1)
    hi = np.where(labelled[..., None], kps, -np.inf).max(axis=1)
    boxes = np.concatenate([lo, hi - lo], axis=1)
    return boxes, {"keypoints": kps}


def check_masks(masks: list, boxes: np.ndarray, s_idx: np.ndarray, sizes: np.ndarray | None, where: Any,
                repairs: RepairReport) -> None:
    """Masks must be 2-D; those whose shape differs from their box's pixel extent are counted
    (they are stretched to the box when placed, as FiftyOne draws them).

    Raises:
        AnnotationError: a mask that is not 2-D, naming its label.
    """
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


def _finish_masks(columns: dict, ctx: FinishContext) -> dict:
    """The instance masks as boolean arrays (no column when no label has one), checked against their boxes."""
    flat = columns.pop("masks", None)
    if flat is None or not any(m is not None for m in flat):
        return columns
    masks = [None if m is None else np.asarray(m).astype(bool) for m in flat]
    check_masks(masks, ctx.boxes, ctx.sample_index, ctx.image_sizes, ctx.where, ctx.repairs)
    return {**columns, "masks": masks}


def _mask_document(columns: dict, row: int) -> dict:
    mask = columns["masks"][row]
    return {} if mask is None else {"mask": np.asarray(mask, dtype=bool)}


def _polygon_document(columns: dict, row: int) -> dict:
    return {"points": [np.asarray(r).tolist() for r in columns["polygons"][row]], "closed": True, "filled": True}


def _keypoint_document(columns: dict, row: int) -> dict:
    points = columns["keypoints"][row]
    return {"points": [[float("nan")] * 2 if not np.isfinite(p).all() else p.tolist() for p in points]}


register_label_type(LabelType(fol.Detections, "detections", "bounding_box", read_geometry=detection_boxes,
                              import_suffix=""))
register_label_type(LabelType(fol.Polylines, "polylines", "points", read_geometry=boxes_from_polylines,
                              document=_polygon_document, column="polygons", import_suffix="_polygons",
                              box_attr=None))
register_label_type(LabelType(fol.Keypoints, "keypoints", "points", read_geometry=boxes_from_keypoints,
                              document=_keypoint_document, column="keypoints", import_suffix="_keypoints",
                              box_attr=None, per_point=True))

register_variant(GeometryVariant(
    "masks", fol.Detections, ("mask",),
    applies=lambda samples, fields, options: bool(options.masks),
    read=lambda extra, where, n: {"masks": extra["mask"]},
    finish=_finish_masks, document=_mask_document,
))
