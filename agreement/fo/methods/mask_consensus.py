"""STAPLE mask consensus on a FiftyOne dataset (Warfield, Zou & Wells 2004).

Per sample and per class, each assigned rater's instances of the class form
their union (a full-frame binary mask: instance masks placed in the image, or
polygons rasterised with OpenCV); a rater who is assigned and drew no instance
of the class contributes an empty mask (explicit absence). STAPLE
(:func:`agreement.methods.consensus.staple.staple`) estimates each rater's sensitivity and
specificity and a consensus probability map; the consensus (probability
≥ ``threshold``) is written as a new ``Detections`` field ``{key}_consensus``
with one detection per class (its mask cropped to its bounding box, with the
mean probability inside as ``staple_probability``).

On ``Segmentation`` rater fields (semantic masks, classes from the
dataset's ``mask_targets``) the run is multi-class STAPLE per sample instead,
streamed (:mod:`agreement.fo.methods.semantic_consensus_labels`): ``{key}_consensus`` is a
``Segmentation``, and each rater's sensitivity and specificity per class are
pooled over samples.

Samples where fewer than two raters carry masks or polygons are counted and
skipped with a reason, never silently dropped. Samples without an image size
(``metadata.width``/``height``) are skipped with a reason too: masks are
placed on the image's pixel grid.
"""

from __future__ import annotations

from typing import cast

import numpy as np

import fiftyone as fo

from agreement.fo.methods.semantic_consensus_labels import semantic_finish, semantic_kernel
from agreement.fo.runs.declaration import MethodDeclaration, Param, python_function
from agreement.fo.runs.method_spec import MethodOutput, MethodSpec
from agreement.fo.runs.results import AgreementResults
from agreement.methods.consensus.mask_consensus import mask_consensus
from agreement.reporting.figures.method_figures import rater_bars

__all__ = ["compute_mask_consensus", "METHOD", "SPEC", "DECLARATION"]

METHOD = "iaa.mask_consensus"
MAX_LISTED = 1000


def _check(read, params: dict) -> None:
    if read.layout.get("label_type") == "Segmentation":
        return  # semantic masks: checked per sample (shapes, values in mask_targets) before anything is written
    if read.annotations.masks is None and read.annotations.polygons is None:
        raise ValueError(
            "mask consensus needs instance masks (Detections with masks) or polygons (Polylines); "
            f"the rater labels of {read.layout.get('fields') or read.layout.get('field')!r} have neither"
        )


def _compute(read, params: dict, report, extra: dict) -> MethodOutput:
    """STAPLE per sample and class (pure :func:`agreement.methods.consensus.mask_consensus.mask_consensus`), as Detections."""
    data = read.annotations
    res = mask_consensus(data, threshold=params["threshold"], max_iter=params["max_iter"], progress=report)
    sid = data.sample_ids
    consensus = {
        sid[s]: fo.Detections(detections=[
            fo.Detection(label=m.label, bounding_box=list(m.box), mask=m.mask, staple_probability=m.probability)
            for m in masks
        ])
        for s, masks in res.consensus.items()
    }
    # both arrays are set by mask_consensus (the result's fields are optional only until it returns)
    rater_sensitivity = cast(np.ndarray, res.sensitivity)
    sample_sensitivity = cast(np.ndarray, res.sample_sensitivity)
    finite = lambda a: float(np.nanmean(a)) if np.isfinite(a).any() else None  # noqa: E731
    summary = {
        "n_samples": data.num_samples,
        "n_consensus": len(consensus),
        "n_skipped": len(res.skipped),
        "mean_sensitivity": finite(res.sensitivity),
        "mean_specificity": finite(res.specificity),
        "staple_vs_majority_dice": float(np.mean(res.dice_vs_majority)) if res.dice_vs_majority else None,
        **{f"sensitivity_{r}": v for r, v in zip(data.raters, rater_sensitivity, strict=False)},
    }
    detail = {
        "rater_sensitivity": res.sensitivity,
        "rater_specificity": res.specificity,
        "rater_n_estimates": res.n_estimates,
        "skipped_samples": {str(sid[s]): why for s, why in list(res.skipped.items())[:MAX_LISTED]},
        "per_sample": {str(sid[s]): rec for s, rec in list(res.per_sample.items())[:MAX_LISTED]},
    }
    sens = {sid[s]: sample_sensitivity[s] for s in res.consensus}
    return MethodOutput(summary, detail, sample_objects={"consensus": consensus, "sensitivity": sens})


