"""The figures of a class agreement run (``compute_class_agreement``), as plain dicts (no FiftyOne).

From the run's ``detail`` (:mod:`agreement.fo.methods.class_agreement`):

* **rater vitality** (``rater_vitality``): α − α without the rater, per rater;
  a bar clicks through to the samples where that rater's class differs from
  another rater's;
* **class difficulty** (``class_match``): per class, the share of the pairable
  values of that class whose partner value (another rater, same sample) is the
  same class, hardest first; a bar clicks through to the samples where some
  rater gave that class and the raters disagree;
* **confusion between raters** (``confusion``): the coincidence matrix
  normalised by rows, ``P(another rater says j | one rater says i)``, as a
  classes × classes heatmap;
* for tag sets, **per-tag α** (``tag_alpha``), lowest first.

Figures are ``{"name", "title", "traces", "layout", "config", "click"}``
(:func:`agreement.reporting.figures.base.figure`); the panel draws the bars beside its
rater table and the confusion heatmap below them.
"""

from __future__ import annotations

from agreement.reporting.figures.base import (
    count_text,
    figure,
    figure_layout,
    floats,
    is_finite,
    plural,
    sig3,
    tick_room,
)
from agreement.reporting.figures.palette import SHARE_SCALE, agreement_colours, effect_colours

__all__ = ["class_bars", "class_curves", "class_vitality_bars", "class_difficulty_bars", "tag_alpha_bars",
           "rater_confusion_figure", "MAX_CLASSES"]

#: At most this many classes in a bar chart or the confusion heatmap (the hardest / most confused).
MAX_CLASSES = 25


def class_vitality_bars(detail: dict) -> list[dict]:
    """Rater vitality, α − α without the rater (whole run), one bar per rater, red below 0 (the rater lowers
    agreement), blue above (:func:`agreement.reporting.figures.palette.effect_colours`); clickable."""
    vit = detail.get("rater_vitality") or {}
    raters = [str(r) for r in vit.get("raters") or []]
    ys = floats(vit.get("vitality"))
    if not raters or not any(v is not None for v in ys):
        return []
    without = floats(vit.get("alpha_without") or [None] * len(raters))
    alpha = vit.get("alpha")
    hover = [f"{r}: vitality {sig3(v, signed=True)} (α {sig3(alpha)} with, {sig3(w)} without {r})"
             f"<br>click: the samples where {r}'s class differs from another rater's"
             for r, v, w in zip(raters, ys, without, strict=False)]
    trace = {"type": "bar", "x": raters, "y": ys, "name": "vitality", "hovertext": hover,
             "hovertemplate": "%{hovertext}<extra></extra>",
             "marker": {"color": effect_colours(ys)}}  # lowers agreement: red; raises it: blue
    layout = figure_layout("Rater vitality (whole run)", "rater", "vitality",
                           subtitle="α − α without the rater (< 0: the rater lowers agreement) · click a bar: "
                                    "the samples where that rater differs from another", xaxis={"type": "category"},
                           height=320 + tick_room(raters))
    fig = figure("vitality", "Rater vitality: α − α without the rater (whole run)", [trace], layout,
                 clickable="vitality")
    fig["per_rater"] = True  # the panel shows the lowest and highest k raters of a crowd
    return [fig]


def class_difficulty_bars(detail: dict, *, top: int = MAX_CLASSES) -> list[dict]:
    """Class difficulty: each class's match rate (the share of its pairable values whose partner is the
    same class, 1 = always agreed on), hardest first, at most ``top`` classes; clickable."""
    cm = detail.get("class_match") or {}
    classes = [str(c) for c in cm.get("classes") or []]
    rates = floats(cm.get("match_rate"))
    counts = list(cm.get("n_values") or [None] * len(classes))
    order = sorted((i for i in range(len(classes)) if rates[i] is not None), key=lambda i: (rates[i], classes[i]))
    if not order:
        return []
    shown = order[:top]
    xs = [classes[i] for i in shown]
    ys = [rates[i] for i in shown]
    ns = [counts[i] for i in shown]
    hover = [f"{c}: {sig3(r)} of its values matched by the other raters"
             + (f" ({count_text(int(n), what='value')})" if is_finite(n) else "")
             + f"<br>click: the samples where a rater said {c} and the raters disagree" for c, r, n in zip(xs, ys, ns, strict=False)]
    what = (f"the {len(shown)} hardest of {len(order)} classes" if len(order) > len(shown)
            else f"{len(shown)} {plural(len(shown), 'class')}, hardest first")
    trace = {"type": "bar", "x": xs, "y": ys, "name": "match rate", "hovertext": hover,
             "hovertemplate": "%{hovertext}<extra></extra>", "marker": {"color": agreement_colours(ys)}}
    layout = figure_layout("Class difficulty (whole run)", "class", "match rate (1 = always agreed on)",
                           subtitle=f"{what} · click a bar: the samples where that class is disputed",
                           xaxis={"type": "category", "tickangle": -45 if len(xs) > 8 else 0},
                           yaxis={"range": [0, 1.02]})
    return [figure("classes", f"Class difficulty: {what} (whole run)", [trace], layout, clickable="class")]


