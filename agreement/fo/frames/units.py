"""Video frames as the units of a run: a temporary image dataset whose samples are the frames of a video view,
and the way back.

Every agreement method computes per sample. On frame-level labels
(``frames.<field>``) the unit is a frame, so :func:`build_frame_units` copies
the frames of the videos of a view (the view's frame filters apply) into a
temporary image dataset, inside MongoDB (one aggregation, nothing passes
through Python):

* each unit keeps its frame's id (``_id``), so per-label and per-frame results
  written on the unit land on the same ids in the video dataset;
* ``sample_id`` is the video's id (what the chance baselines use to draw pairs
  of frames from different videos: :func:`chance_groups`), ``frame_number``
  the frame's number, ``filepath`` ``"<video path> frame <n>"`` (what messages
  name);
* ``metadata`` is the video's frame size as image metadata, ``last_modified_at``
  the frame's (a write by position on the frame is guarded by it);
* the raters' label fields are copied; a rater who labelled some frame of a
  video was assigned the whole video, so on its other frames their field is an
  empty label list (explicit absence: "nothing here"), not ``None`` (implicit
  absence: "not asked"). With one label field carrying the rater in an
  attribute, the raters of a video (the video's ``raters_field`` list if given,
  else every rater with a label in the video) are written to each of its
  frames (:data:`UNIT_RATERS_FIELD`).

Frames are the frames the video dataset holds documents for (FiftyOne keeps a
frame when some field of it is set): a frame nobody labelled and the dataset
does not hold is not a unit.

The units are never written: their ``info`` sends the run's bulk write-back
straight to the frames (:mod:`agreement.fo.frames.targets`), one update per
frame document. :func:`merge_back` moves values that reached the units by
another way (a method's ``set_values``) to the frames (one server-side
``$merge``): whole frame fields (``{key}_x``), and label attributes into the
labels of the rater fields, matched by label id, nothing else of a label
changed.
"""

from __future__ import annotations

import uuid
from typing import Any, Sequence

import numpy as np

from agreement.fo.frames.targets import WRITE_TARGET_KEY

__all__ = ["UNITS_INFO_KEY", "UNIT_RATERS_FIELD", "build_frame_units", "merge_back", "chance_groups",
           "is_frame_units", "delete_frame_units", "strip_frames_prefix"]

#: ``dataset.info`` key marking a frame-units dataset (its video dataset's name and the layout).
UNITS_INFO_KEY = "iaa_frame_units"

#: The per-unit list of the raters assigned to the unit's video (attribute layout).
UNIT_RATERS_FIELD = "iaa_video_raters"


#: The units' index of their videos: ``(_sample_id, _id)``, so that a read of both touches no document.
_VIDEO_INDEX = [("_sample_id", 1), ("_id", 1)]
_VIDEO_INDEX_NAME = "iaa_video_unit"


def strip_frames_prefix(name: str) -> str:
    """``"frames.r1"`` -> ``"r1"``."""
    return name[len("frames."):] if name.startswith("frames.") else name


def _list_attr(samples, field: str) -> str | None:
    """The label list of frame field ``field`` (``detections``, ...), ``None`` for a single label."""
    from agreement.fo.storage.projection import LIST_ATTRS

    doc_type = getattr(samples.get_field(f"frames.{field}"), "document_type", None)
    return LIST_ATTRS.get(doc_type) if doc_type is not None else None


def _empty_label(samples, field: str) -> dict | None:
    """The document of an empty label list of frame field ``field`` (``None`` for single labels)."""
    attr = _list_attr(samples, field)
    if attr is None:
        return None
    doc_type = samples.get_field(f"frames.{field}").document_type
    return {"_cls": doc_type.__name__, attr: []}


