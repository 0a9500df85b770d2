"""What a reviewer needs on one item of a consensus run's review queue.

An item is what the App opens from the queue (:func:`agreement.fo.methods.consensus.review_view`): a patch
(boxes, polygons, keypoints of images), a clip (temporal segments; the frames of a video holding flagged labels,
for a consensus of frame labels), or a sample (a class consensus; other media). :func:`review_item` gives its
consensus label(s) under review, with confidence, support, frame number (frame runs) and the decision taken so
far, the raters' labels behind them (the members a fused label was made of, read from the raters' sample or
frame fields; for a class consensus, every rater's class of the sample), and the item's place in the queue.
"""

from __future__ import annotations

from agreement.fo.views.review import consensus_path, item_labels, queue_label_ids
from agreement.reporting.figures.base import sig3

__all__ = ["decision_of", "review_item", "review_markdown", "MAX_ROWS"]

#: rows of a table in :func:`review_markdown` (a clip of a frame run can hold hundreds of flagged labels)
MAX_ROWS = 40


def decision_of(tags) -> str | None:
    """The decision a consensus label's tags record: ``"rejected"`` (also when both tags are there, as
    :func:`~agreement.fo.methods.consensus.finalize_consensus` drops it), ``"accepted"`` or ``None``."""
    tags = set(tags or [])
    return "rejected" if "rejected" in tags else "accepted" if "accepted" in tags else None


def _attr(label, name: str):
    try:
        return label.get_attribute_value(name, None)
    except Exception:  # noqa: BLE001 - an older label without the attribute
        return None


def _sample_id(queue, item_id: str) -> str:
    """The dataset sample an item of the queue shows (a patch's or clip's ``sample_id``)."""
    if queue._is_generated:
        found = queue.select(item_id).values("sample_id")
        return str(found[0]) if found else item_id
    return item_id


def _consensus_labels(dataset, key: str, label_ids: list[str]) -> list[dict]:
    """The consensus labels ``label_ids`` of run ``key`` as the dataset holds them (the source of truth for
    their tags), in the order of ``label_ids``, each with its frame number (``None`` outside frame runs) and
    the ids of the rater labels fused into it (``members``)."""
    if not label_ids:
        return []
    found = dataset.select_labels(ids=label_ids, fields=consensus_path(dataset, key).field)
    leaves = ["label", "confidence", "tags", f"{key}_class_confidence", f"{key}_support", f"{key}_review",
              f"{key}_members"]
    wanted = set(label_ids)
    rows = [r for per in item_labels(found, key, leaves)[1] for r in per if r["id"] in wanted]
    order = {lid: i for i, lid in enumerate(label_ids)}
    rows.sort(key=lambda r: order[r["id"]])
    return [{"id": r["id"], "frame": r["frame"], "label": r["label"], "confidence": r["confidence"],
             "class_confidence": r[f"{key}_class_confidence"], "support": r[f"{key}_support"],
             "flagged": bool(r[f"{key}_review"]), "decision": decision_of(r["tags"]),
             "members": [str(m) for m in r[f"{key}_members"] or []]} for r in rows]


def review_item(queue, key: str, item_id: str) -> dict | None:
    """The consensus labels of queue item ``item_id`` and the raters' labels behind them.

    Args:
        queue: the review queue of consensus run ``key`` (or any view of its items).
        key: the consensus run.
        item_id: the id of the patch, clip or sample open in the App.

    Returns:
        ``None`` when the item is not in ``queue``; else ``{"item", "sample_id", "position" (1-based place in
        the queue), "size" (items in the queue), "labels": [{"id", "frame", "label", "confidence",
        "class_confidence", "support", "flagged", "decision"}], "raters": [{"id", "frame", "rater", "label",
        "status", "agrees"}]}``; ``frame`` is the frame number of a frame run's label (else ``None``).
    """
    from agreement.fo.runs.store import get_agreement_run_info

    ids = queue.values("id")
    if item_id not in ids:
        return None
    dataset = queue._root_dataset
    labels = _consensus_labels(dataset, key, queue_label_ids(queue, key, [item_id]))
    members = {m for lab in labels for m in lab.pop("members")}
    sample_id = _sample_id(queue, item_id)
    info = get_agreement_run_info(dataset, key)
    if consensus_path(dataset, key).frames:
        rows = _frame_rater_rows(dataset, info, sample_id, sorted({lab["frame"] for lab in labels}))
    else:
        from agreement.fo.panel.label_explanations import label_explanations

        rows = [{**r, "frame": None} for r in label_explanations(dataset, info, sample_id)]
    if members:  # a fused label: the raters' labels it was made of
        rows = [r for r in rows if r["id"] in members]
    raters = [{"id": r["id"], "frame": r["frame"], "rater": r["rater"], "label": r["label"], "status": r["status"],
               "agrees": not r["disagrees"]} for r in rows]
    return {"item": item_id, "sample_id": sample_id, "position": ids.index(item_id) + 1, "size": len(ids),
            "labels": labels, "raters": raters}


