"""What a labelling round takes from its run: the rater layout, the label schema and the new rater's name.

The run's recorded input (:func:`agreement.fo.runs.store.get_agreement_run_info`, ``info["input"]``) says
how its raters' labels are read; a round adds one rater:

* ``fields`` layout (one label field per rater): the new rater is a new label field, into which FiftyOne's
  ``load_annotations`` writes;
* ``attribute`` layout (one field whose labels name their rater in ``rater_attr``, the raters assigned to each
  sample in ``raters_field``): FiftyOne loads the labels into a field of the round (``{anno_key}_labels``),
  whose labels are then added to the run's field with the rater's name, the rater added to the samples'
  ``raters_field``, and the round's field deleted. A run of that layout without a ``raters_field`` is refused
  (the new rater labels some samples only: the assignment must say which).
"""

from __future__ import annotations

import re
from typing import Any, Mapping

import fiftyone.core.labels as fol  # noqa: F401 - the bridge reaches FiftyOne (label types named below)

from agreement.fo.runs.errors import RunError

__all__ = ["ANNOTATION_LABEL_TYPES", "RATER_NAME", "round_layout", "rater_fields", "run_raters",
           "annotation_label_type", "run_classes", "next_rater_name", "check_rater_name", "check_free_field"]

#: The run's rater label type -> FiftyOne's annotation ``label_type`` (what ``samples.annotate`` takes).
ANNOTATION_LABEL_TYPES = {
    "Classification": "classification",
    "Classifications": "classifications",
    "Detections": "detections",
    "Polylines": "polylines",
    "Keypoints": "keypoints",
}

#: A rater name is a new sample field's name.
RATER_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")


def round_layout(info: Mapping[str, Any]) -> dict:
    """The run's rater layout as a round uses it: ``{"layout": "fields", "fields": [...]}`` or
    ``{"layout": "attribute", "field", "rater_attr", "raters_field"}`` (with the recorded ``box_policy``).

    Args:
        info: the run's info (:func:`agreement.fo.runs.store.get_agreement_run_info`).

    Raises:
        RunError: a layout the round trip does not support (frames, an attribute layout without
            ``raters_field``), naming those it does.
    """
    inputs = dict(info.get("input") or {})
    layout, key = inputs.get("layout"), info.get("key")
    common = {"box_policy": inputs["box_policy"]} if inputs.get("box_policy") else {}
    if layout == "fields" and inputs.get("fields"):
        fields = [str(f) for f in inputs["fields"]]
        if any(f.startswith("frames.") for f in fields):
            raise RunError(f"run {key!r} reads video frame fields: the round trip sends images only")
        return {"layout": "fields", "fields": fields, **common}
    if layout == "attribute" and inputs.get("field"):
        if not inputs.get("raters_field"):
            raise RunError(
                f"run {key!r} reads field {inputs['field']!r} with the rater in attribute "
                f"{inputs.get('rater_attr')!r} and no raters_field: a new rater labels some samples only, so the "
                "round trip needs the run's raters_field (the raters assigned to each sample) to record them; "
                "recompute the run with raters_field, or on per-rater fields")
        return {"layout": "attribute", "field": str(inputs["field"]),
                "rater_attr": str(inputs.get("rater_attr") or "annotator"),
                "raters_field": str(inputs["raters_field"]), **common}
    raise RunError(f"run {key!r} records rater layout {layout!r}: request_labels and load_requested_labels "
                   "support the 'fields' layout (one label field per rater) and the 'attribute' layout with a "
                   "raters_field")


def rater_fields(info: Mapping[str, Any]) -> list[str]:
    """The run's rater label fields: its ``fields``, or its one ``field`` (attribute layout)."""
    layout = round_layout(info)
    return list(layout["fields"]) if layout["layout"] == "fields" else [layout["field"]]


def run_raters(info: Mapping[str, Any], detail: Mapping[str, Any]) -> list[str]:
    """The run's raters: its fields (``fields`` layout), else the raters its results list."""
    layout = round_layout(info)
    if layout["layout"] == "fields":
        return list(layout["fields"])
    return [str(r) for r in detail.get("raters") or []]


def annotation_label_type(info: Mapping[str, Any], summary: Mapping[str, Any] | None = None) -> str:
    """FiftyOne's annotation ``label_type`` of the new rater's labels: that of the run's rater fields; in the
    attribute layout, one rater's share of the field (a ``Classifications`` field read as classes: one
    ``classification`` per rater; read as tag sets, ``summary["read_as"] == "tags"``: ``classifications``).

    Raises:
        RunError: a label type the round trip does not offer, naming those it does.
    """
    kind = (info.get("input") or {}).get("label_type")
    if kind not in ANNOTATION_LABEL_TYPES:
        raise RunError(f"run {info.get('key')!r} reads {kind} labels; request_labels sends "
                       f"{', '.join(ANNOTATION_LABEL_TYPES)} labels to a labelling tool")
    attribute = (info.get("input") or {}).get("layout") == "attribute"
    if attribute and kind == "Classifications" and (summary or {}).get("read_as") != "tags":
        return "classification"
    return ANNOTATION_LABEL_TYPES[kind]


