"""The "Annotator Agreement" panel's rater sections: the sortable rater table and the rater-pair heatmap,
with their controls (layout, panel data and the controls' events).

A crowd has hundreds of raters. The table starts with the raters that most
need attention (worst first, at least a minimum number of labels) and sorts by
any column, filters by name and shows a chosen number of rows; the per-rater
bar charts show the lowest and highest ``k``; the heatmap shows at most 20
raters picked by a rule, hides pairs below a minimum number of shared samples
and can colour its cells by the pairs' observed agreement (KαLOS). The data
comes from :mod:`agreement.fo.panel.raters`; what the user set is kept in
the panel's memory (``mem.options``), never written to panel state (see
:mod:`.agreement_panel`).

The controls' names (their ids in the App) are listed in ``CONTROLS``.
"""

from __future__ import annotations

import fiftyone.operators.types as types

from agreement.fo.panel.rater_tables import DEFAULT_OPTIONS, MAX_BARS, MAX_ROWS, rater_options
from agreement.reporting.figures.pair_heatmap import MAX_HEATMAP_RATERS, PAIR_RULES

from .panel_host import PanelHost
from .panel_memory import panel_memory_of

__all__ = ["CONTROLS", "RaterEvents", "refresh_raters", "render_rater_table", "render_pair_controls"]

#: Each control: its name (the App's id of the input), the option it sets and its event handler.
CONTROLS = {
    "rater_sort": ("sort", "on_change_rater_sort"), "rater_order": ("worst_first", "on_change_rater_order"),
    "rater_filter": ("filter", "on_change_rater_filter"), "rater_min_labels": ("min_labels", "on_change_min_labels"),
    "rater_rows": ("rows", "on_change_rater_rows"), "rater_bars_k": ("bars_k", "on_change_bars_k"),
    "pair_rule": ("pair_rule", "on_change_pair_rule"), "pair_k": ("pair_k", "on_change_pair_k"),
    "pair_rater": ("pair_rater", "on_change_pair_rater"), "pair_min_support": ("min_support", "on_change_min_support"),
    "pair_stat": ("pair_stat", "on_change_pair_stat"), "pair_cell_support": ("cell_support", "on_change_cell_support"),
}
_ORDERS = {"worst": "worst first", "best": "best first"}
_STATS = {"value": "the run's pairwise value", "observed": "observed agreement"}


def refresh_raters(pdata, mem, data: dict) -> None:
    """The rater table's and the heatmap note's panel data, and what the layout needs to know (memory)."""
    table, pairs = data.get("rater_table"), data.get("pairs")
    mem.raters = None if table is None else {"columns": table["columns"], "sort": table["sort"],
                                            "worst_first": table["worst_first"], "consensus": data["consensus"] is not None}
    mem.pairs = None if pairs is None else {"raters": pairs["raters"], "has_observed": pairs["has_observed"]}
    pdata.rater_table_md = table["markdown"] if table else ""
    pdata.pair_note_md = pairs["note"] if pairs else ""


def render_rater_table(handlers, panel, mem) -> None:
    """The rater table's controls (sort column and order, name filter, minimum labels, rows, bars per end)
    and the table itself."""
    if not mem.raters:
        return
    opts = rater_options(mem.options)
    cols = mem.raters["columns"]
    row = panel.h_stack("rater_controls", gap=1, align_x="left")
    sort = types.DropdownView()
    for key, heading in cols:
        sort.add_choice(key, label=heading)
    row.enum("rater_sort", [k for k, _ in cols], default=mem.raters["sort"], label="Sort raters by", view=sort,
             on_change=handlers.on_change_rater_sort)
    order = types.DropdownView()
    for key, label in _ORDERS.items():
        order.add_choice(key, label=label)
    row.enum("rater_order", list(_ORDERS), default="worst" if mem.raters["worst_first"] else "best", label="Order",
             view=order, on_change=handlers.on_change_rater_order)
    row.str("rater_filter", default=opts["filter"], label="Name contains", on_change=handlers.on_change_rater_filter)
    row2 = panel.h_stack("rater_limits", gap=1, align_x="left")
    row2.int("rater_min_labels", default=opts["min_labels"], min=0, label="Min. labels",
             on_change=handlers.on_change_min_labels)
    row2.int("rater_rows", default=opts["rows"], min=1, max=MAX_ROWS, label="Rows", on_change=handlers.on_change_rater_rows)
    if not mem.raters["consensus"]:
        row2.int("rater_bars_k", default=opts["bars_k"], min=1, max=MAX_BARS, label="Chart: lowest/highest",
                 on_change=handlers.on_change_bars_k)
    panel.str("rater_table_md", view=types.MarkdownView())


