"""Reports out: every run's results as JSON, its per-rater and per-pair tables as CSV."""

from __future__ import annotations

import fiftyone.operators.types as types

from agreement.fo.reports import export_agreement_report
from agreement.fo.runs import list_agreement_runs

from .python_call import AgreementOperator
from .common import OperatorInputError, compute_config, require


class ExportAgreementReport(AgreementOperator):
    @property
    def config(self):
        return compute_config(
            "export_agreement_report",
            "Annotator Agreement: export report files",
            "Writes each run's results as JSON and its per-rater, per-pair and per-sample tables as CSV",
        )

    def resolve_input(self, ctx):
        inputs = types.Object()
        keys = list_agreement_runs(ctx.dataset) if ctx.dataset is not None else []
        if keys:
            dropdown = types.DropdownView(multiple=True)
            for k in keys:
                dropdown.add_choice(k, label=k)
            inputs.list("keys", types.String(), required=False, label="Runs", view=dropdown,
                        description="Default: every agreement run of the dataset")
        else:
            inputs.view("no_runs", types.Warning(label="No agreement runs",
                                                 description="Run one of the compute operators first."))
        inputs.str("output_dir", required=True, label="Output folder")
        inputs.bool("samples_csv", default=True, label="Also write the per-sample table")
        return types.Property(inputs, view=types.View(label="Export agreement report"))

    def execute(self, ctx):
        p = ctx.params
        out = require(p, "output_dir", "the folder to write the report files into")
        keys = p.get("keys") or p.get("key") or None
        if ctx.dataset is None:
            raise OperatorInputError("no dataset: open or pass the dataset whose runs to export")
        written = export_agreement_report(ctx.view, out, keys=keys, samples_csv=bool(p.get("samples_csv", True)))
        files = [path for per in written["runs"].values() for path in per.values()]
        return {"output_dir": written["output_dir"], "runs": sorted(written["runs"]), "files": files,
                "num_files": len(files)}

    def resolve_output(self, ctx):
        outputs = types.Object()
        outputs.str("output_dir", label="Folder")
        outputs.list("files", types.String(), label="Files written")
        return types.Property(outputs)
