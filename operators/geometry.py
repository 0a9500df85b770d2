"""Operator: chance-corrected geometry agreement (sigma, distance alpha, KS, detection and classification)."""

from __future__ import annotations

import fiftyone.operators.types as types

from agreement.fo.geometry import compute_geometry_agreement

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
    similarity_3d_inputs,
    similarity_3d_kwargs,
)


class ComputeGeometryAgreement(AgreementOperator):
    computes_run = True
    shared_params = True

    @property
    def config(self):
        return compute_config(
            "compute_geometry_agreement",
            "Annotator Agreement: geometry agreement (σ, KS)",
            "Do raters find the same objects, agree what they are, and where? Each chance-corrected",
        )

    def resolve_input(self, ctx):
        from agreement.geometry_agreement import DISTANCES

        inputs = types.Object()
        rater_layout_inputs(inputs, ctx)
        inputs.enum("distance", list(DISTANCES), default="giou", label="Distance",
                    description="1 − similarity: giou (default), iou, centroid, polygon_*, mask_iou, oks, cuboid_iou (3D)")
        inputs.float("threshold", default=0.5, min=0.0, max=1.0, label="Matching threshold",
                     description="Similarity a pair needs to be matched, within and across samples alike")
        inputs.bool("intervals", default=True, label="Bootstrap intervals (resampling samples)")
        if ctx.params.get("intervals", True):
            inputs.int("bootstrap", default=1000, min=2, label="Bootstrap resamples")
        inputs.int("max_pairs", default=200_000, min=1, label="Pair budget (chance sample)",
                   description="At most this many cross-sample comparisons for the chance baseline. "
                               "Every sample is measured, except one whose own within-sample comparisons "
                               "exceed this: it is skipped whole and listed in the run results "
                               "(n_samples_skipped)")
        inputs.int("seed", default=0, label="Seed")
        similarity_3d_inputs(inputs, ctx, "distance")
        execution_inputs(inputs, ctx)
        run_inputs(inputs, ctx, default_prefix="geometry")
        return types.Property(inputs, view=types.View(label="Geometry agreement"))

    def execute(self, ctx):
        p = ctx.params
        bootstrap = int(p.get("bootstrap", 1000)) if p.get("intervals", True) else None
        key = require(p, "key", "a name for this run")
        kwargs = dict(
            **rater_layout_kwargs(p),
            distance=p.get("distance") or "giou",
            threshold=float(p.get("threshold", 0.5)),
            bootstrap=bootstrap,
            max_pairs=int(p.get("max_pairs", 200_000)),
            seed=int(p.get("seed", 0)),
            overwrite=bool(p.get("overwrite", False)),
            **similarity_3d_kwargs(p),
            **execution_kwargs(p),
        )
        return execute_with_progress(
            ctx,
            lambda progress: {"key": key, **compute_geometry_agreement(ctx.view, key, **kwargs, progress=progress)},
            reload_dataset=True,
        )

    def resolve_output(self, ctx):
        outputs = types.Object()
        outputs.float("sigma", label="σ (share of within distances below chance 5th percentile; ≈0.05 chance)")
        outputs.float("distance_alpha", label="Distance α (1 identical, 0 chance)")
        outputs.float("ks", label="KS statistic (within vs chance)")
        outputs.float("detection_alpha", label="Detection agreement (1 all find all, 0 chance)")
        outputs.float("classification_alpha", label="Classification α (matched pairs)")
        outputs.int("n_samples_measured", label="Samples measured")
        outputs.int("n_samples_skipped", label="Samples skipped: their own comparisons exceed the pair budget")
        return types.Property(outputs)
