"""Operator: STAPLE consensus masks with per-rater sensitivity and specificity."""

from __future__ import annotations

import fiftyone.operators as foo
import fiftyone.operators.types as types

from agreement.fo.consensus import compute_mask_consensus

from .common import (
    compute_config,
    progress_reporter,
    rater_layout_inputs,
    rater_layout_kwargs,
    refresh_app,
    require,
    run_inputs,
)


class ComputeMaskConsensus(foo.Operator):
    @property
    def config(self):
        return compute_config(
            "compute_mask_consensus",
            "Annotator Agreement: STAPLE mask consensus",
            "Consensus masks per class and each rater's sensitivity and specificity (STAPLE)",
        )

    def resolve_input(self, ctx):
        import fiftyone.core.labels as fol

        inputs = types.Object()
        rater_layout_inputs(inputs, ctx, (fol.Detections, fol.Polylines))
        inputs.float("threshold", default=0.5, min=0.0, max=1.0, label="Consensus threshold",
                     description="A pixel is in the consensus when its STAPLE probability reaches this")
        inputs.int("max_iter", default=10_000, min=1, label="Maximum EM iterations")
        run_inputs(inputs, ctx)
        return types.Property(inputs, view=types.View(label="STAPLE mask consensus"))

    def execute(self, ctx):
        p = ctx.params
        result = compute_mask_consensus(
            ctx.view,
            require(p, "key", "a name for this run"),
            **rater_layout_kwargs(p),
            threshold=float(p.get("threshold", 0.5)),
            max_iter=int(p.get("max_iter", 10_000)),
            overwrite=bool(p.get("overwrite", False)),
            progress=progress_reporter(ctx),
        )
        refresh_app(ctx)
        return {"key": p["key"], **result}
