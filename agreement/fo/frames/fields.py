"""The frame-level fields of an agreement run on video frame labels: declared, aggregated per video, removed
and renamed with the run.

A frame run (:mod:`agreement.fo.frames.runs`) records in its config
``frame_fields`` (frame fields ``{key}_x`` it wrote whole) and, in
``label_attrs``, pairs ``["frames.<field>", "{key}_x"]`` (attributes it wrote
on the labels of a rater's frame field). FiftyOne's ``delete_run`` and
``rename_run`` reach these functions through the run class's hooks
(:mod:`agreement.fo.runs.classes`), as the sample-level ones.
"""

from __future__ import annotations

from typing import Sequence

__all__ = ["declare_frame_fields", "frame_label_attrs", "remove_frame_run_fields", "check_frame_rename",
           "rename_frame_run_fields"]


def frame_label_attrs(config) -> list[tuple[str, str]]:
    """The run's ``(frame field without "frames.", attribute)`` pairs."""
    return [(lf[len("frames."):], attr) for lf, attr in (getattr(config, "label_attrs", None) or [])
            if lf.startswith("frames.")]


def _frame_list_path(dataset, lf: str) -> str | None:
    """``<field>.<list>`` of frame label field ``lf`` (``None`` when it is not a label list or is gone)."""
    from agreement.fo.storage.projection import LIST_ATTRS

    field = (dataset.get_frame_field_schema() or {}).get(lf)
    doc_type = getattr(field, "document_type", None)
    attr = LIST_ATTRS.get(doc_type) if doc_type is not None else None
    return f"{lf}.{attr}" if attr else None


def declare_frame_fields(units, dataset, frame_fields: Sequence[str], label_fields: Sequence[str]) -> None:
    """Declares on the frames of ``dataset`` the fields the run wrote whole (as the units declare them, label
    fields with their attributes) and the attributes it added to the raters' label fields."""
    from agreement.fo.runs.locking import schema_lock

    flat = units.get_field_schema(flat=True)
    schema = units.get_field_schema()
    tops = set(frame_fields) | set(label_fields)
    have = dataset.get_frame_field_schema(flat=True) or {}
    if all(p in have for p in flat if p.split(".")[0] in tops):
        return  # declared already (by the write-back): no lock, no reload of the video dataset
    with schema_lock(dataset):
        # one merge of the units' declarations (nested attributes included), one reload; then whatever it
        # did not declare (nothing, in FiftyOne 1.x), path by path
        dataset._merge_frame_field_schema({f: schema[f] for f in list(frame_fields) + list(label_fields)
                                           if f in schema})
        have = dataset.get_frame_field_schema() or {}
        for name in frame_fields:
            if name in flat and name not in have:
                dataset.add_frame_field(name, type(flat[name]), **_field_kwargs(flat[name]))
        frame_flat = dataset.get_frame_field_schema(flat=True) or {}
        for top in list(frame_fields) + list(label_fields):
            for path in sorted(p for p in flat if p.startswith(top + ".") and p not in frame_flat):
                if path.rsplit(".", 1)[0] in frame_flat or path.count(".") == 1:
                    dataset.add_frame_field(path, type(flat[path]), **_field_kwargs(flat[path]))
                    frame_flat[path] = flat[path]


def _field_kwargs(field) -> dict:
    """The keyword arguments that declare a field like ``field`` (its list item or document type)."""
    import fiftyone.core.fields as fof

    if isinstance(field, fof.EmbeddedDocumentField):
        return {"embedded_doc_type": field.document_type}
    inner = getattr(field, "field", None)
    if isinstance(field, fof.ListField) and inner is not None:
        if isinstance(inner, fof.EmbeddedDocumentField):
            return {"subfield": fof.EmbeddedDocumentField, "embedded_doc_type": inner.document_type}
        return {"subfield": type(inner)}
    return {}


