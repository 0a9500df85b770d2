"""The review decision on a consensus run's flagged labels: accept, reject or undo, scoped to that run.

The App's own tag menu tags every label of the selected samples in every
visible field; this operator tags only the flagged consensus labels of the
chosen run among what is selected (patches of the review queue, labels
clicked in the sample view, or ids given from Python) and says what it left
alone.
"""

from __future__ import annotations

from typing import cast

import fiftyone.operators as foo
import fiftyone.operators.types as types

from .common import preferred_run
from .python_call import AgreementOperator

_DECISIONS = {"accept": "accepted", "reject": "rejected", "undo": None}


def _queue_key(ctx) -> str | None:
    """The consensus run whose review queue is the current view (a patches view of ``{key}_consensus``, or
    the flagged samples of a class consensus)."""
    from agreement.fo.views.review import queue_key

    return queue_key(ctx.view) if ctx.view is not None else None


def _consensus_runs(dataset) -> list[str]:
    from agreement.fo.methods.consensus import METHOD
    from agreement.fo.runs.store import list_agreement_runs

    return list_agreement_runs(dataset, method=METHOD) if dataset is not None else []


def _chosen_labels(ctx, key: str) -> tuple[list[str], int]:
    """The consensus label ids of run ``key`` among what is selected or given, and how many others were
    selected (labels of other fields, or unflagged ones) and are left alone."""
    from agreement.fo.views.review import queue_label_ids

    field = f"{key}_consensus"
    given = ctx.params.get("label_ids")
    if given is not None:  # given from Python, an empty list too (refused by execute: nothing to review)
        ids = [given] if isinstance(given, str) else [str(i) for i in given]
        others = 0
    elif ctx.selected_labels:
        ids = [s["label_id"] for s in ctx.selected_labels if s.get("field") in (field, f"frames.{field}")]
        others = len(ctx.selected_labels) - len(ids)
    elif ctx.selected:
        ids = queue_label_ids(ctx.view, key, ctx.selected)
        others = 0
    else:
        return [], 0
    flagged = _flagged(ctx.dataset, key, ids)
    return flagged, others + len(ids) - len(flagged)


def _flagged(dataset, key: str, ids: list[str]) -> list[str]:
    from agreement.fo.views.review import consensus_flags

    flags = consensus_flags(dataset, key, ids) if ids else {}
    return [i for i in ids if flags.get(i)]


def _update_panels(ctx, key: str) -> None:
    """Writes where the review of run ``key`` now stands into every agreement panel open on the dataset (the
    panel only hears of the App's own events: its count stayed at "0 of 14 decided" after a decision)."""
    from agreement.fo.panel.app_state import open_panels
    from agreement.fo.views.review import review_progress
    from agreement.fo.views.review_item import review_item, review_markdown

    panels = open_panels(ctx.dataset)
    if not panels or _queue_key(ctx) != key:
        return
    progress = review_progress(ctx.dataset, key)
    for panel_id, item in panels.items():
        shown = review_item(ctx.view, key, item) if item else None
        ctx.ops.patch_panel_data({"review_state_md": review_markdown(key, progress, shown)}, panel_id=panel_id)


class ReviewConsensusLabels(AgreementOperator):
    """``review_consensus_labels``: tags the selected flagged consensus labels 'accepted' or 'rejected'."""

    outputs = (("key", "Run", "str"), ("decision", "Decision", "str"), ("tagged", "Consensus labels tagged", "int"),
               ("left_alone", "Other selected labels left alone", "int"), ("flagged", "Flagged in the run", "int"),
               ("accepted", "Accepted so far", "int"), ("rejected", "Rejected so far", "int"),
               ("pending", "Still to review", "int"))

    @property
    def config(self):
        """The operator's name, label and description in the App."""
        return foo.OperatorConfig(
            name="review_consensus_labels", label="Annotator Agreement: accept or reject consensus labels",
            description="Tags the selected flagged consensus labels of a run 'accepted' or 'rejected' (nothing else)",
            dynamic=True)

    def resolve_input(self, ctx):
        """The App's form of the operator's parameters, built from ``ctx.params`` so far."""
        from agreement.fo.panel.app_state import open_run

        inputs = types.Object()
        keys = _consensus_runs(ctx.dataset)
        if not keys:
            inputs.view("no_runs", types.Warning(label="No consensus runs",
                                                 description="Run compute_consensus first: only its flagged "
                                                             "labels can be reviewed."))
            return types.Property(inputs)
        default = next((k for k in (_queue_key(ctx), open_run(ctx.dataset)) if k in keys), None) or \
            preferred_run(ctx.dataset, keys)
        runs = types.DropdownView()
        for k in keys:
            runs.add_choice(k, label=k)
        inputs.enum("key", keys, default=default, required=True, label="Consensus run", view=runs)
        choice = types.RadioGroup()
        for value, label in (("accept", "accept (tag `accepted`: kept, no longer flagged)"),
                             ("reject", "reject (tag `rejected`: left out of the final labels)"),
                             ("undo", "undo (remove both tags)")):
            choice.add_choice(value, label=label)
        inputs.enum("decision", list(_DECISIONS), default="accept", required=True, label="Decision", view=choice)
        if ctx.params.get("label_ids") is not None:  # from Python: the labels by id (the App uses its selection)
            inputs.list("label_ids", types.String(), label="Label ids",
                        description="ids of the run's flagged consensus labels")
        # ``keys`` is not empty here, so ``preferred_run`` gave one of them: the key is a str
        key = cast(str, ctx.params.get("key") or default)
        ids, others = _chosen_labels(ctx, key)
        text = (f"{len(ids)} flagged consensus label(s) of run {key!r} selected"
                + (f"; {others} other selected label(s) (rater labels, other runs, unflagged) are left alone"
                   if others else ""))
        inputs.view("chosen", types.Notice(label=text) if ids else types.Warning(
            label="Nothing to review selected",
            description="Open the run's review queue (the panel's Review queue button), then select patches "
                        "(samples, for a class consensus) or labels, or give label_ids from Python"))
        return types.Property(inputs, view=types.View(label="Review consensus labels"))

    def execute(self, ctx):
        """Runs the operator on ``ctx.params`` and returns its result dict (its keys: :attr:`outputs`)."""
        from agreement.fo.views.review import review_labels

        key = ctx.params.get("key")
        if not key:
            raise ValueError("parameter 'key' is required: the consensus run whose labels to review")
        decision = ctx.params.get("decision") or "accept"
        if decision not in _DECISIONS:
            raise ValueError(f"decision must be one of {list(_DECISIONS)}, got {decision!r}")
        ids, others = _chosen_labels(ctx, key)
        if not ids:
            raise ValueError(f"no flagged consensus label of run {key!r} is selected or given: select patches of "
                             "its review queue or labels of its consensus field")
        out = review_labels(ctx.view, key, ids, _DECISIONS[decision])
        if not ctx.delegated:
            ctx.trigger("reload_samples")
            _update_panels(ctx, key)
        return {"key": key, **out, "decision": decision, "left_alone": others}
