"""What the App panel shows, computed from run results any SDK user can load.

Every function here returns plain dicts, lists and strings (plotly figures as
``{"name", "title", "traces", "layout", "config"}``, cards, markdown), never
FiftyOne UI types, so the panel stays thin and a notebook user gets the same
figures::

    data = run_panel_data(dataset.match(...), "ot")   # the view the charts describe
    fig = data["figures"]["histogram"]
    plotly.graph_objects.Figure(fig["traces"], fig["layout"]).show()

Two kinds of numbers are kept apart and always labelled:

* **whole run** numbers come from the run results (``summary``, ``detail``):
  corpus statistics such as αOT or the pooled KαLOS α, which need the whole
  corpus (the chance baseline, the pooled reliability matrix);
* **view** numbers are recomputed on the samples given (the App's current
  view, sidebar filters included) from what the run wrote per sample: the
  score histogram, mean scores, unscored samples, and, for OT, αOT of the view
  and per rater pair (observed disagreement of the view's samples against the
  run's chance baseline ``D_e``, see :func:`view_alpha_ot`).

Methods plug in through their declaration's view (``METHOD_VIEWS``, :mod:`agreement.fo.methods`): which sample field is the per-sample
score, its axis title, which summary keys are headline numbers, where the
rater-pair matrix lives.

A consensus run's part is in :mod:`agreement.fo.panel.consensus`, the
labels of one sample explained in :mod:`agreement.fo.panel.label_explanations`
(their public names are importable from here too).
"""

from __future__ import annotations

import os
from collections import OrderedDict
from typing import Any, Iterable

import numpy as np

from fiftyone import ViewField as F

from agreement.fo.methods import declarations, hooks_of
from agreement.fo.panel.consensus import (
    REVIEW_HELP,
    consensus_cards,
    rater_report_markdown,
    rater_report_rows,
    review_queue_view,
)
from agreement.fo.panel.label_explanations import label_explanations
from agreement.fo.panel.rater_tables import rater_options
from agreement.fo.panel.raters import pair_section, rater_table, trim_rater_bars, view_alpha_ot
from agreement.fo.panel.video_figures import frame_run_view, frames_note, frames_wording, is_frame_run, video_run_info
from agreement.fo.runs import store as runs
from agreement.reporting.figures.method_figures import (
    METHOD_VIEWS,
    PanelDataError,
    confusion_figure,
    confusion_matrix,
    count_text,
    figure,
    figure_layout,
    histogram_figure,
    is_finite,
    pair_matrix,
    pair_matrix_figure,
    sig3,
)
from agreement.reporting.figures.palette import REFERENCE, SERIES_COLOURS

__all__ = [
    "METHOD_VIEWS", "run_panel_data", "score_histogram", "histogram_figure", "pair_matrix", "pair_matrix_figure",
    "view_alpha_ot", "view_cards", "summary_markdown", "undefined_reasons", "compare_data", "label_explanations",
    "bin_view", "lowest_first_view", "unscored_view", "sig3", "PanelDataError",
    "consensus_cards", "rater_report_rows", "rater_report_markdown", "confusion_matrix",
    "confusion_figure", "review_queue_view", "REVIEW_HELP",
]

declarations()  # every declared method's panel view is registered in METHOD_VIEWS


# --------------------------------------------------------------------------- cards
def _card(summary: dict, spec: dict) -> dict:
    value = summary.get(spec["key"])
    card = {"label": spec["label"], "value": value}
    if isinstance(value, str) and value:
        card["text"] = value
        return card
    if not is_finite(value):
        reason = summary.get(spec.get("reason", ""), "") or "undefined"
        card["text"] = f"undefined: {reason}"
        return card
    if spec.get("integer"):
        card["text"] = f"{int(value):,}"
        return card
    text = sig3(value)
    se = summary.get(spec.get("se", ""))
    if is_finite(se) and se > 0:
        text += f" ± {sig3(1.96 * se)} (95%)"
    elif spec.get("exact") and summary.get(spec["exact"]):
        text += " (exact chance baseline)"
    lo, hi = summary.get(spec.get("lo", "")), summary.get(spec.get("hi", ""))
    if is_finite(lo) and is_finite(hi):
        text += f" ({spec['interval']} [{sig3(lo)}, {sig3(hi)}])" if spec.get("interval") else f" [{sig3(lo)}, {sig3(hi)}]"
    card["text"] = text
    return card


