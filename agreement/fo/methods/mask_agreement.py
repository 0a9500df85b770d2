"""Agreement of semantic masks (``Segmentation`` rater fields) on a FiftyOne dataset or view.

Per sample (every pixel) and over the corpus: pixel-level nominal
Krippendorff's α (overall and per class, a class's presence against its
absence), Dice and IoU per rater pair and class, and boundary F1 within
``boundary_tolerance`` of the image diagonal (0.75 %, Csurka et al. 2013) or
``tolerance`` pixels when given, from
:func:`agreement.methods.semantic.pixels.sample_statistics`. The corpus α
pools a seeded sample of ``n_pixels`` pixels per sample (every pixel of a
smaller mask; ``n_pixels=0``: every pixel), the seed combined with the
sample id, so the numbers never depend on shard size, worker count or
sample order. The classes are the dataset's ``mask_targets`` (0, background,
always allowed); without them, the values found. The run streams: masks are
read, measured and dropped shard by shard.

Written to the dataset (``key`` is the run key):

===============================  ===================================================
``{key}_alpha``                  per sample: pixel α of its masks (``None`` where
                                 undefined, e.g. every rater drew one class only)
``{key}_pixel_agreement``        per sample: share of agreeing rater pairs per pixel
``{key}_dice``, ``{key}_iou``    per sample: mean over rater pairs of the mean over
                                 the classes in either mask (``None`` when no rater
                                 marked a foreground pixel: background only)
``{key}_boundary_f1``            per sample: the same for boundary F1
===============================  ===================================================
"""

from __future__ import annotations

from typing import Any

import numpy as np

import fiftyone.core.labels as fol

from agreement.fo.panel.label_explanations import mask_explanations
from agreement.fo.planning.plan_mask import mask_planning
from agreement.fo.runs.declaration import MethodDeclaration, Param, python_function
from agreement.fo.runs.method_spec import MethodHooks, MethodOutput, MethodSpec
from agreement.fo.runs.results import AgreementResults
from agreement.fo.storage.mask_reading import ordered_map
from agreement.methods.semantic.pixels import sample_statistics
from agreement.methods.semantic.stats import SemanticStats
from agreement.reporting.figures.masks import class_rows, mask_figures, pair_class_dice_rows

__all__ = ["compute_mask_agreement", "METHOD", "SPEC", "DECLARATION", "HOOKS"]

METHOD = "iaa.mask_agreement"
SAMPLE_VALUES = ("alpha", "pixel_agreement", "dice", "iou", "boundary_f1")


def _class_values(read) -> list[int] | None:
    targets = read.layout.get("mask_targets")
    return None if not targets else sorted({0} | {int(k) for k in targets})


def _kernel(read, params: dict, extra: dict) -> MethodOutput:
    """One shard: per-sample numbers, the shard's mergeable sums, and per (sample, rater pair, class) Dice."""
    data = read.annotations
    R, values = data.num_raters, _class_values(read)
    exclude = (0,) if params["ignore_background"] else ()
    n_pixels = params["n_pixels"] or None
    per_sample = {name: np.full(data.num_samples, np.nan) for name in SAMPLE_VALUES}
    stats = None
    rows: dict[str, list[Any]] = {"sample": [], "pair": [], "class_value": [], "dice": []}

    def one(s: int):
        masks = [data.masks[data.offsets[s * R + r]] if data.offsets[s * R + r + 1] > data.offsets[s * R + r]
                 else None for r in range(R)]
        return sample_statistics(masks, class_values=values, n_pixels=n_pixels, seed=params["seed"],
                                 sample_key=str(data.sample_names[s]), tolerance=params["tolerance"],
                                 boundary_tolerance=params["boundary_tolerance"], raters=list(data.raters),
                                 exclude=exclude)

    # samples measured in threads, merged here in sample order: the serial numbers, bit for bit
    for s, res in enumerate(ordered_map(one, range(data.num_samples))):
        for name in SAMPLE_VALUES:
            per_sample[name][s] = getattr(res, name)
        stats = res.stats if stats is None else stats.merge(res.stats)
        p, c = np.nonzero(np.isfinite(res.pair_dice))
        rows["sample"] += [str(data.sample_ids[s])] * len(p)
        rows["pair"] += [f"{data.raters[res.pairs[k][0]]} | {data.raters[res.pairs[k][1]]}" for k in p]
        rows["class_value"] += [int(res.class_values[k]) for k in c]
        rows["dice"] += res.pair_dice[p, c].tolist()
    return MethodOutput({}, {}, sample_values=per_sample, stats={"stats": stats, "rows": rows})


def _merged(stats: list, R: int, values) -> SemanticStats:
    parts = [st["stats"] for st in stats if st["stats"] is not None]
    if not parts:
        return SemanticStats.empty(values or (), R)
    total = parts[0]
    for part in parts[1:]:
        total = total.merge(part)
    return total


