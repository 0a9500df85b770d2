"""The figures of a semantic mask agreement run (``compute_mask_agreement``), as plain dicts (no FiftyOne).

From the run's ``detail`` (:mod:`agreement.fo.methods.mask_agreement`) and the
class names the run recorded from the dataset's ``mask_targets``
(``info["input"]["mask_targets"]``; a value without a name is shown as its
number):

* **per-class agreement** (``class_alpha``, ``class_overlap``): pixel α (a
  class's presence against its absence) and pooled Dice per class, lowest α
  first, at most :data:`MAX_CLASSES` classes; where α is undefined the bar is
  missing and a note over the class says so (the reason in its hover); a bar
  clicks through to the samples where the raters' Dice on that class is lowest;
* **mean Dice per rater pair and class** (``pair_class_dice``): the mean over
  samples of each pair's Dice on each class, on the samples given (the App's
  current view) or the whole run; "no data" where a pair never met on a
  class (never both rated a sample on which either drew it; a class in no
  mask of the run has no column); a cell clicks
  through to the samples where that pair's Dice on that class is lowest.

Figures are ``{"name", "title", "traces", "layout", "config", "click"}``
(:func:`agreement.reporting.figures.base.figure`).
"""

from __future__ import annotations

from typing import Iterable

import numpy as np

from agreement.reporting.figures.base import count_text, figure, figure_layout, floats, sig3
from agreement.reporting.figures.classes import MAX_CLASSES
from agreement.reporting.figures.palette import REFERENCE, SELECTED, SERIES_COLOURS, agreement_colour_axis

__all__ = ["MAX_CLASSES", "MAX_PAIRS", "MAX_TEXT_CELLS", "mask_class_names", "class_value", "pair_label",
           "class_rows", "pair_class_means", "mask_class_bars", "pair_class_heatmap", "mask_figures",
           "pair_class_dice_rows"]

#: At most this many rater pairs in the heatmap (those with the lowest mean Dice over their classes).
MAX_PAIRS = 30
#: Up to this many cells the heatmap writes its values in the cells (beyond: in the hover only).
MAX_TEXT_CELLS = 150
#: The two series of the per-class bars and the drilled bar or cell (:mod:`agreement.reporting.figures.palette`).
ALPHA_COLOUR, DICE_COLOUR, SELECTED_COLOUR = SERIES_COLOURS[0], SERIES_COLOURS[1], SELECTED


def mask_class_names(info: dict, *, values: Iterable[int] = ()) -> dict[int, str]:
    """``{class value: name}`` from the run's recorded ``mask_targets`` (and ``values`` the run found
    without a name, named by their number); a name given to two values gets the value in brackets."""
    targets = (info.get("input") or {}).get("mask_targets") or {}
    raw = {int(k): str(v) for k, v in targets.items()}
    for v in values:
        raw.setdefault(int(v), str(int(v)))
    counts: dict[str, int] = {}
    for name in raw.values():
        counts[name] = counts.get(name, 0) + 1
    return {v: (f"{name} ({v})" if counts[name] > 1 else name) for v, name in sorted(raw.items())}


def class_value(names: dict[int, str], label_class) -> int | None:
    """The class value of ``label_class``: a name of ``names``, or a value (int or numeric string) in it."""
    if isinstance(label_class, (int, np.integer)) and not isinstance(label_class, bool):
        return int(label_class) if int(label_class) in names else None
    text = str(label_class)
    for v, name in names.items():
        if name == text:
            return v
    try:
        v = int(text)
    except ValueError:
        return None
    return v if v in names else None


def pair_label(pairs: Iterable[str], pair) -> str | None:
    """The run's label (``"a | b"``) of rater pair ``pair`` (``"a | b"`` in either order, or two raters)."""
    raters = [p.strip() for p in pair.split("|")] if isinstance(pair, str) else [str(p) for p in pair]
    if len(raters) != 2:
        return None
    for label in pairs:
        if sorted(p.strip() for p in label.split("|")) == sorted(raters):
            return label
    return None


