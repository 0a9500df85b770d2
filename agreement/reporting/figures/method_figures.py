"""The figures and headline cards of each method's results, as plain dicts (no FiftyOne).

Plotly figures are ``{"name", "title", "traces", "layout", "config", "click"}``
(``plotly.graph_objects.Figure(fig["traces"], fig["layout"])`` draws one);
the App panel (:mod:`agreement.fo.panel.data`) and the typed run results
(:mod:`agreement.fo.runs.results`) build theirs here, from the run's
``summary`` and ``detail``.

``METHOD_VIEWS`` says, per method marker, which sample field is the
per-sample score, its axis title, which summary keys are headline numbers
and where the rater-pair matrix and the plots come from.
"""

from __future__ import annotations

from typing import Any

from agreement.reporting.figures.base import (
    FIGURE_CONFIG,
    count_text,
    figure,
    figure_layout,
    floats,
    is_finite,
    sig3,
    wrap_lines,
)
from agreement.reporting.figures.palette import NEUTRAL, REFERENCE, SELECTED, SHARE_SCALE

__all__ = [
    "PanelDataError", "METHOD_VIEWS", "FIGURE_CONFIG", "sig3", "count_text", "is_finite",
    "floats", "figure_layout", "figure", "rater_bars", "distance_curves",
    "calibration_curves", "histogram_figure", "MAX_HEATMAP_RATERS", "pair_matrix", "pair_matrix_figure",
    "MAX_CONFUSION_CLASSES", "confusion_matrix", "confusion_figure",
]


class PanelDataError(ValueError):
    """The run cannot be shown; the message says why and what to do."""


from agreement.reporting.figures.pair_heatmap import MAX_HEATMAP_RATERS, pair_matrix, pair_matrix_figure  # noqa: E402

# --------------------------------------------------------------------------- methods
# per method: the per-sample score field suffix, its axis title, headline cards
# (summary key, label, optional se / interval keys), and where the optional plots come from
#: The panel's view of each method's runs, by method marker: registered by the registry of methods
#: (:func:`agreement.fo.methods.declarations`) from each method's declaration.
METHOD_VIEWS: dict[str, dict[str, Any]] = {}



def rater_bars(detail: dict, series: list[tuple[str, str]], title: str, ytitle: str) -> list[dict]:
    """One grouped bar chart of per-rater values (a legend when more than one series)."""
    raters = list(detail.get("raters") or [])
    traces = []
    for k, name in series:
        if detail.get(k) is None:
            continue
        ys = floats(detail.get(k))
        traces.append({"type": "bar", "x": raters, "y": ys, "name": name,
                       "hovertext": [f"{r}: {name} {sig3(v)}" for r, v in zip(raters, ys, strict=False)],
                       "hovertemplate": "%{hovertext}<extra></extra>"})
    if not (raters and traces):
        return []
    layout = figure_layout(title.replace(" (STAPLE, whole run)", ""), "rater", ytitle, legend=len(traces) > 1,
                           barmode="group", subtitle="STAPLE, whole run" if "STAPLE" in title else None,
                           xaxis={"type": "category"})
    fig = figure("bars_rater", title, traces, layout)
    fig["per_rater"] = True  # the panel shows the lowest and highest k raters of a crowd
    return [fig]


def distance_curves(detail: dict, *, info: dict | None = None) -> list[dict]:
    """Within-item vs between-item (chance) distance densities."""
    d = detail.get("distributions") or {}
    edges = floats(d.get("edges"))
    if len(edges) < 2:
        return []
    centers = [(a + b) / 2 for a, b in zip(edges[:-1], edges[1:], strict=True)]
    distance = (info or {}).get("params", {}).get("distance", "distance")
    traces = [
        {"type": "scatter", "mode": "lines", "x": centers, "y": floats(d["within_density"]),
         "name": "within (same sample)",
         "hovertemplate": "distance %{x:.3g}: density %{y:.3g} (same sample)<extra></extra>"},
        {"type": "scatter", "mode": "lines", "x": centers, "y": floats(d["between_density"]),
         "name": "between (other samples: chance)",
         "hovertemplate": "distance %{x:.3g}: density %{y:.3g} (chance)<extra></extra>"},
    ]
    title = "Matched distances: same sample vs other samples (whole run)"
    return [figure("distances", title, traces,
                    figure_layout("Matched distances (whole run)", f"{distance} distance (0 = identical, 1 = no overlap)",
                            "density", legend=True, subtitle="same sample against other samples (chance)"))]


