"""The labels of one sample, explained for the App panel's sample view (what an SDK user can compute too).

Per label: its rater, its class, its counterpart (the label it was matched
to, the nearest one, the other members of its unit, or the consensus label it
was fused into), what it cost or how confident, and whether it disagrees;
read from what the run wrote on the labels (see :func:`label_explanations`).
"""

from __future__ import annotations

from agreement.reporting.figures.base import sig3

__all__ = ["label_explanations", "label_items", "label_attr", "plain_rows", "reason_explanations",
           "unit_explanations", "class_explanations", "consensus_explanations", "mask_explanations"]


def label_explanations(samples, info: dict, sample_id: str) -> list[dict]:
    """Per label of one sample: rater, class, nearest counterpart, cost or similarity, and why it is unmatched.

    What a label's row says is the run's method's (its hooks, :class:`agreement.fo.runs.method_spec.MethodHooks`):
    ``explain_sample`` explains the sample as the method orders it (semantic mask runs: per rater's mask, its
    classes and its Dice with each other rater's mask, :func:`mask_explanations`); ``explain_labels`` explains
    each ``(rater, label)`` of the sample's rater fields (OT runs: from ``{key}_reason``, ``{key}_nearest_id``,
    ``{key}_nearest_cost``, ``{key}_match``, ``{key}_cost``; KαLOS runs: from ``{key}_unit``, the other members
    of its unit being its counterparts; class agreement runs: the other raters' classes of the sample,
    :func:`class_explanations`; consensus runs: :func:`consensus_explanations`), disagreeing labels first.
    Other methods: the labels with their rater only (:func:`plain_rows`).

    Args:
        samples: the dataset or a view of it.
        info: the run's info (:func:`agreement.fo.runs.store.get_agreement_run_info`).
        sample_id: the sample.

    Returns:
        One row per label: ``id``, ``rater``, ``label``, ``status``, ``counterpart``, ``value``, ``disagrees``
        (``[]`` for an id that is not a sample of the dataset).
    """
    from agreement.fo.methods import hooks_of

    hooks = hooks_of(info["method"])
    layout = info.get("input") or {}
    found = samples._root_dataset.select(sample_id)
    if not len(found):  # not a sample of the dataset (a patch of a patches view, say): nothing to explain
        return []
    sample = found.first()
    if hooks.explain_sample is not None:
        return hooks.explain_sample(sample, info)
    fields = layout.get("fields") or ([layout["field"]] if layout.get("field") else [])
    labels = []  # (rater, label)
    for f in fields:
        value = sample[f] if f in sample.field_names else None
        if value is None:
            continue
        for lab in label_items(value):
            rater = (f if layout.get("layout") != "attribute"
                     else lab.get_attribute_value(layout.get("rater_attr", "annotator"), None))
            labels.append((str(rater), lab))
    rows = (hooks.explain_labels or _plain)(sample, info, labels)
    rows.sort(key=lambda x: (not x["disagrees"], x["rater"], x["label"] or ""))
    return rows


def _plain(sample, info: dict, labels: list) -> list[dict]:
    return plain_rows(labels)


def plain_rows(labels: list) -> list[dict]:
    """The rows of labels a run says nothing about: their rater and class only."""
    return [{"id": lab.id, "rater": r, "label": lab.label, "status": "—", "counterpart": "—", "value": "—",
             "disagrees": False} for r, lab in labels]


def label_attr(lab, name: str):
    """Label attribute ``name`` of ``lab`` (``None`` when it has none)."""
    try:
        return lab.get_attribute_value(name, None)
    except Exception:
        return None


def reason_explanations(key: str, labels: list) -> list[dict]:
    """Rows of labels matched one to one (OT runs): from ``{key}_reason`` (why a label is unmatched; none on a
    matched label), ``{key}_match`` (the label it matched), ``{key}_nearest_id`` and ``{key}_nearest_cost``
    (its nearest counterpart) and ``{key}_cost`` (what it paid)."""
    by_id = {lab.id: (r, lab) for r, lab in labels}

    def describe(lid):
        if lid is None or lid not in by_id:
            return None
        r, lab = by_id[lid]
        return f"{r}: {lab.label}"

    rows = []
    for r, lab in labels:
        reason = label_attr(lab, f"{key}_reason")
        match_id = label_attr(lab, f"{key}_match")
        if reason is None and match_id is not None:  # a matched label stores no reason
            reason = "matched"
        nearest = describe(label_attr(lab, f"{key}_nearest_id"))
        match = describe(match_id)
        cost = label_attr(lab, f"{key}_nearest_cost")
        rows.append({
            "id": lab.id, "rater": r, "label": lab.label,
            "status": reason or "not scored",
            "counterpart": match or nearest or "none (nobody else drew anything here)",
            "value": (f"cost {sig3(label_attr(lab, f'{key}_cost'))} paid" if reason == "matched"
                      else f"cost {sig3(cost)} to the nearest (unmatched at β)" if cost is not None else "—"),
            "disagrees": reason not in (None, "matched"),
        })
    return rows


