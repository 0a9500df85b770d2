"""The per-label conflicts of a run, read from what the run wrote on the labels, typed by
:mod:`agreement.reporting.conflicts` (the CVAT types: missing, extra, label differs, low overlap).

=================  ==================================================================================
run                what is read (one bulk ``values()`` per label attribute, no recomputation)
=================  ==================================================================================
OT agreement       per label ``{key}_match``, ``{key}_reason``, ``{key}_nearest_id``; the boxes for IoU
KαLOS              per label ``{key}_unit``: the labels of a unit are one object
consensus (boxes)  per consensus label ``{key}_members``: the consensus is the reference rater
=================  ==================================================================================

A method offers its conflicts through its declaration's hooks (``conflicts``, ``conflicts_how``,
:class:`agreement.fo.runs.method_spec.MethodHooks`), built with the readers here (:func:`match_conflicts`,
:func:`unit_conflicts`, :func:`fused_conflicts`). Other runs store no per-label counterpart:
:func:`run_conflicts` returns ``None`` and a sentence why.
"""

from __future__ import annotations

import os
from typing import Sequence

from agreement.fo.storage.label_schema import label_list_path
from agreement.reporting.conflicts import CVAT_NAMES, LOW_OVERLAP_IOU, Conflict, Label, group_conflicts, ot_conflicts

__all__ = ["run_conflicts", "conflict_rows", "CONSENSUS_RATER", "CONFLICT_COLUMNS", "match_conflicts", "unit_conflicts",
           "fused_conflicts"]

#: The columns of ``conflicts.csv``.
CONFLICT_COLUMNS = ["sample_id", "file_name", "type", "cvat_type", "rater_a", "class_a", "label_id_a", "rater_b",
                    "class_b", "label_id_b", "iou", "reason"]

#: The name of the consensus as the reference rater of a consensus run's conflicts.
CONSENSUS_RATER = "consensus"

def _label_path(dataset, field: str) -> str | None:
    """The path of the labels of rater field ``field`` (``None`` for a field the dataset lacks or a frame field)."""
    if field.startswith("frames.") or field not in dataset.get_field_schema():
        return None
    doc_type = getattr(dataset.get_field(field), "document_type", None)
    return label_list_path(field, doc_type) if doc_type is not None else field  # no label type: the field itself


def _read(samples, path: str, attrs: Sequence[str]) -> list[list]:
    """Per attribute, per sample, the list of its labels' values (``[]`` for a sample without labels)."""
    out = []
    for values in samples.values([f"{path}.{a}" for a in attrs]):
        out.append([v or [] for v in values])
    return out


def _labels_of(samples, info: dict, extra: Sequence[str]) -> tuple[list, list, list[list[Label]], list[list[str]]]:
    """Per sample of ``samples``: its id, file path, its rater labels (with the run attributes ``extra`` in the
    order reason, match, nearest, or unit) and its assigned raters."""
    layout = info.get("input") or {}
    dataset = samples._root_dataset
    ids, paths = samples.values(["id", "filepath"])
    n = len(ids)
    labels: list[list[Label]] = [[] for _ in range(n)]
    assigned: list[list[str]] = [[] for _ in range(n)]
    key = info["key"]
    attrs = ["id", "label", "bounding_box", *[f"{key}_{a}" for a in extra]]
    if layout.get("layout") == "attribute":
        rater_attr = layout.get("rater_attr") or "annotator"
        path = _label_path(dataset, layout.get("field") or "")
        if path is None:
            return ids, paths, labels, assigned
        cols = _read(samples, path, [*attrs, rater_attr])
        listed = (samples.values(layout["raters_field"]) if layout.get("raters_field")
                  and layout["raters_field"] in dataset.get_field_schema() else None)
        for s in range(n):
            for vals in zip(*(c[s] for c in cols), strict=False):
                labels[s].append(_label(vals, str(vals[-1])))
            assigned[s] = ([str(r) for r in listed[s] or []] if listed is not None
                           else sorted({lab.rater for lab in labels[s]}))
        return ids, paths, labels, assigned
    for field in layout.get("fields") or []:
        path = _label_path(dataset, field)
        if path is None:
            continue
        cols = _read(samples, path, attrs)
        present = samples.values(field)
        for s in range(n):
            if present[s] is not None:
                assigned[s].append(field)
            for vals in zip(*(c[s] for c in cols), strict=False):
                labels[s].append(_label(vals, field))
    return ids, paths, labels, assigned


def _label(vals: tuple, rater: str) -> Label:
    lid, cls, box, *rest = vals
    box = tuple(float(x) for x in box) if box is not None and len(box) == 4 else None
    extra = list(rest) + [None] * 3
    return Label(str(lid), rater, None if cls is None else str(cls), box, *[None if x is None else str(x)
                                                                          for x in extra[:3]])