def input_cards(info: dict, summary: dict) -> list[dict]:
    """Cards that say what the run assumed about its input: the samples it was computed on (the target the
    user chose), the rater assignment and the box repairs."""
    from agreement.fo.runs.declaration import run_target

    layout = info.get("input") or {}
    cards = []
    target = run_target(info)
    if target != "not recorded":
        cards.append({"label": "computed on", "value": target, "text": target})
    if layout.get("layout") == "attribute":
        if layout.get("raters_field"):
            source = layout.get("raters_field_source") or "given"
            text = f"listed in {layout['raters_field']!r} ({source})"
        else:
            text = "assumed fully crossed: every rater looked at every sample with labels"
        cards.append({"label": "rater assignment", "value": text, "text": text})
    elif layout.get("layout") == "fields":
        text = "a rater is assigned where its field is set (None = not assigned)"
        cards.append({"label": "rater assignment", "value": text, "text": text})
    repaired = {k: int(summary.get(k) or 0) for k in ("clipped_boxes", "outside_boxes", "dropped_boxes")}
    if any(repaired.values()):
        policy = layout.get("box_policy") or info.get("params", {}).get("box_policy") or "clip"
        parts = [f"{n} {what}" for what, n in (("clipped", repaired["clipped_boxes"]),
                                             ("outside the image, kept as zero-area", repaired["outside_boxes"]),
                                             ("dropped", repaired["dropped_boxes"])) if n]
        text = f"{', '.join(parts)} (box_policy={policy!r}; per rater in the run's repairs)"
        cards.append({"label": "boxes past the border", "value": text, "text": text})
    return cards


def view_cards(samples, info: dict, results: dict, ids: set | None = None) -> list[dict]:
    """Numbers of the samples in ``samples`` (the current view), from what the run wrote per sample."""
    view = _method_view(info)
    field = score_field(info)
    cards: list[dict] = []
    n = len(samples)
    if field is None:
        return cards
    n_scored = samples.count(field)
    mean = samples.mean(field) if n_scored else None
    detail = results.get("detail", {})
    own = hooks_of(info["method"]).view_cards  # the method's own numbers of the view (OT: αOT)
    if own is not None:
        cards += own(samples, info, detail, ids)
    mean_label, missing_label = view.get("view_labels", (f"mean {view['score_name']}", "samples without a score"))
    cards.append({"label": mean_label, "value": mean,
                  "text": sig3(mean) if mean is not None else "undefined: no scored sample"})
    cards.append({"label": missing_label, "value": n - n_scored, "text": f"{n - n_scored:,}"})
    return cards


_NOTE_CARDS = ("computed on", "rater assignment", "boxes past the border")


def summary_markdown(run_cards: list[dict], view_cards_: list[dict], n_view: int, n_run: int,
                     whole: bool, item: str = "sample") -> str:
    """The cards as one markdown table, this view beside the whole run (one column when they coincide),
    counting ``item`` s (a frame run's videos); the cards that describe the input (rater assignment, repaired
    boxes) as notes below it."""
    numbers = [c for c in run_cards if c["label"] not in _NOTE_CARDS]
    notes = [c for c in run_cards if c["label"] in _NOTE_CARDS]
    if whole or not view_cards_:
        rows = [f"| | whole run{f' ({count_text(n_run, what=item)})' if n_run else ''} |", "|:--|:--|"]
        rows += [f"| {c['label']} | {c['text']} |" for c in numbers]
    else:
        by_label = {c["label"]: c["text"] for c in view_cards_}
        rows = [f"| | this view ({count_text(n_view, what=item)}) | whole run ({count_text(n_run, what=item)}) |",
                "|:--|:--|:--|"]
        seen = set()
        for c in numbers:
            rows.append(f"| {c['label']} | {by_label.get(c['label'], '—')} | {c['text']} |")
            seen.add(c["label"])
        for c in view_cards_:
            if c["label"] not in seen:
                rows.append(f"| {c['label']} | {c['text']} | — |")
    text = "\n".join(rows)
    if notes:
        text += "\n\n" + "  \n".join(f"*{c['label'].capitalize()}:* {c['text']}" for c in notes)
    return text


