"""A projected bulk read of a view's fields: ``samples.values(paths)`` without FiftyOne's per-value conversion.

FiftyOne's :meth:`values` runs one aggregation and then passes every value
through its field's ``to_python`` (mongoengine), which is most of the time
of a large read (about 2 of 3 seconds for 20,000 samples × 3 raters × 7
boxes). :func:`read_values` runs the same kind of aggregation on the view's
own pipeline (every filter, sort, skip and limit of the view applies), with
a ``$project`` of the requested paths (label lists through ``$map``, so a
label without an attribute gives ``None`` in its place), with sample and label
ids converted to strings by the database (``$toString``: the same 24 hex
digits as ``str(ObjectId)``; decoding millions of ``ObjectId`` objects and
converting them in Python took about 3 times as long, 2.1 million label ids of
20,000 samples × 3 raters × 7 boxes). The result has the shape of
``samples.values(paths)``: one list per path, one entry per sample in view
order, a label-list path as a list per sample (``None`` where the label
field is ``None``).

Paths it reads directly: ``id``, top-level and embedded sample fields
(``filepath``, ``metadata.width``, a list of rater names), and
``<field>.<detections|polylines|keypoints>.<attribute>`` of a label list
field (``id`` gives the label ids); and ``last_modified_at`` as stored (a
naive UTC ``datetime``, as :meth:`values` gives it with FiftyOne's default
timezone), read with the labels in one document read, so that it can guard a
later write of them. Other paths (masks and other encoded
values) are read by :meth:`values` in a second query; frames, patches,
clips and grouped collections entirely by :meth:`values`, so the answer is
always FiftyOne's.
"""

from __future__ import annotations

from typing import Any, Sequence

from agreement.fo.kinds import LABEL_TYPES, LIST_ATTRS

__all__ = ["read_values", "plain_collection", "LABEL_TYPES", "LIST_ATTRS"]

# LABEL_TYPES: the instance label list types the plugin reads, and the attribute that holds their labels (boxes,
# polygons, keypoints, and the temporal segments of videos: ``TemporalDetections``, read as boxes in relative
# time, :mod:`agreement.fo.storage.temporal`); LIST_ATTRS: every label list type (also ``Classifications``, tags) and its
# list. Live views of the declared label types (:mod:`agreement.fo.kinds`), importable from here.

#: Leaves whose stored form differs from what :meth:`values` gives (decoded by FiftyOne).
_ENCODED_LEAVES = frozenset({"mask", "map", "mask_path", "map_path"})


def read_values(samples, paths: Sequence[str]) -> list[list[Any]]:
    """``samples.values(list(paths))``, read with one projected aggregation (module docstring).

    Paths it cannot read directly (e.g. instance masks) are read by
    :meth:`values` in a second query, joined by sample id (the whole read
    goes through :meth:`values` if the two queries do not list the same
    samples in the same order). Range: the same values as :meth:`values`,
    label and sample ids as strings.
    """
    paths = list(paths)
    if not plain_collection(samples):
        return list(samples.values(paths))
    exprs = [_expression(samples, p) for p in paths]
    direct = [i for i, e in enumerate(exprs) if e is not None]
    if not direct:
        return list(samples.values(paths))
    other = [i for i, e in enumerate(exprs) if e is None]
    project = {"_id": 1, **{f"v{i}": exprs[i] for i in direct}}
    ids: list = []
    columns: dict[int, list] = {i: [] for i in direct}
    appends = [(f"v{i}", columns[i].append) for i in direct]
    for doc in samples._aggregate(pipeline=[{"$project": project}]):
        ids.append(doc["_id"])
        for name, append in appends:
            append(doc.get(name))
    if other:
        read = samples.values(["id"] + [paths[i] for i in other])
        if list(read[0]) != [str(x) for x in ids]:
            return list(samples.values(paths))
        columns.update(zip(other, read[1:], strict=False))
    return [columns[i] for i in range(len(paths))]


def plain_collection(samples) -> bool:
    """A dataset or view of one sample per document (no frames, patches, clips or groups)."""
    if getattr(samples, "media_type", None) in ("video", "group"):
        return False
    return not any(getattr(samples, a, False) for a in ("_is_patches", "_is_frames", "_is_clips", "_is_dynamic_groups"))


def _expression(samples, path: str) -> Any:
    """The ``$project`` expression of ``path``, or ``None`` when :meth:`values` must read it."""
    if path == "id":
        return {"$toString": "$_id"}  # ids as strings, made by the database (module docstring)
    list_fields = set(LIST_ATTRS.values())
    parts = path.split(".")
    if parts[0] == "frames" or parts[-1] in _ENCODED_LEAVES or any(p.startswith("$") or not p for p in parts):
        return None
    if len(parts) >= 3 and parts[-2] in list_fields:
        list_path = ".".join(parts[:-1])
        if not _is_label_list(samples, list_path):
            return None
        if parts[-1] == "id":
            return {"$map": {"input": f"${list_path}", "as": "x", "in": {"$toString": "$$x._id"}}}
        if _declared_plain(samples, path, parts[-1]):
            return {"$map": {"input": f"${list_path}", "as": "x", "in": f"$$x.{parts[-1]}"}}
        return None
    if parts[-1] == "id" or any(p in list_fields for p in parts):
        return None
    try:
        field = samples.get_field(path)
    except Exception:  # noqa: BLE001 - an undeclared path: values() decides
        return None
    import fiftyone.core.fields as fof

    if field is None:
        return None
    if _needs_conversion(field) and not (path == "last_modified_at" and isinstance(field, fof.DateTimeField)):
        return None  # the modification stamp is read as stored (naive UTC), to guard writes with (reading)
    return f"${path}"


def _is_label_list(samples, list_path: str) -> bool:
    """Whether ``<field>.<list>`` is the list of a declared label list field this plugin reads
    (:data:`LIST_ATTRS`)."""
    field_name, list_name = list_path.rsplit(".", 1)
    doc_type = getattr(samples.get_field(field_name), "document_type", None)
    if doc_type is None:  # not an embedded document field: LIST_ATTRS has no entry for it
        return False
    return LIST_ATTRS.get(doc_type) == list_name


def _declared_plain(samples, path: str, leaf: str) -> bool:
    """A label attribute read as stored: undeclared (dynamic attributes, read as stored by
    :meth:`values` too) or declared with a plain type."""
    try:
        field = samples.get_field(path)
    except Exception:  # noqa: BLE001 - an undeclared path
        return True
    return field is None or not _needs_conversion(field)


def _needs_conversion(field) -> bool:
    """Whether FiftyOne converts the stored value of ``field`` on reading (ids, dates, arrays, documents)."""
    import fiftyone.core.fields as fof

    plain = (fof.StringField, fof.FloatField, fof.IntField, fof.BooleanField)
    if isinstance(field, plain):
        return False
    if isinstance(field, fof.ListField):
        inner = field.field
        return inner is not None and not isinstance(inner, plain + (fof.ListField,))
    return True
