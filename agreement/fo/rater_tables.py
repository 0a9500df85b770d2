"""Rater tables and per-rater charts for crowds of hundreds of raters (no FiftyOne).

One row per rater, from the run results and the run's label counts: the
consensus run's rater report (against the consensus), KαLOS (vitality, α
without the rater, agreement with its partners) and OT (its pairs' αOT).
:func:`sort_rater_rows` orders them by any column, worst first by default
(undefined values last, ties in natural name order: ``w2`` before ``w10``),
keeps the raters with at least a minimum number of labels and whose name
contains a filter; :func:`rater_table_markdown` writes the first rows as a
table narrow enough for the panel's column (the rater and at most five
numbers), with a legend of exactly the columns it shows (each column carries
its own description, so the two cannot differ). :func:`top_bottom_bars` cuts
a per-rater bar chart to its ``k`` lowest and ``k`` highest raters.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from agreement.fo.figure_base import add_subtitle, count_text, is_finite, plural, sig3

__all__ = [
    "CLASS_CONSENSUS",
    "DEFAULT_OPTIONS",
    "MAX_BARS",
    "MAX_ROWS",
    "RATER_COLUMNS",
    "Column",
    "class_consensus_rater_rows",
    "class_rater_rows",
    "column_legend",
    "consensus_rater_rows",
    "f1_score",
    "kalos_rater_rows",
    "natural_key",
    "ot_rater_rows",
    "rater_options",
    "rater_table_markdown",
    "sort_rater_rows",
    "top_bottom_bars",
    "visible_columns",
]

MAX_ROWS = 100
MAX_BARS = 25


@dataclass(frozen=True)
class Column:
    """A rater-table column: the row key, its (short) heading, which direction is better, whether it is a
    count, and what it means (its entry in the legend under the table, see :func:`column_legend`)."""

    key: str
    heading: str
    higher_is_better: bool = True
    integer: bool = False
    description: str = ""


def _counts(labels: str = "its labels") -> tuple[Column, ...]:
    return (Column("n_labels", "labels", True, True, labels),
            Column("n_samples", "samples", True, True, "the samples assigned to it"))


_PARTNERS = Column("n_partners", "partners", True, True, "raters it shared a sample with")
#: The rater table of a consensus run on classes (its report holds competences, not sensitivities).
CLASS_CONSENSUS = "iaa.consensus/classes"
#: The columns of each method's rater table, the default sort column first, each with what it means.
RATER_COLUMNS: dict[str, tuple[Column, ...]] = {
    "iaa.consensus": (
        Column("f1", "F1", description="harmonic mean of sensitivity and precision"),
        Column("sensitivity", "sensitivity",
               description="share of the consensus objects on its samples that the rater drew"),
        Column("precision", "precision", description="share of its labels that are real objects"),
        Column("false_positive_rate", "FP / sample", False, description="false positives per assigned sample"),
        Column("localisation_error", "loc. error", False,
               description="localisation error, mean 1 − IoU to the consensus label"),
        Column("agreement", "agrees", description="share of its labels in a consensus label of their class"),
    ) + _counts(),
    "iaa.kalos": (
        Column("vitality", "vitality",
               description="global α minus α without the rater (< 0: the rater lowers agreement)"),
        Column("alpha_without", "α without", False, description="the global α without the rater"),
        Column("partner_agreement", "agrees",
               description="share of the objects it or a partner drew on shared samples that both drew alike "
                           "(observed agreement, pooled over its pairs)"),
        _PARTNERS,
    ) + _counts(),
    "iaa.ot_agreement": (
        Column("pair_alpha", "pair αOT", description="mean αOT of its rater pairs, weighted by their shared samples"),
        _PARTNERS,
        Column("n_shared", "shared", True, True, "samples shared, summed over its pairs"),
    ) + _counts(),
    "iaa.class_agreement": (
        Column("vitality", "vitality", description="α minus α without the rater (< 0: the rater lowers agreement)"),
        Column("alpha_without", "α without", False, description="α without the rater"),
        Column("pair_kappa", "mean κ", description="Cohen's κ with its partners, weighted by their shared samples"),
        Column("partner_agreement", "agrees",
               description="share of the shared samples where it and a partner gave the same class (pooled over "
                           "its pairs)"),
        Column("majority_agreement", "with majority",
               description="share of its samples where it gave the majority class of the other raters (ties "
                           "shared)"),
        _PARTNERS,
    ) + _counts("the classes it gave"),
    CLASS_CONSENSUS: (
        Column("competence", "competence",
               description="the model's estimate that the rater gives the true class (Dawid–Skene: the diagonal "
                           "of its confusion matrix, weighted by the classes' prior; MACE: its competence; "
                           "majority: its agreement with the consensus)"),
        Column("agreement", "agrees", description="share of its classes equal to the consensus"),
        Column("n_labels", "labels", True, True, "the classes it gave"),
    ),
}
#: The panel's rater and pair controls, and their defaults.
DEFAULT_OPTIONS = {"sort": None, "worst_first": True, "filter": "", "min_labels": 5, "rows": 15, "bars_k": 10,
                   "pair_rule": "shared", "pair_k": 10, "pair_rater": None, "min_support": 1, "pair_stat": "value",
                   "cell_support": False}


def _int(v, lo: int, hi: int, default: int) -> int:
    try:
        return min(hi, max(lo, int(v)))
    except (TypeError, ValueError):
        return default


def rater_options(options: dict | None) -> dict:
    """``options`` completed with :data:`DEFAULT_OPTIONS` and brought into range (counts clamped, unknown
    choices replaced by the default), so a control's odd value never breaks the panel."""
    from agreement.fo.pair_heatmap import (
        MAX_HEATMAP_RATERS,
        PAIR_RULES,
        PAIR_STATISTICS,
    )

    o = {**DEFAULT_OPTIONS, **{k: v for k, v in (options or {}).items() if v is not None}}
    d = DEFAULT_OPTIONS
    return {"sort": o["sort"] if isinstance(o["sort"], str) else None, "worst_first": bool(o["worst_first"]),
            "filter": str(o["filter"] or "").strip(), "min_labels": _int(o["min_labels"], 0, 10**9, d["min_labels"]),
            "rows": _int(o["rows"], 1, MAX_ROWS, d["rows"]), "bars_k": _int(o["bars_k"], 1, MAX_BARS, d["bars_k"]),
            "pair_rule": o["pair_rule"] if o["pair_rule"] in PAIR_RULES else d["pair_rule"],
            "pair_k": _int(o["pair_k"], 2, MAX_HEATMAP_RATERS, d["pair_k"]),
            "pair_rater": str(o["pair_rater"]) if o["pair_rater"] else None,
            "min_support": _int(o["min_support"], 1, 10**9, d["min_support"]),
            "pair_stat": o["pair_stat"] if o["pair_stat"] in PAIR_STATISTICS else d["pair_stat"],
            "cell_support": bool(o["cell_support"])}