# --------------------------------------------------------------------------- per method, per run
def _method_view(info: dict) -> dict:
    view = METHOD_VIEWS.get(info["method"])
    if view is None:
        raise PanelDataError(
            f"run {info['key']!r} has method {info['method']!r}, which this version of the panel cannot show; "
            "its results are still loadable with dataset.load_run_results()"
        )
    if is_frame_run(info):  # computed per frame of videos: the per-sample score is the video's mean
        view = frame_run_view(view, info)
    if info.get("format_version") != runs.RUN_FORMAT_VERSION:
        raise PanelDataError(
            f"run {info['key']!r} was written in result format {info.get('format_version')!r}, this plugin reads "
            f"format {runs.RUN_FORMAT_VERSION}: re-run it (same key, overwrite) to see it here"
        )
    return view


def score_field(info: dict) -> str | None:
    """The run's per-sample score field, or ``None`` for runs without one."""
    suffix = _method_view(info)["score_suffix"]
    return f"{info['key']}_{suffix}" if suffix else None


def higher_is_better(info: dict) -> bool:
    """Whether a larger per-sample score means more agreement (False for distances)."""
    return _method_view(info).get("higher_is_better", True)


_RESULTS_CACHE: "OrderedDict[tuple, dict]" = OrderedDict()
_RESULTS_CACHE_SIZE = 6


def load_results(samples, info: dict) -> dict:
    """The run's results, cached per (dataset, key, run timestamp): panels reread them on every view change."""
    dataset = samples._root_dataset
    cache_key = (dataset.name, str(getattr(dataset, "_doc", None) and dataset._doc.id), info["key"], info["timestamp"])
    hit = _RESULTS_CACHE.get(cache_key)
    if hit is not None:
        _RESULTS_CACHE.move_to_end(cache_key)
        return hit
    results = runs.load_agreement_results(samples, info["key"])
    _RESULTS_CACHE[cache_key] = results
    while len(_RESULTS_CACHE) > _RESULTS_CACHE_SIZE:
        _RESULTS_CACHE.popitem(last=False)
    return results


# --------------------------------------------------------------------------- histogram
def score_histogram(samples, field: str, lo: float, hi: float, bins: int = 20) -> dict:
    """Counts of the per-sample score over ``bins`` equal bins of ``[lo, hi]``
    in ``samples`` (samples without a score are counted apart).

    Computed by the database (one ``$bucket`` aggregation and a count), never
    from all values in Python; scores outside ``[lo, hi]`` (float noise) are
    clamped into the first or last bin.
    """
    edges = np.linspace(lo, hi, bins + 1)
    clamped = F(field).max(float(lo)).min(float(hi))
    counts, _, other = samples.exists(field).histogram_values(clamped, bins=int(bins), range=[float(lo), float(hi)])
    counts = list(counts) or [0] * int(bins)  # no sample has a score: the database returns no bucket
    counts[-1] += other  # the value hi itself falls past the last bucket's open upper edge
    n_scored = samples.count(field)
    return {
        "edges": edges.tolist(),
        "counts": [int(c) for c in counts],
        "n_scored": int(n_scored),
        "n_missing": int(len(samples) - n_scored),
    }


# --------------------------------------------------------------------------- undefined, labels, compare
def undefined_reasons(results: dict, ids: Iterable[str] | None = None, top: int = 8) -> list[dict]:
    """Why samples have no score: ``[{"reason", "count", "ids"}]``, most frequent first, limited to ``ids``."""
    listed = (results.get("detail") or {}).get("undefined_samples") or {}
    keep = set(ids) if ids is not None else None
    groups: dict[str, list[str]] = {}
    for sid, reason in listed.items():
        if keep is None or sid in keep:
            groups.setdefault(str(reason) or "no reason recorded", []).append(sid)
    out: list[dict[str, Any]] = [{"reason": r, "count": len(v), "ids": v} for r, v in groups.items()]
    out.sort(key=lambda g: (-g["count"], g["reason"]))
    return out[:top]


