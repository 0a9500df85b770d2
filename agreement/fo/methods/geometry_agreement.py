"""Chance-corrected geometry agreement on a FiftyOne dataset or view.

Wraps :func:`agreement.methods.geometry_agreement.geometry_agreement` (Braylan, Alonso
& Lease 2022, as documented by the Potato annotation tool): the within-item
distances of matched annotations on the same sample against the between-item
distances of the same matching across samples, σ, distance α, KS, detection
agreement and classification agreement, each with a bootstrap interval over
samples. The pair budget ``max_pairs`` bounds the chance sample; a sample is
skipped only when its own within-sample comparisons exceed it, and each
skipped sample is listed in the run results (``detail["skipped_samples"]``)
and counted in the summary (``n_samples_skipped``).

Written to the dataset (``key`` is the run key):

===============================  ===================================================
``{key}_distance``               per sample: mean distance of matched annotations
                                 of different raters (0 = identical)
``{key}_matched_fraction``       per sample: share of annotations matched
label ``{key}_distance``         per label: mean distance to its matched partners
                                 (``None`` when unmatched)
===============================  ===================================================
"""

from __future__ import annotations

from functools import partial

import numpy as np

from agreement.fo.methods.similarity_params import scene_unit_params
from agreement.fo.planning.plan_geometry import geometry_planning
from agreement.fo.runs.chance_strata import chance_strata
from agreement.fo.runs.declaration import MethodDeclaration, Param, python_function
from agreement.fo.runs.method_spec import MethodHooks, MethodOutput, MethodSpec
from agreement.fo.runs.results import AgreementResults
from agreement.geometry.similarity_3d import SimilarityOptions
from agreement.methods.geometry_agreement import DISTANCES, GeometryParams, geometry_shard, merge_geometry_shards
from agreement.reporting.figures.method_figures import distance_curves

__all__ = ["compute_geometry_agreement", "METHOD", "SPEC", "DECLARATION"]

METHOD = "iaa.geometry_agreement"
MAX_LISTED = 1000


def _geometry_params(params: dict) -> GeometryParams:
    """The run's validated parameters as the kernel's :class:`agreement.methods.geometry_agreement.GeometryParams`."""
    return GeometryParams(distance=params["distance"], threshold=params["threshold"], max_pairs=params["max_pairs"],
                          bootstrap=None if params["bootstrap"] is None else int(params["bootstrap"]),
                          seed=params["seed"], confidence=params["confidence"],
                          similarity_options=SimilarityOptions(point3d_scale=params["point3d_scale"],
                                                               polyline3d_tolerance=params["polyline3d_tolerance"]))


def _kernel(read, params: dict, extra: dict) -> MethodOutput:
    """The within-item measurement of one shard (:func:`agreement.methods.geometry_agreement.geometry_shard`):
    per-sample distance and matched share, per-label distance, and the shard's statistics."""
    shard = geometry_shard(read.annotations, _geometry_params(params))
    out = shard.outputs
    return MethodOutput({}, {}, sample_values={"distance": out["sample_distance"],
                                               "matched_fraction": out["sample_matched_fraction"]},
                        label_values={"distance": out["row_distance"]}, stats=shard.without_rows())


def _prepare(samples, plan, sample_ids: list, layout, params: dict):
    """The chance strata of the view (images of comparable size, or clips of comparable length:
    :func:`agreement.fo.runs.chance_strata.chance_strata`; ``None``: one stratum), found before the first shard."""
    return chance_strata(samples, sample_ids, plan.label_fields)


def _finish(stats: list, params: dict, context) -> tuple[dict, dict]:
    """The chance sample drawn on the merged shards, its sets read back, the statistics and intervals."""
    ids = np.asarray(context.sample_ids, dtype=object)
    res = merge_geometry_shards(
        stats, lambda idx: (context.read_samples(ids[idx]), np.arange(len(idx))), params=_geometry_params(params),
        groups=context.groups, strata=context.state)
    edges = np.linspace(0.0, 1.0, 41)
    within = np.histogram(res.pair_distance, bins=edges)[0]
    between = np.histogram(res.between_distances, bins=edges, weights=res.between_weights)[0]
    detail = {
        "distributions": {
            "edges": edges,
            "within_density": within / max(within.sum(), 1) / np.diff(edges),
            "between_density": between / max(between.sum(), 1e-300) / np.diff(edges),
        },
        "skipped_samples": [{**rec, "sample_id": str(rec["sample_id"])} for rec in res.skipped_samples],
        "undefined_samples": dict(list({str(s): r for s, r in zip(ids, res.sample_reasons, strict=False) if r}.items())[:MAX_LISTED]),
        "similarity_report": res.similarity_report,
    }
    return dict(res.headline()), detail


SPEC = MethodSpec(
    method=METHOD,
    sample_suffixes=("distance", "matched_fraction"),
    label_suffixes=("distance",),
    compute=None,
    read_options=lambda p: {"image_sizes": True, "masks": p["distance"] == "mask_iou"},
    kernel=_kernel,
    finish=_finish,
    prepare=_prepare,
    finish_rereads=True,  # the chance sample's sets are read again after the last shard
)


def _from_form(values: dict) -> dict:
    """The form's "bootstrap intervals" checkbox: unticked, no intervals (``bootstrap=None``)."""
    values = dict(values)
    if values.pop("intervals", True) is False:
        values["bootstrap"] = None
    return values


