"""Operators after a consensus run: finalize the reviewed label set (with progress: it rewrites a label
field), export the rater report.

Neither offers a target: finalize writes ``<key>_final`` for every sample of
the run (a subset would leave the field half written), and the rater report is
the one the run computed and stored, whatever view is loaded. Both say which
samples the run itself was computed on.
"""

from __future__ import annotations

import fiftyone.operators as foo
import fiftyone.operators.types as types

from .common import Progress, compute_config, execute_with_progress, existing_run_choice, require
from .outputs import result_property
from .python_call import AgreementOperator

NEEDS = "run compute_consensus first (KαLOS, OT and geometry runs have no consensus labels)"


def consensus_run_choice(inputs: types.Object, ctx) -> list[str]:
    """The run picker of an operator that takes only consensus runs."""
    from agreement.fo.methods.consensus import METHOD

    return existing_run_choice(inputs, ctx, label="Consensus run", method=METHOD, kind="consensus run",
                               needs=NEEDS)


def _computed_on(ctx, key: str) -> str:
    from agreement.fo.runs.declaration import run_target

    return run_target(ctx.dataset, key)


class FinalizeConsensus(AgreementOperator):
    """``finalize_consensus``: writes ``<key>_final``, a consensus run's labels minus those a reviewer rejected."""

    outputs = (("key", "Run", "str"), ("field", "Field written", "str"), ("kept", "Labels kept", "int"),
               ("rejected", "Rejected (left out)", "int"), ("accepted", "Accepted (no longer flagged)", "int"),
               ("still_flagged", "Still flagged (kept, not reviewed)", "int"),
               ("computed_on", "The run was computed on", "str"))

    @property
    def config(self):
        """The operator's name, label and description in the App."""
        return compute_config("finalize_consensus", "Annotator Agreement: finalize reviewed consensus",
                              "Writes <key>_final: consensus labels minus those a reviewer tagged 'rejected'")

    def resolve_input(self, ctx):
        """The App's form of the operator's parameters, built from ``ctx.params`` so far."""
        inputs = types.Object()
        keys = consensus_run_choice(inputs, ctx)
        key = ctx.params.get("key") or (inputs.properties["key"].default if keys else None)
        if key in keys:
            inputs.view("what", types.Notice(
                label=f"Writes {key}_final for every sample of run {key!r} (computed on {_computed_on(ctx, key)})"))
        return types.Property(inputs, view=types.View(label="Finalize consensus"))

    def execute(self, ctx):
        """Runs the operator on ``ctx.params`` and returns its result dict (its keys: :attr:`outputs`)."""
        from agreement.fo.methods.consensus import finalize_consensus

        key = require(ctx.params, "key", "the consensus run")

        def compute(progress: Progress) -> dict:
            progress(0.0, f"writing {key}_final from the reviewers' decisions")
            counts = finalize_consensus(ctx.dataset, key)
            return {"key": key, "field": f"{key}_final", **counts, "computed_on": _computed_on(ctx, key)}

        return execute_with_progress(ctx, compute, reload_dataset=True,
                                     outputs=lambda r: result_property(self.outputs, r))


class ExportRaterReport(AgreementOperator):
    """``export_rater_report``: writes a consensus run's per-rater report as JSON and CSV."""

    outputs = (("key", "Run", "str"), ("json", "JSON file", "str"), ("csv", "CSV file", "str"),
               ("raters", "Raters (CSV rows)", "int"), ("computed_on", "The run was computed on", "str"))

    @property
    def config(self):
        """The operator's name, label and description in the App."""
        return foo.OperatorConfig(name="export_rater_report", label="Annotator Agreement: export rater report",
                                  description="Per rater: sensitivity, false positives, precision, localisation "
                                              "error and confusion, as CSV and JSON", dynamic=True)

    def resolve_input(self, ctx):
        """The App's form of the operator's parameters, built from ``ctx.params`` so far."""
        inputs = types.Object()
        if consensus_run_choice(inputs, ctx):
            inputs.str("output_dir", required=True, label="Folder to write the report to")
        return types.Property(inputs, view=types.View(label="Export rater report"))

    def execute(self, ctx):
        """Runs the operator on ``ctx.params`` and returns its result dict (its keys: :attr:`outputs`)."""
        from agreement.fo.methods.consensus import export_rater_report

        p = ctx.params
        key = require(p, "key", "the consensus run")
        out = export_rater_report(ctx.dataset, key, require(p, "output_dir", "a folder for the report"))
        return {"key": key, **out, "computed_on": _computed_on(ctx, key)}
