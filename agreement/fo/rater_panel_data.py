"""The panel's rater sections: the sortable rater table, the rater-pair heatmap and its note, and the
per-rater bar charts cut to the lowest and highest raters (part of
:func:`agreement.fo.panel_data.run_panel_data`).

What the user sets (sort column and order, name filter, minimum labels,
rows, bars, the heatmap's rule, size, minimum support, statistic) comes in
``options`` (:data:`agreement.fo.rater_tables.DEFAULT_OPTIONS`); everything
returned is plain data, so a notebook user gets the same tables and figures::

    data = run_panel_data(dataset, "kalos", options={"min_labels": 10, "pair_rule": "lowest"})
    print(data["rater_table"]["markdown"])
"""

from __future__ import annotations

import statistics

import numpy as np

from agreement.fo.figure_base import count_text, is_finite, median_count, sig3
from agreement.fo.figures import CONSENSUS_METHOD, METHOD_VIEWS
from agreement.fo.pair_heatmap import (
    PAIR_RULES,
    pair_matrix,
    pair_matrix_figure,
    select_pair_raters,
)
from agreement.fo.pair_statistics import contrast_note, pairwise_contrast
from agreement.fo.rater_tables import (
    CLASS_CONSENSUS,
    RATER_COLUMNS,
    class_consensus_rater_rows,
    class_rater_rows,
    consensus_rater_rows,
    kalos_rater_rows,
    natural_key,
    ot_rater_rows,
    rater_table_markdown,
    sort_rater_rows,
    top_bottom_bars,
    visible_columns,
)

__all__ = ["POOLED_KEYS", "pair_section", "rater_table", "trim_rater_bars", "view_alpha_ot"]

KALOS, OT, CLASSES = "iaa.kalos", "iaa.ot_agreement", "iaa.class_agreement"
#: The summary key of each method's pooled (headline) value that its pairwise values are read against.
POOLED_KEYS = {KALOS: "global_alpha", OT: "alpha_ot", CLASSES: "alpha"}
_TITLES = {CONSENSUS_METHOD: "**Rater report** (whole run, against the consensus)", KALOS: "**Raters** (whole run)",
           OT: "**Raters** (whole run)", CLASSES: "**Raters** (whole run)",
           CLASS_CONSENSUS: "**Rater report** (whole run, against the consensus)"}


def rater_table(samples, info: dict, results: dict, options: dict) -> dict | None:
    """The run's rater table (``None`` for methods without per-rater numbers).

    Returns:
        ``{"markdown", "rows" (sorted and filtered), "columns" [(key, heading)] (every sortable column),
        "sort" (key), "worst_first", "eligible" (raters with enough labels), "n_raters"}``.
    """
    from agreement.fo.rater_counts import kalos_pair_counts, rater_label_counts

    method = info["method"]
    if method not in RATER_COLUMNS:
        return None
    detail = results.get("detail") or {}
    report = detail.get("rater_report") or {}
    if method == CONSENSUS_METHOD and any("competence" in (e or {}) for e in report.values()):
        method = CLASS_CONSENSUS  # a consensus of classes: competences, not sensitivities
        rows = class_consensus_rater_rows(report)
    elif method == CONSENSUS_METHOD:
        rows = consensus_rater_rows(report)
    elif method == CLASSES:
        if not (detail.get("rater_vitality") or {}).get("raters"):
            return None
        rows = class_rater_rows(detail, rater_label_counts(samples, info))
    elif method == KALOS:
        if not (detail.get("rater_vitality") or {}).get("raters"):
            return None
        rows = kalos_rater_rows(detail, rater_label_counts(samples, info), kalos_pair_counts(samples, info))
    else:
        rows = ot_rater_rows(detail, rater_label_counts(samples, info))
    if not rows:
        return None
    columns = RATER_COLUMNS[method]
    sort = next((c for c in columns if c.key == options["sort"]), columns[0])
    result = sort_rater_rows(rows, sort, options["worst_first"], options["min_labels"], options["filter"])
    eligible = {r["rater"] for r in sort_rater_rows(rows, sort, True, options["min_labels"])["rows"]}
    shown = visible_columns(columns, sort.key)
    md = rater_table_markdown(result, shown, sort, options["worst_first"], options["rows"], options["min_labels"],
                              _TITLES[method], hidden=[c for c in columns if c not in shown])
    return {"markdown": md, "rows": result["rows"], "columns": [(c.key, c.heading) for c in columns],
            "sort": sort.key, "worst_first": options["worst_first"], "eligible": eligible, "n_raters": len(rows)}