def calibration_curves(detail: dict) -> list[dict]:
    """Observed vs expected disagreement densities per distance, with τ*."""
    curves = []
    for name, d in (detail.get("per_distance") or {}).items():
        plot = d.get("plot") or {}
        if not plot.get("grid"):
            continue
        grid = floats(plot["grid"])
        obs, exp = floats(plot["density_observed"]), floats(plot["density_expected"])
        traces: list[dict] = [
            {"type": "scatter", "mode": "lines", "x": grid, "y": obs, "name": "observed (same sample)",
             "hovertemplate": "distance %{x:.3g}: density %{y:.3g}<extra>observed</extra>"},
            {"type": "scatter", "mode": "lines", "x": grid, "y": exp, "name": "expected (other sample)",
             "hovertemplate": "distance %{x:.3g}: density %{y:.3g}<extra>expected</extra>"},
        ]
        tau = plot.get("tau")
        if tau is not None:
            top = max([v for v in obs + exp if v is not None] or [1.0])
            traces.append({"type": "scatter", "mode": "lines", "x": [tau, tau], "y": [0, top],
                           "name": f"τ* = {sig3(tau)}", "line": {"dash": "dash", "color": REFERENCE},
                           "hoverinfo": "skip"})
        ks = d.get("ks_one_sided")
        title = f"{name}: KS {sig3(ks)}" if ks is not None else f"{name}: {d.get('reason') or 'undefined'}"
        curves.append(figure(f"calibration_{name}", title, traces,
                              figure_layout(title, f"{name} distance (0 = identical)", "density", legend=True)))
    return curves



def _bin_text(edges: list, i: int) -> str:
    close = "]" if i == len(edges) - 2 else ")"
    return f"[{sig3(edges[i])}, {sig3(edges[i + 1])}{close}"


def histogram_figure(hist: dict, view: dict, *, selected: int | None = None, title_suffix: str = "samples in view",
                     name: str = "histogram", clickable: bool = True) -> dict:
    """The score histogram as a figure; bar ``selected`` (the panel's drill-down) highlighted; its items are
    ``view["item"]`` (default ``"sample"``; a frame run's are videos)."""
    item = view.get("item", "sample")
    edges = hist["edges"]
    centers = [(a + b) / 2 for a, b in zip(edges[:-1], edges[1:], strict=True)]
    width = edges[1] - edges[0]
    score = view.get("score_name", "score")
    hover = [f"{count_text(c, what=item)} with {score} in {_bin_text(edges, i)}" + ("<br>click: load them" if clickable else "")
             for i, c in enumerate(hist["counts"])]
    colors = [SELECTED if selected == i else NEUTRAL for i in range(len(centers))]  # counts: no red, no blue
    trace = {"type": "bar", "x": centers, "y": hist["counts"], "name": view.get("score_label", score),
             "width": width * 0.92, "hovertext": hover, "hovertemplate": "%{hovertext}<extra></extra>",
             "marker": {"color": colors}}
    better = "higher is better" if view.get("higher_is_better", True) else "lower is better"
    title = f"Per-{item} {score} ({title_suffix}; click a bar to load its {item}s)"
    axis = "<br>".join(wrap_lines(view.get("score_axis", score), 52))  # an axis title wider than the plot is cut
    layout = figure_layout(f"Per-{item} {score}", axis, f"number of {item}s",
                     subtitle=f"{title_suffix} · {better}" + (f" · click a bar to load its {item}s" if clickable else ""),
                     xaxis={"range": [edges[0] - width * 0.6, edges[-1] + width * 0.6]}, bargap=0.05)
    return figure(name, title, [trace], layout, clickable="histogram" if clickable else None)



MAX_CONFUSION_CLASSES = 25