def match_conflicts(samples, info: dict, order: Sequence[str]) -> tuple[list, list, list[list[Conflict]]]:
    """The conflicts of labels matched one to one (OT runs: ``{key}_reason``, ``{key}_match``,
    ``{key}_nearest_id``), per sample of ``samples``: its ids, file paths and conflicts; ``order``: the run's
    raters, which orient each pair."""
    ids, paths, labels, assigned = _labels_of(samples, info, ("reason", "match", "nearest_id"))
    thr = float(info.get("params", {}).get("iou_threshold") or LOW_OVERLAP_IOU)
    out = []
    for labs, raters in zip(labels, assigned, strict=False):
        # a reason "matched" (runs written before 2026-12) is a matched label
        labs = [Label(id=x.id, rater=x.rater, label=x.label, box=x.box,
                      reason=None if x.reason == "matched" else x.reason, match=x.match, nearest=x.nearest)
                for x in labs]
        out.append(ot_conflicts(labs, raters, order=list(order) + sorted(set(raters) - set(order)),
                                low_overlap_iou=thr))
    return ids, paths, out


def unit_conflicts(samples, info: dict, order: Sequence[str]) -> tuple[list, list, list[list[Conflict]]]:
    """The conflicts of labels grouped into units (KαLOS runs: ``{key}_unit``, the labels of a unit are one
    object), as :func:`match_conflicts`."""
    ids, paths, labels, assigned = _labels_of(samples, info, ("unit",))
    rank = {r: i for i, r in enumerate(order)}
    out = []
    for labs, raters in zip(labels, assigned, strict=False):
        raters = sorted(raters, key=lambda r: (rank.get(r, len(rank)), r))
        units: dict = {}
        for lab in labs:  # Label.reason holds the unit here (the first extra attribute)
            units.setdefault(lab.reason if lab.reason is not None else f"alone:{lab.id}", []).append(
                Label(lab.id, lab.rater, lab.label, lab.box))
        out.append(group_conflicts(list(units.values()), raters))
    return ids, paths, out


def fused_conflicts(samples, info: dict, order: Sequence[str]) -> tuple[list, list, list[list[Conflict]]] | None:
    """The conflicts of labels against the consensus labels they were fused into (consensus runs:
    ``{key}_members`` of each label of ``{key}_consensus``; the consensus is the reference rater), as
    :func:`match_conflicts`; ``None`` for a class consensus (one class per sample, no objects)."""
    key = info["key"]
    dataset = samples._root_dataset
    path = _label_path(dataset, f"{key}_consensus")
    if path is None or path == f"{key}_consensus":  # a class consensus: one class per sample, no objects
        return None
    ids, paths, labels, assigned = _labels_of(samples, info, ())
    cols = _read(samples, path, ["id", "label", "bounding_box", f"{key}_members"])
    out = []
    for s, (labs, raters) in enumerate(zip(labels, assigned, strict=False)):
        by_id = {lab.id: lab for lab in labs}
        used: set[str] = set()
        groups = []
        for cid, cls, box, members in zip(*(c[s] for c in cols), strict=False):
            cons = Label(str(cid), CONSENSUS_RATER, None if cls is None else str(cls),
                         tuple(box) if box is not None else None)
            group = [cons] + [by_id[str(m)] for m in members or [] if str(m) in by_id]
            used.update(str(m) for m in members or [])
            groups.append(group)
        groups += [[lab] for lab in labs if lab.id not in used]
        out.append(group_conflicts(groups, [CONSENSUS_RATER, *raters], reference=CONSENSUS_RATER))
    return ids, paths, out


def run_conflicts(samples, info: dict, raters: Sequence[str] = ()) -> tuple[list[dict] | None, str]:
    """The conflicts of run ``info`` on ``samples`` as rows (:func:`conflict_rows`), and a sentence: how they
    were found, or why the run has none to give (``None`` rows). ``raters``: the run's rater order, which
    orients each pair (``rater_a`` comes first)."""
    from agreement.fo.methods import hooks_of

    hooks = hooks_of(info["method"])
    if hooks.conflicts is None:
        return None, ("This run stores no per-label counterparts (matches, units or fused labels), so its "
                      "disagreements cannot be typed per label.")
    if (info.get("frame_fields") or any(str(f).startswith("frames.") for f in (info.get("input") or {}).get("fields") or [])):
        return None, "Per-label conflicts are listed for image runs; this run is on video frames."
    found = hooks.conflicts(samples, info, [str(r) for r in raters])
    if found is None:
        return None, hooks.conflicts_none
    ids, paths, conflicts = found
    return conflict_rows(ids, paths, conflicts), f"Conflicts typed {hooks.conflicts_how}."


def conflict_rows(ids: Sequence[str], paths: Sequence[str], conflicts: Sequence[Sequence[Conflict]]) -> list[dict]:
    """One row per conflict: ``sample_id``, ``file_name``, ``type``, ``cvat_type``, ``rater_a``, ``class_a``,
    ``label_id_a``, ``rater_b``, ``class_b``, ``label_id_b``, ``iou`` (4 decimals, empty when a side is
    missing or a label has no box) and ``reason`` (what the run stored)."""
    rows = []
    for sid, path, found in zip(ids, paths, conflicts, strict=False):
        for c in found:
            rows.append({
                "sample_id": str(sid), "file_name": os.path.basename(str(path)), "type": c.type,
                "cvat_type": CVAT_NAMES[c.type], "rater_a": c.rater_a,
                "class_a": c.label_a.label if c.label_a else None, "label_id_a": c.label_a.id if c.label_a else None,
                "rater_b": c.rater_b, "class_b": c.label_b.label if c.label_b else None,
                "label_id_b": c.label_b.id if c.label_b else None,
                "iou": round(c.iou, 4) if c.iou is not None else None, "reason": c.reason,
            })
    return rows
