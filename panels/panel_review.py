"""The review step in the "Annotator Agreement" panel: accept, reject, undo and next on the review queue.

When the current view is a consensus run's review queue (a patches view of
``{key}_consensus``, or for a class consensus the flagged samples, loaded by
the panel's **Review queue** button or the operator ``load_agreement_view``),
the panel shows where the review stands and, with a patch (sample) open, what the label is and the buttons **Accept**,
**Reject**, **Undo** and **Next**. A decision tags that one consensus label
(:func:`agreement.fo.views.review.review_labels`), never a rater's or another
run's, and opens the next undecided patch.
"""

from __future__ import annotations

import fiftyone.operators.types as types

from agreement.fo.views.review_item import review_markdown

__all__ = ["ReviewActions", "queue_run", "refresh_review", "render_review"]


def queue_run(ctx) -> str | None:
    """The consensus run whose review queue is the current view (patches of its consensus labels, or the
    flagged samples of a class consensus), or None."""
    from agreement.fo.views.review import queue_key

    return queue_key(ctx.view) if ctx.view is not None else None


def refresh_review(ctx, mem) -> bool:
    """Remembers the review state (``mem.review``) and writes its text (panel data ``review_state_md``);
    returns whether the current view is a review queue. There, an open item is described by its review
    (``mem.modal`` marks it open), not by the label explanations of a sample."""
    from agreement.fo.views.review import review_progress
    from agreement.fo.views.review_item import review_item

    key = queue_run(ctx)
    if key is None:
        mem.review = None
        return False
    progress = review_progress(ctx.dataset, key)
    item = review_item(ctx.view, key, ctx.current_sample) if ctx.current_sample else None
    mem.modal = {"sample": ctx.current_sample, "n": 0, "n_disagree": 0} if ctx.current_sample else None
    mem.review = {"key": key, "progress": progress, "item": item}
    ctx.panel.data.review_state_md = review_markdown(key, progress, item)
    ctx.panel.data.labels_md = ""
    return True


def render_review(handlers, panel, mem) -> None:
    """The review text and, with an item of the queue open, the decision buttons; Finalize once the queue
    is done."""
    if not mem.review:
        return
    panel.str("review_state_md", view=types.MarkdownView())
    progress, item = mem.review["progress"], mem.review.get("item")
    done = progress["flagged"] and not progress["pending"]
    if item is not None and item["labels"]:
        row = panel.h_stack("review_actions", gap=1, align_x="left")
        row.btn("review_accept", label="Accept", on_click=handlers.on_review_accept, variant="contained")
        row.btn("review_reject", label="Reject", on_click=handlers.on_review_reject, variant="contained")
        if any(lab["decision"] for lab in item["labels"]):
            row.btn("review_undo", label="Undo", on_click=handlers.on_review_undo, variant="outlined")
        row.btn("review_previous", label="Previous", on_click=handlers.on_review_previous, variant="outlined")
        if not done:
            row.btn("review_next", label="Next undecided", on_click=handlers.on_review_next, variant="outlined")
    if item is None and progress["pending"]:  # the queue in the grid: start reviewing in the sample view
        panel.btn("review_start", label="Review in the sample view: open the first undecided item",
                  on_click=handlers.on_review_start, variant="contained")
    if done:
        panel.btn("review_finalize", label=f"Finalize: write {mem.review['key']}_final",
                  on_click=handlers.on_review_finalize, variant="contained")


class ReviewActions:
    """The panel's review handlers (mixed into the panel class)."""

    def on_review_accept(self, ctx):
        """Accepts the open item's consensus label(s), then opens the next undecided item."""
        self._review(ctx, "accepted")

    def on_review_reject(self, ctx):
        """Rejects the open item's consensus label(s), then opens the next undecided item."""
        self._review(ctx, "rejected")

    def on_review_undo(self, ctx):
        """Undoes the open item's decision (it stays open)."""
        self._review(ctx, None, advance=False)

    def on_review_next(self, ctx):
        """Opens the next undecided item of the review queue."""
        from agreement.fo.views.review import next_pending

        key = queue_run(ctx)
        if key is None:
            return
        self._go(ctx, next_pending(ctx.view, key, ctx.current_sample))

    def on_review_previous(self, ctx):
        """Opens the item before the open one in queue order (decided or not: to change a decision)."""
        if queue_run(ctx) is None or not ctx.current_sample:
            return
        ids = ctx.view.values("id")
        if ctx.current_sample in ids and len(ids) > 1:
            self._go(ctx, ids[ids.index(ctx.current_sample) - 1])

    def on_review_start(self, ctx):
        """Opens the first undecided item of the queue in the sample view (a queue's patch tiles can be too small
        to open with a click at the App's default zoom)."""
        from agreement.fo.views.review import next_pending

        key = queue_run(ctx)
        if key is not None:
            self._go(ctx, next_pending(ctx.view, key))

    def on_review_finalize(self, ctx):
        """Writes the reviewed label set ``{key}_final`` of the queue's run and says what it kept."""
        from agreement.fo.methods.consensus import finalize_consensus

        from .panel_memory import panel_memory_of

        key = queue_run(ctx)
        if key is None:
            return
        counts = finalize_consensus(ctx.dataset, key)
        ctx.trigger("reload_dataset")
        ctx.ops.notify(f"Wrote {key}_final: {counts['kept']:,} labels kept, {counts['rejected']:,} rejected, "
                       f"{counts['accepted']:,} accepted, {counts['still_flagged']:,} still flagged.",
                       variant="success")
        refresh_review(ctx, panel_memory_of(ctx))

    def _review(self, ctx, decision: str | None, advance: bool = True) -> None:
        """Tags the consensus label(s) of the open item with ``decision`` (``None``: undoes it), then opens
        the next undecided item (``advance``) and updates the review's text at once."""
        from agreement.fo.views.review import next_pending, review_labels

        from .panel_memory import panel_memory_of

        key = queue_run(ctx)
        mem = panel_memory_of(ctx)
        item = (mem.review or {}).get("item") if key else None
        if item is None or item["item"] != ctx.current_sample:
            from agreement.fo.views.review_item import review_item

            item = review_item(ctx.view, key, ctx.current_sample) if key and ctx.current_sample else None
        if key is None or item is None or not item["labels"]:  # (no run key: ``item`` is None)
            return
        review_labels(ctx.view, key, [lab["id"] for lab in item["labels"]], decision)
        ctx.trigger("reload_samples")
        if advance:
            nxt = next_pending(ctx.view, key, item["item"])
            if nxt is not None and nxt != ctx.current_sample:
                self._go(ctx, nxt)
                return  # the App's change of sample refreshes the panel on the next item
        refresh_review(ctx, mem)
        if advance:
            self._go(ctx, None)

    @staticmethod
    def _go(ctx, item_id: str | None) -> None:
        """Opens item ``item_id`` of the queue in the sample view; with none left, says that the review is
        complete."""
        if item_id is None:
            ctx.ops.notify("Every flagged label of this queue is decided: Finalize writes the reviewed label set.",
                           variant="success")
            return
        open_sample = getattr(ctx.ops, "open_sample", None)  # FiftyOne >= 1.1
        if open_sample is not None:
            open_sample(id=item_id)