def natural_key(name: str) -> tuple:
    """Sort key of a rater name with its numbers compared as numbers: ``w2`` < ``w10`` < ``w100``."""
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p.lower()) for p in re.split(r"(\d+)", str(name)) if p)


def f1_score(sensitivity, precision) -> float | None:
    """``2 s p / (s + p)``, the harmonic mean of sensitivity and precision, in ``[0, 1]``; ``None`` when
    either is undefined, ``0`` when both are 0."""
    if not (is_finite(sensitivity) and is_finite(precision)):
        return None
    s, p = float(sensitivity), float(precision)
    return 0.0 if s + p == 0 else 2 * s * p / (s + p)


def _texts(row: dict, columns) -> dict:
    row["text"] = {c.key: (f"{int(row[c.key]):,}" if c.integer and is_finite(row.get(c.key)) else
                           "< 0.001" if is_finite(row.get(c.key)) and 0 < abs(row[c.key]) < 1e-3 else
                           "—" if row.get(c.key) is None else sig3(row[c.key])) for c in columns}
    return row


def consensus_rater_rows(report: dict) -> list[dict]:
    """A consensus run's ``detail["rater_report"]`` as rows, with each rater's F1 (:func:`f1_score`)."""
    cols = RATER_COLUMNS["iaa.consensus"]
    rows = []
    for rater, entry in report.items():
        row = {"rater": str(rater), **{c.key: entry.get(c.key) for c in cols if c.key != "f1"}}
        row["f1"] = f1_score(entry.get("sensitivity"), entry.get("precision"))
        rows.append(_texts(row, cols))
    return rows


