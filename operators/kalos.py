"""Operator: KaLOS, localisation-first correspondence and Krippendorff's alpha."""

from __future__ import annotations

import fiftyone.operators.types as types

from agreement.fo.kalos import compute_kalos

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

SIMILARITY_HELP = {
    "iou": "box IoU",
    "giou": "box GIoU, normalised to [0, 1]",
    "centroid": "box centre closeness (1 − distance / image diagonal)",
    "polygon_iou": "polygon IoU (Polylines)",
    "polygon_giou": "polygon GIoU with the convex hull (Polylines)",
    "mask_iou": "instance-mask IoU (Detections with masks, or rasterised polygons)",
    "oks": "keypoint OKS with COCO person sigmas (Keypoints)",
    "cuboid_iou": "3D cuboid IoU, exact volume under any rotation (3D Detections)",
    "point3d": "3D points: exp(-d²/(2·2²)), d in scene units (3D Detections with a location only)",
    "polyline3d_f1": "3D polylines: boundary F1 within 0.5 scene units (Polylines with points3d)",
    "segment_jaccard": "point-cloud segments: Jaccard of point indices (label attribute point_indices)",
}


class ComputeKalos(AgreementOperator):
    computes_run = True
    shared_params = True

    @property
    def config(self):
        return compute_config(
            "compute_kalos",
            "Annotator Agreement: KaLOS",
            "Localisation-first correspondence, then Krippendorff's alpha per sample and corpus, with diagnostics",
        )

    def resolve_input(self, ctx):
        from agreement.correspondence import COSTS, SOLVERS

        inputs = types.Object()
        rater_layout_inputs(inputs, ctx)
        sim = types.DropdownView()
        for name, text in SIMILARITY_HELP.items():
            sim.add_choice(name, label=name, description=text)
        inputs.enum("similarity", list(SIMILARITY_HELP), default="iou", label="Similarity", view=sim,
                    description="How alike two annotations are; the label type must carry that geometry")
        inputs.float("tau", default=0.5, min=0.0, max=1.0, label="τ (similarity threshold)",
                     description="Annotations of different raters can be the same object only if similarity ≥ τ "
                                 "(calibrate_agreement suggests one from your data)")
        solver = types.DropdownView()
        for name, text in (("greedy", "greedy (default): best pairs first, one annotation per rater per unit"),
                           ("hungarian", "sequential Hungarian, rater by rater"),
                           ("agglomerative", "agglomerative clustering"),
                           ("mgm", "multi-graph matching (pylibmgm)")):
            if name in SOLVERS:
                solver.add_choice(name, label=text)
        inputs.enum("solver", list(SOLVERS), default="greedy", label="Correspondence solver", view=solver)
        inputs.enum("cost", list(COSTS), default="soft", label="Cost",
                    description="soft: prefer same-class matches (−s − 1 vs −s); plain: −s")
        inputs.str("session_attr", required=False, label="Session attribute",
                   description="Optional label attribute naming sessions, for intra-annotator consistency")
        similarity_3d_inputs(inputs, ctx, "similarity")
        execution_inputs(inputs, ctx)
        run_inputs(inputs, ctx, default_prefix="kalos")
        return types.Property(inputs, view=types.View(label="KaLOS"))

    def execute(self, ctx):
        p = ctx.params
        key = require(p, "key", "a name for this run")
        kwargs = dict(
            **rater_layout_kwargs(p),
            similarity=p.get("similarity") or "iou",
            tau=float(p.get("tau", 0.5)),
            solver=p.get("solver") or "greedy",
            cost=p.get("cost") or "soft",
            session_attr=p.get("session_attr") or None,
            overwrite=bool(p.get("overwrite", False)),
            **similarity_3d_kwargs(p),
            **execution_kwargs(p),
        )
        return execute_with_progress(
            ctx,
            lambda progress: {"key": key, **compute_kalos(ctx.view, key, **kwargs, progress=progress)},
            reload_dataset=True,
        )

    def resolve_output(self, ctx):
        outputs = types.Object()
        outputs.float("global_alpha", label="Global alpha (pooled)")
        outputs.float("mean_alpha", label="Mean alpha over samples where defined")
        outputs.int("n_undefined", label="Samples where alpha is undefined")
        return types.Property(outputs)
