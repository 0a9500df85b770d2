"""Run management operators: list, inspect, rename and delete agreement runs."""

from __future__ import annotations

import fiftyone.operators as foo
import fiftyone.operators.types as types

from agreement.fo import runs as fo_runs

from .python_call import AgreementOperator
from .common import existing_run_choice, require


class ListAgreementRuns(AgreementOperator):
    @property
    def config(self):
        return foo.OperatorConfig(
            name="list_agreement_runs",
            label="Annotator Agreement: list runs",
            description="Lists the agreement runs of this dataset with their method and fields",
        )

    def resolve_input(self, ctx):
        inputs = types.Object()
        inputs.str("method", required=False, label="Method", description="Only runs of this method (optional)")
        return types.Property(inputs, view=types.View(label="List agreement runs"))

    def execute(self, ctx):
        keys = fo_runs.list_agreement_runs(ctx.dataset, method=ctx.params.get("method") or None)
        runs = [fo_runs.get_agreement_run_info(ctx.dataset, k) for k in keys]
        listed = [{k: r[k] for k in ("key", "method", "timestamp", "sample_fields")} for r in runs]
        for item in listed:
            item["description"] = _describe_run(ctx.dataset, item)
        newest = sorted(listed, key=lambda r: r["timestamp"], reverse=True)
        return {"keys": keys, "runs": listed, "newest_first": [r["key"] for r in newest],
                "table": "\n".join(r["description"] for r in newest)}

    def resolve_output(self, ctx):
        outputs = types.Object()
        outputs.list("keys", types.String(), label="Agreement runs")
        outputs.str("table", label="Newest first", view=types.MarkdownView())
        return types.Property(outputs)


def _describe_run(dataset, item: dict) -> str:
    """One line per run: key, method, when, and its headline number (three significant figures)."""
    from agreement.fo.panel_data import METHOD_VIEWS, sig3

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
    @property
    def config(self):
        return foo.OperatorConfig(
            name="get_agreement_run_info",
            label="Annotator Agreement: run info",
            description="Shows a run's method, parameters, input layout, fields and headline numbers",
            dynamic=True,
        )

    def resolve_input(self, ctx):
        inputs = types.Object()
        existing_run_choice(inputs, ctx)
        return types.Property(inputs, view=types.View(label="Agreement run info"))

    def execute(self, ctx):
        key = require(ctx.params, "key", "the run to describe")
        info = fo_runs.get_agreement_run_info(ctx.dataset, key)
        results = fo_runs.load_agreement_results(ctx.dataset, key)
        info["summary"] = results.get("summary", {})
        return info

    def resolve_output(self, ctx):
        outputs = types.Object()
        outputs.str("method", label="Method")
        outputs.obj("params", label="Parameters", view=types.JSONView())
        outputs.obj("summary", label="Headline numbers", view=types.JSONView())
        outputs.list("sample_fields", types.String(), label="Fields written")
        return types.Property(outputs)


class RenameAgreementRun(AgreementOperator):
    @property
    def config(self):
        return foo.OperatorConfig(
            name="rename_agreement_run",
            label="Annotator Agreement: rename run",
            description="Renames a run and the fields it wrote",
            dynamic=True,
        )

    def resolve_input(self, ctx):
        inputs = types.Object()
        keys = existing_run_choice(inputs, ctx)
        if keys:
            inputs.str("new_key", required=True, label="New key", description="Fields <key>_... become <new_key>_...")
        return types.Property(inputs, view=types.View(label="Rename agreement run"))

    def execute(self, ctx):
        key = require(ctx.params, "key", "the run to rename")
        new_key = require(ctx.params, "new_key", "the new name")
        out = fo_runs.rename_agreement_run(ctx.dataset, key, new_key)
        ctx.trigger("reload_dataset")
        return {"key": new_key, "old_key": key, **out}