def unit_explanations(key: str, labels: list) -> list[dict]:
    """Rows of labels grouped into units (KαLOS runs, ``{key}_unit``): the other members of a label's unit are
    its counterparts; it disagrees when alone in its unit or when their classes differ."""
    units: dict = {}
    for r, lab in labels:
        units.setdefault(label_attr(lab, f"{key}_unit"), []).append((r, lab))
    rows = []
    for r, lab in labels:
        unit = label_attr(lab, f"{key}_unit")
        others = [(r2, l2) for r2, l2 in units.get(unit, []) if l2.id != lab.id] if unit is not None else []
        differ = [f"{r2}: {l2.label}" for r2, l2 in others if l2.label != lab.label]
        status = ("alone in its unit: no other rater drew this object" if not others else
                  "class differs within the unit" if differ else "matched")
        rows.append({
            "id": lab.id, "rater": r, "label": lab.label, "status": status,
            "counterpart": ", ".join(f"{r2}: {l2.label}" for r2, l2 in others) or "none",
            "value": f"unit {unit}" if unit is not None else "no unit",
            "disagrees": status != "matched",
        })
    return rows


def label_items(value) -> list:
    """The labels of a rater field's value: its list, or the one label of a ``Classification``."""
    if value is None:
        return []
    list_field = getattr(value, "_LABEL_LIST_FIELD", None)
    if list_field is not None:
        return list(getattr(value, list_field) or [])
    return [value] if getattr(value, "label", None) is not None else []


def class_explanations(labels: list) -> list[dict]:
    """Per rater class of a class agreement run: the other raters' classes, and whether any differs."""
    rows = []
    for r, lab in labels:
        others = [(r2, l2.label) for r2, l2 in labels if l2 is not lab]
        differ = [f"{r2}: {c}" for r2, c in others if c != lab.label]
        status = ("no other rater rated this sample" if not others else
                  f"differs from {len(differ)} of {len(others)} other raters" if differ else "all raters agree")
        rows.append({"id": lab.id, "rater": r, "label": lab.label, "status": status,
                     "counterpart": ", ".join(f"{r2}: {c}" for r2, c in others) or "none",
                     "value": f"{len(others) - len(differ)} of {len(others)} agree" if others else "—",
                     "disagrees": bool(differ)})
    return rows


def consensus_explanations(sample, key: str, labels: list, attr=label_attr) -> list[dict]:
    """Per rater label of a consensus run: the consensus label it was fused into (a class consensus: the
    sample's consensus class), and whether it agrees."""
    field = f"{key}_consensus"
    value = sample[field] if field in sample.field_names else None
    single = value is not None and getattr(value, "_LABEL_LIST_FIELD", None) is None
    cons = {c.id: c for c in label_items(value)}
    rows = []
    for r, lab in labels:
        if single and value is not None:  # one consensus class per sample: a rater agrees when it gave that class
            c, agrees = value, lab.label == value.label
        else:
            c = cons.get(attr(lab, f"{key}_consensus_id"))
            agrees = bool(attr(lab, f"{key}_agrees"))
        status = ("in no consensus label" if c is None else "agrees with its consensus label" if agrees
                  else "its consensus label has another class")
        flagged = " (flagged for review)" if c is not None and attr(c, f"{key}_review") else ""
        rows.append({"id": lab.id, "rater": r, "label": lab.label, "status": status,
                     "counterpart": f"consensus: {c.label}{flagged}" if c is not None else "none",
                     "value": f"confidence {sig3(c.confidence)}" if c is not None else "—",
                     "disagrees": not agrees})
    return rows


def mask_explanations(sample, layout: dict) -> list[dict]:
    """Per rater's ``Segmentation`` of a semantic mask run: the classes in its mask and its Dice with each other
    rater's mask (mean over the classes in either mask, as the run's ``{key}_dice``); the rater(s) with the
    lowest mean Dice below 1 are marked as disagreeing (the odd one out of the sample)."""
    import numpy as np

    from agreement.methods.semantic.pixels import sample_statistics

    fields = list(layout.get("fields") or [])
    names = {int(k): str(v) for k, v in (layout.get("mask_targets") or {}).items()}
    labels, masks = [], []
    for f in fields:
        seg = sample[f] if f in sample.field_names else None
        if seg is None or not hasattr(seg, "get_mask"):
            continue
        mask = seg.get_mask()
        if mask is not None:
            labels.append((f, seg))
            masks.append(mask)
    if not masks:
        return []
    classes = [", ".join(names.get(int(v), str(int(v))) for v in np.unique(m)) for m in masks]
    if len(masks) < 2:
        return [{"id": labels[0][1].id, "rater": labels[0][0], "label": classes[0], "status": "no other rater's mask",
                 "counterpart": "none", "value": "—", "disagrees": False}]
    res = sample_statistics(masks, sample_key=str(sample.id),
                            raters=[f for f, _ in labels])
    with np.errstate(invalid="ignore"):
        pair = np.array([np.nanmean(row) if np.isfinite(row).any() else np.nan for row in res.pair_dice])
    dice = np.full((len(masks), len(masks)), np.nan)
    for k, (i, j) in enumerate(res.pairs):
        dice[i, j] = dice[j, i] = pair[k]
    mean = np.array([np.nanmean(row) if np.isfinite(row).any() else np.nan for row in dice])
    worst = np.nanmin(mean) if np.isfinite(mean).any() else np.nan
    rows = []
    for i, (rater, seg) in enumerate(labels):
        others = [f"{labels[j][0]}: Dice {sig3(dice[i, j])}" for j in range(len(labels)) if j != i]
        odd = bool(np.isfinite(mean[i]) and mean[i] == worst and worst < 1.0)
        rows.append({"id": seg.id, "rater": rater, "label": classes[i],
                     "status": "lowest Dice with the others" if odd else "agrees most with the others",
                     "counterpart": ", ".join(others), "value": f"mean Dice {sig3(mean[i])}", "disagrees": odd})
    return rows