SPEC = MethodSpec(
    method=METHOD,
    sample_suffixes=("consensus", "sensitivity"),
    label_suffixes=(),
    compute=_compute,
    read_options=lambda p: {} if p.get("label_type") == "Segmentation" else {"image_sizes": True, "masks": True},
    check=_check,
    kernel=semantic_kernel,
    finish=semantic_finish,
    shard_cap=200,  # semantic masks stream in shards of at most 200 samples (about 160 MB at 3 x 512 x 512)
    # semantic masks stream (multi-class STAPLE per sample, sums pooled); instance masks are fused at once
    whole_corpus=lambda p: None if p.get("label_type") == "Segmentation" else "instance masks are fused at once",
)


#: The panel's view of its runs (:data:`agreement.reporting.figures.method_figures.METHOD_VIEWS`).
VIEW = {
    "title": "STAPLE mask consensus",
    "score_suffix": "sensitivity",
    "score_label": "mean rater sensitivity on the sample",
    "score_axis": "mean rater sensitivity of the sample",
    "score_name": "sensitivity",
    "score_range": lambda params: (0.0, 1.0),
    "cards": [
        {"key": "mean_sensitivity", "label": "mean sensitivity"},
        {"key": "mean_specificity", "label": "mean specificity"},
        {"key": "staple_vs_majority_dice", "label": "Dice STAPLE vs majority vote"},
        {"key": "n_skipped", "label": "samples skipped", "integer": True, "reasons": "skipped_samples"},
    ],
    # the text report's lines beside the cards (AgreementResults.report)
    "report_cards": [
        {"key": "n_consensus", "label": "samples with a consensus", "integer": True},
        {"key": "n_undecided_pixels", "label": "undecided pixels", "integer": True},
    ],
    "bars": lambda detail, info: rater_bars(detail, [("rater_sensitivity", "sensitivity"),
                                                      ("rater_specificity", "specificity")],
                                             "Each rater's sensitivity and specificity (STAPLE, whole run)",
                                             "sensitivity or specificity (0 to 1)"),
}


class MaskConsensusResults(AgreementResults):
    """STAPLE mask consensus: ``mean_sensitivity``, ``mean_specificity``, ``staple_vs_majority_dice``,
    ``n_skipped``; per-rater sensitivity and specificity in ``detail``."""

    view = VIEW


DECLARATION = MethodDeclaration(
    operator="compute_mask_consensus",
    label="Annotator Agreement: STAPLE mask consensus",
    description="Consensus masks per class and each rater's sensitivity and specificity (STAPLE)",
    spec=SPEC,
    results_cls=MaskConsensusResults,
    params=(
        Param("threshold", float, 0.5, "Consensus threshold",
              "A pixel is in the consensus when its STAPLE probability reaches this", low=0.0, high=1.0,
              low_open=True, high_open=True),
        Param("max_iter", int, 10_000, "Maximum EM iterations", "Iterations of STAPLE's EM at most", low=1),
        Param("label_type", str, None, "Label type",
              "The rater fields' label type, filled in from them (Segmentation: multi-class STAPLE)",
              choices=("Detections", "Polylines", "Segmentation"), form=False),
    ),
    outputs=(("n_consensus", "Samples with a consensus", "int"), ("n_skipped", "Samples skipped", "int"),
             ("mean_sensitivity", "Mean rater sensitivity", "float"),
             ("mean_specificity", "Mean rater specificity", "float")),
    key_prefix="staple",
    streams=False,
    label_types=(fo.Detections, fo.Polylines, fo.Segmentation),
)

#: ``compute_mask_consensus(samples, key, *, fields=..., threshold=0.5, max_iter=10000)``: STAPLE consensus masks
#: (field ``{key}_consensus``) and per-rater sensitivity and specificity, stored as run ``key``. Returns
#: ``n_samples``, ``n_consensus``, ``n_skipped``, ``mean_sensitivity``, ``mean_specificity``,
#: ``staple_vs_majority_dice`` and per-rater means; the run results hold per rater and per sample estimates and
#: the skipped samples with reasons.
compute_mask_consensus = python_function(DECLARATION)
