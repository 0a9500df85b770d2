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
the labelled points, used as the object scale of OKS), ``TemporalDetections`` on
videos (the segment ``[first, last]`` of a video of ``metadata.total_frame_count``
frames as the box ``[(first - 1) / N, 0, (last - first + 1) / N, 1]`` in relative
time; supports are checked in frames, see :mod:`agreement.fo.storage.temporal`). Boxes are validated (see
:mod:`agreement.core.validation`): NaN/infinite/negative-size boxes are errors that
name the sample, the field and the label; boxes past the image border are
clipped (``box_policy="clip"``), dropped (``"drop"``) or rejected
(``"error"``), and every repair is counted per rater.

The label schema helpers live in :mod:`agreement.fo.storage.label_schema`, the rater
assignment and the plan of a streamed read in :mod:`agreement.fo.storage.assignment`,
the building of the corpus from the values read in
:mod:`agreement.fo.storage.corpus`; the public names of the first two are
importable from here too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import chain
from typing import Any, Sequence

import numpy as np

from agreement.core.data import MultiRaterAnnotations
from agreement.core.gc_pause import gc_paused
from agreement.core.validation import AnnotationError, RepairReport
from agreement.fo.kinds import LABEL_TYPES, ReadOptions, label_type, label_types, variants_of
from agreement.fo.storage.assignment import (
    CorpusPlan,
    assignment_candidates,
    check_listed_raters_known,
    check_planned_raters,
    check_raters_field_type,
    checked_assignment,
    coverage_evidence,
    crossed_evidence,
    crossed_refusal,
    declare_raters_field,
    plan_corpus,
    read_assignment,
    recorded_assignment,
    recorded_layout,
)
from agreement.fo.storage.corpus import CorpusParts, build_corpus
from agreement.fo.storage.label_schema import (
    check_layout_choice,
    detect_raters,
    field_label_type,
    label_fields,
    sample_label,
)
from agreement.fo.storage.projection import read_values
from agreement.fo.storage.temporal import FRAME_COUNT_PATH, check_temporal_media, frame_count_column, is_temporal

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
        frame_counts: temporal segments (``TemporalDetections``): per sample its
            ``metadata.total_frame_count`` (NaN where unknown), to write segments
            back in frames; ``None`` for other label types.
    """

    annotations: MultiRaterAnnotations
    layout: dict
    repairs: RepairReport
    label_field_of_rater: dict[str, str] = field(default_factory=dict)
    stored_ids: dict[str, list] = field(default_factory=dict)
    stamps: list | None = None
    frame_counts: np.ndarray | None = None

    def stamps_of(self, part: slice | None = None) -> dict[str, object] | None:
        """Sample id -> ``last_modified_at`` as read (samples without one left out), for every sample or
        for the corpus samples in ``part``; ``None`` when not read."""
        if self.stamps is None:
            return None
        part = part if part is not None else slice(0, len(self.stamps))
        return {sid: t for sid, t in zip(map(str, self.annotations.sample_ids[part].tolist()), self.stamps[part], strict=False)
                if t is not None}

    def refresh_stamps(self, before: dict[str, object], after: dict[str, object]) -> None:
        """Replaces the stamp of every sample whose stamp in ``before`` is the one read by its stamp in
        ``after`` (sample id -> ``last_modified_at``, as :func:`current_stamps` gives them): a change
        made between ``before`` and ``after`` by this process is taken as not changing the lists read."""
        if self.stamps is None:
            return
        ids = map(str, self.annotations.sample_ids.tolist())
        self.stamps = [after.get(s, t) if t is not None and before.get(s) == t else t
                       for s, t in zip(ids, self.stamps, strict=False)]

    def stored_ids_of(self, label_field: str, part: slice | None = None) -> dict[str, list] | None:
        """Sample id -> the ids of ``label_field``'s labels as read, in stored order (``None``: not kept),
        for every sample or for the corpus samples in ``part``."""
        per_sample = self.stored_ids.get(label_field)
        if per_sample is None:
            return None
        part = part if part is not None else slice(0, len(per_sample))
        return dict(zip(map(str, self.annotations.sample_ids[part].tolist()), per_sample[part], strict=False))

    @property
    def label_fields(self) -> list[str]:
        """The label list fields read, sorted: those whose labels can carry per-label results (a field of one
        label, ``Classification`` or ``Segmentation``, has none: its results are per sample)."""
        if self.layout.get("label_type") in {t.__name__ for t in label_types() if label_type(t).list_attr is None}:
            return []
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

    The corpus is :meth:`agreement.core.data.MultiRaterAnnotations.concat` of the
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
    stamps = None if any(p.stamps is None for p in parts) else [t for p in parts for t in (p.stamps or ())]
    frames = None if any(p.frame_counts is None for p in parts) else np.concatenate([p.frame_counts for p in parts])
    return ReadResult(MultiRaterAnnotations.concat([p.annotations for p in parts]), parts[-1].layout, repairs,
                      dict(parts[0].label_field_of_rater), stored, stamps, frame_counts=frames)


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
            image border (see :mod:`agreement.core.validation`).
        min_raters: fewer raters than this is an error.
        image_sizes: also read ``metadata.width``/``height`` (NaN when missing).
        masks: also read the instance masks of ``Detections`` (``None`` where
            a detection has none).
        cuboids: read ``Detections`` as 3D cuboids (``location``,
            ``dimensions``, ``rotation``); default: when the field declares
            ``location``. 3D rows get NaN 2D boxes.
        assume_crossed: without a recorded assignment (``attribute`` layout), accept the fully crossed
            assumption even where the data make it implausible (:func:`crossed_evidence`).
        plan: the :func:`plan_corpus` of the whole view when ``samples`` is one
            shard of it: its raters and class vocabulary are used (and its
            checks of the assignment are not repeated).

    Raises:
        AnnotationError: naming the sample and field, for every bad input.
    """
    check_layout_choice(fields, field, box_policy)
    if len(samples) == 0:
        raise AnnotationError(f"the view of dataset {samples._dataset.name!r} has no samples")
    if fields is not None:
        fields = list(dict.fromkeys(fields))
        if len(fields) < min_raters:
            raise AnnotationError(
                f"agreement needs at least {min_raters} raters; got the field(s) {fields}. "
                "Give one label field per rater, or one field with a rater attribute"
            )
        types = {f: field_label_type(samples, f) for f in fields}
        if len(set(types.values())) > 1:
            raise AnnotationError(
                "all rater fields must hold the same label type; got "
                + ", ".join(f"{f}: {t.__name__}" for f, t in types.items())
            )
        ltype = types[fields[0]]
        check_temporal_media(samples, fields, ltype)
        image_sizes = image_sizes and not is_temporal(ltype)  # relative time: no image size
        options = ReadOptions(masks=masks, cuboids=cuboids)
        with gc_paused():
            return _read_fields_layout(samples, fields, ltype, box_policy, image_sizes,
                                       _extras(samples, fields, ltype, options), plan=plan)
    assert field is not None  # check_layout_choice: `field` is given when `fields` is not
    ltype = field_label_type(samples, field)
    if label_type(ltype).list_attr is None:
        raise AnnotationError(
            f"field {field!r} is a {ltype.__name__}, which holds one label per sample, so it cannot hold several "
            f"raters' labels named by {rater_attr!r}: give one {ltype.__name__} field per rater (`fields`)"
            + (", or one Classifications field whose labels carry the rater attribute"
               if label_type(ltype).fixed_label is None else "")
        )
    check_temporal_media(samples, [field], ltype)
    image_sizes = image_sizes and not is_temporal(ltype)
    extras = _extras(samples, [field], ltype, ReadOptions(masks=masks, cuboids=cuboids))
    with gc_paused():
        return _read_attribute_layout(
            samples, field, ltype, rater_attr, recorded_assignment(samples, field, raters_field), box_policy,
            min_raters=min_raters, image_sizes=image_sizes, extras=extras, assume_crossed=assume_crossed, plan=plan,
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


def _base_paths(image_sizes: bool, stamps: bool = False, frames: bool = False) -> list[str]:
    paths = ["id", "filepath"]
    if image_sizes:
        paths += ["metadata.width", "metadata.height"]
    if frames:  # temporal segments: the videos' frame counts (agreement.fo.storage.temporal.frame_count_column)
        paths.append(FRAME_COUNT_PATH)
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
    from agreement.fo.storage.projection import plain_collection

    if not plain_collection(samples) or "last_modified_at" not in samples._root_dataset.get_field_schema():
        return False
    return all(type(stage).__name__ in _SAMPLE_STAGES for stage in getattr(samples, "_stages", ()))


def _extras(samples, fields: Sequence[str], ltype: type, options: ReadOptions) -> list[str]:
    """Per-label attributes read besides geometry, label and id: those of the geometry variants of ``ltype``
    that apply to ``fields`` (:func:`agreement.fo.kinds.variants_of`), in declaration order.

    ``Detections``: ``mask`` (on request), ``location``/``dimensions``/
    ``rotation`` (3D cuboids, or 3D points when no label has dimensions),
    ``point_indices`` (point-cloud segments, when declared). ``Polylines``:
    ``points3d`` (3D polylines, when declared). ``Segmentation``: ``mask`` and
    ``mask_path`` (the semantic mask, stored or on disk).
    """
    return [a for v in variants_of(ltype) if v.applies(samples, fields, options) for a in v.attrs]


def _geometry_paths(field: str, ltype: type, extras: Sequence[str] = ()) -> list[str]:
    """Paths read per label field: geometry, label, id, then ``extras`` (image-level labels have no geometry:
    their label, or their id for a semantic mask, is read in its place)."""
    spec = label_type(ltype)
    prefix = f"{field}.{spec.list_attr}" if spec.list_attr is not None else field
    return [f"{prefix}.{spec.geometry_attr}", f"{prefix}.{spec.label_attr}", f"{prefix}.id"] + [
        f"{prefix}.{e}" for e in extras]


def _as_lists(block: list, ltype: type) -> list:
    """A single-label field's columns (a label type without a list) as the label lists of a list field: a
    list of one label where the field is set (its id read), ``None`` where it is not. A semantic mask's
    label is ``"segmentation"`` (its classes are its pixel values: the type's ``fixed_label``)."""
    spec = label_type(ltype)
    if spec.list_attr is not None:
        return block
    ids = block[2]
    out = [[None if i is None else [v] for v, i in zip(col, ids, strict=False)] for col in block]
    if spec.fixed_label is not None:
        out[1] = [None if i is None else [spec.fixed_label] for i in ids]
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
    return list(chain.from_iterable(v for v, c in zip(per_sample, counts, strict=False) if c))


def _read_fields_layout(samples, fields, ltype, box_policy, image_sizes, extras=(), plan=None) -> ReadResult:
    stamped = positions_as_stored(samples)
    paths = _base_paths(image_sizes, stamped, is_temporal(ltype))
    width = 3 + len(extras)
    for f in fields:
        paths += _geometry_paths(f, ltype, extras)
    values = read_values(samples, paths)
    sample_ids, filepaths = values[0], values[1]
    nb = len(_base_paths(image_sizes, stamped, is_temporal(ltype)))
    S, R = len(sample_ids), len(fields)
    raters = tuple(sorted(fields))
    order = [fields.index(r) for r in raters]
    assigned = np.zeros((S, R), dtype=bool)
    counts = np.zeros((S, R), dtype=np.intp)
    geo_cols, label_cols, id_cols, extra_cols = [], [], [], []
    for r, fi in enumerate(order):
        block = _as_lists(values[nb + width * fi: nb + width * fi + width], ltype)
        geo, labs, ids = block[:3]
        assigned[:, r] = [g is not None for g in geo]
        counts[:, r] = [len(g) if g is not None else 0 for g in geo]
        geo_cols.append(geo)
        label_cols.append(labs)
        id_cols.append(ids)
        extra_cols.append(block[3:])
    # rows sorted by (sample, rater): interleave per sample
    cells_geo, cells_lab, cells_id = [], [], []
    cells_extra: list[list[Any]] = [[] for _ in extras]
    for s in range(S):
        for r in range(R):
            if counts[s, r]:
                cells_geo.append(geo_cols[r][s])
                cells_lab.append(label_cols[r][s])
                cells_id.append(id_cols[r][s])
                for e in range(len(extras)):
                    cells_extra[e].append(extra_cols[r][e][s])
    flat_geo = list(chain.from_iterable(cells_geo))
    extra = {name: list(chain.from_iterable(col)) for name, col in zip(extras, cells_extra, strict=False)}
    labels = np.array(_one_object_per_value(chain.from_iterable(cells_lab)) + [None], dtype=object)[:-1]
    ids = np.array(list(chain.from_iterable(cells_id)) + [None], dtype=object)[:-1]
    flat_counts = counts.reshape(-1)
    s_idx = np.repeat(np.repeat(np.arange(S), R), flat_counts)
    r_idx = np.repeat(np.tile(np.arange(R), S), flat_counts)
    field_of_row = np.asarray(raters, dtype=object)[r_idx] if len(r_idx) else np.zeros(0, dtype=object)
    repairs = RepairReport()
    frames = frame_count_column(values, image_sizes, ltype)
    ann = build_corpus(CorpusParts(
        values=values, image_sizes=image_sizes, sample_ids=sample_ids, filepaths=filepaths, raters=raters,
        assigned=assigned, flat_geo=flat_geo, labels=labels, ids=ids, extra=extra, s_idx=s_idx, r_idx=r_idx,
        field_of_row=field_of_row, raters_of_row=None, ltype=ltype, box_policy=box_policy, repairs=repairs,
        num_points=_num_points(samples, extra), classes=plan.classes if plan is not None else None,
        frame_counts=frames))
    layout = {
        "layout": "fields",
        "fields": list(fields),
        "label_type": ltype.__name__,
        "assignment": "a rater is assigned to a sample where its field is not None",
        **({"mask_targets": _mask_targets(samples, fields)} if label_type(ltype).fixed_label else {}),
        "box_policy": box_policy,
    }
    return ReadResult(ann, layout, repairs, {r: r for r in raters}, stored_ids=dict(zip(raters, id_cols, strict=False)),
                      stamps=list(values[nb - 1]) if stamped else None, frame_counts=frames)


def _mask_targets(samples, fields: Sequence[str]) -> dict | None:
    """The classes of the semantic masks of ``fields``: the dataset's ``mask_targets`` of the first field
    that has them, else its default ``default_mask_targets``, as ``{"value": "name"}`` (``None``: none recorded,
    the pixel values are the classes)."""
    dataset = samples._root_dataset
    targets = next((dataset.mask_targets[f] for f in fields if f in (dataset.mask_targets or {})), None)
    targets = targets if targets is not None else (dataset.default_mask_targets or None)
    return None if not targets else {str(k): str(v) for k, v in targets.items()}


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
    lf = label_type(ltype).list_attr
    gpaths = _geometry_paths(field, ltype, extras)
    raters_field = assignment.raters_field
    stamped = positions_as_stored(samples)
    paths = _base_paths(image_sizes, stamped, is_temporal(ltype)) + gpaths + [f"{field}.{lf}.{rater_attr}"]
    if raters_field is not None:
        check_raters_field_type(samples, raters_field)
        paths.append(raters_field)
    values = read_values(samples, paths)
    nb = len(_base_paths(image_sizes, stamped, is_temporal(ltype)))
    sample_ids, filepaths = values[0], values[1]
    geo, labs, ids = values[nb: nb + 3]
    extra_cols = dict(zip(extras, values[nb + 3: nb + len(gpaths)], strict=False))
    who = values[nb + len(gpaths)]
    listed = values[nb + len(gpaths) + 1] if raters_field is not None else None
    S = len(sample_ids)
    counts = np.array([len(g) if g is not None else 0 for g in geo], dtype=np.intp)
    s_rows = np.repeat(np.arange(S), counts)
    flat_who = _rater_of_labels(_flatten(who, counts), s_rows, sample_ids, filepaths, field, rater_attr)
    named = sorted(set(flat_who.tolist())) if plan is None else list(plan.named)
    if listed is not None:
        listed = checked_assignment(listed, geo, named, samples, sample_ids, filepaths, field=field,
                                    rater_attr=rater_attr, assignment=assignment)
        raters = tuple(sorted(set(named).union(*[set(x) for x in listed if x])))
    else:
        raters = tuple(named)
    if plan is not None:
        check_planned_raters(flat_who, listed, plan, s_rows, sample_ids, filepaths, field=field)
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
                f"{sample_label(sample_ids[s], filepaths[s])}, field {field!r}: a label by rater "
                f"{flat_who[i]!r} but {raters_field!r} lists {listed[s]}"
            )
        check_listed_raters_known(listed, named, samples, sample_ids, filepaths, field, rater_attr=rater_attr,
                                  assignment=assignment, plan=plan)
        rule = f"the raters listed in {raters_field!r} ({assignment.source})"
        evidence = None
    else:
        has_field = np.array([g is not None for g in geo], dtype=bool)
        if plan is None:
            evidence = crossed_evidence(counts, s_rows, r_rows, R)
            if not assume_crossed and evidence["implausible"]:
                raise AnnotationError(crossed_refusal(samples, field, raters, evidence))
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
    frames = frame_count_column(values, image_sizes, ltype)
    ann = build_corpus(CorpusParts(
        values=values, image_sizes=image_sizes, sample_ids=sample_ids, filepaths=filepaths, raters=raters,
        assigned=assigned, flat_geo=_flatten(geo, counts), labels=labels, ids=label_ids, extra=extra,
        s_idx=s_rows, r_idx=r_rows, field_of_row=field_of_row, raters_of_row=flat_who, ltype=ltype,
        box_policy=box_policy, repairs=repairs, num_points=_num_points(samples, extra),
        classes=plan.classes if plan is not None else None, frame_counts=frames))
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
                      stamps=list(values[nb - 1]) if stamped else None, frame_counts=frames)


def _rater_of_labels(flat_who: list, s_rows: np.ndarray, sample_ids, filepaths, field: str,
                     rater_attr: str) -> np.ndarray:
    """The rater name of every label, as strings; labels without one are an error naming the count."""
    missing = np.array([w is None for w in flat_who], dtype=bool)
    if missing.any():
        where = sorted(set(s_rows[missing].tolist()))
        first = ", ".join(sample_label(sample_ids[s], filepaths[s]) for s in where[:3])
        raise AnnotationError(
            f"field {field!r}: {int(missing.sum())} label(s) on {len(where)} sample(s) have no {rater_attr!r} "
            f"attribute, so their rater is unknown (first: {first}). Set the attribute on every label, give the "
            "attribute that does name the rater as `rater_attr`, or use one label field per rater"
        )
    return np.array([str(w) for w in flat_who] + [None], dtype=object)[:-1]
