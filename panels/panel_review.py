"""The review step in the "Annotator Agreement" panel: accept, reject, undo and next on the review queue.

When the current view is a consensus run's review queue (a patches view of
``{key}_consensus``, or for a class consensus the flagged samples, loaded by
the panel's **Review queue** button or the operator ``load_agreement_view``),
the panel shows where the review stands and, with a patch (sample) open, what the label is and the buttons **Accept**,
**Reject**, **Undo** and **Next**. A decision tags that one consensus label
(:func:`agreement.fo.review.review_labels`), never a rater's or another
run's, and opens the next undecided patch.
"""

from __future__ import annotations

import logging

import fiftyone.operators.types as types

from agreement.fo.figures import sig3

logger = logging.getLogger(__name__)

__all__ = ["queue_run", "refresh_review", "render_review", "ReviewActions"]


def queue_run(ctx) -> str | None:
    """The consensus run whose review queue is the current view (patches of its consensus labels, or the
    flagged samples of a class consensus), or None."""
    from agreement.fo.review import queue_key

    return queue_key(ctx.view) if ctx.view is not None else None


def _attr(label, name: str):
    """A label's attribute ``name``, ``None`` when it has none."""
    try:
        return label.get_attribute_value(name, None)
    except Exception:  # noqa: BLE001 - an older label without it
        return None


def _open_label(ctx, key: str) -> dict | None:
    """The consensus label of the open patch (a class consensus: of the open sample): id, class, confidence,
    support, tags; None if nothing is open."""
    pid = ctx.current_sample
    if not pid:
        return None
    field = f"{key}_consensus"
    try:
        labels = ctx.view.select(pid).values(field)
    except Exception:  # noqa: BLE001 - a patch of an older queue: nothing to show
        return None
    label = labels[0] if labels else None
    if label is None:
        return None
    return {"patch": pid, "id": label.id, "label": label.label, "confidence": label.confidence,
            "class_confidence": _attr(label, f"{key}_class_confidence"), "support": _attr(label, f"{key}_support"),
            "tags": list(label.tags or [])}


def refresh_review(ctx, mem) -> bool:
    """Remembers the review state (``mem.review``) and writes its text (panel data ``review_state_md``);
    returns whether the current view is a review queue. There, an open patch is described by its review
    (``mem.modal`` marks it open), not by the label explanations of a sample."""
    from agreement.fo.review import review_progress

    key = queue_run(ctx)
    if key is None:
        mem.review = None
        return False
    progress = review_progress(ctx.dataset, key)
    label = _open_label(ctx, key)
    mem.modal = {"sample": ctx.current_sample, "n": 0, "n_disagree": 0} if ctx.current_sample else None
    mem.review = {"key": key, "progress": progress, "label": label}
    ctx.panel.data.review_state_md = review_markdown(key, progress, label)
    ctx.panel.data.labels_md = ""
    return True


def review_markdown(key: str, progress: dict, label: dict | None) -> str:
    """Where the review of run ``key`` stands and, with a patch open, its label and decision."""
    done = progress["accepted"] + progress["rejected"]
    lines = [f"**Review of run `{key}`**: {done} of {progress['flagged']} flagged labels decided "
             f"({progress['accepted']} accepted, {progress['rejected']} rejected), {progress['pending']} to go."]
    if label is None:
        lines.append("Open a patch (a class consensus: a sample): the panel then shows **Accept**, **Reject** and "
                     "**Next**, which tag only that consensus label. Or select patches (samples) and run "
                     f"*review_consensus_labels*. When done, *finalize_consensus* writes `{key}_final`.")
        return "\n\n".join(lines)
    decision = next((t for t in ("rejected", "accepted") if t in label["tags"]), None)
    posterior = (f" (class posterior {sig3(label['class_confidence'])})"
                 if label.get("class_confidence") is not None else "")
    lines.append(
        f"This label: class **{label['label']}**{posterior}, confidence {sig3(label['confidence'])}, given by "
        f"{sig3(100 * (label['support'] or 0))} % of the raters assigned. Decision: **{decision or 'none yet'}**.")
    return "\n\n".join(lines)


def render_review(handlers, panel, mem) -> None:
    """The review text and, with a patch of the queue open, the decision buttons."""
    if not mem.review:
        return
    panel.str("review_state_md", view=types.MarkdownView())
    if mem.review.get("label") is None:
        return
    row = panel.h_stack("review_actions", gap=1, align_x="left")
    row.btn("review_accept", label="Accept", on_click=handlers.on_review_accept, variant="contained")
    row.btn("review_reject", label="Reject", on_click=handlers.on_review_reject, variant="contained")
    if {"accepted", "rejected"} & set(mem.review["label"]["tags"]):
        row.btn("review_undo", label="Undo", on_click=handlers.on_review_undo, variant="outlined")
    row.btn("review_next", label="Next", on_click=handlers.on_review_next, variant="outlined")


class ReviewActions:
    """The panel's review handlers (mixed into the panel class)."""

    def on_review_accept(self, ctx):
        self._review(ctx, "accepted")

    def on_review_reject(self, ctx):
        self._review(ctx, "rejected")

    def on_review_undo(self, ctx):
        self._review(ctx, None, advance=False)

    def on_review_next(self, ctx):
        from agreement.fo.review import next_pending

        key = queue_run(ctx)
        if key is None:
            return
        self._go(ctx, next_pending(ctx.view, key, ctx.current_sample))

    def _review(self, ctx, decision: str | None, advance: bool = True) -> None:
        from agreement.fo.review import next_pending, review_labels

        from .panel_memory import _memory

        key = queue_run(ctx)
        label = _open_label(ctx, key) if key else None
        if label is None:
            return
        review_labels(ctx.view, key, [label["id"]], decision)
        ctx.trigger("reload_samples")
        if advance:
            self._go(ctx, next_pending(ctx.view, key, label["patch"]))
        refresh_review(ctx, _memory(ctx))

    @staticmethod
    def _go(ctx, patch_id: str | None) -> None:
        """Opens patch ``patch_id`` in the sample view; with none left, says that the review is complete."""
        if patch_id is None:
            ctx.ops.notify("Every flagged label of this queue is decided: run finalize_consensus to write the "
                           "reviewed label set.", variant="success")
            return
        open_sample = getattr(ctx.ops, "open_sample", None)  # FiftyOne >= 1.1
        if open_sample is not None:
            open_sample(id=patch_id)