def trim_rater_bars(bars: list[dict], options: dict, eligible: set | None) -> list[dict]:
    """The per-rater bar charts (``fig["per_rater"]``) cut to their ``bars_k`` lowest and highest raters
    among ``eligible`` (:func:`agreement.fo.rater_tables.top_bottom_bars`); other charts unchanged."""
    return [top_bottom_bars(b, options["bars_k"], eligible) if b.get("per_rater") else b for b in bars]


def view_alpha_ot(pair_scores: dict, records: list[dict], ids: set | None) -> dict:
    """αOT of a subset of samples against the run's chance baseline.

    ``D_o`` is the mean OT cost ``1 - score`` over the subset's (sample, rater
    pair) cells (``pair_sample_scores``); ``D_e`` is the run's chance cost,
    per pair (``expected_cost`` of its record) and overall (the
    ``n_cross_pairs``-weighted mean of the pairs', which is the run's ``D_e``).
    So ``1 - D_o / D_e`` is the run's αOT when ``ids`` is every sample, and on
    a subset says how far its samples agree above what the whole run's chance
    level would give (a subset's own chance level is not recomputed).

    Args:
        pair_scores: ``detail["pair_sample_scores"]`` (``"a|b"`` → sample id → score).
        records: ``detail["rater_pairs"]``.
        ids: the subset's sample ids (``None``: every sample).

    Returns:
        ``{"alpha", "observed_cost", "expected_cost", "n_cells", "pairs": {"a|b": {"alpha", "mean_ot",
        "n_samples"}}}`` (``alpha`` ``None`` where undefined).
    """
    by_pair = {f"{r['rater_a']}|{r['rater_b']}": r for r in records}
    pairs, total, n_total, de_num, de_den = {}, 0.0, 0, 0.0, 0.0
    for name, scores in pair_scores.items():
        vals = [v for sid, v in scores.items() if v is not None and (ids is None or sid in ids)]
        rec = by_pair.get(name) or by_pair.get("|".join(reversed(name.split("|")))) or {}
        de = rec.get("expected_cost")
        if is_finite(de) and is_finite(rec.get("n_cross_pairs")):
            de_num += float(de) * float(rec["n_cross_pairs"])
            de_den += float(rec["n_cross_pairs"])
        if not vals:
            continue
        mean = float(np.mean(vals))
        total += float(np.sum(vals))
        n_total += len(vals)
        alpha = 1.0 - (1.0 - mean) / de if is_finite(de) and de > 0 else None
        pairs[name] = {"alpha": alpha, "mean_ot": mean, "n_samples": len(vals)}
    d_e = de_num / de_den if de_den > 0 else None
    d_o = 1.0 - total / n_total if n_total else None
    alpha = 1.0 - d_o / d_e if d_o is not None and d_e else None
    return {"alpha": alpha, "observed_cost": d_o, "expected_cost": d_e, "n_cells": n_total, "pairs": pairs}


def _records(detail: dict, info: dict, whole: bool, ids, n_view: int) -> tuple[list, dict | None, str, str]:
    """The pair records the heatmap describes (an OT run's recomputed on the view), its scope and where."""
    records = list(detail.get("rater_pairs") or [])
    if info["method"] == OT and detail.get("pair_sample_scores") is not None:
        if whole:
            return records, None, "all samples", ""
        va = view_alpha_ot(detail["pair_sample_scores"], records, ids)
        override = {p: {"alpha_ot": v["alpha"], "n_samples": v["n_samples"]} for p, v in va["pairs"].items()}
        return records, override, f"{count_text(n_view)} in view; chance level of the whole run", " in view"
    return records, None, "whole run" if whole else "whole run, not recomputed on views", ""


def _support_line(records: list, min_support: int) -> str:
    shared = [int(r.get("n_shared_samples") or 0) for r in records]
    if not shared:
        return ""
    two = sum(1 for s in shared if s >= 2)
    return (f"Each cell rests on its pair's shared samples: {len(shared):,} pairs share a sample, a median "
            f"{median_count(statistics.median(shared))} each; {two:,} share two or more. Hover a cell for its support; "
            f"*Min. shared samples* hides the thinner pairs (now {min_support}).")


