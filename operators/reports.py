"""Reports out: per run, one HTML page (plotly.js shared by the export, or inlined), its results as JSON and tidy
CSV tables."""

from __future__ import annotations

import csv

import fiftyone.operators.types as types

from agreement.fo.reports.export import export_agreement_report
from agreement.fo.runs.store import list_agreement_runs

from .common import OperatorInputError, compute_config, execute_with_progress, require
from .outputs import result_property
from .python_call import AgreementOperator
from .target import target_input, target_record, target_view


def csv_rows(path: str) -> int:
    """The number of data rows of a CSV file written by the plugin (its header row not counted)."""
    with open(path, newline="", encoding="utf-8") as f:
        return max(sum(1 for _ in csv.reader(f)) - 1, 0)


def describe_target(record: dict) -> str:
    """The target of an operation that records no run, as a sentence (see
    :func:`agreement.fo.runs.declaration.run_target`)."""
    from agreement.fo.runs.declaration import run_target

    return run_target(record)


class ExportAgreementReport(AgreementOperator):
    """``export_agreement_report``: writes, per run, the HTML report, the results as JSON and CSV tables."""

    takes_target = True
    outputs = (("output_dir", "Folder", "str"), ("target", "Per-sample tables of", "str"),
               ("runs", "Runs exported", "list"), ("reports", "HTML reports (open in a browser)", "list"),
               ("num_files", "Files written", "int"),
               ("files", "Files", "list"), ("rows", "Rows per CSV file", "json"))

    @property
    def config(self):
        """The operator's name, label and description in the App."""
        return compute_config(
            "export_agreement_report",
            "Annotator Agreement: export report files",
            "Writes, per run, an HTML report with the panel's figures (opens offline; plotly.js is one shared "
            "file beside the run folders, or inlined on request), the results as JSON and tidy CSV tables "
            "(raters, rater pairs, classes, samples, typed label conflicts)",
        )

    def resolve_input(self, ctx):
        """The App's form of the operator's parameters, built from ``ctx.params`` so far."""
        inputs = types.Object()
        target_input(inputs, ctx, "Per-sample tables of")
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
        inputs.bool("samples_csv", default=True, label="Also write the per-sample table",
                    description="samples.csv: one row per sample of the chosen target (the figures and other "
                                "tables are the whole run's)")
        inputs.bool("self_contained", default=False, label="One self-contained file per report",
                    description="Inline plotly.js in each report.html (about 5 MB a page, e.g. to send one by "
                                "e-mail) instead of one shared plotly.min.js beside the run folders (about 0.1 MB "
                                "a page)")
        return types.Property(inputs, view=types.View(label="Export agreement report"))

    def execute(self, ctx):
        """Runs the operator on ``ctx.params`` and returns its result dict (its keys: :attr:`outputs`)."""
        p = ctx.params
        out = require(p, "output_dir", "the folder to write the report files into")
        keys = p.get("keys") or p.get("key") or None
        if ctx.dataset is None:
            raise OperatorInputError("no dataset: open or pass the dataset whose runs to export")
        samples = target_view(ctx)
        record = target_record(ctx, samples)

        def compute(progress) -> dict:
            progress(0.0, "writing the report files")
            written = export_agreement_report(samples, out, keys=keys, samples_csv=bool(p.get("samples_csv", True)),
                                              self_contained=bool(p.get("self_contained", False)))
            files = [path for per in written["runs"].values() for name, path in per.items() if name != "folder"]
            files += [written["plotly_js"]] if written["plotly_js"] else []
            return {"output_dir": written["output_dir"], "target": describe_target(record),
                    "runs": sorted(written["runs"]),
                    "reports": [written["runs"][k]["html"] for k in sorted(written["runs"])],
                    "num_files": len(files), "files": files,
                    "rows": {path: csv_rows(path) for path in files if path.endswith(".csv")}}

        return execute_with_progress(ctx, compute, outputs=lambda r: result_property(self.outputs, r))