def class_consensus_rater_rows(report: dict) -> list[dict]:
    """A class consensus run's ``detail["rater_report"]`` as rows: competence, agreement with the consensus,
    labels."""
    cols = RATER_COLUMNS[CLASS_CONSENSUS]
    return [_texts({"rater": str(r), "competence": e.get("competence"), "agreement": e.get("agreement"),
                    "n_labels": e.get("labels")}, cols) for r, e in report.items()]


def class_rater_rows(detail: dict, counts: dict) -> list[dict]:
    """A class agreement run's raters: vitality and α without them (``detail["rater_vitality"]``), their
    mean κ and pooled observed agreement with their partners (``detail["rater_pairs"]``, weighted by shared
    samples), partners, labels and samples (``counts``)."""
    cols = RATER_COLUMNS["iaa.class_agreement"]
    vit = detail.get("rater_vitality") or {}
    vitality = dict(zip(vit.get("raters") or [], vit.get("vitality") or []))
    without = dict(zip(vit.get("raters") or [], vit.get("alpha_without") or []))
    records = list(detail.get("rater_pairs") or [])
    kappa = _partners(records, "kappa", "n_shared_samples")
    agree = _partners(records, "observed_agreement", "n_shared_samples")
    maj = detail.get("rater_majority") or {}
    majority = dict(zip(maj.get("raters") or [], maj.get("agreement") or []))
    rows = []
    for r in (str(x) for x in detail.get("raters") or []):
        k, a = kappa.get(r), agree.get(r)
        row = {"rater": r, "vitality": vitality.get(r), "alpha_without": without.get(r),
               "pair_kappa": k["num"] / k["den"] if k and k["den"] else None,
               "partner_agreement": a["num"] / a["den"] if a and a["den"] else None,
               "majority_agreement": majority.get(r),
               "n_partners": k["n"] if k else None,
               "n_labels": (counts.get(r) or {}).get("labels"), "n_samples": (counts.get(r) or {}).get("samples")}
        rows.append(_texts(row, cols))
    return rows


def _partners(records: list, value: str | None, weight_key: str) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for rec in records:
        n = int(rec.get(weight_key) or 0)
        for r in (str(rec["rater_a"]), str(rec["rater_b"])):
            d = out.setdefault(r, {"n": 0, "shared": 0, "num": 0.0, "den": 0.0})
            d["n"] += 1
            d["shared"] += int(rec.get("n_shared_samples") or 0)
            if value is not None and is_finite(rec.get(value)) and n:
                d["num"] += float(rec[value]) * n
                d["den"] += n
    return out