def render_pair_controls(handlers, panel, mem) -> None:
    """The heatmap's note (why its cells differ from the headline, their support) and controls (which
    raters, how many, minimum shared samples, what colours the cells, support in the cells)."""
    if not mem.pairs:
        return
    opts = rater_options(mem.options)
    panel.str("pair_note_md", view=types.MarkdownView())
    row = panel.h_stack("pair_controls", gap=1, align_x="left")
    rules = types.DropdownView()
    for key, label in PAIR_RULES.items():
        rules.add_choice(key, label=label)
    row.enum("pair_rule", list(PAIR_RULES), default=opts["pair_rule"], label="Heatmap shows", view=rules,
             on_change=handlers.on_change_pair_rule)
    row.int("pair_k", default=opts["pair_k"], min=2, max=MAX_HEATMAP_RATERS, label=f"Raters (≤ {MAX_HEATMAP_RATERS})",
            on_change=handlers.on_change_pair_k)
    if opts["pair_rule"] == "rater":
        names = types.DropdownView()
        for r in mem.pairs["raters"]:
            names.add_choice(r, label=r)
        row.enum("pair_rater", mem.pairs["raters"], default=opts["pair_rater"] or mem.pairs["raters"][0],
                 label="Rater", view=names, on_change=handlers.on_change_pair_rater)
    row2 = panel.h_stack("pair_options", gap=1, align_x="left")
    row2.int("pair_min_support", default=opts["min_support"], min=1, label="Min. shared samples",
             on_change=handlers.on_change_min_support)
    if mem.pairs["has_observed"]:
        stats = types.DropdownView()
        for key, label in _STATS.items():
            stats.add_choice(key, label=label)
        row2.enum("pair_stat", list(_STATS), default=opts["pair_stat"], label="Colour cells by", view=stats,
                  on_change=handlers.on_change_pair_stat)
    row2.bool("pair_cell_support", default=opts["cell_support"], label="Shared samples in cells",
              view=types.CheckboxView(), on_change=handlers.on_change_cell_support)


class RaterEvents(PanelHost):
    """The rater and heatmap controls' events: each sets its option in the panel's memory and redraws
    (mixed into :class:`.agreement_panel.AgreementPanel`, whose ``_option_changed`` does the redraw)."""

    def _set_option(self, ctx, option: str, value) -> None:
        mem = panel_memory_of(ctx)
        if mem.options.get(option, DEFAULT_OPTIONS.get(option)) == value:  # a control reporting its value
            return
        mem.options[option] = value
        self._option_changed(ctx, mem)

    def on_change_rater_sort(self, ctx) -> None:
        """Sorts the rater table by another column (worst first unless the order says otherwise)."""
        value = ctx.params.get("value")
        if value and value != (panel_memory_of(ctx).raters or {}).get("sort"):  # not the dropdown reporting its value
            self._set_option(ctx, "sort", value)

    def on_change_rater_order(self, ctx) -> None:
        """Worst first or best first."""
        self._set_option(ctx, "worst_first", ctx.params.get("value") != "best")

    def on_change_rater_filter(self, ctx) -> None:
        """Keeps the raters whose name contains the text."""
        self._set_option(ctx, "filter", str(ctx.params.get("value") or ""))

    def on_change_min_labels(self, ctx) -> None:
        """Leaves out the raters with fewer labels (table and per-rater charts)."""
        self._set_option(ctx, "min_labels", ctx.params.get("value"))

    def on_change_rater_rows(self, ctx) -> None:
        """How many rows of the table to show."""
        self._set_option(ctx, "rows", ctx.params.get("value"))

    def on_change_bars_k(self, ctx) -> None:
        """How many of the lowest and of the highest raters the per-rater charts show."""
        self._set_option(ctx, "bars_k", ctx.params.get("value"))

    def on_change_pair_rule(self, ctx) -> None:
        """Which raters the heatmap shows: most shared samples, lowest pairs, one rater's partners."""
        self._set_option(ctx, "pair_rule", ctx.params.get("value"))

    def on_change_pair_k(self, ctx) -> None:
        """How many raters the heatmap shows."""
        self._set_option(ctx, "pair_k", ctx.params.get("value"))

    def on_change_pair_rater(self, ctx) -> None:
        """The rater whose partners the heatmap shows."""
        self._set_option(ctx, "pair_rater", ctx.params.get("value"))

    def on_change_min_support(self, ctx) -> None:
        """Hides the pairs sharing fewer samples."""
        self._set_option(ctx, "min_support", ctx.params.get("value"))

    def on_change_pair_stat(self, ctx) -> None:
        """Colours the cells by the run's pairwise value or by the observed agreement."""
        self._set_option(ctx, "pair_stat", ctx.params.get("value"))

    def on_change_cell_support(self, ctx) -> None:
        """Writes each pair's shared samples in its cell, or not."""
        self._set_option(ctx, "cell_support", bool(ctx.params.get("value")))
