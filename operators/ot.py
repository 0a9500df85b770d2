"""Operator: OT agreement with chance-corrected alpha-OT (Prokhorov & Kalinin)."""

from __future__ import annotations

import fiftyone.operators.types as types

from agreement.fo.ot_agreement import compute_ot_agreement

from .python_call import AgreementOperator
from .common import (
    execution_inputs,
    execution_kwargs,
    compute_config,
    execute_with_progress,
    rater_layout_inputs,
    rater_layout_kwargs,
    require,
    run_inputs,
)


class ComputeOTAgreement(AgreementOperator):
    computes_run = True
    shared_params = True

    @property
    def config(self):
        return compute_config(
            "compute_ot_agreement",
            "Annotator Agreement: OT agreement",
            "Optimal-transport agreement per sample and chance-corrected alpha-OT per corpus",
        )

    def resolve_input(self, ctx):
        import fiftyone.core.labels as fol

        inputs = types.Object()
        rater_layout_inputs(inputs, ctx, (fol.Detections,))
        inputs.float("lam", default=0.5, min=0.0, max=1.0, label="λ (localisation weight)",
                     description="Pair cost = λ·(1−GIoU)/2 + (1−λ)·[labels differ]; 1 ignores labels, 0 ignores boxes")
        inputs.float("beta", default=0.5, min=0.0, max=1.0, label="β (cost of an unmatched box)",
                     description="Boxes match only when their pair cost is below β (2β for OC-cost); the score "
                                 "lies in [1−β, 1]. Different labels cost 1−λ on their own, so they can match "
                                 "only when β > 1−λ (never at λ = β = 0.5)")
        norm = types.RadioGroup()
        norm.add_choice("paper", label="paper (continuous, cost in [0, β])")
        norm.add_choice("oc_cost", label="OC-cost (Otani et al.; discontinuous at c = 2β)")
        inputs.enum("normalization", ["paper", "oc_cost"], default="paper", label="Normalisation", view=norm)
        inputs.int("max_pairs", default=100_000, min=1, label="Chance budget",
                   description="Cross-sample pairs for alpha-OT: exact up to this many, else a seeded estimate")
        inputs.int("seed", default=0, label="Seed", description="Seed of the chance estimate")
        inputs.float("iou_threshold", default=0.5, min=0.0, max=1.0, label="Baseline IoU threshold",
                     description="For the F1@IoU and threshold-alpha baselines computed alongside")
        execution_inputs(inputs, ctx)
        run_inputs(inputs, ctx, default_prefix="ot")
        return types.Property(inputs, view=types.View(label="OT agreement"))

    def resolve_delegation(self, ctx):
        return ctx.params.get("delegate", None)

    def execute(self, ctx):
        p = ctx.params
        key = require(p, "key", "a name for this run")
        kwargs = dict(
            **rater_layout_kwargs(p),
            lam=float(p.get("lam", 0.5)),
            beta=float(p.get("beta", 0.5)),
            normalization=p.get("normalization") or "paper",
            max_pairs=int(p.get("max_pairs", 100_000)),
            seed=int(p.get("seed", 0)),
            iou_threshold=float(p.get("iou_threshold", 0.5)),
            overwrite=bool(p.get("overwrite", False)),
            **execution_kwargs(p),
        )
        return execute_with_progress(
            ctx,
            lambda progress: {"key": key, **compute_ot_agreement(ctx.view, key, **kwargs, progress=progress)},
            reload_dataset=True,
        )

    def resolve_output(self, ctx):
        outputs = types.Object()
        outputs.float("alpha_ot", label="alpha-OT (1 perfect, 0 chance)")
        outputs.float("mean_ot", label="Mean OT score")
        outputs.float("f1", label="F1@IoU (baseline)")
        outputs.float("threshold_alpha", label="Threshold alpha (baseline)")
        outputs.int("n_scored", label="Samples scored")
        outputs.int("n_undefined", label="Samples not scored")
        outputs.str("alpha_ot_reason", label="Why alpha-OT is undefined")
        return types.Property(outputs)


class CalibrateAgreement(AgreementOperator):
    computes_run = True
    shared_params = True

    @property
    def config(self):
        return compute_config(
            "calibrate_agreement",
            "Annotator Agreement: calibrate distance and τ",
            "Observed vs chance disagreement per distance (KS), the data-driven τ* and OT β*",
        )

    def resolve_input(self, ctx):
        from agreement.similarity import SIMILARITIES

        inputs = types.Object()
        rater_layout_inputs(inputs, ctx)
        dropdown = types.DropdownView(multiple=True)
        for name in SIMILARITIES:
            dropdown.add_choice(name, label=name)
        inputs.list("distances", types.String(), default=[], label="Candidate distances",
                    description="1 − similarity; empty: every distance the labels' geometry supports (boxes: "
                                "iou, giou, centroid; and polygon, mask, keypoint or 3D ones where the labels "
                                "carry them)", view=dropdown)
        inputs.int("seed", default=0, label="Seed", description="Seed of the chance (other-sample) draws")
        inputs.str("plot_path", required=False, label="Save a PNG plot to", description="Optional file path")
        run_inputs(inputs, ctx, default_prefix="calibration")
        return types.Property(inputs, view=types.View(label="Calibrate agreement"))

    def execute(self, ctx):
        from agreement.fo.calibrate import calibrate_agreement

        p = ctx.params
        key = require(p, "key", "a name for this run")
        kwargs = dict(
            **rater_layout_kwargs(p),
            distances=p.get("distances") or None,
            seed=int(p.get("seed", 0)),
            overwrite=bool(p.get("overwrite", False)),
            plot_path=p.get("plot_path") or None,
        )
        return execute_with_progress(
            ctx, lambda progress: {"key": key, **calibrate_agreement(ctx.view, key, **kwargs, progress=progress)}
        )