def class_rows(detail: dict, info: dict) -> list[dict]:
    """Per class of the run, by value: ``{"value", "name", "alpha", "reason", "dice", "iou", "boundary_f1"}``
    (``None`` where undefined)."""
    ca, co = detail.get("class_alpha") or {}, detail.get("class_overlap") or {}
    a_vals, o_vals = [int(v) for v in ca.get("classes") or []], [int(v) for v in co.get("classes") or []]
    alpha, reason = floats(ca.get("alpha")), list(ca.get("reason") or [""] * len(a_vals))
    overlap = {k: dict(zip(o_vals, floats(co.get(k)), strict=False)) for k in ("dice", "iou", "boundary_f1")}
    values = sorted(set(a_vals) | set(o_vals))
    names = mask_class_names(info, values=values)
    by_alpha = {v: (a, str(r or "")) for v, a, r in zip(a_vals, alpha, reason, strict=False)}
    return [{"value": v, "name": names[v], "alpha": by_alpha.get(v, (None, ""))[0],
             "reason": by_alpha.get(v, (None, ""))[1] or ("" if v in by_alpha else "not measured"),
             **{k: overlap[k].get(v) for k in overlap}} for v in values]


def _alpha_first(rows: list[dict]) -> list[dict]:
    """The classes with a defined α, lowest first, then those with a Dice only, lowest Dice first."""
    with_alpha = sorted((r for r in rows if r["alpha"] is not None), key=lambda r: (r["alpha"], r["value"]))
    dice_only = sorted((r for r in rows if r["alpha"] is None and r["dice"] is not None),
                       key=lambda r: (r["dice"], r["value"]))
    return with_alpha + dice_only


def mask_class_bars(detail: dict, info: dict, *, selected: str | None = None, top: int = MAX_CLASSES) -> dict | None:
    """Pixel α and pooled Dice per class (whole run), lowest α first, at most ``top`` classes; a class
    whose α is undefined has a note instead of its α bar (the reason in its hover); ``selected`` (a class
    name) outlined. Clickable: ``click="mask_class"``, the class name as ``x``. ``None`` without classes."""
    rows = class_rows(detail, info)
    order = _alpha_first(rows)
    if not order:
        return None
    shown = order[:top]
    xs = [r["name"] for r in shown]
    tip = "<br>click: the samples where the raters' Dice on {} is lowest"
    alpha_hover = [f"{r['name']}: pixel α {sig3(r['alpha'])} (presence against absence)" + tip.format(r["name"])
                   if r["alpha"] is not None else f"{r['name']}: α undefined ({r['reason'] or 'no reason recorded'})"
                   for r in shown]
    dice_hover = [f"{r['name']}: Dice {sig3(r['dice'])}, IoU {sig3(r['iou'])}, boundary F1 {sig3(r['boundary_f1'])}"
                  " (pooled over pixels)" + tip.format(r["name"]) for r in shown]
    traces = [{"type": "bar", "x": xs, "y": [r["alpha"] for r in shown], "name": "pixel α",
               "hovertext": alpha_hover, "hovertemplate": "%{hovertext}<extra></extra>",
               "marker": {"color": ALPHA_COLOUR}},
              {"type": "bar", "x": xs, "y": [r["dice"] for r in shown], "name": "Dice",
               "hovertext": dice_hover, "hovertemplate": "%{hovertext}<extra></extra>",
               "marker": {"color": DICE_COLOUR}}]
    undefined = [r for r in shown if r["alpha"] is None]
    absent = [r["name"] for r in rows if r["alpha"] is None and r["dice"] is None]
    what = (f"the {len(shown)} of {len(order)} classes with the lowest α" if len(order) > len(shown)
            else f"{count_text(len(shown), what='class')}, lowest α first")
    sub = f"{what} · click a bar: the samples where that class's Dice is lowest"
    if absent:
        sub += f" · in no mask: {', '.join(absent[:5])}{'…' if len(absent) > 5 else ''}"
    low = min([0.0] + [r[k] for r in shown for k in ("alpha", "dice") if r[k] is not None])
    layout = figure_layout("Agreement per class (whole run)", "class", "pixel α, Dice (1 = identical)",
                           legend=True, barmode="group", subtitle=sub,
                           xaxis={"type": "category", "tickangle": -45 if len(xs) > 8 else 0},
                           yaxis={"range": [1.1 * low, 1.05]})
    if undefined:  # where α is undefined: a note over the class, the reason in its hover
        layout["annotations"] = [{"x": r["name"], "y": 0, "xref": "x", "yref": "y", "yanchor": "bottom",
                                  "xshift": -8, "text": "α undefined", "textangle": -90, "showarrow": False,
                                  "font": {"size": 10, "color": REFERENCE},
                                  "hovertext": f"α undefined: {r['reason'] or 'no reason recorded'}"}
                                 for r in undefined]
    if selected in xs:  # the drilled class: its two bars outlined together
        k = xs.index(selected)
        layout["shapes"] = [{"type": "rect", "xref": "x", "yref": "paper", "x0": k - 0.45, "x1": k + 0.45,
                             "y0": 0, "y1": 1, "line": {"color": SELECTED_COLOUR, "width": 3}}]
    title = f"Agreement per class: pixel α and Dice ({what}; whole run)"
    return figure("mask_classes", title, traces, layout, clickable="mask_class")


