"""Run management operators: list, inspect, rename and delete agreement runs."""

from __future__ import annotations

import fiftyone.operators as foo
import fiftyone.operators.types as types

from agreement.fo.runs import store as fo_runs

from .common import existing_run_choice, require
from .python_call import AgreementOperator


class ListAgreementRuns(AgreementOperator):
    """``list_agreement_runs``: the dataset's agreement runs, newest first, with their headline numbers."""

    outputs = (("table", "Newest first", "md"), ("keys", "Agreement runs", "list"),
               ("newest_first", "Newest first (keys)", "list"), ("runs", "Runs", "json"))

    @property
    def config(self):
        """The operator's name, label and description in the App."""
        return foo.OperatorConfig(
            name="list_agreement_runs",
            label="Annotator Agreement: list runs",
            description="Lists the agreement runs of this dataset with their method and fields",
        )

    def resolve_input(self, ctx):
        """The App's form of the operator's parameters, built from ``ctx.params`` so far."""
        inputs = types.Object()
        inputs.str("method", required=False, label="Method", description="Only runs of this method (optional)")
        return types.Property(inputs, view=types.View(label="List agreement runs"))

    def execute(self, ctx):
        """Runs the operator on ``ctx.params`` and returns its result dict (its keys: :attr:`outputs`)."""
        keys = fo_runs.list_agreement_runs(ctx.dataset, method=ctx.params.get("method") or None)
        runs = [fo_runs.get_agreement_run_info(ctx.dataset, k) for k in keys]
        listed = [{k: r[k] for k in ("key", "method", "timestamp", "sample_fields")} for r in runs]
        for item in listed:
            item["description"] = _describe_run(ctx.dataset, item)
        newest = sorted(listed, key=lambda r: r["timestamp"], reverse=True)
        return {"keys": keys, "runs": listed, "newest_first": [r["key"] for r in newest],
                "table": "\n".join(r["description"] for r in newest)}


def _describe_run(dataset, item: dict) -> str:
    """One line per run: key, method, when, and its headline number (three significant figures)."""
    from agreement.fo.panel.data import METHOD_VIEWS, sig3

    view = METHOD_VIEWS.get(item["method"]) or {}
    title = view.get("title", item["method"])
    headline = ""
    cards = view.get("cards") or []
    if cards:
        try:
            summary = fo_runs.load_agreement_results(dataset, item["key"]).get("summary", {})
            value = summary.get(cards[0]["key"])
            headline = f": {cards[0]['label']} {value if isinstance(value, str) else sig3(value)}"
        except Exception:  # a run whose results cannot be read is still listed
            headline = ""
    return f"- **{item['key']}** — {title}, {str(item['timestamp'])[:16]}{headline}"


class GetAgreementRunInfo(AgreementOperator):
    """``get_agreement_run_info``: a run's method, parameters, input layout, fields and headline numbers."""

    outputs = (("key", "Run", "str"), ("method", "Method", "str"), ("computed_on", "Computed on", "str"),
               ("timestamp", "When", "str"), ("status", "Status", "str"), ("params", "Parameters", "json"),
               ("input", "Input layout", "json"), ("summary", "Headline numbers", "json"),
               ("sample_fields", "Fields written", "list"), ("label_attrs", "Label attributes written", "json"),
               ("frame_fields", "Frame fields written (a run on video frames)", "list"),
               ("format_version", "Format version", "int"))

    @property
    def config(self):
        """The operator's name, label and description in the App."""
        return foo.OperatorConfig(
            name="get_agreement_run_info",
            label="Annotator Agreement: run info",
            description="Shows a run's method, parameters, input layout, fields and headline numbers",
            dynamic=True,
        )

    def resolve_input(self, ctx):
        """The App's form of the operator's parameters, built from ``ctx.params`` so far."""
        inputs = types.Object()
        existing_run_choice(inputs, ctx)
        return types.Property(inputs, view=types.View(label="Agreement run info"))

    def execute(self, ctx):
        """Runs the operator on ``ctx.params`` and returns its result dict (its keys: :attr:`outputs`)."""
        from agreement.fo.runs.declaration import run_target

        key = require(ctx.params, "key", "the run to describe")
        info = fo_runs.get_agreement_run_info(ctx.dataset, key)
        results = fo_runs.load_agreement_results(ctx.dataset, key)
        info["summary"] = results.get("summary", {})
        info["computed_on"] = run_target(info)
        return info


