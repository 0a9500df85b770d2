"""The "Annotator Agreement" panel's drill-downs from its charts (mixed into the panel class): a histogram bar,
a heatmap cell, a rater's or class's bar, comparison points, the lowest-first and unscored samples, and the
open sample's disagreeing labels. Each builds a view with :mod:`agreement.fo.views.disagreements` or
:mod:`agreement.fo.panel.data` on the panel's base view and loads it with the panel's ``_drill``."""

from __future__ import annotations

from agreement.fo.panel.data import (
    METHOD_VIEWS,
    bin_view,
    lowest_first_view,
    sig3,
    unscored_view,
)

from .panel_host import PanelHost
from .panel_memory import panel_memory_of

__all__ = ["DrillEvents"]


def _score_field(info: dict) -> str | None:
    from agreement.fo.panel.data import score_field

    return score_field(info)


class DrillEvents(PanelHost):
    """The panel's chart drill-down handlers; they use the panel's ``_context`` and ``_drill``."""

    def on_histogram_click(self, ctx):
        """A click on a bar of the score histogram: the samples whose score falls in that bin."""
        key, info, base, base_stages = self._context(ctx)
        field = _score_field(info)
        idx = ctx.params.get("idx")
        if field is None or idx is None:
            return
        lo, hi = METHOD_VIEWS[info["method"]]["score_range"](info["params"])
        import numpy as np

        edges = np.linspace(lo, hi, 21).tolist()
        idx = int(idx)
        if not 0 <= idx < len(edges) - 1:
            return
        view = bin_view(base, field, edges[idx], edges[idx + 1], last=idx == len(edges) - 2)
        close = "]" if idx == len(edges) - 2 else ")"
        self._drill(ctx, base, base_stages, view,
                    f"samples with {field} in [{sig3(edges[idx])}, {sig3(edges[idx + 1])}{close}", bin_=idx)

    def on_pair_click(self, ctx):
        """A click on a rater-pair heatmap cell: the samples where the two raters agree least, lowest first."""
        from agreement.fo.panel.video_figures import is_frame_run
        from agreement.fo.views.disagreements import (
            DRILL_LIMIT,
            ViewError,
            rater_pair_scores,
            video_pair_scores,
            write_rater_pair_field,
        )

        key, info, base, base_stages = self._context(ctx)
        a, b = ctx.params.get("x"), ctx.params.get("y")
        if not a or not b or a == b:
            return
        a, b = sorted([str(a), str(b)])
        try:
            items = (video_pair_scores if is_frame_run(info) else rater_pair_scores)(base, key, a, b)
        except ViewError as e:
            ctx.ops.notify(str(e), variant="warning")
            return
        if not items:  # an empty cell: nothing to load (the grid would go blank)
            ctx.ops.notify(f"{a} and {b} have no scored sample in common in this view", variant="info")
            return
        chosen = items[:DRILL_LIMIT]
        view = base.select([sid for sid, _ in chosen], ordered=True)
        from agreement.fo.methods import hooks_of

        own = hooks_of(info["method"]).pair_sample_scores and not is_frame_run(info)  # per-sample pair scores
        what = (f"the {len(chosen)} samples (of {len(items)} shared) where {a} and {b} agree least, lowest "
                f"{'pair score' if own else 'sample score'} first")
        if chosen:
            what += f" (from {sig3(chosen[0][1])} to {sig3(chosen[-1][1])})"
        import os

        names = dict(zip(*view.values(["id", "filepath"]), strict=True))
        scores = [{"sample": os.path.basename(names.get(sid, sid)), "score": s} for sid, s in chosen]
        field = write_rater_pair_field(base, key, a, b) if own else None
        self._drill(ctx, base, base_stages, view, what, pair_scores=scores, pair=(a, b), pair_field=field)

    def on_vitality_click(self, ctx):
        """A click on a rater's bar: the rater's labels that match nobody (class runs: the samples where its
        class differs from another rater's)."""
        from agreement.fo.views.disagreements import unmatched_labels_view

        self._drill_bar(ctx, unmatched_labels_view, "{}'s labels that match nobody (alone in their unit)",
                        "the samples where {}'s class differs from another rater's")

    def on_class_click(self, ctx):
        """A click on a class's bar: the units of that class the raters disagree on (class runs: samples)."""
        from agreement.fo.views.disagreements import class_disagreement_view

        self._drill_bar(ctx, class_disagreement_view, "the {} units the raters disagree on",
                        "the samples where a rater said {} and the raters disagree")

    def _drill_bar(self, ctx, make_view, what: str, class_what: str) -> None:
        """Drills down to ``make_view(base, key, x)`` for the clicked bar ``x``, described as ``what.format(x)``
        (``class_what`` for a class agreement run, whose drill-downs are samples, not labels)."""
        key, info, base, base_stages = self._context(ctx)
        x = ctx.params.get("x")
        if x:
            from agreement.fo.methods import hooks_of

            text = class_what if hooks_of(info["method"]).drills_samples else what
            self._drill(ctx, base, base_stages, make_view(base, key, x), text.format(x))

    def on_scatter_click(self, ctx):
        """A click on a point of the comparison scatter: that sample."""
        sid = ctx.params.get("id")
        key, info, base, base_stages = self._context(ctx)
        if sid:
            self._drill(ctx, base, base_stages, base.select([sid]), f"sample {sid} (from the comparison)")

    def on_scatter_select(self, ctx):
        """A lasso or box selection in the comparison scatter: the selected samples."""
        ids = [p.get("id") for p in ctx.params.get("data") or [] if p.get("id")]
        key, info, base, base_stages = self._context(ctx)
        if ids:
            self._drill(ctx, base, base_stages, base.select(ids),
                        f"{len(ids)} samples selected in the comparison")

    def on_sort_lowest(self, ctx):
        """The scored samples, lowest agreement first."""
        key, info, base, base_stages = self._context(ctx)
        field = _score_field(info)
        if field is None:
            return
        descending = not METHOD_VIEWS[info["method"]].get("higher_is_better", True)
        view = lowest_first_view(base, field, descending)
        self._drill(ctx, base, base_stages, view, f"the scored samples, lowest agreement first (by {field})")

    def on_show_unscored(self, ctx):
        """The samples without a score (all of them, or those of one reason given in ``ctx.params``)."""
        key, info, base, base_stages = self._context(ctx)
        field = _score_field(info)
        if field is None:
            return
        reason = ctx.params.get("reason")
        mem = panel_memory_of(ctx)
        if reason is not None:
            group = next((g for g in mem.undefined if g["reason"] == reason), None)
            if group is None:
                return
            view = base.select(group["ids"])
            what = f"the {len(group['ids'])} samples without a score because: {reason}"
        else:
            view = unscored_view(base, field)
            what = "the samples without a score"
        self._drill(ctx, base, base_stages, view, what)

    def on_show_disagreeing(self, ctx):
        """The disagreeing labels of the open sample, the other labels hidden."""
        from agreement.fo.views.disagreements import disagreeing_labels_view

        key, info, base, base_stages = self._context(ctx)
        sid = ctx.current_sample
        if not sid:
            return
        view = disagreeing_labels_view(base, key, sample_id=sid, hide_other_labels=True)
        self._drill(ctx, base, base_stages, view, f"the disagreeing labels of sample {sid}")
