"""Rater tables and per-rater charts for crowds of hundreds of raters (no FiftyOne).

One row per rater, from the run results and the run's label counts: each
method declares its tables (columns and rows, see
:class:`agreement.fo.runs.method_spec.RaterTable`), built from the helpers here
(:func:`row_texts`, :func:`partner_means`, :func:`count_columns`);
:data:`RATER_COLUMNS` lists every declared table's columns by its name.
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
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agreement.reporting.figures.base import add_subtitle, count_text, is_finite, plural, sig3

__all__ = [
    "DEFAULT_OPTIONS",
    "MAX_BARS",
    "MAX_ROWS",
    "PARTNERS",
    "RATER_COLUMNS",
    "Column",
    "column_legend",
    "count_columns",
    "f1_score",
    "natural_key",
    "partner_means",
    "rater_options",
    "rater_table_markdown",
    "row_texts",
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


def count_columns(labels: str = "its labels") -> tuple[Column, ...]:
    """The columns of a rater's labels and assigned samples (``labels`` says what its labels are)."""
    return (Column("n_labels", "labels", True, True, labels),
            Column("n_samples", "samples", True, True, "the samples assigned to it"))


#: The column of the raters a rater shared a sample with.
PARTNERS = Column("n_partners", "partners", True, True, "raters it shared a sample with")


class _DeclaredColumns(Mapping):
    """Table name -> columns of every rater table the declared methods offer (read from the registry when
    first used: :attr:`agreement.fo.runs.method_spec.MethodHooks.rater_tables`)."""

    def _tables(self) -> dict[str, tuple[Column, ...]]:
        from agreement.fo.methods import declarations

        return {t.name: tuple(t.columns) for d in declarations() for t in d.hooks.rater_tables}

    def __getitem__(self, name: str) -> tuple[Column, ...]:
        return self._tables()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._tables())

    def __len__(self) -> int:
        return len(self._tables())


#: The columns of each declared rater table (by its name: the method marker, or a variant of it), the default
#: sort column first, each with what it means.
RATER_COLUMNS: Mapping[str, tuple[Column, ...]] = _DeclaredColumns()
#: The panel's rater and pair controls, and their defaults.
DEFAULT_OPTIONS: dict[str, Any] = {
    "sort": None, "worst_first": True, "filter": "", "min_labels": 5, "rows": 15, "bars_k": 10,
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
    from agreement.reporting.figures.pair_heatmap import (
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


def row_texts(row: dict, columns: Sequence[Column]) -> dict:
    """``row`` with its ``"text"``: per column, the value as the table writes it (a count with thousands
    separators, three significant figures, ``"< 0.001"`` for a small non-zero value, ``"—"`` for none).

    Args:
        row: one rater's values by column key.
        columns: the table's columns.

    Returns:
        ``row`` itself, its ``"text"`` set.
    """
    row["text"] = {c.key: (f"{int(row[c.key]):,}" if c.integer and is_finite(row.get(c.key)) else
                           "< 0.001" if is_finite(row.get(c.key)) and 0 < abs(row[c.key]) < 1e-3 else
                           "—" if row.get(c.key) is None else sig3(row[c.key])) for c in columns}
    return row


def partner_means(records: list, value: str | None, weight_key: str) -> dict[str, dict]:
    """Per rater, over the rater-pair ``records`` it is in: its number of partners ``"n"``, the samples it
    shared ``"shared"`` and the ``weight_key``-weighted sum ``"num"`` and weight ``"den"`` of the pairs'
    ``value`` (its weighted mean is ``num / den``; undefined values left out).

    Args:
        records: rater-pair records (``rater_a``, ``rater_b``, ``n_shared_samples``, the values).
        value: the record key to average (``None``: counts only).
        weight_key: the record key of each pair's weight.

    Returns:
        ``{rater: {"n", "shared", "num", "den"}}``.
    """
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
    what = (f"{title}: the first {len(shown)} of {count_text(len(result['rows']), what='rater')}, by *{sort.heading}*, "
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
        idx: list[int | None] = list(allowed)
        line = None if len(allowed) == n else f"the {len(allowed)} of {n} {what} with enough labels"
    else:
        y = traces[0]["y"]
        valued = sorted((i for i in allowed if is_finite(y[i])), key=lambda i: (float(y[i]), natural_key(x[i])))
        if len(valued) <= 2 * k:
            idx = [*valued]
        else:
            idx = [*valued[:k], None, *valued[-k:]]
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