class RenameAgreementRun(AgreementOperator):
    """``rename_agreement_run``: renames a run and the fields it wrote."""

    outputs = (("renamed", "Run renamed", "str"), ("key", "New key", "str"), ("old_key", "Old key", "str"),
               ("renamed_sample_fields", "Fields renamed (old: new)", "json"),
               ("renamed_label_attrs", "Label attributes renamed ([field, old, new])", "json"),
               ("renamed_frame_fields", "Frame fields renamed (old: new)", "json"))

    @property
    def config(self):
        """The operator's name, label and description in the App."""
        return foo.OperatorConfig(
            name="rename_agreement_run",
            label="Annotator Agreement: rename run",
            description="Renames a run and the fields it wrote",
            dynamic=True,
        )

    def resolve_input(self, ctx):
        """The App's form of the operator's parameters, built from ``ctx.params`` so far."""
        inputs = types.Object()
        keys = existing_run_choice(inputs, ctx)
        if keys:
            inputs.str("new_key", required=True, label="New key", description="Fields <key>_... become <new_key>_...")
        return types.Property(inputs, view=types.View(label="Rename agreement run"))

    def execute(self, ctx):
        """Runs the operator on ``ctx.params`` and returns its result dict (its keys: :attr:`outputs`)."""
        from agreement.fo.panel.app_state import open_run, remember_open_run

        key = require(ctx.params, "key", "the run to rename")
        new_key = require(ctx.params, "new_key", "the new name")
        was_open = open_run(ctx.dataset) == key
        out = fo_runs.rename_agreement_run(ctx.dataset, key, new_key)
        if was_open:  # the panel's run keeps being preselected under its new name
            remember_open_run(ctx.dataset, new_key)
        if not ctx.delegated:
            ctx.trigger("reload_dataset")
        return {"renamed": f"{key} → {new_key}", "key": new_key, "old_key": key, **out}


class DeleteAgreementRun(AgreementOperator):
    """``delete_agreement_run``: deletes a run and exactly the fields it wrote."""

    outputs = (("key", "Run deleted", "str"), ("deleted_sample_fields", "Fields deleted", "list"),
               ("deleted_label_attrs", "Label attributes deleted ([field, attribute])", "json"),
               ("deleted_frame_fields", "Frame fields deleted", "list"))

    @property
    def config(self):
        """The operator's name, label and description in the App."""
        return foo.OperatorConfig(
            name="delete_agreement_run",
            label="Annotator Agreement: delete run",
            description="Deletes a run and exactly the fields it wrote",
            dynamic=True,
        )

    def resolve_input(self, ctx):
        """The App's form of the operator's parameters, built from ``ctx.params`` so far."""
        inputs = types.Object()
        keys = existing_run_choice(inputs, ctx)
        key = ctx.params.get("key")
        if keys and key in keys:
            info = fo_runs.get_agreement_run_info(ctx.dataset, key)
            attrs = [f"{lf}.{a}" for lf, a in info["label_attrs"]]
            inputs.view(
                "what",
                types.Notice(
                    label="Will delete: " + (", ".join(info["sample_fields"] + attrs) or "no fields")
                ),
            )
        return types.Property(inputs, view=types.View(label="Delete agreement run"))

    def execute(self, ctx):
        """Runs the operator on ``ctx.params`` and returns its result dict (its keys: :attr:`outputs`)."""
        key = require(ctx.params, "key", "the run to delete")
        out = fo_runs.delete_agreement_run(ctx.dataset, key)
        if not ctx.delegated:
            ctx.trigger("reload_dataset")
        return {"key": key, **out}


_MODES = {
    "lowest": "Lowest-scoring samples",
    "pair": "One rater pair's disagreements",
    "unmatched": "One rater's labels that match nobody",
    "class": "One class's units the raters disagree on",
    "review": "Consensus review queue (flagged labels, least confident first)",
}


def view_modes(info: dict) -> list[str]:
    """The drill-downs a run offers: by its per-sample score (lowest, pair), then those its method declares
    (:attr:`agreement.fo.runs.method_spec.MethodHooks.drill_modes`: its label matches (OT, KαLOS), its units (KαLOS)
    or its review queue (consensus))."""
    from agreement.fo.methods import hooks_of
    from agreement.fo.panel.data import score_field
    from agreement.fo.runs.method_spec import DRILL_MODES

    try:
        scored = score_field(info) is not None
    except Exception:  # noqa: BLE001 - a method without a panel view has no score
        scored = False
    modes = ["lowest", "pair"] if scored else []
    return modes + [m for m in DRILL_MODES if m in hooks_of(info["method"]).drill_modes]