def _frame_rater_rows(dataset, info: dict, sample_id: str, frames: list[int]) -> list[dict]:
    """The raters' labels on frames ``frames`` of video ``sample_id`` of a frame run, explained as
    :func:`agreement.fo.panel.label_explanations.label_explanations` explains a sample's (with their frame number):
    read from the run's rater frame fields (``frames.r1``, ...; or one frame field whose labels name their
    rater in an attribute)."""
    from fiftyone import ViewField as F

    from agreement.fo.frames.units import strip_frames_prefix
    from agreement.fo.panel.label_explanations import consensus_explanations, label_items

    key, layout = info["key"], info.get("input") or {}
    fields = [strip_frames_prefix(f) for f in layout.get("fields") or ([layout["field"]] if layout.get("field")
                                                                        else [])]
    if not frames or not fields:
        return []
    by_attribute = layout.get("layout") == "attribute"
    view = dataset.select(sample_id).match_frames(F("frame_number").is_in(frames)).select_fields(
        [f"frames.{f}" for f in fields] + [f"frames.{key}_consensus"])
    video = view.first() if len(view) else None
    rows = []
    for number, frame in (video.frames.items() if video is not None else []):
        labels = [(str(_attr(lab, layout.get("rater_attr", "annotator"))) if by_attribute else f, lab)
                  for f in fields for lab in label_items(frame[f] if f in frame.field_names else None)]
        rows += [{**r, "frame": number} for r in consensus_explanations(frame, key, labels, _attr)]
    rows.sort(key=lambda r: (r["frame"], not r["disagrees"], r["rater"], r["label"] or ""))
    return rows


def _progress_line(key: str, progress: dict) -> str:
    done = progress["accepted"] + progress["rejected"]
    return (f"**Review of run `{key}`**: {done} of {progress['flagged']} flagged labels decided "
            f"({progress['accepted']} accepted, {progress['rejected']} rejected), {progress['pending']} to go.")


def review_markdown(key: str, progress: dict, item: dict | None) -> str:
    """Where the review of run ``key`` stands and, with an item of the queue open, its consensus label(s),
    their decision, and the raters' labels behind them (:func:`agreement.fo.views.review_item.review_item`); the
    frame of each label for a consensus of video frame labels."""
    lines = [_progress_line(key, progress)]
    if progress["flagged"] and not progress["pending"]:
        lines.append(f"**The queue is done**: every flagged label is decided. **Finalize** writes the reviewed "
                     f"label set `{key}_final` (rejected labels dropped, accepted ones kept).")
    if item is None:
        lines.append("**Review in the sample view** opens the first undecided item (or open any item of the "
                     "queue): the panel's tab there shows its consensus label, the raters' labels behind it and "
                     "**Accept**, **Reject**, **Undo** and **Next**, which tag only that consensus label, and "
                     "**Previous**. Or select items and run *review_consensus_labels*.")
        return "\n\n".join(lines)
    lines.append(f"**Item {item['position']} of {item['size']}** of the queue.")
    frames = any(lab.get("frame") is not None for lab in item["labels"])
    if frames:
        lines.append(f"{len(item['labels'])} flagged label(s) on this clip's frames: **Accept** and **Reject** "
                     "decide them all.")
    lines.append(_labels_table(item["labels"], frames))
    if item["raters"]:
        agree = sum(r["agrees"] for r in item["raters"])
        head, rule = ("| frame | rater | label | status |", "|--:|:--|:--|:--|") if frames else \
            ("| rater | label | status |", "|:--|:--|:--|")
        table = [f"**The raters' labels behind it** ({agree} of {len(item['raters'])} agree)", "", head, rule]
        table += [f"| {_frame_cell(r, frames)}{r['rater']} | {r['label']} | {r['status']} |"
                  for r in item["raters"][:MAX_ROWS]]
        lines.append("\n".join(table + _more(len(item["raters"]), "rater labels")))
    else:
        lines.append("No rater label is recorded behind this consensus label.")
    return "\n\n".join(lines)


def _frame_cell(row: dict, frames: bool) -> str:
    """The leading frame cell of a table row (``"12 | "``) when the table has a frame column, else nothing."""
    return f"{row.get('frame')} | " if frames else ""


def _labels_table(labels: list[dict], frames: bool) -> str:
    """The consensus labels of an item as a markdown table (a frame column first for frame runs)."""
    head = "| consensus label | confidence | class posterior | support | decision |"
    rule = "|:--|--:|--:|--:|:--|"
    rows = [f"| frame {head}" if frames else head, f"|--:{rule}" if frames else rule]
    for lab in labels[:MAX_ROWS]:
        support = f"{sig3(100 * lab['support'])} %" if lab.get("support") is not None else "—"
        posterior = sig3(lab["class_confidence"]) if lab.get("class_confidence") is not None else "—"
        flag = "" if lab["flagged"] else " (not flagged)"
        rows.append(f"| {_frame_cell(lab, frames)}**{lab['label']}**{flag} | {sig3(lab['confidence'])} | "
                    f"{posterior} | {support} | **{lab['decision'] or 'none yet'}** |")
    return "\n".join(rows + _more(len(labels), "consensus labels"))


def _more(n: int, what: str) -> list[str]:
    """The line saying how many rows a table left out (none when it shows all ``n``)."""
    return ["", f"... and {n - MAX_ROWS} more {what} (not shown)."] if n > MAX_ROWS else []