#: The panel's view of its runs (:data:`agreement.reporting.figures.method_figures.METHOD_VIEWS`).
VIEW = {
    "title": "Geometry agreement",
    "score_suffix": "distance",
    "higher_is_better": False,
    "score_label": "mean matched distance on the sample (0 = identical)",
    "score_axis": "mean matched distance of the sample (0 = identical)",
    "score_name": "distance",
    "score_range": lambda params: (0.0, 1.0 - float(params.get("threshold", 0.5))),
    "cards": [
        {"key": "sigma", "label": "σ (Braylan)", "lo": "sigma_ci_low", "hi": "sigma_ci_high", "reason": "sigma_reason"},
        {"key": "distance_alpha", "label": "distance α", "lo": "distance_alpha_ci_low",
         "hi": "distance_alpha_ci_high", "reason": "distance_alpha_reason"},
        {"key": "ks", "label": "KS", "lo": "ks_ci_low", "hi": "ks_ci_high", "reason": "ks_reason"},
        {"key": "detection_alpha", "label": "detection agreement", "lo": "detection_alpha_ci_low",
         "hi": "detection_alpha_ci_high", "reason": "detection_alpha_reason"},
        {"key": "classification_alpha", "label": "classification α", "lo": "classification_alpha_ci_low",
         "hi": "classification_alpha_ci_high", "reason": "classification_alpha_reason"},
    ],
    # the text report's lines beside the cards (AgreementResults.report)
    "report_cards": [
        {"key": "n_samples_measured", "label": "samples measured", "integer": True},
        {"key": "n_samples_skipped", "label": "samples skipped", "integer": True, "reasons": "skipped_samples",
         "why": "their own comparisons exceed the pair budget max_pairs"},
        {"key": "n_within", "label": "within-sample distances", "integer": True},
        {"key": "n_between", "label": "chance (between-sample) distances", "integer": True},
    ],
    "curves": lambda detail, info: distance_curves(detail, info=info),
}


class GeometryAgreementResults(AgreementResults):
    """Chance-corrected geometry agreement (Braylan et al.): ``sigma``, ``ks``, ``distance_alpha``,
    ``detection_alpha``, ``classification_alpha``, each with bootstrap ``*_ci_low``/``*_ci_high`` and a
    ``*_reason`` where undefined."""

    view = VIEW


DECLARATION = MethodDeclaration(
    operator="compute_geometry_agreement",
    label="Annotator Agreement: geometry agreement (σ, KS)",
    description="Do raters find the same objects, agree what they are, and where? Each chance-corrected",
    spec=SPEC,
    results_cls=GeometryAgreementResults,
    params=(
        Param("distance", str, "giou", "Distance",
              "1 − similarity: giou (default), iou, centroid, polygon_*, mask_iou, oks, cuboid_iou (3D)",
              choices=DISTANCES),
        Param("threshold", float, 0.5, "Matching threshold",
              "Similarity a pair needs to be matched, within and across samples alike", low=0.0, high=1.0),
        Param("intervals", bool, True, "Bootstrap intervals (resampling samples)",
              "Percentile intervals of every number, resampling samples", python=False),
        Param("bootstrap", int, 1000, "Bootstrap resamples",
              "Resamples of samples for the percentile intervals (None: no intervals)", low=2, special=(None,),
              show_if=lambda p: p.get("intervals", True) is not False),
        Param("max_pairs", int, 200_000, "Pair budget (chance sample)",
              "At most this many cross-sample comparisons for the chance baseline. Every sample is measured, "
              "except one whose own within-sample comparisons exceed this: it is skipped whole and listed in "
              "the run results (n_samples_skipped)", low=1),
        Param("seed", int, 0, "Seed", "Seed of the chance sample and the bootstrap"),
        Param("confidence", float, 0.95, "Interval confidence", "Coverage of the bootstrap intervals",
              low=0.0, high=1.0, low_open=True, high_open=True,
              show_if=lambda p: p.get("intervals", True) is not False),
        *scene_unit_params("distance"),
    ),
    outputs=(("sigma", "σ (share of within distances below chance 5th percentile; ≈0.05 chance)", "float"),
             ("distance_alpha", "Distance α (1 identical, 0 chance)", "float"),
             ("ks", "KS statistic (within vs chance)", "float"),
             ("detection_alpha", "Detection agreement (1 all find all, 0 chance)", "float"),
             ("classification_alpha", "Classification α (matched pairs)", "float"),
             ("n_samples_measured", "Samples measured", "int"),
             ("n_samples_skipped", "Samples skipped: their own comparisons exceed the pair budget", "int")),
    key_prefix="geometry",
    hooks=MethodHooks(planning=partial(geometry_planning, geometry_params=_geometry_params)),
    from_form=_from_form,
)

#: ``compute_geometry_agreement(samples, key, *, fields=..., distance="giou", threshold=0.5, bootstrap=1000, ...)``:
#: σ, KS, distance α, detection α and classification α with bootstrap intervals, stored as run ``key``; returns
#: the headline numbers (each with ``_ci_low``, ``_ci_high`` and ``_reason``; ``truncated``,
#: ``n_samples_measured``, ``n_samples_skipped``, ``between_exact``, ...).
compute_geometry_agreement = python_function(DECLARATION)
