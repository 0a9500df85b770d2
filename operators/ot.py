"""Operator: calibration of the distance, τ and β from the data (KS separation of observed vs chance)."""

from __future__ import annotations

import fiftyone.operators.types as types

from .python_call import AgreementOperator
from .common import (
    compute_config,
    execute_with_progress,
    rater_layout_inputs,
    rater_layout_kwargs,
    require,
    run_inputs,
)


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