def pair_class_means(detail: dict, *, ids: Iterable[str] | None = None) -> dict:
    """The mean over samples of each rater pair's Dice on each class (``pair_class_dice``), on the samples
    ``ids`` (default: every sample of the run).

    Returns:
        ``{"pairs": [pair labels, run order], "classes": [the values some pair met on in the whole run,
        ascending], "mean": (P, C) array, "n": (P, C) sample counts (0: the pair never met on the class),
        "n_samples": samples counted}``.
    """
    rows = detail.get("pair_class_dice") or {}
    samples = np.asarray(rows.get("sample") or [], dtype=object)
    pairs_all = list(rows.get("pair") or [])
    values = np.asarray(rows.get("class_value") or [], dtype=np.int64)
    dice = np.asarray(floats(rows.get("dice")), dtype=float)
    keep = np.isfinite(dice)
    if ids is not None:
        wanted = set(ids)
        keep &= np.fromiter((s in wanted for s in samples), dtype=bool, count=samples.size)
    pairs = list(dict.fromkeys(pairs_all))
    classes = sorted({int(v) for v in values[np.isfinite(dice)].tolist()})  # the classes some pair met on
    p_index = {p: i for i, p in enumerate(pairs)}
    c_index = {c: j for j, c in enumerate(classes)}
    pi = np.fromiter((p_index[p] for p in pairs_all), dtype=np.int64, count=len(pairs_all))[keep]
    ci = np.fromiter((c_index[int(c)] for c in values.tolist()), dtype=np.int64, count=values.size)[keep]
    total, n = np.zeros((len(pairs), len(classes))), np.zeros((len(pairs), len(classes)), dtype=np.int64)
    np.add.at(total, (pi, ci), dice[keep])
    np.add.at(n, (pi, ci), 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(n > 0, total / np.maximum(n, 1), np.nan)
    return {"pairs": pairs, "classes": classes, "mean": mean, "n": n, "n_samples": len(set(samples[keep].tolist()))}


def _lowest(mean: np.ndarray, axis: int, top: int) -> list[int]:
    """The indices along ``axis`` (0: rows, 1: columns) with the lowest mean over the other axis, at most
    ``top``, in their original order; all when there are at most ``top``."""
    size = mean.shape[axis]
    if size <= top:
        return list(range(size))
    with np.errstate(invalid="ignore"):
        score = np.nanmean(np.where(np.isfinite(mean), mean, np.nan), axis=1 - axis)
    score = np.where(np.isfinite(score), score, np.inf)
    return sorted(np.argsort(score, kind="stable")[:top].tolist())


def pair_class_heatmap(detail: dict, info: dict, *, ids: Iterable[str] | None = None, scope: str = "whole run",
                       selected: tuple[str, str] | None = None, top_pairs: int = MAX_PAIRS,
                       top_classes: int = MAX_CLASSES) -> dict | None:
    """Mean Dice per rater pair (rows) and class (columns) over the samples ``ids`` (``scope`` names them);
    empty cells ("no data") where a pair never met on a class; ``selected`` (pair label, class name)
    outlined. Clickable: ``click="mask_cell"``, the class name as ``x``, the pair as ``y``. ``None`` when
    no pair met on any class."""
    m = pair_class_means(detail, ids=ids)
    if not m["pairs"] or not m["classes"]:
        return None
    names = mask_class_names(info, values=m["classes"])
    rows, cols = _lowest(m["mean"], 0, top_pairs), _lowest(m["mean"], 1, top_classes)
    pairs, classes = [m["pairs"][i] for i in rows], [names[m["classes"][j]] for j in cols]
    z = [[float(m["mean"][i, j]) if m["n"][i, j] else None for j in cols] for i in rows]
    n = [[int(m["n"][i, j]) for j in cols] for i in rows]
    hover = [[f"{p} on {c}: mean Dice {sig3(v)} over {count_text(k)}<br>click: the samples where "
              f"{' and '.join(p.split(' | '))} agree least on {c}" if v is not None else
              f"{p} on {c}: no data (they never both rated a sample on which either drew {c})"
              for c, v, k in zip(classes, zr, nr, strict=False)] for p, zr, nr in zip(pairs, z, n, strict=False)]
    cells = len(pairs) * len(classes)
    trace = {"type": "heatmap", "x": classes, "y": pairs, "z": z, "hovertext": hover,
             "hovertemplate": "%{hovertext}<extra></extra>", "xgap": 1, "ygap": 1, "hoverongaps": True,
             **agreement_colour_axis("mean Dice", below_zero=False)}  # blue high, red low
    if cells <= MAX_TEXT_CELLS:
        trace.update(text=[["" if v is None else sig3(v) for v in zr] for zr in z], texttemplate="%{text}",
                     textfont={"size": 11 if cells <= 40 else 9})
    lines = [f"mean over the samples where the pair met on the class ({scope})"]
    if len(rows) < len(m["pairs"]):
        lines.append(f"the {len(rows)} of {len(m['pairs'])} pairs with the lowest mean Dice")
    if len(cols) < len(m["classes"]):
        lines.append(f"the {len(cols)} of {len(m['classes'])} classes with the lowest mean Dice")
    lines.append("empty: no data · click a cell: where that pair disagrees most on that class")
    row_px = 30 if len(pairs) <= 8 else 24 if len(pairs) <= 16 else 18
    title = "Mean Dice per rater pair and class"
    layout = figure_layout(title, "class", "rater pair", height=max(300, 150 + row_px * len(pairs)),
                           subtitle=" · ".join(lines),
                           xaxis={"type": "category", "tickangle": -45 if len(classes) > 6 else 0},
                           yaxis={"type": "category", "autorange": "reversed", "tickfont": {"size": 11}})
    layout["margin"]["r"] = 8
    if selected and selected[0] in pairs and selected[1] in classes:  # the drilled cell, outlined
        i, j = pairs.index(selected[0]), classes.index(selected[1])
        layout["shapes"] = [{"type": "rect", "xref": "x", "yref": "y", "x0": j - 0.5, "x1": j + 0.5,
                             "y0": i - 0.5, "y1": i + 0.5, "line": {"color": SELECTED_COLOUR, "width": 3}}]
    full = f"{title} ({count_text(len(pairs), what='pair')} × {count_text(len(classes), what='class')}, {scope})"
    return figure("mask_pairs", full, [trace], layout, clickable="mask_cell")


def mask_figures(detail: dict, info: dict, *, ids: Iterable[str] | None = None, scope: str = "whole run",
                 selected_class: str | None = None, selected_cell: tuple[str, str] | None = None) -> list[dict]:
    """The figures of a mask agreement run: agreement per class (whole run), then mean Dice per rater pair
    and class on the samples ``ids`` (``scope``: how the panel names them); those that have data."""
    figs = [mask_class_bars(detail, info, selected=selected_class),
            pair_class_heatmap(detail, info, ids=ids, scope=scope, selected=selected_cell)]
    return [f for f in figs if f is not None]


def pair_class_dice_rows(detail: dict, info: dict) -> list[dict]:
    """A semantic mask run's mean Dice per rater pair and class over the samples where both drew it (the
    panel's pair × class heatmap, :func:`agreement.reporting.figures.masks.pair_class_means`), one row per cell the
    pair met on: ``rater_a``, ``rater_b``, ``class``, ``class_value``, ``mean_dice``, ``samples``."""
    from agreement.reporting.tables import round_value

    means = pair_class_means(detail)
    names = mask_class_names(info, values=means["classes"])
    rows = []
    for i, pair in enumerate(means["pairs"]):
        a, _, b = str(pair).partition(" | ")
        for j, value in enumerate(means["classes"]):
            if means["n"][i, j]:
                rows.append({"rater_a": a, "rater_b": b, "class": names[value], "class_value": int(value),
                             "mean_dice": round_value(float(means["mean"][i, j])), "samples": int(means["n"][i, j])})
    return rows