def _label_path(samples, field: str) -> str:
    """The path of the ``label`` strings of rater field ``field`` (``rater.label``, ``rater.detections.label``)."""
    doc = samples.get_field(field).document_type
    list_attr = getattr(doc, "_LABEL_LIST_FIELD", None)
    return f"{field}.{list_attr}.label" if list_attr else f"{field}.label"


def run_classes(samples, info: Mapping[str, Any], detail: Mapping[str, Any]) -> list[str]:
    """The classes a new rater chooses from: the run's own (its ``classes`` parameter, else the classes its
    results list), else the classes the run's rater fields hold; sorted as the run lists them.

    Args:
        samples: the dataset or view of the run.
        info: the run's info.
        detail: the run's results detail (:func:`agreement.fo.runs.store.load_agreement_results`).

    Raises:
        RunError: no class found anywhere (a new rater would have nothing to choose from).
    """
    given = (info.get("params") or {}).get("classes")
    for found in (given, detail.get("classes")):
        if isinstance(found, (list, tuple)) and found and all(isinstance(c, str) for c in found):
            return list(dict.fromkeys(found))
    seen: set = set()
    for field in rater_fields(info):
        if samples.get_field(field) is not None:
            seen.update(c for c in samples.distinct(_label_path(samples, field)) if isinstance(c, str))
    if not seen:
        raise RunError(f"run {info.get('key')!r} records no classes and its rater fields hold none: "
                       "nothing to offer a new rater")
    return sorted(seen)


def next_rater_name(existing: list[str], taken: set[str]) -> str:
    """The next free rater name after the run's: ``rater_4`` after ``rater_1 .. rater_3``, ``r4`` after
    ``r1 .. r3``, ``w004`` after ``w000 .. w003``; ``rater_<n + 1>`` when the names have no common numbered
    prefix.

    Args:
        existing: the run's rater names (fields).
        taken: every name not free (the dataset's fields, raters of rounds still open).
    """
    numbered = [re.match(r"^(.*?)(\d+)$", name) for name in existing]
    digits = [m.group(2) for m in numbered if m]
    prefixes = {m.group(1) for m in numbered if m}
    width = 0
    if len(prefixes) == 1 and all(numbered):
        prefix = prefixes.pop()
        n = max(int(d) for d in digits) + 1
        if len({len(d) for d in digits}) == 1 and any(d.startswith("0") for d in digits):
            width = len(digits[0])  # w000 .. w003 -> w004
    else:
        prefix, n = "rater_", len(existing) + 1

    def name(k: int) -> str:
        return f"{prefix}{k:0{width}d}"

    while name(n) in taken or name(n) in existing:
        n += 1
    return name(n)


def check_rater_name(samples, key: str, rater: str, existing: list[str], pending: Mapping[str, str],
                     is_field: bool = True) -> str:
    """Refuses a rater name that is not a valid name, is one of the run's raters, is a field of the dataset (a
    rater that is a field: ``fields`` layout) or is the rater of a round still open.

    Args:
        samples: the dataset or view.
        key: the run.
        rater: the name asked for.
        existing: the run's raters.
        pending: rater -> anno key of the rounds sent and not loaded yet.
        is_field: the rater is a new label field (``fields`` layout).

    Raises:
        RunError: naming the clash.
    """
    if not isinstance(rater, str) or not RATER_NAME.match(rater):
        raise RunError(f"rater name {rater!r} is not a valid field name: use letters, digits and underscores, "
                       "starting with a letter")
    if rater in existing:
        raise RunError(f"rater {rater!r} is already a rater of run {key!r} (its raters: {existing}); "
                       "give a new name, or leave rater unset for the next free one")
    if is_field and rater in samples._root_dataset.get_field_schema():
        raise RunError(f"field {rater!r} already exists on dataset {samples._root_dataset.name!r}: a new rater "
                       "needs a new field; give another name")
    if rater in pending:
        raise RunError(f"rater {rater!r} is the rater of round {pending[rater]!r} of run {key!r}, sent and not "
                       "loaded yet; give another name")
    return rater


def check_free_field(samples, name: str, what: str) -> str:
    """Refuses ``name`` when it is a field of the dataset already (``what``: what the field would be)."""
    if name in samples._root_dataset.get_field_schema():
        raise RunError(f"field {name!r} ({what}) already exists on dataset {samples._root_dataset.name!r}")
    return name