def kalos_rater_rows(detail: dict, counts: dict, pair_counts: dict | None) -> list[dict]:
    """A KαLOS run's raters: vitality and α without them (``detail["rater_vitality"]``), agreement with
    their partners (pooled observed agreement of their pairs, from ``pair_counts``), labels and samples
    (``counts``: :func:`agreement.fo.rater_counts.rater_label_counts`)."""
    cols = RATER_COLUMNS["iaa.kalos"]
    vit = detail.get("rater_vitality") or {}
    vitality = dict(zip(vit.get("raters") or [], vit.get("vitality") or []))
    without = dict(zip(vit.get("raters") or [], vit.get("alpha_without") or []))
    agree: dict[str, list[int]] = {}
    for key, c in (pair_counts or {}).items():
        for r in key.split("|"):
            a = agree.setdefault(r, [0, 0, 0])
            a[0], a[1], a[2] = a[0] + int(c["n_agree"]), a[1] + int(c["n_units"]), a[2] + 1
    rows = []
    for r in (str(x) for x in detail.get("raters") or []):
        g = agree.get(r)
        row = {"rater": r, "vitality": vitality.get(r), "alpha_without": without.get(r),
               "partner_agreement": g[0] / g[1] if g and g[1] else None, "n_partners": g[2] if g else None,
               "n_labels": (counts.get(r) or {}).get("labels"), "n_samples": (counts.get(r) or {}).get("samples")}
        rows.append(_texts(row, cols))
    return rows


def ot_rater_rows(detail: dict, counts: dict) -> list[dict]:
    """An OT run's raters: their pairs' αOT (weighted by shared samples), partners, shared samples,
    labels and samples."""
    cols = RATER_COLUMNS["iaa.ot_agreement"]
    part = _partners(list(detail.get("rater_pairs") or []), "alpha_ot", "n_shared_samples")
    rows = []
    for r in (str(x) for x in detail.get("raters") or []):
        p = part.get(r)
        row = {"rater": r, "pair_alpha": p["num"] / p["den"] if p and p["den"] else None,
               "n_partners": p["n"] if p else None, "n_shared": p["shared"] if p else None,
               "n_labels": (counts.get(r) or {}).get("labels"), "n_samples": (counts.get(r) or {}).get("samples")}
        rows.append(_texts(row, cols))
    return rows


def sort_rater_rows(rows: list[dict], column: Column, worst_first: bool = True, min_labels: int = 0,
                    name_filter: str = "") -> dict:
    """The rows ordered by ``column``: worst first (lowest first where higher is better) or best first;
    rows without a value last either way; ties in natural name order. Rows with fewer than
    ``min_labels`` labels (when the rows count labels) and rows whose rater does not contain
    ``name_filter`` (case-insensitive) are left out.

    Returns:
        ``{"rows", "n_total", "n_below_min", "n_filtered_out"}``.
    """
    kept, below, named_out = [], 0, 0
    needle = (name_filter or "").strip().lower()
    for r in rows:
        if needle and needle not in r["rater"].lower():
            named_out += 1
        elif min_labels and is_finite(r.get("n_labels")) and r["n_labels"] < min_labels:
            below += 1
        else:
            kept.append(r)
    ascending = worst_first == column.higher_is_better

    def key(r):
        v = r.get(column.key)
        if not is_finite(v):
            return (1, 0.0, natural_key(r["rater"]))
        return (0, float(v) if ascending else -float(v), natural_key(r["rater"]))

    return {"rows": sorted(kept, key=key), "n_total": len(rows), "n_below_min": below, "n_filtered_out": named_out}


def visible_columns(columns: tuple[Column, ...], sort_key: str, limit: int = 5) -> list[Column]:
    """The columns a table shows: the sort column first, then the others in order, at most ``limit``
    (the rater column comes on top of them): a panel column fits the rater and five numbers."""
    first = [c for c in columns if c.key == sort_key]
    return (first + [c for c in columns if c.key != sort_key])[:limit]


def column_legend(columns: Sequence[Column]) -> str:
    """What each of ``columns`` means, in their order (``*heading*: description; …``): the legend under a
    table, made from the columns it shows so that it names no other column and leaves none out."""
    parts = [f"*{c.heading}*: {c.description}" for c in columns]
    return "; ".join(parts) + "." if parts else ""


