"""What a reviewer needs on one item of a consensus run's review queue.

An item is what the App opens from the queue (:func:`agreement.fo.methods.consensus.review_view`): a patch
(boxes, polygons, keypoints of images), a clip (temporal segments), or a sample (a class consensus; other
media). :func:`review_item` gives its consensus label(s) under review, with confidence, support and the
decision taken so far, the raters' labels behind them (the members a fused label was made of; for a class
consensus, every rater's class of the sample), and the item's place in the queue.
"""

from __future__ import annotations

from agreement.fo.figure_base import sig3
from agreement.fo.review import _field, _lists, queue_label_ids

__all__ = ["decision_of", "review_item", "review_markdown"]


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


def review_item(queue, key: str, item_id: str) -> dict | None:
    """The consensus labels of queue item ``item_id`` and the raters' labels behind them.

    Args:
        queue: the review queue of consensus run ``key`` (or any view of its items).
        key: the consensus run.
        item_id: the id of the patch, clip or sample open in the App.

    Returns:
        ``None`` when the item is not in ``queue``; else ``{"item", "sample_id", "position" (1-based place in
        the queue), "size" (items in the queue), "labels": [{"id", "label", "confidence", "class_confidence",
        "support", "flagged", "decision"}], "raters": [{"id", "rater", "label", "status", "agrees"}]}``.
    """
    from agreement.fo.label_explanations import label_explanations
    from agreement.fo.runs import get_agreement_run_info

    ids = queue.values("id")
    if item_id not in ids:
        return None
    dataset = queue._root_dataset
    field, items = _field(dataset, key)
    label_ids = queue_label_ids(queue, key, [item_id])
    found = dataset.select_labels(ids=label_ids, fields=field) if label_ids else None
    (per_sample,) = _lists(dataset, field, found.values(items)) if found is not None else ([],)
    labels = []
    members: set[str] = set()
    for lab in (lab for per in per_sample for lab in (per or []) if lab.id in set(label_ids)):
        labels.append({"id": lab.id, "label": lab.label, "confidence": lab.confidence,
                       "class_confidence": _attr(lab, f"{key}_class_confidence"),
                       "support": _attr(lab, f"{key}_support"), "flagged": bool(_attr(lab, f"{key}_review")),
                       "decision": decision_of(lab.tags)})
        members.update(str(m) for m in (_attr(lab, f"{key}_members") or []))
    order = {lid: i for i, lid in enumerate(label_ids)}
    labels.sort(key=lambda x: order.get(x["id"], len(order)))
    sample_id = _sample_id(queue, item_id)
    rows = label_explanations(dataset, get_agreement_run_info(dataset, key), sample_id)
    if members:  # a fused label: the raters' labels it was made of
        rows = [r for r in rows if r["id"] in members]
    raters = [{"id": r["id"], "rater": r["rater"], "label": r["label"], "status": r["status"],
               "agrees": not r["disagrees"]} for r in rows]
    return {"item": item_id, "sample_id": sample_id, "position": ids.index(item_id) + 1, "size": len(ids),
            "labels": labels, "raters": raters}


def _progress_line(key: str, progress: dict) -> str:
    done = progress["accepted"] + progress["rejected"]
    return (f"**Review of run `{key}`**: {done} of {progress['flagged']} flagged labels decided "
            f"({progress['accepted']} accepted, {progress['rejected']} rejected), {progress['pending']} to go.")


def review_markdown(key: str, progress: dict, item: dict | None) -> str:
    """Where the review of run ``key`` stands and, with an item of the queue open, its consensus label(s),
    their decision, and the raters' labels behind them (:func:`agreement.fo.review_item.review_item`)."""
    lines = [_progress_line(key, progress)]
    if progress["flagged"] and not progress["pending"]:
        lines.append(f"**The queue is done**: every flagged label is decided. **Finalize** writes the reviewed "
                     f"label set `{key}_final` (rejected labels dropped, accepted ones kept).")
    if item is None:
        lines.append("Open an item of the queue (a patch; a class consensus: a sample): the panel then shows "
                     "**Accept**, **Reject**, **Undo** and **Next**, which tag only its consensus label. Or "
                     "select items and run *review_consensus_labels*.")
        return "\n\n".join(lines)
    lines.append(f"**Item {item['position']} of {item['size']}** of the queue.")
    rows = ["| consensus label | confidence | class posterior | support | decision |", "|:--|--:|--:|--:|:--|"]
    for lab in item["labels"]:
        support = f"{sig3(100 * lab['support'])} %" if lab.get("support") is not None else "—"
        posterior = sig3(lab["class_confidence"]) if lab.get("class_confidence") is not None else "—"
        flag = "" if lab["flagged"] else " (not flagged)"
        rows.append(f"| **{lab['label']}**{flag} | {sig3(lab['confidence'])} | {posterior} | {support} | "
                    f"**{lab['decision'] or 'none yet'}** |")
    lines.append("\n".join(rows))
    if item["raters"]:
        agree = sum(r["agrees"] for r in item["raters"])
        table = [f"**The raters' labels behind it** ({agree} of {len(item['raters'])} agree)", "",
                 "| rater | label | status |", "|:--|:--|:--|"]
        table += [f"| {r['rater']} | {r['label']} | {r['status']} |" for r in item["raters"]]
        lines.append("\n".join(table))
    else:
        lines.append("No rater label is recorded behind this consensus label.")
    return "\n\n".join(lines)