def compare_data(samples, info_a: dict, info_b: dict, max_points: int = 2000, whole: bool = False) -> dict:
    """Two runs side by side on ``samples``: their cards and histograms, and, when both scored
    samples in common, a scatter of the per-sample scores (ids on the points)."""
    out: dict[str, Any] = {"runs": []}
    for info in (info_a, info_b):
        view = _method_view(info)
        results = load_results(samples, info)
        field = score_field(info)
        if field:
            lo, hi = view["score_range"](info["params"])
        else:
            lo = hi = None
        hist = score_histogram(samples, field, lo, hi) if field and len(samples) else None
        out["runs"].append({
            "key": info["key"], "field": field,
            "cards": [_card(results.get("summary", {}), spec) for spec in view["cards"]],
            "view_cards": [] if whole else view_cards(samples, info, results),
            "histogram": histogram_figure(hist, view, name=f"compare_hist_{info['key']}", clickable=False,
                                          title_suffix=f"run {info['key']!r}, {count_text(len(samples))} in view")
            if hist else None,
        })
    out["histograms"] = _compare_histograms(out["runs"], info_a, info_b, len(samples))
    out["markdown"] = compare_markdown(out["runs"], len(samples))
    fa, fb = out["runs"][0]["field"], out["runs"][1]["field"]
    out["scatter"] = None
    if fa and fb:
        both = samples.exists(fa).exists(fb)
        n = len(both)
        if n:
            pts = both.limit(max_points) if n > max_points else both
            ids, paths, xa, xb = pts.values(["id", "filepath", fa, fb])
            va, vb = _method_view(info_a), _method_view(info_b)
            hover = [f"{os.path.basename(p)}<br>run {info_a['key']!r}: {sig3(a)}, run {info_b['key']!r}: {sig3(b)}"
                     "<br>click: load it" for p, a, b in zip(paths, xa, xb, strict=True)]
            title = (f"Per-sample {va['score_name']}: run {info_a['key']!r} against run {info_b['key']!r} "
                     f"({count_text(n)} scored by both{f', the first {max_points:,} shown' if n > max_points else ''};"
                     " click a point or lasso points to load them)")
            lo = min(min(xa), min(xb))
            hi = max(max(xa), max(xb))
            traces = [
                {"type": "scatter", "mode": "markers", "x": xa, "y": xb, "ids": ids, "name": "samples",
                 "hovertext": hover, "hovertemplate": "%{hovertext}<extra></extra>",
                 "marker": {"size": 7, "opacity": 0.7}},
                {"type": "scatter", "mode": "lines", "x": [lo, hi], "y": [lo, hi], "name": "equal scores",
                 "line": {"dash": "dot", "color": REFERENCE}, "hoverinfo": "skip"},
            ]
            layout = figure_layout(f"Per-sample {va['score_name']}: run {info_a['key']!r} against run {info_b['key']!r}",
                             f"{va['score_name']}, run {info_a['key']!r}", f"{vb['score_name']}, run {info_b['key']!r}",
                             legend=True, height=460, dragmode="lasso",
                             subtitle=f"{count_text(n)} scored by both"
                                      f"{f', the first {max_points:,} shown' if n > max_points else ''}"
                                      " · click a point or lasso points to load them")
            out["scatter"] = figure("compare_scatter", title, traces, layout, clickable="scatter")
            out["scatter"]["n_both"] = n
    return out


def _compare_histograms(run_data: list[dict], info_a: dict, info_b: dict, n: int) -> dict | None:
    """Both runs' histograms side by side in one figure (two subplots, each with its own axes)."""
    figs = [r["histogram"] for r in run_data]
    if not all(figs):
        return None
    traces = []
    for k, (fig, info) in enumerate(zip(figs, (info_a, info_b), strict=False)):
        t = dict(fig["traces"][0])
        t["name"] = f"run {info['key']!r}"
        t["marker"] = {"color": SERIES_COLOURS[k]}  # two runs told apart: neither the agreement red nor blue
        if k:
            t["xaxis"], t["yaxis"] = "x2", "y2"
        traces.append(t)
    va = _method_view(info_a)
    title = f"Per-sample {va['score_name']}: run {info_a['key']!r} beside run {info_b['key']!r}"
    lay_a, lay_b = figs[0]["layout"], figs[1]["layout"]
    layout = figure_layout(title, f"{va['score_name']}, run {info_a['key']!r}", "number of samples", legend=True,
                     subtitle=f"{count_text(n)} in view; each run on its own score range",
                     xaxis={"domain": [0, 0.42], "range": lay_a["xaxis"]["range"]}, height=360)
    font = {"size": 14}
    layout["xaxis2"] = {"domain": [0.58, 1], "anchor": "y2", "range": lay_b["xaxis"]["range"], "automargin": True,
                        "fixedrange": True, "title": {"text": f"{va['score_name']}, run {info_b['key']!r}",
                                                      "font": font}}
    layout["yaxis2"] = {"anchor": "x2", "automargin": True, "fixedrange": True,
                        "title": {"text": "number of samples", "font": font}}
    layout["legend"]["y"] = -0.3
    return figure("compare_hist", title, traces, layout)


