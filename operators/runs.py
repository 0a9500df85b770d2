"""Run management operators: list, inspect, rename and delete agreement runs."""

from __future__ import annotations

import fiftyone.operators as foo
import fiftyone.operators.types as types

from agreement.fo import runs as fo_runs

from .common import existing_run_choice, require


class ListAgreementRuns(foo.Operator):
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
        return {"keys": keys, "runs": [{k: r[k] for k in ("key", "method", "timestamp", "sample_fields")} for r in runs]}

    def resolve_output(self, ctx):
        outputs = types.Object()
        outputs.list("keys", types.String(), label="Agreement runs")
        return types.Property(outputs)


class GetAgreementRunInfo(foo.Operator):
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


class RenameAgreementRun(foo.Operator):
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


class DeleteAgreementRun(foo.Operator):
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
