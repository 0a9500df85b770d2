"""Operators: consensus labels (compute, finalize the reviewed set, export the rater report)."""

from __future__ import annotations

import fiftyone.operators as foo
import fiftyone.operators.types as types

from .python_call import AgreementOperator
from .common import (
    compute_config,
    execute_with_progress,
    rater_layout_inputs,
    rater_layout_kwargs,
    refresh_app,
    require,
    run_inputs,
)


class ComputeConsensus(AgreementOperator):
    computes_run = True
    shared_params = True

    @property
    def config(self):
        return compute_config(
            "compute_consensus",
            "Annotator Agreement: consensus labels",
            "One label set from many raters, weighted by each rater's sensitivity, false positives, "
            "class confusion and localisation noise, with a review queue and a rater report",
        )

    def resolve_input(self, ctx):
        from agreement.consensus import METHODS
        from agreement.consensus.threshold import AUTO_TAU_RANGE

        inputs = types.Object()
        rater_layout_inputs(inputs, ctx)
        choice = types.RadioGroup()
        for name, label in (("em", "EM (rater sensitivity, false positives, confusion, box noise)"),
                            ("majority", "majority vote with a quorum (CVAT-like)"),
                            ("wbf", "weighted boxes fusion (boxes only)")):
            choice.add_choice(name, label=label)
        inputs.enum("method", list(METHODS), default="em", label="Method", view=choice)
        lo, hi = AUTO_TAU_RANGE
        inputs.bool("tau_auto", default=True, label="Choose τ from the data",
                    description=f"The IoU threshold for 'the same object' ({lo:g}-{hi:g}) with the fewest "
                                "expected split and merged objects, estimated from how raters' boxes overlap")
        if ctx.params.get("tau_auto", True) is False:
            inputs.float("tau", default=0.5, min=0.0, max=1.0, label="τ (similarity to be the same object)")
        inputs.float("min_confidence", default=0.5, min=0.0, max=1.0, label="Minimum confidence",
                     description="A candidate becomes a consensus label when its existence posterior reaches this")
        if ctx.params.get("method") == "majority":
            inputs.float("quorum", default=0.5, min=0.0, max=1.0, label="Quorum",
                         description="Share of the assigned raters who must have drawn the object")
        run_inputs(inputs, ctx, default_prefix="consensus")
        return types.Property(inputs, view=types.View(label="Consensus labels"))

    def execute(self, ctx):
        from agreement.fo.consensus_labels import compute_consensus

        p = ctx.params
        band = p.get("review_band") or (0.2, 0.8)
        key = require(p, "key", "a name for this run")
        kwargs = dict(
            **rater_layout_kwargs(p),
            method=p.get("method") or "em",
            tau=consensus_tau(p),
            min_confidence=float(p.get("min_confidence", 0.5)),
            quorum=float(p.get("quorum", 0.5)),
            review_band=tuple(float(x) for x in band),
            similarity=p.get("similarity") or None,
            overwrite=bool(p.get("overwrite", False)),
        )
        return execute_with_progress(
            ctx,
            lambda progress: {"key": key, **compute_consensus(ctx.view, key, **kwargs, progress=progress)},
            reload_dataset=True,
        )


def consensus_tau(params: dict) -> float | str:
    """The ``tau`` of a consensus run from the operator's parameters: ``"auto"`` unless the form's
    "Choose τ from the data" is off, or ``tau`` is given as a number without it (SDK calls)."""
    tau, auto = params.get("tau"), params.get("tau_auto")
    if tau == "auto" or auto is True or (auto is None and tau is None):
        return "auto"
    if tau is None:
        return 0.5
    try:
        return float(tau)  # the form's number (or a numeric string from an SDK call)
    except (TypeError, ValueError):
        return tau  # refused by compute_consensus, which names the value and the two forms


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
        from agreement.fo.consensus_labels import finalize_consensus

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
        from agreement.fo.consensus_labels import export_rater_report

        p = ctx.params
        return export_rater_report(ctx.dataset, require(p, "key", "the consensus run"),
                                   require(p, "output_dir", "a folder for the report"))