def compare_markdown(run_data: list[dict], n: int) -> str:
    """Both runs' cards in one table, one column per run (whole-run numbers; view numbers in extra rows)."""
    a, b = run_data
    head = f"| | run {a['key']!r} | run {b['key']!r} |\n|:--|:--|:--|"
    rows = []
    labels = list(dict.fromkeys([c["label"] for c in a["cards"]] + [c["label"] for c in b["cards"]]))
    by_a = {c["label"]: c["text"] for c in a["cards"]}
    by_b = {c["label"]: c["text"] for c in b["cards"]}
    for label in labels:
        rows.append(f"| {label} (whole run) | {by_a.get(label, '—')} | {by_b.get(label, '—')} |")
    va = {c["label"]: c["text"] for c in a["view_cards"]}
    vb = {c["label"]: c["text"] for c in b["view_cards"]}
    for label in dict.fromkeys(list(va) + list(vb)):
        rows.append(f"| {label} ({count_text(n)} in view) | {va.get(label, '—')} | {vb.get(label, '—')} |")
    return head + "\n" + "\n".join(rows)


# --------------------------------------------------------------------------- views
def bin_view(samples, field: str, lo: float, hi: float, last: bool):
    """The samples whose score falls in ``[lo, hi)`` (``[lo, hi]`` for the last bin)."""
    upper = F(field) <= hi if last else F(field) < hi
    return samples.match((F(field) >= lo) & upper)


def lowest_first_view(samples, field: str, descending: bool = False):
    """The scored samples, lowest agreement first (``descending`` for distances)."""
    return samples.exists(field).sort_by(field, reverse=descending)


def unscored_view(samples, field: str):
    """The samples the run gave no score (see :func:`undefined_reasons` for why)."""
    return samples.exists(field, False)