def _finish(stats: list, params: dict, context=None) -> tuple[dict, dict]:
    """Corpus pixel α (overall and per class), Dice, IoU and boundary F1 pooled over samples."""
    res = _merged(stats, 2, None).finish((0,) if params["ignore_background"] else ())
    a, o = res.alpha, res.overlap
    rows = {k: [x for st in stats for x in st["rows"][k]] for k in ("sample", "pair", "class_value", "dice")}
    summary = {
        "alpha": a.alpha, "reason": a.reason, "dice": o.dice, "iou": o.iou, "boundary_f1": o.boundary_f1,
        "n_samples": int(a.n_samples), "n_pixels": params["n_pixels"] or None, "tolerance": params["tolerance"],
        "boundary_tolerance": params["boundary_tolerance"],
        "dice_reason": o.dice_reason, "iou_reason": o.dice_reason, "boundary_f1_reason": o.boundary_f1_reason,
    }
    classes = [int(v) for v in a.class_values]
    detail = {
        "classes": classes,
        "class_alpha": {"classes": classes, "alpha": a.class_alpha, "reason": list(a.class_reasons)},
        "class_overlap": {"classes": [int(v) for v in o.class_values], "dice": o.class_dice, "iou": o.class_iou,
                          "boundary_f1": o.class_boundary_f1},
        "pair_class_dice": rows,
    }
    return summary, detail


SPEC = MethodSpec(
    method=METHOD,
    sample_suffixes=SAMPLE_VALUES,
    label_suffixes=(),
    compute=None,
    kernel=_kernel,
    finish=_finish,
    shard_cap=200,  # full-image masks: 200 samples of three 512 x 512 masks are about 160 MB
)

#: The panel's view of its runs (:data:`agreement.reporting.figures.method_figures.METHOD_VIEWS`).
VIEW = {
    "title": "Semantic mask agreement",
    "score_suffix": "dice",
    "score_label": "mean Dice of the sample's rater pairs",
    "score_axis": "mean Dice of the sample (1 = identical masks)",
    "score_name": "Dice",
    "score_range": lambda params: (0.0, 1.0),
    "cards": [
        {"key": "alpha", "label": "pixel α (pooled)", "reason": "reason"},
        {"key": "dice", "label": "Dice (pooled)", "reason": "dice_reason"},
        {"key": "iou", "label": "IoU (pooled)", "reason": "iou_reason"},
        {"key": "boundary_f1", "label": "boundary F1 (pooled)", "reason": "boundary_f1_reason"},
    ],
    "view_labels": ("mean Dice", "samples with fewer than two masks"),
}


def _class_view(samples, info: dict, label_class):
    from agreement.fo.views.disagreements import mask_class_view

    return mask_class_view(samples, info["key"], label_class)


def _class_scores(samples, key: str, label_class, pair) -> list[tuple[str, float]]:
    from agreement.fo.views.disagreements import mask_dice_scores

    return mask_dice_scores(samples, key, label_class, pair)


#: What its runs show beside the view (:class:`agreement.fo.runs.method_spec.MethodHooks`): per class and rater
#: pair Dice figures, drill-downs to the samples where a class's Dice is lowest, each rater's mask explained.
HOOKS = MethodHooks(
    panel_figures=mask_figures,
    explain_sample=lambda sample, info: mask_explanations(sample, info.get("input") or {}),
    class_view=_class_view,
    class_scores=_class_scores,
    report_classes=lambda detail, info: (class_rows(detail, info), pair_class_dice_rows(detail, info)),
    planning=mask_planning,
)


class MaskAgreementResults(AgreementResults):
    """Semantic mask agreement: pooled pixel ``alpha``, ``dice``, ``iou``, ``boundary_f1``; ``detail``: per-class
    α and overlap, per (sample, rater pair, class) Dice."""

    view = VIEW


DECLARATION = MethodDeclaration(
    operator="compute_mask_agreement",
    label="Annotator Agreement: semantic masks",
    description="Pixel-level Krippendorff's alpha, Dice, IoU and boundary F1 of semantic masks, per class, "
                "rater pair and sample",
    spec=SPEC,
    results_cls=MaskAgreementResults,
    params=(
        Param("n_pixels", int, 10_000, "Pixels per sample for α",
              "Seeded pixels per sample pooled into the corpus α (every pixel of a smaller mask; 0: every pixel)",
              low=0),
        Param("boundary_tolerance", float, 0.0075, "Boundary tolerance (share of the diagonal)",
              "A boundary point matches if the other mask has a boundary within this share of the image "
              "diagonal (0.0075: Csurka et al. 2013), so boundary F1 does not depend on the resolution",
              low=0.0, high=1.0),
        Param("tolerance", float, None, "Boundary tolerance in pixels (optional)",
              "A fixed tolerance in pixels for every image; when set it replaces the share of the diagonal",
              low=0.0),
        Param("ignore_background", bool, False, "Leave background out of the means",
              "Per-sample and pooled Dice, IoU and boundary F1 leave class 0 out (its α is still reported)"),
        Param("seed", int, 0, "Seed", "Seed of the pixel sample", low=0),
    ),
    outputs=(("alpha", "Pixel alpha (pooled)", "float"), ("dice", "Dice (pooled)", "float"),
             ("iou", "IoU (pooled)", "float"), ("boundary_f1", "Boundary F1 (pooled)", "float")),
    key_prefix="masks",
    label_types=(fol.Segmentation,),
    hooks=HOOKS,
)

#: ``compute_mask_agreement(samples, key, *, fields=..., n_pixels=10000, boundary_tolerance=0.0075, ...)``: agreement of
#: semantic masks, stored as run ``key``; returns ``alpha``, ``reason``, ``dice``, ``iou``, ``boundary_f1``,
#: ``n_samples``.
compute_mask_agreement = python_function(DECLARATION)