def build_frame_units(samples, fields: Sequence[str] | None, field: str | None, rater_attr: str,
                      raters_field: str | None) -> Any:
    """The frames of the videos of ``samples`` as the samples of a new image dataset (module docstring).

    Args:
        samples: a video dataset or view.
        fields: the raters' frame fields (without ``frames.``), one per rater; or ``None`` with ``field``.
        field: one frame field whose labels carry their rater in ``rater_attr``.
        rater_attr: the label attribute naming the rater.
        raters_field: a sample-level list of the raters assigned to each video (attribute layout), or ``None``.

    Returns:
        The units dataset (persistent, to be deleted with :func:`delete_frame_units`).

    Raises:
        ValueError: neither ``fields`` nor ``field`` given.
    """
    import fiftyone as fo
    import fiftyone.core.fields as fof

    if fields is not None:
        names = list(fields)
    elif field is not None:
        names = [field]
    else:
        raise ValueError("give the raters' frame fields (fields) or one frame field with rater_attr (field)")
    from agreement.fo.storage.reading import positions_as_stored

    units = fo.Dataset(f"iaa-frames-{uuid.uuid4().hex[:12]}", persistent=True)
    units.media_type = "image"
    root = samples._root_dataset
    positions = positions_as_stored(samples) and "last_modified_at" in (root.get_frame_field_schema() or {})
    units.info = {UNITS_INFO_KEY: {"dataset": samples._dataset.name, "fields": names},
                  WRITE_TARGET_KEY: {"dataset": root.name, "collection": root._frame_collection_name, "positions": bool(positions)}}
    units.save()
    units.add_sample_field("sample_id", fof.ObjectIdField)
    units.add_sample_field("frame_number", fof.FrameNumberField)
    schema = samples.get_frame_field_schema()
    units._sample_doc_cls.merge_field_schema({n: schema[n] for n in names}, overwrite=True)
    if fields is None:
        units.add_sample_field(UNIT_RATERS_FIELD, fof.ListField, subfield=fof.StringField)
    pipeline = _unit_pipeline(samples, names, fields is None, rater_attr, raters_field, units)
    list(samples._aggregate(attach_frames=True, post_pipeline=pipeline))
    # (video, unit) pairs in one index: the units' videos are read from it alone (chance_groups)
    units._sample_collection.create_index(_VIDEO_INDEX, name=_VIDEO_INDEX_NAME)
    units.reload()
    return units


def _unit_pipeline(samples, names: list[str], attribute: bool, rater_attr: str, raters_field: str | None,
                   units) -> list[dict]:
    """The aggregation that turns the view's videos (frames attached) into unit documents."""
    frame = {"_id": "$$f._id", "frame_number": "$$f.frame_number", "last_modified_at": "$$f.last_modified_at"}
    assigned: dict = {}
    for n in names:
        frame[n] = f"$$f.{n}"
        empty = _empty_label(samples, n)
        if not attribute and empty is not None:  # assigned: labelled some frame of this video
            assigned[n] = {"$anyElementTrue": [{"$map": {"input": "$frames", "as": "g",
                                                         "in": {"$ne": [{"$ifNull": [f"$$g.{n}", None]}, None]}}}]}
    project: dict = {"filepath": 1, "metadata": 1, "frames": {"$map": {"input": "$frames", "as": "f", "in": frame}}}
    project.update({f"_assigned_{i}": expr for i, expr in enumerate(assigned.values())})
    if attribute:
        project["_raters"] = _video_raters(samples, names[0], rater_attr, raters_field)
    fill = {}
    for i, n in enumerate(assigned):
        empty = {"$literal": _empty_label(samples, n)}
        fill[n] = {"$cond": [{"$and": [f"$_assigned_{i}", {"$eq": [{"$ifNull": [f"$frames.{n}", None]}, None]}]},
                             empty, f"$frames.{n}"]}
    root = {
        "_id": "$frames._id", "frame_number": "$frames.frame_number", "_sample_id": "$_id",
        "filepath": {"$concat": ["$filepath", " frame ", {"$toString": "$frames.frame_number"}]},
        "tags": [], "created_at": "$$NOW",
        "last_modified_at": {"$ifNull": ["$frames.last_modified_at", "$$NOW"]}, "_dataset_id": units._doc.id,
        "metadata": {"$cond": [{"$gt": ["$metadata.frame_width", 0]},
                               {"_cls": "ImageMetadata", "width": "$metadata.frame_width",
                                "height": "$metadata.frame_height"}, None]},
        **{n: f"$frames.{n}" for n in names}, **fill,
    }
    if attribute:
        root[UNIT_RATERS_FIELD] = "$_raters"
    return [{"$project": project}, {"$unwind": "$frames"}, {"$replaceRoot": {"newRoot": root}},
            {"$merge": {"into": units._sample_collection_name, "on": "_id", "whenMatched": "fail",
                        "whenNotMatched": "insert"}}]


def _video_raters(samples, field: str, rater_attr: str, raters_field: str | None):
    """The expression of a video's raters: its ``raters_field`` list, else every rater with a label in it."""
    if raters_field is not None:
        return {"$ifNull": [f"${raters_field}", []]}
    attr = _list_attr(samples, field)
    per_frame = (f"$$f.{field}.{attr}.{rater_attr}" if attr is not None
                 else {"$ifNull": [[f"$$f.{field}.{rater_attr}"], []]})
    names = {"$reduce": {"input": {"$map": {"input": "$frames", "as": "f", "in": {"$ifNull": [per_frame, []]}}},
                         "initialValue": [], "in": {"$setUnion": ["$$value", "$$this"]}}}
    return {"$filter": {"input": names, "as": "r", "cond": {"$ne": ["$$r", None]}}}