def remove_frame_run_fields(dataset, config) -> list[str]:
    """Removes the values and declarations of the run's frame fields and frame label attributes; returns the
    frame fields removed (``frames.{key}_x``)."""
    from agreement.fo.runs.locking import schema_lock

    if getattr(dataset, "media_type", None) != "video":
        return []
    fields = list(getattr(config, "frame_fields", None) or [])
    attrs = frame_label_attrs(config)
    coll = dataset._frame_collection
    if fields:
        coll.update_many({"$or": [{f: {"$exists": True}} for f in fields]}, {"$unset": {f: "" for f in fields}})
    paths = {}
    for lf, attr in attrs:
        lp = _frame_list_path(dataset, lf)
        if lp is not None:
            coll.update_many({lp: {"$type": "array"}, f"{lp}.{attr}": {"$exists": True}},
                             {"$unset": {f"{lp}.$[].{attr}": ""}})
            paths[f"{lp}.{attr}"] = True
    with schema_lock(dataset):
        schema = dataset.get_frame_field_schema() or {}
        present = [f for f in fields if f in schema]
        if present:
            dataset.delete_frame_fields(present)
        flat = dataset.get_frame_field_schema(flat=True) or {}
        declared = [p for p in paths if p in flat]
        if declared:
            dataset.remove_dynamic_frame_fields(declared)
    return [f"frames.{f}" for f in fields]


def _renamed(name: str, key: str, new_key: str) -> str:
    from agreement.fo.runs.errors import RunError

    if not name.startswith(key + "_"):
        raise RunError(f"field {name!r} of run {key!r} is not named {key}_...: it cannot be renamed with the run")
    return new_key + name[len(key):]


def check_frame_rename(dataset, config, key: str, new_key: str) -> dict:
    """The frame fields' renames ``{old: new}``, refused (``RunError``) if a target exists."""
    from agreement.fo.runs.errors import RunError

    if getattr(dataset, "media_type", None) != "video":
        return {}
    flat = dataset.get_frame_field_schema(flat=True) or {}
    renames = {f: _renamed(f, key, new_key) for f in getattr(config, "frame_fields", None) or []}
    for lf, attr in frame_label_attrs(config):
        lp = _frame_list_path(dataset, lf)
        if lp is not None and f"{lp}.{attr}" in flat:
            renames[f"{lp}.{attr}"] = f"{lp}.{_renamed(attr, key, new_key)}"
    for new in renames.values():
        if new in flat:
            raise RunError(f"cannot rename run {key!r} to {new_key!r}: frame field {new!r} already exists")
    return renames


def rename_frame_run_fields(dataset, config, key: str, new_key: str) -> dict:
    """Renames the run's frame fields and frame label attributes for ``new_key`` (values and declarations)
    and the attributes named for the run inside the frame label fields it owns whole; records the new
    names in ``config`` (not saved here). Returns ``{old path: new path}``."""
    renames = check_frame_rename(dataset, config, key, new_key)
    flat = dataset.get_frame_field_schema(flat=True) or {}
    present = {old: new for old, new in renames.items() if old in flat}
    whole = [f for f in getattr(config, "frame_fields", None) or [] if f in flat]
    inner = {}
    for f in whole:
        for path in sorted(p for p in flat if p.startswith(f + ".")):
            head, leaf = path.rsplit(".", 1)
            if leaf.startswith(key + "_"):
                inner[f"{_renamed(f, key, new_key)}{path[len(f):]}"] = \
                    f"{_renamed(f, key, new_key)}{head[len(f):]}.{_renamed(leaf, key, new_key)}"
    tops = {o: n for o, n in present.items() if "." not in o}
    nested = {o: n for o, n in present.items() if "." in o}
    if tops:
        dataset.rename_frame_fields(tops)
    if nested:
        dataset.rename_frame_fields(nested)
    if inner:
        dataset.rename_frame_fields(inner)
    config.frame_fields = [renames.get(f, f) for f in getattr(config, "frame_fields", None) or []]
    config.label_attrs = [[lf, _renamed(a, key, new_key)] if lf.startswith("frames.") else [lf, a]
                          for lf, a in getattr(config, "label_attrs", None) or []]
    return renames