# --------------------------------------------------------------------------- everything
def run_panel_data(samples, key: str, whole: bool | None = None, selected_bin: int | None = None,
                   selected_pair: list | None = None, rater: str | None = None, options: dict | None = None) -> dict:
    """Everything the panel shows for run ``key`` on ``samples`` (the current view).

    Args:
        samples: the view the charts describe (the App's view with its sidebar filters); a patches, clips or
            frames view, or one whose field stages dropped the run's fields, is read as the samples behind
            it (:func:`agreement.fo.views.run_samples.run_samples`).
        key: the run.
        whole: whether ``samples`` is the whole dataset (default: compared by count).
        selected_bin: a histogram bar to highlight.
        selected_pair: two raters whose heatmap cells to outline.
        rater: for a consensus run, the rater whose confusion matrix to draw (default: the first).
        options: the rater table's and heatmap's controls (:data:`agreement.fo.panel.rater_tables.DEFAULT_OPTIONS`:
            sort column and order, name filter, minimum labels, rows, bars per end, the heatmap's rule,
            size, named rater, minimum shared samples, statistic, support in the cells).

    Returns:
        ``{"title", "method", "cards" (whole run), "view_cards", "summary_md", "n_view", "n_run",
        "histogram": {...} or None, "score_field", "score_label", "score_range", "worst_first_descending",
        "pair_matrix": {...} or None, "figures": {name: figure}, "bars": [figure], "curves": [figure],
        "undefined": [...], "consensus": {...} or None}``; for a consensus run, ``"consensus"`` holds
        ``"cards"``, ``"view_cards"`` (see :func:`consensus_cards`), ``"report_rows"``, ``"report_md"``,
        ``"raters"``, ``"rater"``, ``"confusion"`` and ``"review_help"``, and the figures a ``"confusion"``;
        ``"rater_table"`` (:func:`agreement.fo.panel.raters.rater_table`) and ``"pairs"``
        (:func:`agreement.fo.panel.raters.pair_section`, its heatmap's note and choices) or None.

    Raises:
        PanelDataError: for a run of an unknown method or older format.
        agreement.fo.runs.store.RunError: for a run that does not exist (anymore).
    """
    from agreement.fo.views.run_samples import run_field_names, run_samples

    info = video_run_info(samples, runs.get_agreement_run_info(samples, key))
    samples = run_samples(samples, run_field_names(info))  # a queue, patches, clips: the samples behind them
    view = _method_view(info)
    opts = rater_options(options)
    results = load_results(samples, info)
    summary = results.get("summary", {})
    detail = results.get("detail", {})
    field = score_field(info)
    if field:
        lo, hi = view["score_range"](info["params"])
    else:
        lo = hi = None
    n_view = len(samples)
    n_run = int(summary.get("n_videos" if is_frame_run(info) else "n_samples") or 0) or samples._root_dataset.count()
    if whole is None:
        whole = n_view == samples._root_dataset.count()
    frames = is_frame_run(info)  # the run's samples are the frames of the videos: their ids are frame ids
    ids = None if whole else set(samples.values("frames.id" if frames else "id", unwind=frames))
    cards = [_card(summary, spec) for spec in view["cards"]] + input_cards(info, summary)
    vcards = view_cards(samples, info, results, ids) if field and not whole and n_view else []
    section = hooks_of(info["method"]).panel_section  # the method's own part (consensus: report, confusion)
    cons = section(samples, info, results, whole, rater) if section is not None else None
    if cons is not None:  # counted by the database on the whole dataset and on the view
        cards, vcards = cons["cards"] + cards, cons["view_cards"]
    data = {
        "title": f"{view['title']} — run {key!r}",
        "method": info["method"],
        "info": info,
        "cards": cards,
        "view_cards": vcards,
        "n_view": n_view,
        "n_run": n_run,
        "whole": whole,
        "summary_md": summary_markdown(cards, vcards, n_view, n_run, whole, view.get("item", "sample")),
        "score_field": field,
        "worst_first_descending": not view.get("higher_is_better", True),
        "score_label": view.get("score_label"),
        "score_range": [lo, hi],
        "histogram": score_histogram(samples, field, lo, hi) if field and n_view else None,
        "pair_matrix": None,
        "figures": {},
        "bars": [],
        "curves": [],
        "undefined": [] if frames else undefined_reasons(results, ids),  # a frame run's are frames: see its timeline
        "consensus": cons,
    }
    if cons is not None and cons["figure"] is not None:
        data["figures"]["confusion"] = cons["figure"]
    if data["histogram"] is not None:
        data["figures"]["histogram"] = histogram_figure(
            data["histogram"], view, selected=selected_bin,
            title_suffix="whole dataset" if whole else f"{count_text(n_view, what=view.get('item', 'sample'))} in view")
    table = rater_table(samples, info, results, opts)
    data["rater_table"] = table
    pairs = pair_section(samples=samples, info=info, results=results, whole=whole, ids=ids, n_view=n_view, options=opts,
                         selected=selected_pair, clickable=bool(field))
    data["pairs"] = pairs
    if pairs is not None:
        data["pair_matrix"] = pairs["matrix"]
        data["figures"]["pair_matrix"] = frames_wording(pairs["figure"]) if frames else pairs["figure"]
        if frames:
            pairs["note"] = frames_note(pairs["note"])
    if view.get("curves"):
        data["curves"] = view["curves"](detail, info)
    if view.get("bars"):
        data["bars"] = trim_rater_bars(view["bars"](detail, info), opts, table["eligible"] if table else None)
    for fig in data["bars"] + data["curves"]:
        if frames:  # their drill-downs select labels of samples, not of frames
            fig["click"] = None
        data["figures"][fig["name"]] = fig
    return data