def _confusion_classes(conf: dict, classes: list[str], max_classes: int) -> tuple[list[str], int]:
    """The classes of one rater's confusion rows or columns, in run order; with more than ``max_classes``,
    those with the most probability off the diagonal. Returns them and how many there were."""
    used = set(conf) | {c for row in conf.values() for c in (row or {})}
    order = [c for c in classes if c in used] + sorted(used - set(classes))
    if len(order) <= max_classes:
        return order, len(order)
    off = {c: 0.0 for c in order}
    for y, row in conf.items():
        for c, v in (row or {}).items():
            if c != y and v is not None:
                off[y] += v
                off[c] += v
    top = set(sorted(order, key=lambda c: (-off[c], c))[:max_classes])
    return [c for c in order if c in top], len(order)


def confusion_matrix(results: dict, rater: str, *, max_classes: int = MAX_CONFUSION_CLASSES) -> dict:
    """Rater ``rater``'s class confusion from a consensus run's results.

    ``z[i][j]`` is the probability that the rater says ``classes[j]`` for an
    object whose consensus class is ``classes[i]`` (EM: the fitted
    Dawid–Skene matrix; otherwise row-normalised counts); a row is ``None``
    where the rater met no object of that class, and an entry the run did not
    store (below 0.001) is 0.

    Returns:
        ``{"rater", "classes", "z", "n_classes"}``.

    Raises:
        PanelDataError: when the run has no such rater.
    """
    detail = results.get("detail") or {}
    report = detail.get("rater_report") or {}
    if rater not in report:
        raise PanelDataError(f"the consensus run has no rater {rater!r}; its raters are {list(report)}")
    conf = report[rater].get("confusion") or {}
    classes, n_classes = _confusion_classes(conf, [str(c) for c in detail.get("classes") or []], max_classes)
    z = [_confusion_row(conf.get(y), classes) for y in classes]
    return {"rater": rater, "classes": classes, "z": z, "n_classes": n_classes}


def _confusion_row(row: dict | None, classes: list[str]) -> list:
    """One consensus class's row: ``None`` throughout when the rater met no such object (the run stores no row,
    or a row of ``None``: a rater with no usable label), else the stored probabilities (0 where not stored)."""
    if not row or all(v is None for v in row.values()):
        return [None] * len(classes)
    return [float(row.get(c) or 0.0) for c in classes]


def confusion_figure(cm: dict) -> dict:
    """One rater's confusion matrix as a heatmap: consensus class down, rater's class across,
    values to three significant figures, hover naming the rater and both classes."""
    rater, classes, z = cm["rater"], cm["classes"], cm["z"]
    text, hover = [], []
    for y, row in zip(classes, z, strict=False):
        text.append(["" if v is None or v == 0 else sig3(v) for v in row])
        hover.append([f"{rater}: no {y} object in the consensus on {rater}'s samples" if v is None else
                      f"{rater} says {c} for a consensus {y}: probability "
                      f"{sig3(v) if v else 'below 0.001'}" for c, v in zip(classes, row, strict=False)])
    n = len(classes)
    shown = f"the {n} of {cm['n_classes']} classes with the most confusion" if cm["n_classes"] > n else "whole run"
    subtitle = f"P(rater's class | consensus class), each row sums to 1 · {shown}"
    trace = {"type": "heatmap", "x": classes, "y": classes, "z": z, "text": text, "texttemplate": "%{text}",
             "hovertext": hover, "hovertemplate": "%{hovertext}<extra></extra>", "colorscale": SHARE_SCALE,
             "zmin": 0.0, "zmax": 1.0, "xgap": 1, "ygap": 1,
             "colorbar": {"title": {"text": "probability", "side": "right"}, "thickness": 14}}
    title = f"Class confusion of rater {rater}"
    layout = figure_layout(title, "rater's class", "consensus class", height=max(360, 150 + 36 * n), subtitle=subtitle,
                     xaxis={"tickangle": -30, "type": "category"},
                     yaxis={"autorange": "reversed", "type": "category"})
    return figure("confusion", f"{title} ({subtitle})", [trace], layout)
