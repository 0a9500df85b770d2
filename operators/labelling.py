"""The labelling round trip of a run: ``request_labels`` (send samples to a labelling tool for one more rater)
and ``load_requested_labels`` (bring the labels back, recompute the run). Thin: the work is in
:mod:`agreement.fo.labelling`. The server's URL and API key come from FiftyOne's annotation config only.
"""

from __future__ import annotations

import fiftyone.operators as foo
import fiftyone.operators.types as types

from .common import existing_run_choice, refresh_app, require
from .python_call import AgreementOperator

_SOURCES = {
    "suggested": "the top samples by the run's relabel priority (suggest_relabel)",
    "view": "the samples of the current view",
    "review": "the run's review queue",
}


def _pending(ctx, key: str | None) -> list[str]:
    """The anno keys of run ``key``'s rounds waiting for their labels."""
    from agreement.fo.labelling.history import run_rounds

    if not key or ctx.dataset is None:
        return []
    try:
        return [r["anno_key"] for r in run_rounds(ctx.dataset, key) if r.get("status") != "loaded"]
    except ValueError:
        return []


class RequestLabels(AgreementOperator):
    """``request_labels``: sends samples of a run to a labelling backend for a new rater."""

    outputs = (("anno_key", "Annotation run", "str"), ("rater", "New rater (field)", "str"),
               ("n_samples", "Samples sent", "int"), ("backend", "Backend", "str"), ("round", "Round", "int"),
               ("source", "Samples from", "str"), ("label_field", "Field the labels load into", "str"),
               ("classes", "Classes offered", "list"))

    @property
    def config(self):
        """The operator's name, label and description in the App."""
        return foo.OperatorConfig(
            name="request_labels",
            label="Annotator Agreement: send samples for another rater",
            description="Sends a run's samples (its suggestions, the view or its review queue) to a labelling "
                        "tool (Label Studio, CVAT, ... through FiftyOne's annotation API) for a new rater",
            dynamic=True,
        )

    def resolve_input(self, ctx):
        """The App's form of the operator's parameters, built from ``ctx.params`` so far."""
        inputs = types.Object()
        keys = existing_run_choice(inputs, ctx)
        if not keys:
            return types.Property(inputs, view=types.View(label="Send samples for another rater"))
        source = types.RadioGroup()
        for value, label in _SOURCES.items():
            source.add_choice(value, label=label)
        inputs.enum("source", list(_SOURCES), default="suggested", label="Samples", view=source)
        inputs.int("budget", required=False, min=1, label="At most this many samples",
                   description="required for the suggested samples (the top ones by priority)")
        inputs.str("rater", required=False, label="New rater",
                   description="the new rater's field (default: the next free name, e.g. rater_4)")
        inputs.str("backend", default="labelstudio", label="Labelling backend",
                   description="a FiftyOne annotation backend; its URL and API key come from FiftyOne's "
                               "annotation config (e.g. FIFTYONE_LABELSTUDIO_URL, FIFTYONE_LABELSTUDIO_API_KEY)")
        inputs.str("anno_key", required=False, label="Annotation key", description="default: <key>_round_<n>")
        inputs.bool("launch_editor", default=False, label="Open the labelling tool")
        return types.Property(inputs, view=types.View(label="Send samples for another rater"))

    def execute(self, ctx):
        """Runs the operator on ``ctx.params`` and returns its result dict (its keys: :attr:`outputs`)."""
        from agreement.fo.labelling.request import request_labels

        p = ctx.params
        key = require(p, "key", "the run whose samples get another rater")
        return request_labels(ctx.view, key, source=p.get("source") or "suggested", budget=p.get("budget"),
                              rater=p.get("rater") or None, backend=p.get("backend") or "labelstudio",
                              anno_key=p.get("anno_key") or None, launch_editor=bool(p.get("launch_editor")))


class LoadRequestedLabels(AgreementOperator):
    """``load_requested_labels``: loads a round's labels into the new rater's field and recomputes the run."""

    outputs = (("anno_key", "Annotation run", "str"), ("rater", "New rater (field)", "str"),
               ("n_loaded", "Samples labelled", "int"), ("round", "Round", "int"),
               ("before", "Headline numbers before", "json"), ("after", "Headline numbers after", "json"))

    @property
    def config(self):
        """The operator's name, label and description in the App."""
        return foo.OperatorConfig(
            name="load_requested_labels",
            label="Annotator Agreement: load the new rater's labels",
            description="Loads a labelling round's labels into the new rater's field and recomputes the run "
                        "with that rater (all or nothing)",
            dynamic=True,
        )

    def resolve_input(self, ctx):
        """The App's form of the operator's parameters, built from ``ctx.params`` so far."""
        inputs = types.Object()
        keys = existing_run_choice(inputs, ctx)
        if not keys:
            return types.Property(inputs, view=types.View(label="Load the new rater's labels"))
        key = ctx.params.get("key") if ctx.params.get("key") in keys else inputs.properties["key"].default
        pending = _pending(ctx, key)
        inputs.str("anno_key", required=False, default=pending[-1] if len(pending) == 1 else None,
                   label="Round (annotation key)",
                   description=(f"rounds waiting for their labels: {', '.join(pending)}" if pending
                                else "this run has no round waiting for its labels"))
        return types.Property(inputs, view=types.View(label="Load the new rater's labels"))

    def execute(self, ctx):
        """Runs the operator on ``ctx.params`` and returns its result dict (its keys: :attr:`outputs`)."""
        from agreement.fo.labelling.load import load_requested_labels

        key = require(ctx.params, "key", "the run whose round to load")
        out = load_requested_labels(ctx.dataset, key, anno_key=ctx.params.get("anno_key") or None)
        refresh_app(ctx)
        return out