class LoadAgreementView(AgreementOperator):
    """``load_agreement_view``: loads (and optionally saves) one of a run's drill-down views (:func:`view_modes`)."""

    outputs = (("key", "Run", "str"), ("description", "Showing", "str"), ("count", "Samples or patches", "int"),
               ("saved_view", "Saved as view", "str"), ("sample_ids", "Sample ids, in order", "list"),
               ("label_ids", "Label ids of the queue, in order", "list"))

    @property
    def config(self):
        """The operator's name, label and description in the App."""
        return foo.OperatorConfig(
            name="load_agreement_view",
            label="Annotator Agreement: load disagreements",
            description="Loads (and optionally saves) a run's lowest-scoring samples, one rater pair's "
                        "disagreements, one rater's unmatched labels or one class's disagreeing units",
            dynamic=True,
        )

    def resolve_input(self, ctx):
        """The App's form of the operator's parameters, built from ``ctx.params`` so far."""
        inputs = types.Object()
        keys = existing_run_choice(inputs, ctx)
        if not keys:
            return types.Property(inputs, view=types.View(label="Load agreement view"))
        key = ctx.params.get("key") if ctx.params.get("key") in keys else inputs.properties["key"].default
        info = fo_runs.get_agreement_run_info(ctx.dataset, key)
        offered = view_modes(info)
        if not offered:
            inputs.view("no_modes", types.Warning(label=f"Run {key!r} ({info['method']}) has nothing to drill into",
                                                  description="Choose an OT, KαLOS, geometry or consensus run"))
            return types.Property(inputs, view=types.View(label="Load agreement view"))
        mode = types.RadioGroup()
        for value in offered:
            mode.add_choice(value, label=_MODES[value])
        chosen = ctx.params.get("mode") if ctx.params.get("mode") in offered else offered[0]
        inputs.enum("mode", offered, default=offered[0], label="Show", view=mode)
        if chosen in ("pair", "unmatched", "class"):
            detail = fo_runs.load_agreement_results(ctx.dataset, key).get("detail", {})
            raters = detail.get("raters", [])
            if chosen == "pair":
                inputs.enum("rater_a", raters, required=True, label="Rater A")
                inputs.enum("rater_b", raters, required=True, label="Rater B")
            elif chosen == "unmatched":
                inputs.enum("rater", raters, required=True, label="Rater")
            else:
                classes = (detail.get("class_difficulty") or {}).get("classes") or []
                inputs.enum("label_class", classes, required=True, label="Class")
        inputs.int("limit", default=50, min=1, label="At most this many samples")
        inputs.float("max_score", required=False, label="Only scores up to", description="Optional score threshold")
        inputs.str("save_as", required=False, label="Save as view",
                   description="Optional name to save the view under on the dataset")
        inputs.bool("overwrite", default=False, label="Replace a saved view of that name")
        return types.Property(inputs, view=types.View(label="Load agreement view"))

    def execute(self, ctx):
        """Runs the operator on ``ctx.params`` and returns its result dict (its keys: :attr:`outputs`)."""
        from agreement.fo.views.disagreements import lowest_scoring_view, rater_pair_view, save_agreement_view

        p = ctx.params
        key = require(p, "key", "the run whose disagreements to show")
        limit = p.get("limit", 50)
        max_score = p.get("max_score")
        mode = p.get("mode") or (view_modes(fo_runs.get_agreement_run_info(ctx.dataset, key)) or ["lowest"])[0]
        if mode == "review":
            from agreement.fo.panel.consensus import review_queue_view

            view = review_queue_view(ctx.view, key)
            name = p.get("save_as") or None
            if name:
                save_agreement_view(ctx.view, name, view, overwrite=bool(p.get("overwrite", False)))
            ctx.ops.set_view(view=view)
            return {"key": key, "description": f"the review queue of consensus run {key!r}, least confident first",
                    "count": len(view), "saved_view": name, "label_ids": view.values("id")}
        if mode == "pair":
            a, b = require(p, "rater_a", "the first rater"), require(p, "rater_b", "the second rater")
            view = rater_pair_view(ctx.view, key, a, b, max_score=max_score, limit=limit)
            description = f"the samples where {a} and {b} agree least in run {key!r}, lowest first"
        elif mode == "unmatched":
            from agreement.fo.views.disagreements import unmatched_labels_view

            rater = require(p, "rater", "the rater whose unmatched labels to show")
            view = unmatched_labels_view(ctx.view, key, rater)
            description = f"{rater}'s labels that match nobody in run {key!r}"
        elif mode == "class":
            from agreement.fo.views.disagreements import class_disagreement_view

            label_class = require(p, "label_class", "the class whose disagreeing units to show")
            view = class_disagreement_view(ctx.view, key, label_class)
            description = f"the {label_class} units the raters disagree on in run {key!r}"
        else:
            view = lowest_scoring_view(ctx.view, key, limit=limit, max_score=max_score)
            description = f"the lowest-scoring samples of run {key!r}, lowest first"
        name = p.get("save_as") or None
        if name:
            save_agreement_view(ctx.view, name, view, overwrite=bool(p.get("overwrite", False)))
        ctx.ops.set_view(view=view)
        return {"key": key, "count": len(view), "saved_view": name, "sample_ids": view.values("id"),
                "description": description}
