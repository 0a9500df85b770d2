"""The "Annotator Agreement" panel's sections of a semantic mask agreement run (``compute_mask_agreement``).

Below the run's cards and its per-sample Dice histogram (the method's
generic view), the panel draws, from :mod:`agreement.reporting.figures.masks`:

* **agreement per class**: pixel α and pooled Dice per class (whole run),
  lowest α first; a bar loads the samples where the raters' Dice on that
  class is lowest, lowest first;
* **mean Dice per rater pair and class**, on the samples the panel describes
  (the App's view with its sidebar filters); a cell loads the samples where
  that pair's Dice on that class is lowest, lowest first.

Both drill-downs are built by :func:`agreement.fo.views.disagreements.mask_dice_scores` on
that same view, so they add to the user's stages and filters as every other
drill-down of the panel does; the drilled bar or cell is outlined. Figures are
remembered in ``mem.figures`` (the layout draws them) and their traces are
also written to panel data (``mask_classes``, ``mask_pairs``) for SDK users.
"""

from __future__ import annotations

from agreement.fo.methods import hooks_of
from agreement.fo.panel.data import load_results
from agreement.reporting.figures.base import count_text, sig3

from .panel_host import PanelHost

__all__ = ["FIGURES", "MaskEvents", "refresh_masks", "render_masks", "mask_drill_text"]

#: The figures of a mask run, by name, and the event handler of a click on each.
FIGURES = {"mask_classes": "on_mask_class_click", "mask_pairs": "on_mask_cell_click"}


def _selection(mem, key: str) -> dict:
    """The class (and pair) of the panel's mask drill-down, when it was on run ``key``."""
    d = mem.drill or {}
    return (d.get("mask") or {}) if d.get("run") == key else {}


def refresh_masks(pdata, mem, base, data: dict) -> None:
    """A mask run's figures (memory, for the layout; traces in panel data); nothing for other runs.

    The per-class bars are the whole run's; the pair × class heatmap is computed on ``base`` (the App's
    view with its filters) unless it is the whole dataset."""
    info = data["info"]
    for name in FIGURES:
        mem.figures.pop(name, None)
    own = hooks_of(info["method"]).panel_figures  # the method's own figures (a mask run's)
    if own is None:
        return
    detail = load_results(base, info).get("detail") or {}
    whole = bool(data["whole"])
    ids = None if whole else set(base.values("id"))
    scope = "whole run" if whole else f"the {count_text(data['n_view'])} in view"
    sel = _selection(mem, info["key"])
    cell = (sel["pair"], sel["class"]) if sel.get("pair") else None
    for fig in own(detail, info, ids=ids, scope=scope, selected_class=None if cell else sel.get("class"),
                   selected_cell=cell):
        mem.figures[fig["name"]] = {"layout": fig["layout"], "config": fig["config"], "click": fig["click"],
                                    "traces": fig["traces"], "per_rater": False}
    for name in FIGURES:
        pdata.set(name, mem.figures[name]["traces"] if name in mem.figures else [])


def render_masks(handlers, panel, mem) -> None:
    """The mask run's figures at the end of the panel's dashboard (not with a sample open, nor without
    cards), each clickable."""
    if mem.modal is not None or not mem.shown.get("has_cards"):
        return
    for name, handler in FIGURES.items():
        fig = mem.figures.get(name)
        if fig is not None:  # the traces go in the view, not in panel data (see .agreement_panel)
            panel.plot(f"plot_{name}", data=fig["traces"], layout=fig["layout"], config=fig["config"],
                       on_click=getattr(handlers, handler))


def mask_drill_text(label_class: str, pair: str | None, chosen: list, n_all: int) -> str:
    """How the panel describes a mask drill-down of ``chosen`` ``(sample id, Dice)`` of ``n_all``."""
    who = f"{' and '.join(pair.split(' | '))}'s Dice" if pair else "the raters' lowest pair Dice"
    where = f"{pair} met on {label_class}" if pair else f"two raters met on {label_class}"
    text = (f"the {count_text(len(chosen))} (of {n_all:,} in view where {where}) with {who} on {label_class} "
            "lowest, lowest first")
    if chosen:
        text += f" (from {sig3(chosen[0][1])} to {sig3(chosen[-1][1])})"
    return text


class MaskEvents(PanelHost):
    """The clicks on a mask run's figures (mixed into the panel, whose ``_context`` and ``_drill`` they use)."""

    def on_mask_class_click(self, ctx) -> None:
        """A class bar: the samples where the raters' Dice on that class is lowest."""
        self._mask_drill(ctx, ctx.params.get("x"), None)

    def on_mask_cell_click(self, ctx) -> None:
        """A heatmap cell: the samples where that pair's Dice on that class is lowest."""
        pair = ctx.params.get("y")
        if pair:
            self._mask_drill(ctx, ctx.params.get("x"), str(pair))

    def _mask_drill(self, ctx, label_class, pair: str | None) -> None:
        """Loads the lowest-Dice samples of ``label_class`` (and ``pair``) on top of the panel's view."""
        from agreement.fo.views.disagreements import DRILL_LIMIT, ViewError

        key, info, base, base_stages = self._context(ctx)
        scores = hooks_of(info["method"]).class_scores  # per sample, the raters' lowest agreement on a class
        if label_class is None or label_class == "" or scores is None:
            return
        label_class = str(label_class)
        try:
            items = scores(base, key, label_class, pair)
        except ViewError as e:
            ctx.ops.notify(str(e), variant="warning")
            return
        if not items:  # nothing to load (the grid would go blank)
            who = f"{pair} never met" if pair else "no two raters met"
            ctx.ops.notify(f"{who} on {label_class} in this view", variant="info")
            return
        chosen = items[:DRILL_LIMIT]
        view = base.select([sid for sid, _ in chosen], ordered=True)
        self._drill(ctx, base, base_stages, view, mask_drill_text(label_class, pair, chosen, len(items)),
                    mask={"class": label_class, "pair": pair})
