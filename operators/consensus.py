"""Operators after a consensus run: finalize the reviewed label set, export the rater report."""

from __future__ import annotations

import fiftyone.operators as foo
import fiftyone.operators.types as types

from .python_call import AgreementOperator
from .common import refresh_app, require


class FinalizeConsensus(AgreementOperator):
    @property
    def config(self):
        return foo.OperatorConfig(name="finalize_consensus", label="Annotator Agreement: finalize reviewed consensus",
                                  description="Writes <key>_final: consensus labels minus those a reviewer tagged "
                                              "'rejected'")

    def resolve_input(self, ctx):
        from .common import existing_run_choice

        inputs = types.Object()
        existing_run_choice(inputs, ctx)
        return types.Property(inputs, view=types.View(label="Finalize consensus"))

    def execute(self, ctx):
        from agreement.fo.methods.consensus import finalize_consensus

        counts = finalize_consensus(ctx.dataset, require(ctx.params, "key", "the consensus run"))
        refresh_app(ctx)
        return counts


class ExportRaterReport(AgreementOperator):
    @property
    def config(self):
        return foo.OperatorConfig(name="export_rater_report", label="Annotator Agreement: export rater report",
                                  description="Per rater: sensitivity, false positives, precision, localisation "
                                              "error and confusion, as CSV and JSON")

    def resolve_input(self, ctx):
        from .common import existing_run_choice

        inputs = types.Object()
        existing_run_choice(inputs, ctx)
        inputs.str("output_dir", required=True, label="Folder to write the report to")
        return types.Property(inputs, view=types.View(label="Export rater report"))

    def execute(self, ctx):
        from agreement.fo.methods.consensus import export_rater_report

        p = ctx.params
        return export_rater_report(ctx.dataset, require(p, "key", "the consensus run"),
                                   require(p, "output_dir", "a folder for the report"))