def _class_pair_note(records: list, value: str) -> str:
    """What a class run's heatmap cells are, and its lowest pair (the pooled α counts every rater at once)."""
    text = ("Each cell is Cohen's κ of two raters on the samples both rated (1 = always the same class, 0 = as "
            "often as chance); the headline α pools all raters. An empty cell: the two never rated a sample "
            "together (no data).")
    defined = [r for r in records if is_finite(r.get(value))]
    if defined:
        low = min(defined, key=lambda r: (float(r[value]), str(r["rater_a"]), str(r["rater_b"])))
        text += (f" Lowest pair: {low['rater_a']} × {low['rater_b']}, κ {sig3(low[value])} on "
                 f"{count_text(int(low.get('n_shared_samples') or 0), 'shared sample')}.")
    return text


def _choose(records: list, name: str, ordered: list, options: dict) -> tuple[list, str]:
    rule, k = options["pair_rule"], options["pair_k"]
    rater = options["pair_rater"]
    if rule == "rater" and rater not in ordered:
        rule = "shared"
    chosen = select_pair_raters(records, name, ordered, rule, k, rater, options["min_support"])
    if len(chosen) == len(ordered):
        return chosen, f"all {count_text(len(ordered), 'rater')}"
    what = {"shared": f"the {len(chosen)} raters who share the most samples with each other",
            "lowest": f"the {len(chosen)} raters of the lowest pairs",
            "rater": f"{rater} and the {len(chosen) - 1} raters it shares the most samples with"}[rule]
    return chosen, f"{what} (of {len(ordered)})"


def pair_section(samples, info: dict, results: dict, whole: bool, ids, n_view: int, options: dict,
                 selected: list | None, clickable: bool) -> dict | None:
    """The rater-pair heatmap of the run (``None`` for methods without one).

    Returns:
        ``{"matrix", "figure", "note" (markdown: why the cells differ from the headline, their
        support), "raters" (every rater, natural order, for the partner choice), "rules",
        "has_observed" (KαLOS: the cells can be coloured by observed agreement)}``.
    """
    from agreement.fo.rater_counts import kalos_pair_counts

    view, detail = METHOD_VIEWS[info["method"]], results.get("detail") or {}
    if not (view.get("pair_matrix") and detail.get("raters") and detail.get("rater_pairs") is not None):
        return None
    name, title = view["pair_matrix"]
    records, override, scope, where = _records(detail, info, whole, ids, n_view)
    names = [str(r) for r in detail["raters"]]
    ordered = [names[i] for i in (detail.get("rater_order") or range(len(names)))]
    shown = records if override is None else [
        {**r, name: o.get(name), "n_shared_samples": int(o.get("n_samples", 0))} for r in records
        if (o := override.get(f"{r['rater_a']}|{r['rater_b']}") or override.get(f"{r['rater_b']}|{r['rater_a']}"))]
    chosen, rule_text = _choose(shown, name, ordered, options)
    counts = kalos_pair_counts(samples, info) if info["method"] == KALOS else None
    pm = pair_matrix(detail, name, title, override=override, raters=chosen, counts=counts,
                     min_support=options["min_support"], rule_text=rule_text)
    if pm is None:
        return None
    value_name = view.get("pair_value", name)
    contrast = pairwise_contrast([r.get(name) for r in shown], (results.get("summary") or {}).get(
        POOLED_KEYS.get(info["method"], "")), [r.get("n_shared_samples") for r in shown])
    obs_median = obs_pooled = None
    if counts:
        shares = [c["n_agree"] / c["n_units"] for c in counts.values() if c["n_units"]]
        obs_median = statistics.median(shares) if shares else None
        units = sum(c["n_units"] for c in counts.values())
        obs_pooled = sum(c["n_agree"] for c in counts.values()) / units if units else None
    if info["method"] == CLASSES:  # κ and α on one class per sample: no objects, no "no object" to explain
        note = _class_pair_note(shown, name)
    else:
        note = contrast_note(contrast, value_name, obs_median, obs_pooled, kalos=info["method"] == KALOS)
    note = "\n\n".join(t for t in (note, _support_line(shown, options["min_support"])) if t)
    stat = options["pair_stat"] if counts is not None else "value"
    fig = pair_matrix_figure(pm, value_name, scope, clickable, where=where, selected=selected, statistic=stat,
                             show_support=options["cell_support"])
    return {"matrix": pm, "figure": fig, "note": note, "raters": sorted(names, key=natural_key), "rules": PAIR_RULES,
            "has_observed": counts is not None, "contrast": contrast, "observed_median": obs_median,
            "observed_pooled": obs_pooled}
