"""The panel's rater sections: the sortable rater table, the rater-pair heatmap and its note, and the
per-rater bar charts cut to the lowest and highest raters (part of
:func:`agreement.fo.panel.data.run_panel_data`).

What the user sets (sort column and order, name filter, minimum labels,
rows, bars, the heatmap's rule, size, minimum support, statistic) comes in
``options`` (:data:`agreement.fo.panel.rater_tables.DEFAULT_OPTIONS`); everything
returned is plain data, so a notebook user gets the same tables and figures::

    data = run_panel_data(dataset, "kalos", options={"min_labels": 10, "pair_rule": "lowest"})
    print(data["rater_table"]["markdown"])
"""

from __future__ import annotations

import statistics

from agreement.fo.panel.rater_tables import (
    natural_key,
    rater_table_markdown,
    sort_rater_rows,
    top_bottom_bars,
    visible_columns,
)
from agreement.reporting.figures.base import count_text, median_count
from agreement.reporting.figures.method_figures import METHOD_VIEWS
from agreement.reporting.figures.ot_view import view_alpha_ot
from agreement.reporting.figures.pair_heatmap import (
    PAIR_RULES,
    pair_matrix,
    pair_matrix_figure,
    select_pair_raters,
)
from agreement.reporting.pair_statistics import contrast_note, pairwise_contrast

__all__ = ["pair_section", "rater_table", "trim_rater_bars", "view_alpha_ot"]


def rater_table(samples, info: dict, results: dict, options: dict) -> dict | None:
    """The run's rater table (``None`` for methods without per-rater numbers).

    Returns:
        ``{"markdown", "rows" (sorted and filtered), "columns" [(key, heading)] (every sortable column),
        "sort" (key), "worst_first", "eligible" (raters with enough labels), "n_raters"}``.
    """
    from agreement.fo.methods import hooks_of

    detail = results.get("detail") or {}
    table = hooks_of(info["method"]).rater_table_of(detail)
    if table is None:
        return None
    rows = table.rows(samples, info, detail)
    if not rows:
        return None
    columns = table.columns
    sort = next((c for c in columns if c.key == options["sort"]), columns[0])
    result = sort_rater_rows(rows, sort, options["worst_first"], options["min_labels"], options["filter"])
    eligible = {r["rater"] for r in sort_rater_rows(rows, sort, True, options["min_labels"])["rows"]}
    shown = visible_columns(columns, sort.key)
    md = rater_table_markdown(result=result, columns=shown, sort=sort, worst_first=options["worst_first"],
                              rows=options["rows"], min_labels=options["min_labels"], title=table.title,
                              hidden=[c for c in columns if c not in shown])
    return {"markdown": md, "rows": result["rows"], "columns": [(c.key, c.heading) for c in columns],
            "sort": sort.key, "worst_first": options["worst_first"], "eligible": eligible, "n_raters": len(rows)}


def trim_rater_bars(bars: list[dict], options: dict, eligible: set | None) -> list[dict]:
    """The per-rater bar charts (``fig["per_rater"]``) cut to their ``bars_k`` lowest and highest raters
    among ``eligible`` (:func:`agreement.fo.panel.rater_tables.top_bottom_bars`); other charts unchanged."""
    return [top_bottom_bars(b, options["bars_k"], eligible) if b.get("per_rater") else b for b in bars]


def _records(detail: dict, hooks, whole: bool, ids, n_view: int) -> tuple[list, dict | None, str, str]:
    """The pair records the heatmap describes (recomputed on the view where the method can: an OT run's), its
    scope and where."""
    records = list(detail.get("rater_pairs") or [])
    if hooks.view_pair_values is not None and detail.get("pair_sample_scores") is not None:
        if whole:
            return records, None, "all samples", ""
        override = hooks.view_pair_values(detail, records, ids)
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


def _choose(records: list, name: str, ordered: list, options: dict) -> tuple[list, str]:
    rule, k = options["pair_rule"], options["pair_k"]
    rater = options["pair_rater"]
    if rule == "rater" and rater not in ordered:
        rule = "shared"
    chosen = select_pair_raters(records=records, value=name, raters=ordered, rule=rule, k=k, rater=rater,
                                min_support=options["min_support"])
    if len(chosen) == len(ordered):
        return chosen, f"all {count_text(len(ordered), what='rater')}"
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
    from agreement.fo.methods import hooks_of

    hooks = hooks_of(info["method"])
    view, detail = METHOD_VIEWS[info["method"]], results.get("detail") or {}
    if not (view.get("pair_matrix") and detail.get("raters") and detail.get("rater_pairs") is not None):
        return None
    name, title = view["pair_matrix"]
    records, override, scope, where = _records(detail, hooks, whole, ids, n_view)
    names = [str(r) for r in detail["raters"]]
    ordered = [names[i] for i in (detail.get("rater_order") or range(len(names)))]
    shown = records if override is None else [
        {**r, name: o.get(name), "n_shared_samples": int(o.get("n_samples", 0))} for r in records
        if (o := override.get(f"{r['rater_a']}|{r['rater_b']}") or override.get(f"{r['rater_b']}|{r['rater_a']}"))]
    chosen, rule_text = _choose(shown, name, ordered, options)
    counts = hooks.pair_counts(samples, info) if hooks.pair_counts is not None else None
    pm = pair_matrix(detail, name, title, override=override, raters=chosen, counts=counts,
                     min_support=options["min_support"], rule_text=rule_text)
    if pm is None:
        return None
    value_name = view.get("pair_value", name)
    contrast = pairwise_contrast([r.get(name) for r in shown], (results.get("summary") or {}).get(
        hooks.pooled_key or ""), n_shared=[r.get("n_shared_samples") for r in shown])
    obs_median = obs_pooled = None
    if counts:
        shares = [c["n_agree"] / c["n_units"] for c in counts.values() if c["n_units"]]
        obs_median = statistics.median(shares) if shares else None
        units = sum(c["n_units"] for c in counts.values())
        obs_pooled = sum(c["n_agree"] for c in counts.values()) / units if units else None
    if hooks.pair_note is not None:
        note = hooks.pair_note(shown, name, value_name, contrast, obs_median, obs_pooled)
    else:
        note = contrast_note(contrast, value_name, observed_median=obs_median, observed_pooled=obs_pooled, kalos=False)
    note = "\n\n".join(t for t in (note, _support_line(shown, options["min_support"])) if t)
    stat = options["pair_stat"] if counts is not None else "value"
    fig = pair_matrix_figure(pm, value_name, scope, clickable, where=where, selected=selected, statistic=stat,
                             show_support=options["cell_support"])
    return {"matrix": pm, "figure": fig, "note": note, "raters": sorted(names, key=natural_key), "rules": PAIR_RULES,
            "has_observed": counts is not None, "contrast": contrast, "observed_median": obs_median,
            "observed_pooled": obs_pooled}
