"""Building the corpus from the label values read, shared by both rater layouts of :mod:`agreement.fo.storage.reading`.

The rows (one per label, already in corpus order, gathered in a
:class:`CorpusParts`) become geometry as their label type and its geometry
variants declare it (:mod:`agreement.fo.kinds`: boxes, polygons, keypoints,
3D cuboids and points, 3D polylines, point-cloud segments, instance and
semantic masks; temporal segments as boxes in relative time:
:mod:`agreement.fo.storage.temporal`), are validated (see
:mod:`agreement.core.validation`: errors name the sample, the field and the
label; repairs are counted per rater) and are assembled into a
:class:`agreement.core.data.MultiRaterAnnotations` (:func:`build_corpus`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from agreement.core.data import MultiRaterAnnotations
from agreement.core.validation import AnnotationError, RepairReport, check_boxes
from agreement.fo.kinds import FinishContext, label_type, variants_of
from agreement.fo.storage.label_schema import sample_label
from agreement.fo.storage.temporal import temporal_boxes

__all__ = ["CorpusParts", "build_corpus"]


@dataclass
class CorpusParts:
    """What a read gathered, for :func:`build_corpus` (rows already in corpus order).

    Attributes:
        values: the columns read (``values[2:4]``: image widths and heights when ``image_sizes``).
        image_sizes: whether the image sizes were read.
        sample_ids, filepaths: per sample.
        raters: the rater names, sorted.
        assigned: ``(S, R)`` bool.
        flat_geo, labels, ids: per row, its geometry attribute, class and label id.
        extra: attribute -> per row, the further attributes read (:attr:`agreement.fo.kinds.GeometryVariant.attrs`).
        s_idx, r_idx: per row, its sample and rater.
        field_of_row: per row, its label field.
        raters_of_row: per row, its rater (attribute layout), or ``None``.
        ltype: the label class read.
        box_policy: ``"clip"``, ``"drop"`` or ``"error"``.
        repairs: collects the repairs.
        num_points: per sample, the size of its point cloud (point-cloud segments).
        classes: the class vocabulary of the whole view (a shard), or ``None``.
        frame_counts: per sample, its video's frame count (temporal segments).
    """

    values: list
    image_sizes: bool
    sample_ids: Sequence
    filepaths: Sequence
    raters: tuple
    assigned: np.ndarray
    flat_geo: list
    labels: np.ndarray
    ids: np.ndarray
    extra: dict
    s_idx: np.ndarray
    r_idx: np.ndarray
    field_of_row: np.ndarray
    raters_of_row: np.ndarray | None
    ltype: type
    box_policy: str
    repairs: RepairReport
    num_points: Any = None
    classes: Any = None
    frame_counts: np.ndarray | None = None


def _sizes(values: list, image_sizes: bool, n: int) -> np.ndarray | None:
    if not image_sizes:
        return None
    w = np.array([np.nan if v is None else v for v in values[2]], dtype=np.float64)
    h = np.array([np.nan if v is None else v for v in values[3]], dtype=np.float64)
    return np.stack([w, h], axis=1).reshape(n, 2)


class _Where:
    """Lazily builds "sample ..., field ..." locations for error messages."""

    def __init__(self, s_idx, field_of_row, sample_ids, filepaths, raters_of_row):
        self.s_idx, self.field_of_row = s_idx, field_of_row
        self.sample_ids, self.filepaths, self.raters_of_row = sample_ids, filepaths, raters_of_row

    def __getitem__(self, i: int) -> str:
        s = self.s_idx[i]
        rater = f" (rater {self.raters_of_row[i]!r})" if self.raters_of_row is not None else ""
        return f"{sample_label(self.sample_ids[s], self.filepaths[s])}, field {self.field_of_row[i]!r}{rater}"


def _validated(p: CorpusParts, boxes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Validates boxes, building location strings only for boxes that need a message.

    Returns ``(boxes, keep)`` (see :func:`agreement.core.validation.check_boxes`).
    """
    labels, s_idx, field_of_row, raters_of_row = p.labels, p.s_idx, p.field_of_row, p.raters_of_row
    missing_label = np.array([lab is None for lab in labels], dtype=bool)
    if missing_label.any():
        i = int(np.flatnonzero(missing_label)[0])
        s = int(s_idx[i])
        raise AnnotationError(
            f"{sample_label(p.sample_ids[s], p.filepaths[s])}, field {field_of_row[i]!r}: a label has no class name"
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
    for i in bad.tolist():
        s = int(s_idx[i])
        rater = f" (rater {raters_of_row[i]!r})" if raters_of_row is not None else ""
        where.append(
            f"{sample_label(p.sample_ids[s], p.filepaths[s])}, field {field_of_row[i]!r}{rater}, "
            f"label {labels[i]!r}"
        )
    rater_names = (raters_of_row if raters_of_row is not None else field_of_row)[bad]
    fixed, kept = check_boxes(boxes[bad], where, policy=p.box_policy, report=p.repairs, raters=rater_names)
    boxes = boxes.copy()
    boxes[bad] = fixed
    keep[bad] = kept
    return boxes, keep


def _drop_rows(keep: np.ndarray, rows: dict) -> dict:
    """``rows`` (per-annotation arrays and lists, ``None`` allowed) restricted to ``keep``."""
    idx = np.flatnonzero(keep)
    out: dict = {}
    for name, value in rows.items():
        if value is None:
            out[name] = None
        elif isinstance(value, np.ndarray):
            out[name] = value[idx]
        else:
            out[name] = [value[i] for i in idx]
    return out


def _geometry(p: CorpusParts, where: _Where) -> tuple[np.ndarray, dict, bool, np.ndarray | None]:
    """``(boxes, columns, no_2d, keep)``: the rows' boxes and geometry columns as the label type and its
    variants declare them, whether the rows have no 2D box, and (temporal segments) the rows kept by the
    checks of their supports in frames."""
    spec, n = label_type(p.ltype), len(p.labels)
    columns: dict = {}
    own: list = []  # (variant, its columns) of the variants that read geometry
    boxes = keep = None
    for variant in variants_of(p.ltype):
        if not all(a in p.extra for a in variant.attrs):
            continue
        cols = variant.read(p.extra, where, n)
        own.append((variant, cols))
        columns.update(cols)
        if cols and variant.boxes is not None:
            boxes = variant.boxes(cols, n)
    if spec.temporal:  # supports checked in frames (box_policy), then boxes in relative time
        boxes, keep = temporal_boxes(p.flat_geo, p.frame_counts, p.s_idx, where, p.labels, p.field_of_row,
                                     policy=p.box_policy, repairs=p.repairs,
                                     raters=p.raters_of_row if p.raters_of_row is not None else p.field_of_row)
    elif boxes is None:
        boxes, base = spec.read_geometry(p.flat_geo, where)
        columns = {**base, **columns}
    no_2d = spec.image_level or any(v.no_2d(cols, boxes) for v, cols in own)
    return boxes, columns, no_2d, keep


def build_corpus(p: CorpusParts) -> MultiRaterAnnotations:
    """The corpus of the rows read (already in corpus order), shared by both layouts: their geometry as the
    label type and its variants declare it, boxes validated (repairs in ``p.repairs``), the variants' final
    conversions and checks.

    Args:
        p: what the read gathered.

    Returns:
        The corpus, with FiftyOne sample and label ids.

    Raises:
        AnnotationError: naming the sample, the field and the label, for every bad input.
    """
    where = _Where(p.s_idx, p.field_of_row, p.sample_ids, p.filepaths, p.raters_of_row)
    boxes, columns, no_2d, keep_segments = _geometry(p, where)
    checked, keep = _validated(p, np.zeros((0, 4)) if no_2d else boxes)
    boxes = np.full_like(boxes, np.nan) if no_2d else checked  # 3D rows have no 2D box
    if keep_segments is not None:  # box_policy="drop" of supports outside the video's frames
        keep &= keep_segments
    rows = dict(boxes=boxes, labels=p.labels, label_ids=p.ids, sample_index=p.s_idx, rater_index=p.r_idx,
                **columns)
    if not no_2d and not keep.all():  # box_policy="drop"
        rows = _drop_rows(keep, rows)
        where = _Where(rows["sample_index"], p.field_of_row[keep], p.sample_ids, p.filepaths,
                       p.raters_of_row[keep] if p.raters_of_row is not None else None)
    sizes = _sizes(p.values, p.image_sizes, len(p.sample_ids))
    geometry = {name: rows.pop(name) for name in columns}
    context = FinishContext(rows["boxes"], rows["sample_index"], sizes, where, p.repairs)
    for variant in variants_of(p.ltype):
        if variant.finish is not None and all(a in p.extra for a in variant.attrs):
            geometry = variant.finish(geometry, context)
    return MultiRaterAnnotations(
        sample_ids=np.asarray(p.sample_ids, dtype=object),
        raters=p.raters,
        assigned=p.assigned,
        image_sizes=sizes,
        sample_names=np.asarray([os.path.basename(f) for f in p.filepaths], dtype=object),
        num_points=p.num_points,
        classes=p.classes,
        geometry=geometry,
        **rows,
    )