def rater_table_markdown(result: dict, columns: list[Column], sort: Column, worst_first: bool, rows: int,
                         min_labels: int, title: str, note: str = "", hidden: Sequence[Column] = ()) -> str:
    """The sorted rows (:func:`sort_rater_rows`) as a markdown table of the first ``rows``, headed by a
    line that says which raters it shows and how they are ordered.

    Under it: the legend of the shown ``columns`` (:func:`column_legend`), the ``hidden`` columns named
    (sorting by one shows it) and ``note``.
    """
    shown = result["rows"][:rows]
    order = "worst first" if worst_first else "best first"
    better = "higher is better" if sort.higher_is_better else "lower is better"
    what = (f"{title}: the first {len(shown)} of {count_text(len(result['rows']), 'rater')}, by *{sort.heading}*, "
            f"{order} ({better})")
    out = []
    if result["n_below_min"]:
        out.append(f"{result['n_below_min']:,} with fewer than {min_labels:,} {plural(min_labels, 'label')}")
    if result["n_filtered_out"]:
        out.append(f"{result['n_filtered_out']:,} not matching the name filter")
    if out:
        what += "; left out: " + ", ".join(out)
    if not shown:
        return what + ".\n\nNo rater left: lower the minimum number of labels or change the name filter."
    head = "| rater | " + " | ".join(c.heading for c in columns) + " |"
    align = "|:--|" + "--:|" * len(columns)
    body = ["| " + r["rater"] + " | " + " | ".join(
        (f"**{r['text'][c.key]}**" if c.key == sort.key else r["text"][c.key]) for c in columns) + " |" for r in shown]
    legend = column_legend(columns)
    if hidden:
        legend += f" Not shown: {', '.join(c.heading for c in hidden)} (sort by one to show it)."
    return "\n".join([what + ".", "", head, align, *body]) + "".join(f"\n\n{t.strip()}" for t in (legend, note) if t)


def _reindex(trace: dict, idx: list, n: int) -> dict:
    out = dict(trace)
    for k, v in trace.items():
        if isinstance(v, list) and len(v) == n:
            out[k] = [v[i] if i is not None else None for i in idx]
    if isinstance(trace.get("marker"), dict):
        out["marker"] = _reindex(trace["marker"], idx, n)
    return out


def top_bottom_bars(fig: dict, k: int, keep: set | None = None, what: str = "raters") -> dict:
    """A per-rater bar chart cut to its ``k`` lowest and ``k`` highest raters by the first trace's value.

    ``keep``: the raters that may be shown (e.g. those with enough labels;
    ``None``: all). With at most ``2k`` of them, all are shown in the chart's
    order; otherwise the lowest ``k`` (lowest first), a gap marked "…", and
    the highest ``k``. Raters without a value are neither. The subtitle says
    which are shown. The figure is copied, not changed.
    """
    traces = fig["traces"]
    x = list(traces[0]["x"])
    n = len(x)
    allowed = [i for i in range(n) if keep is None or x[i] in keep]
    if len(allowed) <= 2 * k:
        idx = allowed
        line = None if len(allowed) == n else f"the {len(allowed)} of {n} {what} with enough labels"
    else:
        y = traces[0]["y"]
        valued = sorted((i for i in allowed if is_finite(y[i])), key=lambda i: (float(y[i]), natural_key(x[i])))
        if len(valued) <= 2 * k:
            idx = valued
        else:
            idx = valued[:k] + [None] + valued[-k:]
        between = len(valued) - min(len(valued), 2 * k)
        line = (f"the {k} lowest and {k} highest of {len(allowed)} {what}" + (" with enough labels" if keep else "")
                + (f" ({between} in between at “…”)" if between else ""))
    new = []
    for t in traces:
        t2 = _reindex(t, idx, n)
        t2["x"] = [x[i] if i is not None else "…" for i in idx]
        new.append(t2)
    layout = {**fig["layout"], "title": dict(fig["layout"]["title"]), "margin": dict(fig["layout"]["margin"])}
    layout["xaxis"] = {**layout.get("xaxis", {}), "type": "category", "tickangle": -60 if len(idx) > 10 else 0}
    if line:
        add_subtitle(layout, line)
    return {**fig, "traces": new, "layout": layout}