def merge_back(units, dataset, frame_fields: Sequence[str], label_attrs: Sequence[Sequence[str]]) -> None:
    """Writes the run's values from the units to the frames of ``dataset`` (module docstring).

    Args:
        units: the frame-units dataset the run was computed on.
        dataset: the video dataset.
        frame_fields: unit fields copied whole into the frames (``{key}_x``).
        label_attrs: ``[label field, attribute]`` pairs copied into the labels of the frames' label fields,
            matched by label id (unit fields without ``frames.``).
    """
    by_field: dict[str, list[str]] = {}
    for lf, attr in label_attrs:
        by_field.setdefault(lf, []).append(attr)
    project: dict[str, Any] = {"_id": 1, **{f: 1 for f in frame_fields}}
    sets: dict = {f: {"$ifNull": [f"$$new.{f}", "$$REMOVE"]} for f in frame_fields}
    for lf, attrs in by_field.items():
        list_attr = _list_attr(dataset, lf)
        path = f"{lf}.{list_attr}" if list_attr else lf
        project[path] = {"$map": {"input": {"$ifNull": [f"${path}", []] if list_attr else [f"${path}"]}, "as": "x",
                                  "in": {"_id": "$$x._id", **{a: f"$$x.{a}" for a in attrs}}}}
        sets[lf] = _attrs_merged(lf, list_attr, attrs)
    pipeline = [{"$project": project},
                {"$merge": {"into": dataset._frame_collection_name, "on": "_id",
                            "whenMatched": [{"$set": sets}], "whenNotMatched": "discard"}}]
    list(units._aggregate(post_pipeline=pipeline))


def _attrs_merged(lf: str, list_attr: str | None, attrs: Sequence[str]) -> dict:
    """The expression of label field ``lf`` of a frame with ``attrs`` taken from the unit's labels by id.

    The unit's labels are a copy of the frame's, in the same order: label ``i`` is matched with the unit's
    label ``i`` when their ids agree (one comparison), else by a search of the unit's labels for its id."""
    new = {"$ifNull": [f"$$new.{lf}.{list_attr}" if list_attr else f"$$new.{lf}", []]}

    def merged(label: str, candidate) -> dict:
        search = {"$arrayElemAt": [{"$filter": {"input": new, "as": "n", "cond": {"$eq": ["$$n._id", f"{label}._id"]}}},
                                   0]}
        found = {"$cond": [{"$eq": [{"$getField": {"field": "_id", "input": candidate}}, f"{label}._id"]},
                           candidate, search]}
        values = {a: {"$ifNull": [{"$getField": {"field": a, "input": "$$found"}}, "$$REMOVE"]} for a in attrs}
        return {"$let": {"vars": {"found": found}, "in": {"$mergeObjects": [label, values]}}}

    if list_attr is None:
        return {"$cond": [{"$eq": [{"$type": f"${lf}"}, "object"]}, merged(f"${lf}", f"$$new.{lf}"), f"${lf}"]}
    old = f"${lf}.{list_attr}"
    by_position = {"$map": {"input": {"$range": [0, {"$size": old}]}, "as": "i", "in": {
        "$let": {"vars": {"x": {"$arrayElemAt": [old, "$$i"]}, "c": {"$arrayElemAt": [new, "$$i"]}},
                 "in": merged("$$x", "$$c")}}}}
    return {"$cond": [{"$isArray": old}, {"$mergeObjects": [f"${lf}", {list_attr: by_position}]}, f"${lf}"]}


def chance_groups(samples, sample_ids: Sequence[str]) -> np.ndarray | None:
    """For a frame-units dataset, the video of each of ``sample_ids`` as integer codes (the chance baselines
    draw pairs of units from different videos: frames of one video are not independent); ``None`` for any
    other collection (every sample is its own group)."""
    if not is_frame_units(samples):
        return None
    # one raw read of the units' video ids (no per-value conversion); the codes are those of np.unique over
    # the videos' ids as strings (sorted), computed over the few distinct videos only
    coll = samples._dataset._sample_collection
    cursor = coll.find({}, {"_id": 1, "_sample_id": 1})
    if _VIDEO_INDEX_NAME in coll.index_information():
        cursor = cursor.hint(_VIDEO_INDEX_NAME)  # covered by the index: no unit document is read
    of = {str(d["_id"]): str(d.get("_sample_id")) for d in cursor}
    videos = [of[str(s)] for s in sample_ids]
    code = {v: k for k, v in enumerate(sorted(set(videos)))}
    return np.fromiter((code[v] for v in videos), dtype=np.int64, count=len(videos))


def is_frame_units(samples) -> bool:
    """Whether ``samples`` belongs to a frame-units dataset (:func:`build_frame_units`)."""
    dataset = getattr(samples, "_dataset", None)
    return bool(dataset is not None and UNITS_INFO_KEY in (dataset.info or {}))


def delete_frame_units(units) -> None:
    """Deletes a frame-units dataset (its runs' results with it)."""
    try:
        units.delete()
    except Exception:  # noqa: BLE001 - already gone (deleted by a concurrent cleanup)
        pass
