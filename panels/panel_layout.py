"""The layout of the "Annotator Agreement" panel (its ``render``), from what the panel remembers.

The figures' traces go in the layout, not in panel data or state (see
:mod:`.agreement_panel`); the buttons and plots call back the panel's event
handlers.
"""

from __future__ import annotations

import fiftyone.operators.types as types

from agreement.fo.panel.rater_tables import natural_key

from .panel_markdown import EMPTY_HELP
from .panel_memory import panel_memory_of
from .panel_raters import render_pair_controls, render_rater_table
from .panel_relabel import render_relabel
from .panel_review import render_review
from .panel_video import render_video


def render_panel(handlers, ctx):
    """The panel's layout, from its memory (``handlers``: the panel, whose methods handle its events)."""
    panel = types.Object()
    state = ctx.panel.state
    mem = panel_memory_of(ctx)
    keys = (mem.runs if mem.runs is not None else state.runs) or []
    shown = mem.shown
    if not keys:
        if state.has_label_fields is False:
            panel.md(
                "**No label fields**\n\nThis dataset has no `Detections` or `Polylines` fields, so there is "
                "nothing to compare yet. Import multi-rater annotations with **Annotator Agreement: import "
                "multi-rater COCO**, or add one label field per rater.",
                name="empty",
            )
        else:
            panel.md(EMPTY_HELP, name="empty")
        return types.Property(panel, view=types.GridView(orientation="vertical", align_x="left"))
    choices = types.DropdownView()
    for k in keys:
        choices.add_choice(k, label=mem.run_labels.get(k, k))
    panel.enum("run_key", keys, default=mem.run_key or state.run_key, label="Run", view=choices,
               on_change=handlers.on_change_run)
    if mem.modal is not None:  # a sample is open: explain its labels (the dashboard is behind the modal)
        render_review(handlers, panel, mem)  # a patch of the review queue: its decision buttons
        if mem.modal["n_disagree"]:
            panel.btn("show_disagreeing", label=f"Show only the {mem.modal['n_disagree']} disagreeing labels "
                      "of this sample", on_click=handlers.on_show_disagreeing, variant="outlined")
        panel.str("labels_md", view=types.MarkdownView())
        render_video(handlers, panel, mem)  # a run on videos: the open video's timeline
        return types.Property(panel, view=types.GridView(orientation="vertical", align_x="left", gap=2))
    if shown.get("error"):
        panel.view("error", types.Warning(label=shown["error"]))
    panel.str("view_error", view=types.MarkdownView())
    panel.str("view_note", view=types.MarkdownView())
    row = panel.h_stack("view_actions", gap=1, align_x="left")
    if not mem.whole or mem.drill:
        row.btn("whole_dataset", label="Show the whole dataset", on_click=handlers.on_whole_dataset,
                variant="outlined")
    if mem.drill:
        row.btn("clear_drill", label="Undo the panel's drill-down", on_click=handlers.on_clear_drill,
                variant="outlined")
    panel.str("drill_md", view=types.MarkdownView())
    render_review(handlers, panel, mem)  # the review queue is loaded: where the review stands
    if not shown.get("has_cards"):
        return types.Property(panel, view=types.GridView(orientation="vertical", align_x="left", gap=2))
    panel.str("summary_md", view=types.MarkdownView())
    render_relabel(handlers, panel, mem)  # plan raters, suggest, send, load (issue 52)
    panel.btn("toggle_compare", label="Stop comparing" if mem.compare_on else
              "Compare with another run of this method", on_click=handlers.on_toggle_compare, variant="outlined")
    if mem.compare_on and mem.compare:
        cmp_choices = types.DropdownView()
        for k in mem.compare["others"]:
            cmp_choices.add_choice(k, label=k)
        panel.enum("compare_key", mem.compare["others"], default=mem.compare["key"], label="Compare with",
                   view=cmp_choices, on_change=handlers.on_change_compare_key)
        panel.str("compare_table", view=types.MarkdownView())
        _plot(panel, mem, "compare_hist", mem.compare["figures"])
        panel.str("compare_md", view=types.MarkdownView())
        _plot(panel, mem, "compare_scatter", mem.compare["figures"], on_click=handlers.on_scatter_click,
                   on_selected=handlers.on_scatter_select)
    elif mem.compare_on:
        panel.str("compare_md", view=types.MarkdownView())
    if mem.consensus is not None:
        _render_consensus(handlers, panel, mem)
    if shown.get("score_field"):
        _plot(panel, mem, "histogram", on_click=handlers.on_histogram_click)
        row = panel.h_stack("sort_actions", gap=1, align_x="left")
        row.btn("sort_lowest", label="Load the scored samples, lowest agreement first",
                on_click=handlers.on_sort_lowest, variant="outlined")
        panel.str("undefined_md", view=types.MarkdownView())
        if mem.undefined:
            undef = panel.h_stack("undefined_actions", gap=1, align_x="left")
            undef.btn("show_unscored", label="Load the samples without a score", on_click=handlers.on_show_unscored,
                      variant="outlined")
            for i, g in enumerate(mem.undefined[:3]):
                short = g["reason"] if len(g["reason"]) <= 40 else g["reason"][:38] + "…"
                undef.btn(f"show_unscored_{i}", label=f"{g['count']}: {short}", on_click=handlers.on_show_unscored,
                          params={"reason": g["reason"]}, variant="outlined")
        render_video(handlers, panel, mem)  # a run on videos: a video's timeline and clips
    if mem.raters and not mem.raters["consensus"]:
        render_rater_table(handlers, panel, mem)
    per_rater = [f"bars_{i}" for i in range(shown.get("n_bars", 0)) if (mem.figures.get(f"bars_{i}") or {}).get("per_rater")]
    for name in per_rater:  # beside the rater table: its lowest and highest raters
        _bars(handlers, panel, mem, name)
    if "pair_matrix" in mem.figures:
        render_pair_controls(handlers, panel, mem)
        clickable = mem.figures["pair_matrix"].get("click")
        _plot(panel, mem, "pair_matrix", **({"on_click": handlers.on_pair_click} if clickable else {}))
    for i in range(shown.get("n_bars", 0)):
        if f"bars_{i}" not in per_rater:
            _bars(handlers, panel, mem, f"bars_{i}")
    for i in range(shown.get("n_curves", 0)):
        _plot(panel, mem, f"curve_{i}")
    return types.Property(panel, view=types.GridView(orientation="vertical", align_x="left", gap=2))