def tag_alpha_bars(detail: dict, *, top: int = MAX_CLASSES) -> list[dict]:
    """Per-tag α (presence against absence of the tag), lowest first, at most ``top`` tags; tags whose α
    is undefined are named in the subtitle."""
    ta = detail.get("tag_alpha") or {}
    tags = [str(c) for c in ta.get("classes") or []]
    alphas = floats(ta.get("alpha"))
    order = sorted((i for i in range(len(tags)) if alphas[i] is not None), key=lambda i: (alphas[i], tags[i]))
    if not order:
        return []
    shown = order[:top]
    undefined = [t for t, a in zip(tags, alphas, strict=False) if a is None]
    sub = f"{len(shown)} of {count_text(len(tags), what='tag')}, lowest α first"
    if undefined:
        sub += f" · undefined (no variation): {', '.join(undefined[:5])}{'…' if len(undefined) > 5 else ''}"
    trace = {"type": "bar", "x": [tags[i] for i in shown], "y": [alphas[i] for i in shown], "name": "α",
             "hovertext": [f"{tags[i]}: α {sig3(alphas[i])} (whether the raters agree it applies)" for i in shown],
             "hovertemplate": "%{hovertext}<extra></extra>", "marker": {"color": agreement_colours(alphas[i] for i in shown)}}
    layout = figure_layout("α per tag (whole run)", "tag", "α of the tag (1 perfect, 0 chance)", subtitle=sub,
                           xaxis={"type": "category", "tickangle": -45 if len(shown) > 8 else 0})
    return [figure("tags", f"α per tag ({sub}; whole run)", [trace], layout)]


def _confused_classes(classes: list[str], matrix: list, top: int) -> list[int]:
    """The indices of the classes to show: all up to ``top``, else those with the most confusion."""
    if len(classes) <= top:
        return list(range(len(classes)))
    off = [sum((v or 0.0) for j, v in enumerate(row) if j != i) for i, row in enumerate(matrix)]
    keep = set(sorted(range(len(classes)), key=lambda i: (-off[i], classes[i]))[:top])
    return [i for i in range(len(classes)) if i in keep]


def rater_confusion_figure(detail: dict, *, top: int = MAX_CLASSES) -> dict | None:
    """The confusion between raters as a classes × classes heatmap: row ``i``, column ``j`` is the share of
    the pairable values of class ``i`` whose partner value (another rater on the same sample) is class ``j``
    (the coincidence matrix normalised by rows; each row sums to 1; the diagonal is the class's match
    rate). ``None`` without a matrix."""
    conf = detail.get("confusion") or {}
    classes = [str(c) for c in conf.get("classes") or []]
    matrix = [floats(row) for row in conf.get("matrix") or []]
    if not classes or len(matrix) != len(classes):
        return None
    idx = _confused_classes(classes, matrix, top)
    names = [classes[i] for i in idx]
    z = [[matrix[i][j] for j in idx] if any(v is not None for v in matrix[i]) else [None] * len(idx) for i in idx]
    text = [["" if v is None or v == 0 else sig3(v) for v in row] for row in z]
    hover = [[f"no rater gave {a} on a sample with another rating" if v is None else
              f"when one rater says {a}, another says {b}: {sig3(v)} of the time" for b, v in zip(names, row, strict=False)]
             for a, row in zip(names, z, strict=False)]
    n = len(names)
    shown = f"the {n} of {len(classes)} most confused classes" if n < len(classes) else "whole run"
    subtitle = f"P(another rater's class | one rater's class), each row sums to 1 · {shown}"
    trace = {"type": "heatmap", "x": names, "y": names, "z": z, "text": text if n <= 15 else None,
             "texttemplate": "%{text}", "hovertext": hover, "hovertemplate": "%{hovertext}<extra></extra>",
             "colorscale": SHARE_SCALE, "zmin": 0.0, "zmax": 1.0, "xgap": 1, "ygap": 1,  # a share: grey
             "colorbar": {"title": {"text": "share", "side": "right"}, "thickness": 12}}
    if trace["text"] is None:
        del trace["text"], trace["texttemplate"]
    title = "Confusion between raters"
    layout = figure_layout(title, "another rater's class", "one rater's class", height=max(340, 150 + 32 * n),
                           subtitle=subtitle, xaxis={"tickangle": -30, "type": "category"},
                           yaxis={"autorange": "reversed", "type": "category"})
    return figure("class_confusion", f"{title} ({subtitle})", [trace], layout)


def class_bars(detail: dict, *, info: dict | None = None) -> list[dict]:
    """The bar charts of a class agreement run: rater vitality and class difficulty (classes), or per-tag
    α (tag sets)."""
    if detail.get("tag_alpha"):
        return tag_alpha_bars(detail)
    return class_vitality_bars(detail) + class_difficulty_bars(detail)


def class_curves(detail: dict, *, info: dict | None = None) -> list[dict]:
    """The other figures of a class agreement run: the confusion between raters (classes only)."""
    fig = rater_confusion_figure(detail)
    return [fig] if fig is not None else []
