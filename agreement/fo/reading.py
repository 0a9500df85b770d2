"""Reading multi-rater annotations from a FiftyOne dataset or view, in bulk.

Two layouts, both first-class:

* ``fields``: one label field per rater (``fields=["r1", "r2", ...]``); the
  rater is named after the field. ``None`` in a rater's field is implicit
  absence (not assigned); an empty ``Detections()`` is explicit absence.
* ``attribute``: one label field (``field="ground_truth"``) whose labels carry
  the rater in an attribute (``rater_attr``, default ``"annotator"``).
  Assignment comes from the sample-level list field ``raters_field`` (the
  raters assigned to each sample): given, or recorded on the dataset
  (:func:`declare_raters_field`, or the importer's ``raters`` field). With
  none, a sample whose field is ``None`` is assigned to nobody, and a sample
  whose field holds a (possibly empty) label list is assumed to be assigned to
  every rater seen in the view (a fully crossed design): refused where the
  data make it implausible (:func:`crossed_evidence`) unless
  ``assume_crossed=True``; reported in ``layout`` either way.

Supported label types: ``Detections`` (boxes, and their instance masks with
``masks=True``), ``Polylines`` (polygons; the box is the polygon's bounding
box), ``Keypoints`` (points, NaN where missing; the box is the bounding box of
the labelled points, used as the object scale of OKS). Boxes are validated (see
:mod:`agreement.validation`): NaN/infinite/negative-size boxes are errors that
name the sample, the field and the label; boxes past the image border are
clipped (``box_policy="clip"``), dropped (``"drop"``) or rejected
(``"error"``), and every repair is counted per rater.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from itertools import chain
from typing import Sequence

import numpy as np

import fiftyone.core.fields as fof
import fiftyone.core.labels as fol

from agreement.arrays import unique_sorted
from agreement.fo.projection import LABEL_TYPES, read_values
from agreement.data import MultiRaterAnnotations
from agreement.fo.gc_pause import gc_paused
from agreement.validation import BOX_POLICIES, AnnotationError, RepairReport, check_boxes

__all__ = ["ReadResult", "current_stamps", "read_annotations", "label_fields", "detect_raters", "LABEL_TYPES",
           "declare_raters_field", "recorded_assignment", "recorded_layout", "crossed_evidence", "assignment_candidates", "CorpusPlan",
           "plan_corpus", "coverage_evidence", "read_assignment", "join_reads"]



@dataclass
class ReadResult:
    """What :func:`read_annotations` returns.

    Attributes:
        annotations: the corpus, with FiftyOne sample ids and label ids.
        layout: how it was read (layout, fields, rater attribute, label type,
            assignment rule), stored with runs so they can be reproduced.
        repairs: repairs made to the input (clipped boxes), for the report.
        label_field_of_rater: the label field holding each rater's labels,
            for writing per-label results back.
        stored_ids: label field -> per sample (aligned with the corpus'
            ``sample_ids``) the ids of its labels as read, in stored order,
            so that results can be written by position.
        stamps: per sample, its ``last_modified_at`` read with its labels, when
            the lists read are the stored lists (:func:`positions_as_stored`):
            a write by position is guarded by it (``None``: not read).
    """

    annotations: MultiRaterAnnotations
    layout: dict
    repairs: RepairReport
    label_field_of_rater: dict[str, str] = field(default_factory=dict)
    stored_ids: dict[str, list] = field(default_factory=dict)
    stamps: list | None = None

    def stamps_of(self, part: slice | None = None) -> dict[str, object] | None:
        """Sample id -> ``last_modified_at`` as read (samples without one left out), for every sample or
        for the corpus samples in ``part``; ``None`` when not read."""
        if self.stamps is None:
            return None
        part = part if part is not None else slice(0, len(self.stamps))
        return {sid: t for sid, t in zip(map(str, self.annotations.sample_ids[part].tolist()), self.stamps[part])
                if t is not None}

    def refresh_stamps(self, before: dict[str, object], after: dict[str, object]) -> None:
        """Replaces the stamp of every sample whose stamp in ``before`` is the one read by its stamp in
        ``after`` (sample id -> ``last_modified_at``, as :func:`current_stamps` gives them): a change
        made between ``before`` and ``after`` by this process is taken as not changing the lists read."""
        if self.stamps is None:
            return
        ids = map(str, self.annotations.sample_ids.tolist())
        self.stamps = [after.get(s, t) if t is not None and before.get(s) == t else t
                       for s, t in zip(ids, self.stamps)]

    def stored_ids_of(self, label_field: str, part: slice | None = None) -> dict[str, list] | None:
        """Sample id -> the ids of ``label_field``'s labels as read, in stored order (``None``: not kept),
        for every sample or for the corpus samples in ``part``."""
        per_sample = self.stored_ids.get(label_field)
        if per_sample is None:
            return None
        part = part if part is not None else slice(0, len(per_sample))
        return dict(zip(map(str, self.annotations.sample_ids[part].tolist()), per_sample[part]))

    @property
    def label_fields(self) -> list[str]:
        """The label fields read, sorted."""
        return sorted(set(self.label_field_of_rater.values()))

    def rows_of_field(self, label_field: str, part: slice | None = None) -> np.ndarray:
        """Corpus rows whose labels live in ``label_field`` (for writing per-label results), of every
        sample or of the corpus samples in ``part`` (rows are in sample order: a part's rows are one
        range of them, found without a pass over the whole corpus)."""
        data = self.annotations
        lo, hi = 0, len(data)
        if part is not None:
            R = data.num_raters
            lo, hi = int(data.offsets[part.start * R]), int(data.offsets[part.stop * R])
        raters = [data.raters.index(r) for r, f in self.label_field_of_rater.items() if f == label_field]
        return lo + np.flatnonzero(np.isin(data.rater_index[lo:hi], raters))


def join_reads(parts: Sequence[ReadResult]) -> ReadResult:
    """One read of the shards ``parts`` of a view, read with one :func:`plan_corpus` plan, in shard order.

    The corpus is :meth:`agreement.data.MultiRaterAnnotations.concat` of the
    parts' (the same raters and class codes, by the plan), the stored label
    ids and stamps are the parts' one after the other, and the repairs are
    summed. Reading a large view in shards and joining them keeps the read's
    transient memory (the decoded documents) to one shard's.
    """
    parts = list(parts)
    if len(parts) == 1:
        return parts[0]
    repairs = RepairReport()
    for p in parts:
        repairs.merge(p.repairs)
    kept = set.intersection(*(set(p.stored_ids) for p in parts))
    stored = {f: [ids for p in parts for ids in p.stored_ids[f]] for f in sorted(kept)}
    stamps = None if any(p.stamps is None for p in parts) else [t for p in parts for t in p.stamps]
    return ReadResult(MultiRaterAnnotations.concat([p.annotations for p in parts]), parts[-1].layout, repairs,
                      dict(parts[0].label_field_of_rater), stored, stamps)


def label_fields(samples, types: Sequence[type] = tuple(LABEL_TYPES)) -> list[str]:
    """Names of the sample fields of ``samples`` holding one of ``types``."""
    schema = samples.get_field_schema(embedded_doc_type=tuple(types))
    return sorted(schema)


def _label_type(samples, name: str) -> type:
    schema = samples.get_field_schema()
    if name not in schema:
        raise AnnotationError(
            f"field {name!r} does not exist on dataset {samples._dataset.name!r}; "
            f"label fields are: {label_fields(samples) or 'none'}"
        )
    f = schema[name]
    doc_type = getattr(f, "document_type", None) if isinstance(f, fof.EmbeddedDocumentField) else None
    if doc_type not in LABEL_TYPES:
        what = doc_type.__name__ if doc_type is not None else type(f).__name__
        raise AnnotationError(
            f"field {name!r} is a {what}, not a label field of a supported type "
            f"({', '.join(t.__name__ for t in LABEL_TYPES)})"
        )
    return doc_type


def _sample_label(sample_id: str, filepath: str) -> str:
    return f"sample {os.path.basename(filepath)!r} (id {sample_id})"


def _check_layout_choice(fields, field, box_policy: str) -> None:
    """One rater layout, and a known box policy (before anything is read)."""
    if (fields is None) == (field is None):
        raise AnnotationError("give either `fields` (one label field per rater) or `field` with `rater_attr`")
    if box_policy not in BOX_POLICIES:
        raise ValueError(f"box_policy must be one of {BOX_POLICIES}, got {box_policy!r}")


def detect_raters(samples, field: str, rater_attr: str = "annotator") -> list[str]:
    """The distinct values of ``rater_attr`` on the labels of ``field``, sorted."""
    list_field = LABEL_TYPES[_label_type(samples, field)]
    values = samples.distinct(f"{field}.{list_field}.{rater_attr}")
    return sorted(str(v) for v in values if v is not None)


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


def read_annotations(
    samples,
    fields: Sequence[str] | None = None,
    field: str | None = None,
    rater_attr: str = "annotator",
    raters_field: str | None = None,
    box_policy: str = "clip",
    min_raters: int = 2,
    image_sizes: bool = False,
    masks: bool = False,
    cuboids: bool | None = None,
    assume_crossed: bool = False,
    plan: "CorpusPlan | None" = None,
) -> ReadResult:
    """Reads every rater's annotations on ``samples`` with bulk ``values()`` calls.

    Args:
        samples: a FiftyOne dataset or view.
        fields: one label field per rater (the ``fields`` layout), or
        field: the one label field whose labels carry ``rater_attr``.
        rater_attr: the label attribute naming the rater (``attribute`` layout).
        raters_field: sample-level list field of the raters assigned to each
            sample (``attribute`` layout); default: the one recorded on the
            dataset (see :func:`recorded_assignment`).
        box_policy: ``"clip"``, ``"drop"`` or ``"error"`` for boxes past the
            image border (see :mod:`agreement.validation`).
        min_raters: fewer raters than this is an error.
        image_sizes: also read ``metadata.width``/``height`` (NaN when missing).
        masks: also read the instance masks of ``Detections`` (``None`` where
            a detection has none).
        cuboids: read ``Detections`` as 3D cuboids (``location``,
            ``dimensions``, ``rotation``); default: when the field declares
            ``location``. 3D rows get NaN 2D boxes.
        plan: the :func:`plan_corpus` of the whole view when ``samples`` is one
            shard of it: its raters and class vocabulary are used (and its
            checks of the assignment are not repeated).

    Raises:
        AnnotationError: naming the sample and field, for every bad input.
    """
    _check_layout_choice(fields, field, box_policy)
    if len(samples) == 0:
        raise AnnotationError(f"the view of dataset {samples._dataset.name!r} has no samples")
    if fields is not None:
        fields = list(dict.fromkeys(fields))
        if len(fields) < min_raters:
            raise AnnotationError(
                f"agreement needs at least {min_raters} raters; got the field(s) {fields}. "
                "Give one label field per rater, or one field with a rater attribute"
            )
        types = {f: _label_type(samples, f) for f in fields}
        if len(set(types.values())) > 1:
            raise AnnotationError(
                "all rater fields must hold the same label type; got "
                + ", ".join(f"{f}: {t.__name__}" for f, t in types.items())
            )
        ltype = types[fields[0]]
        three_d = bool(cuboids) if cuboids is not None else (
            ltype is fol.Detections and all(_is_3d(samples, f) for f in fields)
        )
        with gc_paused():
            return _read_fields_layout(samples, fields, ltype, box_policy, image_sizes,
                                       _extras(samples, fields, ltype, masks, three_d), plan)
    ltype = _label_type(samples, field)
    three_d = bool(cuboids) if cuboids is not None else (ltype is fol.Detections and _is_3d(samples, field))
    with gc_paused():
        return _read_attribute_layout(
            samples, field, ltype, rater_attr, recorded_assignment(samples, field, raters_field), box_policy,
            min_raters, image_sizes, _extras(samples, [field], ltype, masks, three_d), assume_crossed, plan,
        )


def current_stamps(samples, ids: Sequence[str], chunk: int = 50_000) -> dict[str, object]:
    """Sample id -> its ``last_modified_at`` as stored now, for the samples ``ids`` of ``samples``'
    dataset (one projected query per ``chunk`` ids; a sample without one, or deleted, is left out)."""
    from bson import ObjectId

    coll = samples._root_dataset._sample_collection
    out: dict[str, object] = {}
    for lo in range(0, len(ids), chunk):
        query = {"_id": {"$in": [ObjectId(i) for i in ids[lo: lo + chunk]]}}
        for doc in coll.find(query, {"last_modified_at": 1}):
            if doc.get("last_modified_at") is not None:
                out[str(doc["_id"])] = doc["last_modified_at"]
    return out


def _base_paths(image_sizes: bool, stamps: bool = False) -> list[str]:
    paths = ["id", "filepath"]
    if image_sizes:
        paths += ["metadata.width", "metadata.height"]
    if stamps:
        paths.append("last_modified_at")  # last: the readers take it as values[nb - 1]
    return paths


#: View stages that choose, order or count samples without changing any sample's label lists.
_SAMPLE_STAGES = frozenset({"Match", "MatchTags", "Select", "Exclude", "SelectBy", "ExcludeBy", "SortBy", "Limit",
                            "Skip", "Take", "Shuffle", "Exists", "SelectFields", "ExcludeFields"})


def positions_as_stored(samples) -> bool:
    """Whether ``samples`` gives every sample's label lists exactly as stored (a dataset, or a view of
    :data:`_SAMPLE_STAGES` only) on a dataset that stamps ``last_modified_at``.

    Then a label's position as read is its stored position, and the sample's
    ``last_modified_at`` read with it guards a write by position: FiftyOne
    stamps every change of a sample, so an unchanged stamp means unchanged lists.
    """
    from agreement.fo.projection import plain_collection

    if not plain_collection(samples) or "last_modified_at" not in samples._root_dataset.get_field_schema():
        return False
    return all(type(stage).__name__ in _SAMPLE_STAGES for stage in getattr(samples, "_stages", ()))


def _sizes(values: list, image_sizes: bool, n: int) -> np.ndarray | None:
    if not image_sizes:
        return None
    w = np.array([np.nan if v is None else v for v in values[2]], dtype=np.float64)
    h = np.array([np.nan if v is None else v for v in values[3]], dtype=np.float64)
    return np.stack([w, h], axis=1).reshape(n, 2)


CUBOID_ATTRS = ("location", "dimensions", "rotation")


def _declared(samples, path: str) -> bool:
    try:
        return samples.get_field(path) is not None
    except Exception:  # noqa: BLE001 - an undeclared path
        return False


def _extras(samples, fields: Sequence[str], ltype: type, masks: bool, three_d: bool) -> list[str]:
    """Per-label attributes read besides geometry, label and id.

    ``Detections``: ``mask`` (on request), ``location``/``dimensions``/
    ``rotation`` (3D cuboids, or 3D points when no label has dimensions),
    ``point_indices`` (point-cloud segments, when declared). ``Polylines``:
    ``points3d`` (3D polylines, when declared).
    """
    if ltype is fol.Polylines:
        return ["points3d"] if all(_declared(samples, f"{f}.polylines.points3d") for f in fields) else []
    if ltype is not fol.Detections:
        return []
    extras = (["mask"] if masks else []) + (list(CUBOID_ATTRS) if three_d else [])
    if all(_declared(samples, f"{f}.detections.point_indices") for f in fields):
        extras.append("point_indices")
    return extras


def _geometry_paths(field: str, ltype: type, extras: Sequence[str] = ()) -> list[str]:
    """Paths read per label field: geometry, label, id, then ``extras``."""
    lf = LABEL_TYPES[ltype]
    geo = "bounding_box" if ltype is fol.Detections else "points"
    return [f"{field}.{lf}.{geo}", f"{field}.{lf}.label", f"{field}.{lf}.id"] + [f"{field}.{lf}.{e}" for e in extras]


def _is_3d(samples, field: str) -> bool:
    """Whether the Detections of ``field`` are 3D (declared ``location`` attribute)."""
    try:
        return samples.get_field(f"{field}.detections.location") is not None
    except Exception:  # noqa: BLE001 - an undeclared path
        return False


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


def _one_object_per_value(values) -> list:
    """``values`` as a list in which equal class names are one object: every label's name is decoded
    as a string of its own, and a corpus of millions of labels would keep millions of copies of a few
    dozen names (about 50 bytes each)."""
    values = list(values)
    seen: dict = {}
    try:
        return [seen.setdefault(v, v) for v in values]
    except TypeError:  # an unhashable "class" (bad input): left as it is, for the checks after the read to name
        return values


def _flatten(per_sample: list, counts: np.ndarray) -> list:
    return list(chain.from_iterable(v for v, c in zip(per_sample, counts) if c))


def _read_fields_layout(samples, fields, ltype, box_policy, image_sizes, extras=(), plan=None) -> ReadResult:
    stamped = positions_as_stored(samples)
    paths = _base_paths(image_sizes, stamped)
    width = 3 + len(extras)
    for f in fields:
        paths += _geometry_paths(f, ltype, extras)
    values = read_values(samples, paths)
    sample_ids, filepaths = values[0], values[1]
    nb = len(_base_paths(image_sizes, stamped))
    S, R = len(sample_ids), len(fields)
    raters = tuple(sorted(fields))
    order = [fields.index(r) for r in raters]
    assigned = np.zeros((S, R), dtype=bool)
    counts = np.zeros((S, R), dtype=np.intp)
    geo_cols, label_cols, id_cols, extra_cols = [], [], [], []
    for r, fi in enumerate(order):
        block = values[nb + width * fi: nb + width * fi + width]
        geo, labs, ids = block[:3]
        assigned[:, r] = [g is not None for g in geo]
        counts[:, r] = [len(g) if g is not None else 0 for g in geo]
        geo_cols.append(geo)
        label_cols.append(labs)
        id_cols.append(ids)
        extra_cols.append(block[3:])
    # rows sorted by (sample, rater): interleave per sample
    cells_geo, cells_lab, cells_id = [], [], []
    cells_extra = [[] for _ in extras]
    for s in range(S):
        for r in range(R):
            if counts[s, r]:
                cells_geo.append(geo_cols[r][s])
                cells_lab.append(label_cols[r][s])
                cells_id.append(id_cols[r][s])
                for e in range(len(extras)):
                    cells_extra[e].append(extra_cols[r][e][s])
    flat_geo = list(chain.from_iterable(cells_geo))
    extra = {name: list(chain.from_iterable(col)) for name, col in zip(extras, cells_extra)}
    labels = np.array(_one_object_per_value(chain.from_iterable(cells_lab)) + [None], dtype=object)[:-1]
    ids = np.array(list(chain.from_iterable(cells_id)) + [None], dtype=object)[:-1]
    flat_counts = counts.reshape(-1)
    s_idx = np.repeat(np.repeat(np.arange(S), R), flat_counts)
    r_idx = np.repeat(np.tile(np.arange(R), S), flat_counts)
    field_of_row = np.asarray(raters, dtype=object)[r_idx] if len(r_idx) else np.zeros(0, dtype=object)
    repairs = RepairReport()
    ann = _corpus(values, image_sizes, sample_ids, filepaths, raters, assigned, flat_geo, labels, ids, extra,
                  s_idx, r_idx, field_of_row, None, ltype, box_policy, repairs, _num_points(samples, extra),
                  plan.classes if plan is not None else None)
    layout = {
        "layout": "fields",
        "fields": list(fields),
        "label_type": ltype.__name__,
        "assignment": "a rater is assigned to a sample where its field is not None",
        "box_policy": box_policy,
    }
    return ReadResult(ann, layout, repairs, {r: r for r in raters},
                      stored_ids=dict(zip(raters, id_cols)), stamps=list(values[nb - 1]) if stamped else None)


class _Where:
    """Lazily builds "sample ..., field ..." locations for error messages."""

    def __init__(self, s_idx, field_of_row, sample_ids, filepaths, raters_of_row):
        self.s_idx, self.field_of_row = s_idx, field_of_row
        self.sample_ids, self.filepaths, self.raters_of_row = sample_ids, filepaths, raters_of_row

    def __getitem__(self, i: int) -> str:
        s = self.s_idx[i]
        rater = f" (rater {self.raters_of_row[i]!r})" if self.raters_of_row is not None else ""
        return f"{_sample_label(self.sample_ids[s], self.filepaths[s])}, field {self.field_of_row[i]!r}{rater}"


def _geometry(flat_geo: list, ltype: type, where) -> tuple[np.ndarray, list | None, np.ndarray | None]:
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

    Returns ``(boxes, keep)`` (see :func:`agreement.validation.check_boxes`).
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
            num_points=None, classes=None) -> MultiRaterAnnotations:
    """Geometry, validation and the corpus, shared by both layouts (rows already in corpus order)."""
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
    boxes, polygons, keypoints = _geometry(flat_geo, ltype, where)
    cuboids, points3d = _three_d(extra, where, len(boxes))
    no_2d = cuboids is not None or points3d is not None or polylines3d is not None or (
        segments is not None and not np.isfinite(boxes).all()  # point-cloud segments without a 2D box
    )
    if polylines3d is not None:
        boxes, polygons = np.full((n, 4), np.nan), None
    checked, keep = _validated(np.zeros((0, 4)) if no_2d else boxes, labels, s_idx, field_of_row, sample_ids,
                               filepaths, box_policy, repairs, raters_of_row)
    boxes = np.full_like(boxes, np.nan) if no_2d else checked  # 3D rows have no 2D box
    rows = dict(boxes=boxes, labels=labels, label_ids=ids, sample_index=s_idx, rater_index=r_idx,
                polygons=polygons, masks=extra.get("mask"), keypoints=keypoints, cuboids=cuboids,
                points3d=points3d, polylines3d=polylines3d, segments=segments)
    if not no_2d and not keep.all():  # box_policy="drop"
        rows = _drop_rows(keep, rows)
        where = _Where(rows["sample_index"], field_of_row[keep],  sample_ids, filepaths,
                       raters_of_row[keep] if raters_of_row is not None else None)
    rows["masks"] = _masks(rows["masks"])
    if rows["masks"] is not None:
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


def _num_points(samples, extra: dict) -> list | None:
    """The ``num_points`` sample field (point-cloud sizes), read when segments are."""
    if "point_indices" not in extra:
        return None
    if "num_points" not in samples.get_field_schema():
        raise AnnotationError(
            "point-index segments need the sample field 'num_points' (the size of each sample's point cloud)"
        )
    return [-1 if v is None else int(v) for v in samples.values("num_points")]


def _read_attribute_layout(samples, field, ltype, rater_attr, assignment, box_policy, min_raters, image_sizes,
                           extras=(), assume_crossed=False, plan=None):
    lf = LABEL_TYPES[ltype]
    gpaths = _geometry_paths(field, ltype, extras)
    raters_field = assignment.raters_field
    stamped = positions_as_stored(samples)
    paths = _base_paths(image_sizes, stamped) + gpaths + [f"{field}.{lf}.{rater_attr}"]
    if raters_field is not None:
        _check_raters_field_type(samples, raters_field)
        paths.append(raters_field)
    values = read_values(samples, paths)
    nb = len(_base_paths(image_sizes, stamped))
    sample_ids, filepaths = values[0], values[1]
    geo, labs, ids = values[nb: nb + 3]
    extra_cols = dict(zip(extras, values[nb + 3: nb + len(gpaths)]))
    who = values[nb + len(gpaths)]
    listed = values[nb + len(gpaths) + 1] if raters_field is not None else None
    S = len(sample_ids)
    counts = np.array([len(g) if g is not None else 0 for g in geo], dtype=np.intp)
    s_rows = np.repeat(np.arange(S), counts)
    flat_who = _rater_of_labels(_flatten(who, counts), s_rows, sample_ids, filepaths, field, rater_attr)
    named = sorted(set(flat_who.tolist())) if plan is None else list(plan.named)
    if listed is not None:
        listed = _checked_assignment(listed, geo, named, samples, sample_ids, filepaths, field, rater_attr, assignment)
        raters = tuple(sorted(set(named).union(*[set(x) for x in listed if x])))
    else:
        raters = tuple(named)
    if plan is not None:
        _check_planned_raters(flat_who, listed, plan, s_rows, sample_ids, filepaths, field)
        raters = plan.raters
    if len(raters) < min_raters:
        raise AnnotationError(
            f"agreement needs at least {min_raters} raters; field {field!r} has labels by "
            f"{list(raters) or 'nobody'} in attribute {rater_attr!r}"
        )
    rindex = {r: i for i, r in enumerate(raters)}
    R = len(raters)
    r_rows = np.array([rindex[w] for w in flat_who], dtype=np.intp)
    assigned = np.zeros((S, R), dtype=bool)
    if listed is not None:
        for s, lst in enumerate(listed):
            if lst:
                assigned[s, [rindex[x] for x in lst]] = True
        if len(r_rows) and not assigned[s_rows, r_rows].all():
            i = int(np.flatnonzero(~assigned[s_rows, r_rows])[0])
            s = s_rows[i]
            raise AnnotationError(
                f"{_sample_label(sample_ids[s], filepaths[s])}, field {field!r}: a label by rater "
                f"{flat_who[i]!r} but {raters_field!r} lists {listed[s]}"
            )
        _check_listed_raters_known(listed, named, samples, sample_ids, filepaths, field, rater_attr, assignment,
                                   plan)
        rule = f"the raters listed in {raters_field!r} ({assignment.source})"
        evidence = None
    else:
        has_field = np.array([g is not None for g in geo], dtype=bool)
        if plan is None:
            evidence = crossed_evidence(counts, s_rows, r_rows, R)
            if not assume_crossed and evidence["implausible"]:
                raise AnnotationError(_crossed_refusal(samples, field, raters, evidence))
        else:  # checked on the whole view by plan_corpus
            evidence = dict(plan.evidence or {})
        assigned[has_field] = True
        rule = (
            f"no raters_field: every rater seen in {field!r} is assumed assigned to every sample "
            "whose field is not None (fully crossed" + (", accepted with assume_crossed=True)" if assume_crossed
                                                       else ")")
        )
    labels = np.array(_one_object_per_value(_flatten(labs, counts)) + [None], dtype=object)[:-1]
    label_ids = np.array(_flatten(ids, counts) + [None], dtype=object)[:-1]
    field_of_row = np.full(int(counts.sum()), field, dtype=object)
    extra = {name: _flatten(col, counts) for name, col in extra_cols.items()}
    repairs = RepairReport()
    ann = _corpus(values, image_sizes, sample_ids, filepaths, raters, assigned, _flatten(geo, counts), labels,
                  label_ids, extra, s_rows, r_rows, field_of_row, flat_who, ltype, box_policy, repairs,
                  _num_points(samples, extra), plan.classes if plan is not None else None)
    layout = {
        "layout": "attribute",
        "field": field,
        "rater_attr": rater_attr,
        "raters_field": raters_field,
        "raters_field_source": assignment.source,
        "assumed_crossed": listed is None,
        "label_type": ltype.__name__,
        "assignment": rule,
        "box_policy": box_policy,
    }
    if evidence is not None:
        layout["crossed_evidence"] = {k: v for k, v in evidence.items() if k != "implausible"}
    return ReadResult(ann, layout, repairs, {r: field for r in raters}, stored_ids={field: ids},
                      stamps=list(values[nb - 1]) if stamped else None)


def _rater_of_labels(flat_who: list, s_rows: np.ndarray, sample_ids, filepaths, field: str,
                     rater_attr: str) -> np.ndarray:
    """The rater name of every label, as strings; labels without one are an error naming the count."""
    missing = np.array([w is None for w in flat_who], dtype=bool)
    if missing.any():
        where = sorted(set(s_rows[missing].tolist()))
        first = ", ".join(_sample_label(sample_ids[s], filepaths[s]) for s in where[:3])
        raise AnnotationError(
            f"field {field!r}: {int(missing.sum())} label(s) on {len(where)} sample(s) have no {rater_attr!r} "
            f"attribute, so their rater is unknown (first: {first}). Set the attribute on every label, give the "
            "attribute that does name the rater as `rater_attr`, or use one label field per rater"
        )
    return np.array([str(w) for w in flat_who] + [None], dtype=object)[:-1]


def dataset_raters(samples, field: str, rater_attr: str) -> list[str]:
    """The raters that label something in ``field`` anywhere in the dataset (not only in the view)."""
    return detect_raters(samples._dataset, field, rater_attr)


def _check_planned_raters(flat_who, listed, plan: "CorpusPlan", s_rows, sample_ids, filepaths, field: str) -> None:
    """A shard's raters must be among the plan's: the labels changed between planning and reading otherwise."""
    known = set(plan.raters)
    seen = set(flat_who.tolist()) | {x for lst in (listed or ()) if lst for x in lst}
    new = sorted(seen - known)
    if new:
        i = next((k for k, w in enumerate(flat_who.tolist()) if w in set(new)), None)
        where = f" (e.g. on {_sample_label(sample_ids[s_rows[i]], filepaths[s_rows[i]])})" if i is not None else ""
        raise AnnotationError(
            f"field {field!r}: rater(s) {new[:5]} appeared{where} after the run listed the view's raters "
            f"{list(plan.raters)[:10]}: the labels changed while the run was reading them; run it again"
        )


def _check_raters_field_type(samples, raters_field: str) -> None:
    schema = samples.get_field_schema()
    if raters_field not in schema:
        lists = assignment_candidates(samples)
        raise AnnotationError(
            f"raters_field {raters_field!r} does not exist on dataset {samples._dataset.name!r}"
            + (f"; its list fields are: {', '.join(lists)}" if lists else "; it has no list fields")
        )
    if not isinstance(schema[raters_field], fof.ListField):
        raise AnnotationError(
            f"raters_field {raters_field!r} is a {type(schema[raters_field]).__name__}, "
            "not a list field of rater names"
        )


def assignment_candidates(samples) -> list[str]:
    """Sample-level list fields that could name the assigned raters (``tags`` excluded)."""
    return sorted(k for k, v in samples.get_field_schema().items() if isinstance(v, fof.ListField) and k != "tags")


def _checked_assignment(listed: list, geo: list, named: list[str], samples, sample_ids, filepaths, field: str,
                        rater_attr: str, assignment: "Assignment") -> list:
    """The per-sample rater lists as lists of str, after checking them.

    Errors (each naming the first samples): a sample with labels in ``field``
    whose list is missing; a list that is not a list of strings; names no label
    of the dataset carries and no declaration lists (likely typos).
    """
    rf = assignment.raters_field

    def first(where: list[int]) -> str:
        return ", ".join(_sample_label(sample_ids[s], filepaths[s]) for s in where[:3])

    missing = [s for s, (lst, g) in enumerate(zip(listed, geo)) if lst is None and g is not None]
    if missing:
        raise AnnotationError(
            f"raters_field {rf!r} is missing (None) on {len(missing)} sample(s) whose field {field!r} is set, "
            f"so their assignment is unknown: {first(missing)}. Set it on every sample (an empty list "
            "means nobody was assigned)"
        )
    bad = [s for s, lst in enumerate(listed) if lst is not None and (
        not isinstance(lst, (list, tuple)) or not all(isinstance(x, str) for x in lst))]
    if bad:
        s = bad[0]
        raise AnnotationError(
            f"raters_field {rf!r} must hold a list of rater names (strings) on every sample; "
            f"{len(bad)} sample(s) hold something else, e.g. {listed[s]!r} on {first(bad)}"
        )
    return [list(lst) if lst is not None else None for lst in listed]


def _check_listed_raters_known(listed: list, named: list[str], samples, sample_ids, filepaths, field: str,
                               rater_attr: str, assignment: "Assignment", plan: "CorpusPlan | None" = None) -> None:
    """A name in the assignment that no label of the dataset carries and no declaration lists is an error (a typo)."""
    rf = assignment.raters_field
    if plan is not None and plan.dataset_raters is not None:
        carried = set(plan.dataset_raters)
    else:
        carried = set(dataset_raters(samples, field, rater_attr))
    known = set(named) | set(assignment.known_raters) | carried
    unknown: dict[str, list[int]] = {}
    for s, lst in enumerate(listed):
        for x in lst or ():
            if x not in known:
                unknown.setdefault(x, []).append(s)
    if unknown:
        names = sorted(unknown)
        where = ", ".join(_sample_label(sample_ids[s], filepaths[s]) for s in unknown[names[0]][:3])
        raise AnnotationError(
            f"raters_field {rf!r} names {len(names)} rater(s) that no label of field {field!r} carries in "
            f"{rater_attr!r}: {names[:5]} (e.g. on {where}). Check the spelling; a rater who "
            "truly drew nothing anywhere must be declared with "
            f"agreement.fo.reading.declare_raters_field(dataset, {field!r}, {rf!r}, raters=[...])"
        )


CROSSED_MIN_MEDIAN_COVERAGE = 0.5


def crossed_evidence(counts: np.ndarray, s_rows: np.ndarray, r_rows: np.ndarray, num_raters: int) -> dict:
    """How plausible the fully crossed assumption is, from who drew on which non-empty samples.

    For each rater r, coverage_r = #{non-empty samples with a label by r} /
    #{non-empty samples}, in [0, 1]. Under a fully crossed design a rater
    misses a sample with objects only by overlooking all of them, so coverage
    is high; in a sparse design (each sample given to a few of many raters)
    it is about the share of samples a rater was given. The assumption is
    implausible when the median coverage is below
    ``CROSSED_MIN_MEDIAN_COVERAGE`` (0.5).

    Returns:
        ``n_nonempty``, ``median_coverage``, ``n_raters_below_half`` and
        ``implausible``.
    """
    nonempty = int((counts > 0).sum())
    if nonempty == 0 or num_raters == 0:
        return coverage_evidence(np.zeros(num_raters, dtype=np.int64), nonempty)
    pairs = unique_sorted(s_rows.astype(np.int64) * num_raters + r_rows)
    return coverage_evidence(np.bincount(pairs % num_raters, minlength=num_raters), nonempty)


def coverage_evidence(per_rater: np.ndarray, nonempty: int) -> dict:
    """:func:`crossed_evidence` from its counts: ``per_rater[r]`` non-empty samples with a label by rater r,
    of ``nonempty`` samples with labels."""
    per_rater = np.asarray(per_rater, dtype=np.int64)
    if nonempty == 0 or len(per_rater) == 0:
        return {"n_nonempty": int(nonempty), "median_coverage": float("nan"), "n_raters_below_half": 0,
                "implausible": False}
    coverage = per_rater / nonempty
    median = float(np.median(coverage))
    return {
        "n_nonempty": nonempty,
        "median_coverage": median,
        "median_samples": float(np.median(per_rater)),
        "n_raters_below_half": int((coverage < 0.5).sum()),
        "implausible": median < CROSSED_MIN_MEDIAN_COVERAGE,
    }


def _crossed_refusal(samples, field: str, raters, evidence: dict) -> str:
    lists = assignment_candidates(samples)
    choice = f" (list fields on this dataset: {', '.join(lists)})" if lists else ""
    return (
        f"field {field!r} records no rater assignment (no raters_field), so every one of the {len(raters)} raters "
        f"would be assumed to have looked at every sample with labels (a fully crossed design), and a rater "
        f"who was never given a sample would count as having found nothing there. That is implausible here: of "
        f"{evidence['n_nonempty']} samples with labels, the median rater labelled "
        f"{evidence['median_coverage']:.1%} ({evidence['median_samples']:g}), and {evidence['n_raters_below_half']} "
        f"of {len(raters)} raters labelled fewer than half. Either give the sample-level list of assigned raters "
        f"with raters_field='...'{choice} (or declare it once: agreement.fo.reading.declare_raters_field(dataset, "
        f"{field!r}, '<list field>')), or, if every rater really looked at every sample, pass assume_crossed=True"
    )


@dataclass(frozen=True)
class CorpusPlan:
    """What every shard of a streamed read shares, found once for the whole view (:func:`plan_corpus`).

    Attributes:
        raters: every rater of the view, sorted (a shard's rater indices are into this).
        classes: the class vocabulary of the view (shards are coded by it).
        label_fields: the label fields read (per-label results are written to them), sorted.
        layout: ``"fields"`` (one label field per rater) or ``"attribute"``.
        raters_field: the sample-level list of assigned raters used (attribute layout), or ``None``.
        named: raters that label something in the view (attribute layout).
        evidence: the coverage evidence of the fully crossed assumption
            (attribute layout without an assignment), else ``None``.
        dataset_raters: raters that label something anywhere in the dataset
            (attribute layout with an assignment: the names it may list), else ``None``.
    """

    raters: tuple
    classes: tuple
    label_fields: tuple = ()
    layout: str = "fields"
    raters_field: str | None = None
    named: tuple = ()
    evidence: dict | None = None
    dataset_raters: tuple | None = None


def plan_corpus(
    samples,
    fields: Sequence[str] | None = None,
    field: str | None = None,
    rater_attr: str = "annotator",
    raters_field: str | None = None,
    box_policy: str = "clip",
    assume_crossed: bool = False,
    min_raters: int = 2,
) -> CorpusPlan:
    """The raters, class vocabulary and input layout of ``samples``, from database aggregations.

    Reads no label geometry: the distinct raters (the fields, or the values of
    ``rater_attr`` and of the assignment list), the distinct classes, and, in
    the attribute layout without a recorded assignment, the coverage evidence
    of :func:`crossed_evidence` (refused, as in :func:`read_annotations`, when
    the fully crossed assumption is implausible and ``assume_crossed`` is not
    given). Every shard of a streamed run is then read with this plan
    (``read_annotations(..., plan=...)``), so that rater indices and class
    codes are the same in all of them.
    """
    from agreement.data import class_order

    _check_layout_choice(fields, field, box_policy)
    if fields is not None:
        fields = sorted(dict.fromkeys(fields))
        classes = set()
        for f in fields:
            classes.update(_distinct_raters_and_classes(samples, f"{f}.{LABEL_TYPES[_label_type(samples, f)]}")[1])
        return CorpusPlan(tuple(fields), class_order(classes), tuple(fields), "fields")
    lf = LABEL_TYPES[_label_type(samples, field)]
    assignment = recorded_assignment(samples, field, raters_field)
    named, classes = _distinct_raters_and_classes(samples, f"{field}.{lf}", rater_attr)
    listed: set = set()
    evidence = carried = None
    if assignment.raters_field is not None:
        _check_raters_field_type(samples, assignment.raters_field)
        listed = {str(v) for v in samples.distinct(assignment.raters_field) if v is not None}
        # names the view's labels do not carry may still be carried elsewhere in the dataset
        unknown = listed - set(named) - set(assignment.known_raters)
        carried = tuple(dataset_raters(samples, field, rater_attr)) if unknown else named
    raters = tuple(sorted(set(named) | listed))
    if len(raters) < min_raters:
        raise AnnotationError(
            f"agreement needs at least {min_raters} raters; field {field!r} has labels by "
            f"{list(raters) or 'nobody'} in attribute {rater_attr!r}"
        )
    if assignment.raters_field is None:
        evidence = _coverage_in_database(samples, f"{field}.{lf}", rater_attr, raters)
        if not assume_crossed and evidence["implausible"]:
            raise AnnotationError(_crossed_refusal(samples, field, raters, evidence))
    return CorpusPlan(raters, classes, (field,), "attribute", assignment.raters_field, named, evidence, carried)


def _distinct_raters_and_classes(samples, list_path: str, rater_attr: str | None = None) -> tuple[tuple, tuple]:
    """The raters (``str``, sorted; none without ``rater_attr``) and classes
    (:func:`agreement.data.class_order`) of the labels of a label list, in one aggregation over the view."""
    from agreement.data import class_order

    group = {"_id": None, "c": {"$addToSet": "$l.label"}}
    if rater_attr is not None:
        group["r"] = {"$addToSet": f"$l.{rater_attr}"}
    pipeline = [{"$project": {"l": f"${list_path}"}}, {"$unwind": "$l"}, {"$group": group}]
    out = next(iter(samples._aggregate(pipeline=pipeline)), None) or {}
    raters = tuple(sorted(str(v) for v in out.get("r", ()) if v is not None))
    return raters, class_order(c for c in out.get("c", ()) if c is not None)


def read_assignment(samples, plan: CorpusPlan, sample_ids: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """The assigned (sample, rater) cells of the view, as :func:`read_annotations` assigns them, by one
    projection that reads no label: ``(cell_sample, cell_rater)`` sorted by sample then rater, the sample
    an index into ``sample_ids`` (every sample of the view) and the rater into ``plan.raters``.

    A rater field that is set (fields layout), a name in the list of assigned
    raters (attribute layout with an assignment), or, without one, every
    rater on a sample whose field is set (the fully crossed design the plan
    accepted). A list that is not a list of names counts as empty here: the
    shard that reads it refuses it with its message.
    """
    pos = {sid: i for i, sid in enumerate(sample_ids)}
    R = len(plan.raters)
    if plan.raters_field is None:
        project = {f"f{k}": {"$gt": [f"${f}", None]} for k, f in enumerate(plan.label_fields)}
    else:
        project = {"listed": f"${plan.raters_field}"}
    rindex = {r: k for k, r in enumerate(plan.raters)}
    cs, cr = [], []
    every = list(range(R))
    fields_layout = plan.layout == "fields"
    for doc in samples._aggregate(pipeline=[{"$project": project}]):
        s = pos[str(doc["_id"])]
        if plan.raters_field is not None:
            listed = doc.get("listed")
            rs = sorted({rindex[x] for x in listed if isinstance(x, str) and x in rindex}) if isinstance(
                listed, list) else []
        elif fields_layout:
            rs = [k for k in range(R) if doc.get(f"f{k}")]
        else:
            rs = every if doc.get("f0") else []
        cs.extend([s] * len(rs))
        cr.extend(rs)
    cs, cr = np.asarray(cs, dtype=np.intp), np.asarray(cr, dtype=np.intp)
    o = np.lexsort((cr, cs))
    return cs[o], cr[o]


def _coverage_in_database(samples, list_path: str, rater_attr: str, raters: Sequence[str]) -> dict:
    """:func:`coverage_evidence` counted by one aggregation: the samples with labels, and per rater those
    with a label by it."""
    pipeline = [
        {"$project": {"n": {"$size": {"$ifNull": [f"${list_path}", []]}},
                      "w": {"$setUnion": [{"$ifNull": [f"${list_path}.{rater_attr}", []]}, []]}}},
        {"$match": {"n": {"$gt": 0}}},
        {"$facet": {"nonempty": [{"$count": "n"}],
                    "per_rater": [{"$unwind": "$w"}, {"$group": {"_id": "$w", "n": {"$sum": 1}}}]}},
    ]
    out = next(iter(samples._aggregate(pipeline=pipeline)), {}) or {}
    nonempty = int(out["nonempty"][0]["n"]) if out.get("nonempty") else 0
    counts = {str(d["_id"]): int(d["n"]) for d in out.get("per_rater", ())}
    return coverage_evidence(np.array([counts.get(r, 0) for r in raters], dtype=np.int64), nonempty)


ASSIGNMENT_INFO_KEY = "iaa_assignment"


@dataclass
class Assignment:
    """Where the rater assignment of an ``attribute``-layout field comes from.

    Attributes:
        raters_field: the sample-level list field of assigned raters, or ``None``.
        source: ``"given"`` (a parameter), ``"declared"`` (:func:`declare_raters_field`),
            ``"recorded by the importer"``, or ``"none"``.
        known_raters: raters declared with the field (may have drawn nothing).
    """

    raters_field: str | None
    source: str
    known_raters: tuple[str, ...] = ()


def declare_raters_field(dataset, field: str, raters_field: str, raters: Sequence[str] = ()) -> None:
    """Records, once per dataset, that ``raters_field`` lists the raters assigned to each sample for ``field``.

    Every compute operator then uses it when called with ``field`` (and
    without ``raters_field``). ``raters`` optionally names raters who may
    have drawn nothing anywhere (so that naming them is not taken for a typo).
    Stored in ``dataset.info["iaa_assignment"]``.
    """
    _check_raters_field_type(dataset, raters_field)
    info = dict(dataset.info.get(ASSIGNMENT_INFO_KEY) or {})
    info[field] = {"raters_field": raters_field, "raters": sorted(str(r) for r in raters)}
    dataset.info[ASSIGNMENT_INFO_KEY] = info
    dataset.save()


def recorded_layout(dataset) -> dict:
    """The rater layout the dataset records, for forms to preselect (``{}`` when none).

    Written by this plugin's importers (``dataset.info["iaa_coco"]``: the
    ``layout`` with its ``rater_fields`` or ``field``/``rater_attr``) or by
    the demo (``dataset.info["iaa_demo"]["rater_fields"]``). Returns
    ``{"layout": "fields", "fields": [...]}`` or ``{"layout": "attribute",
    "field": ..., "rater_attr": ...}``.
    """
    info = dataset.info or {}
    coco = info.get("iaa_coco") or {}
    if coco.get("layout") == "fields" and coco.get("rater_fields"):
        return {"layout": "fields", "fields": sorted(set(coco["rater_fields"].values()))}
    if coco.get("layout") == "attribute" and coco.get("field"):
        return {"layout": "attribute", "field": coco["field"], "rater_attr": coco.get("rater_attr") or "annotator"}
    demo = info.get("iaa_demo") or {}
    if demo.get("rater_fields"):
        return {"layout": "fields", "fields": list(demo["rater_fields"])}
    return {}


def recorded_assignment(samples, field: str, raters_field: str | None = None) -> Assignment:
    """The assignment to use for ``field``: the given ``raters_field``, else the one recorded on the dataset.

    Recorded means declared with :func:`declare_raters_field`, or written by
    this plugin's importer (``dataset.info["iaa_coco"]``: the ``raters`` field
    of an ``attribute``-layout import, with the raters of the file).
    """
    info = samples._dataset.info or {}
    declared = (info.get(ASSIGNMENT_INFO_KEY) or {}).get(field)
    coco = info.get("iaa_coco") or {}
    imported = coco.get("layout") == "attribute" and coco.get("field") == field
    known: tuple[str, ...] = ()
    if declared:
        known = tuple(declared.get("raters") or ())
    elif imported:
        known = tuple(str(r) for r in (coco.get("rater_ids") or {}))
    if raters_field is not None:
        return Assignment(raters_field, "given", known)
    if declared:
        return Assignment(declared["raters_field"], "declared", known)
    if imported and "raters" in samples.get_field_schema():
        return Assignment("raters", "recorded by the importer", known)
    return Assignment(None, "none")