def _bars(handlers, panel, mem, name: str) -> None:
    """A bar chart, its bars clickable when they are raters (vitality) or classes."""
    click = (mem.figures.get(name) or {}).get("click")
    handler = {"vitality": handlers.on_vitality_click, "class": handlers.on_class_click}.get(click) if click else None
    _plot(panel, mem, name, **({"on_click": handler} if handler else {}))


def _render_consensus(handlers, panel, mem) -> None:
    """The review-queue button and note, the rater report (sortable, :mod:`.panel_raters`) and one rater's
    confusion matrix."""
    cons = mem.consensus
    n = cons["n_flagged"]
    what = "sample" if cons.get("samples") else "consensus label"  # a class consensus: one label per sample
    label = (f"Review queue: the {n:,} flagged {what}{'s' if n != 1 else ''}, least confident first"
             if n else f"Review queue (no {what} in view is flagged)")
    panel.btn("review_queue", label=label, on_click=handlers.on_review_queue, variant="contained")
    panel.str("review_md", view=types.MarkdownView())
    render_rater_table(handlers, panel, mem)
    if cons["raters"]:
        choices = types.DropdownView()
        for r in sorted(cons["raters"], key=natural_key):
            choices.add_choice(r, label=r)
        panel.enum("consensus_rater", cons["raters"], default=cons["rater"], label="Confusion matrix of rater",
                   view=choices, on_change=handlers.on_change_consensus_rater)
    _plot(panel, mem, "confusion")


def _plot(panel, mem, name: str, figures: dict | None = None, **handlers):
    fig = (figures or mem.figures).get(name)
    if fig is None:
        return
    # the traces go in the view, not in panel data: the App stores a plot's data in its workspace, and
    # a workspace update drops the sidebar filters (see the docstring of .agreement_panel)
    panel.plot(f"plot_{name}", data=fig["traces"], layout=fig["layout"], config=fig["config"], **handlers)