class DeleteAgreementRun(AgreementOperator):
    @property
    def config(self):
        return foo.OperatorConfig(
            name="delete_agreement_run",
            label="Annotator Agreement: delete run",
            description="Deletes a run and exactly the fields it wrote",
            dynamic=True,
        )

    def resolve_input(self, ctx):
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
        key = require(ctx.params, "key", "the run to delete")
        out = fo_runs.delete_agreement_run(ctx.dataset, key)
        ctx.trigger("reload_dataset")
        return {"key": key, **out}


class LoadAgreementView(AgreementOperator):
    @property
    def config(self):
        return foo.OperatorConfig(
            name="load_agreement_view",
            label="Annotator Agreement: load disagreements",
            description="Loads (and optionally saves) a run's lowest-scoring samples, one rater pair's "
                        "disagreements, one rater's unmatched labels or one class's disagreeing units",
            dynamic=True,
        )

    def resolve_input(self, ctx):
        inputs = types.Object()
        keys = existing_run_choice(inputs, ctx)
        if not keys:
            return types.Property(inputs, view=types.View(label="Load agreement view"))
        mode = types.RadioGroup()
        mode.add_choice("lowest", label="Lowest-scoring samples")
        mode.add_choice("pair", label="One rater pair's disagreements")
        mode.add_choice("unmatched", label="One rater's labels that match nobody")
        mode.add_choice("class", label="One class's units the raters disagree on (KαLOS)")
        mode.add_choice("review", label="Consensus review queue (flagged labels, least confident first)")
        inputs.enum("mode", ["lowest", "pair", "unmatched", "class", "review"], default="lowest", label="Show",
                    view=mode)
        chosen = ctx.params.get("mode")
        if chosen in ("pair", "unmatched", "class") and ctx.params.get("key") in keys:
            detail = fo_runs.load_agreement_results(ctx.dataset, ctx.params["key"]).get("detail", {})
            raters = detail.get("raters", [])
            if chosen == "pair":
                inputs.enum("rater_a", raters, required=True, label="Rater A")
                inputs.enum("rater_b", raters, required=True, label="Rater B")
            elif chosen == "unmatched":
                inputs.enum("rater", raters, required=True, label="Rater")
            else:
                classes = (detail.get("class_difficulty") or {}).get("classes") or []
                inputs.enum("label_class", classes, required=True, label="Class",
                            description="Classes of a KαLOS run" if classes else "Only KαLOS runs have classes")
        inputs.int("limit", default=50, min=1, label="At most this many samples")
        inputs.float("max_score", required=False, label="Only scores up to", description="Optional score threshold")
        inputs.str("save_as", required=False, label="Save as view",
                   description="Optional name to save the view under on the dataset")
        inputs.bool("overwrite", default=False, label="Replace a saved view of that name")
        return types.Property(inputs, view=types.View(label="Load agreement view"))

    def execute(self, ctx):
        from agreement.fo.views import lowest_scoring_view, rater_pair_view, save_agreement_view

        p = ctx.params
        key = require(p, "key", "the run whose disagreements to show")
        limit = p.get("limit", 50)
        max_score = p.get("max_score")
        if p.get("mode") == "review":
            from agreement.fo.methods.consensus import review_view

            view = review_view(ctx.view, key)
            ctx.ops.set_view(view=view)
            return {"key": key, "count": len(view), "saved_view": None, "label_ids": view.values("id")}
        mode = p.get("mode") or "lowest"
        if mode == "pair":
            a, b = require(p, "rater_a", "the first rater"), require(p, "rater_b", "the second rater")
            view = rater_pair_view(ctx.view, key, a, b, max_score=max_score, limit=limit)
            description = f"the samples where {a} and {b} agree least in run {key!r}, lowest first"
        elif mode == "unmatched":
            from agreement.fo.views import unmatched_labels_view

            rater = require(p, "rater", "the rater whose unmatched labels to show")
            view = unmatched_labels_view(ctx.view, key, rater)
            description = f"{rater}'s labels that match nobody in run {key!r}"
        elif mode == "class":
            from agreement.fo.views import class_disagreement_view

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
