"""Calibration of the distance function and of τ on a FiftyOne dataset or view.

Wraps :func:`agreement.methods.kalos.calibration.calibrate` (KαLOS's data-driven choice:
observed vs expected disagreement, Kolmogorov–Smirnov separation, τ* at the
first density crossing above the observed mode, and the matching OT β*). The
run writes no fields: its results hold the headline numbers and, per
distance, both distributions as plot data.
"""

from __future__ import annotations

from agreement.core.strata import corpus_strata
from agreement.fo.runs.declaration import MethodDeclaration, Param, python_function
from agreement.fo.runs.method_spec import MethodOutput, MethodSpec
from agreement.fo.runs.results import AgreementResults
from agreement.geometry.similarity import SIMILARITIES, supported_similarities
from agreement.methods.kalos.calibration import calibrate
from agreement.reporting.figures.method_figures import calibration_curves

__all__ = ["calibrate_agreement", "METHOD", "SPEC", "DECLARATION"]

METHOD = "iaa.calibration"


def _compute(read, params: dict, report, extra: dict) -> MethodOutput:
    """Observed vs expected disagreement per distance (pure :func:`agreement.methods.kalos.calibration.calibrate`)."""
    report(0.0, "observed and expected disagreement")
    distances = params["distances"]
    if distances is None:  # every distance the labels' geometry supports
        distances = supported_similarities(read.annotations)
        if not distances:
            raise ValueError("no distance can be computed on every label of these annotations; "
                             f"name the ones to compare with distances=[...] (from {list(SIMILARITIES)})")
    # images of comparable size, or clips of comparable length (:func:`agreement.fo.runs.chance_strata.chance_strata`'s rule)
    strata = corpus_strata(image_sizes=read.annotations.image_sizes, frame_counts=read.frame_counts)
    result = calibrate(read.annotations, distances=tuple(distances), seed=params["seed"], strata=strata)
    summary = {**result.summary(), "distances": list(distances),
               "distances_selection": "given" if params["distances"] else "auto"}
    if params.get("plot_path"):
        from agreement.methods.kalos.calibration import plot_calibration_png

        summary["plot_path"] = plot_calibration_png(result, params["plot_path"])
    return MethodOutput(summary, result.to_dict(include_samples=False))


SPEC = MethodSpec(
    method=METHOD,
    sample_suffixes=(),
    label_suffixes=(),
    compute=_compute,
    # masks are read when mask_iou may be compared: named, or chosen from the labels (distances=None)
    read_options=lambda p: {"image_sizes": True, "masks": p["distances"] is None or "mask_iou" in p["distances"]},
)


def _derive(params: dict) -> dict:
    """The candidate distances without repeats; none given: every one the labels' geometry supports (``None``)."""
    return {**params, "distances": list(dict.fromkeys(params["distances"])) if params["distances"] else None}


#: The panel's view of its runs (:data:`agreement.reporting.figures.method_figures.METHOD_VIEWS`).
VIEW = {
    "title": "Calibration",
    "score_suffix": None,
    "cards": [
        {"key": "best_distance", "label": "best-separating distance", "reason": "reason"},
        {"key": "ks", "label": "KS (one-sided)", "reason": "reason"},
        {"key": "tau_star", "label": "τ* (distance)", "reason": "reason"},
        {"key": "similarity_threshold", "label": "τ for KαLOS (similarity)", "reason": "reason"},
        {"key": "beta_star", "label": "β* for OT (λ = 1)", "reason": "beta_reason"},
    ],
    "curves": lambda detail, info: calibration_curves(detail),
}


class CalibrationResults(AgreementResults):
    """Calibration of distance and threshold: ``best_distance``, ``ks``, ``tau_star``,
    ``similarity_threshold`` (τ for KαLOS), ``beta_star`` (β for OT); per-distance curves in ``detail``."""

    view = VIEW


DECLARATION = MethodDeclaration(
    operator="calibrate_agreement",
    label="Annotator Agreement: calibrate distance and τ",
    description="Observed vs chance disagreement per distance (KS), the data-driven τ* and OT β*",
    spec=SPEC,
    results_cls=CalibrationResults,
    params=(
        Param("distances", list, None, "Candidate distances",
              "1 − similarity; empty: every distance the labels' geometry supports (boxes: iou, giou, centroid; "
              "and polygon, mask, keypoint or 3D ones where the labels carry them)",
              item=str, choices=tuple(SIMILARITIES)),
        Param("seed", int, 0, "Seed", "Seed of the chance (other-sample) draws"),
        Param("plot_path", str, None, "Save a PNG plot to", "Optional file path of a plot of both distributions "
              "per distance"),
    ),
    outputs=(("best_distance", "Best-separating distance", "str"), ("ks", "KS (one-sided)", "float"),
             ("tau_star", "τ* (distance)", "float"), ("similarity_threshold", "τ for KαLOS (similarity)", "float"),
             ("beta_star", "β* for OT (λ = 1)", "float")),
    key_prefix="calibration",
    derive=_derive,
    streams=False,
)

#: ``calibrate_agreement(samples, key, *, fields=..., distances=None, seed=0, plot_path=None)``: which distance
#: separates observed from chance disagreement best (KS), τ* and β*, stored as run ``key`` (no field is written).
#: Returns the flat summary of :meth:`agreement.methods.kalos.calibration.CalibrationResult.summary` (``best_distance``, ``ks``,
#: ``tau_star``, ``similarity_threshold`` (the τ to give KαLOS), ``beta_star``, ``beta_star_oc_cost``, and per
#: distance ``ks_<d>``, ``ks2_<d>``, ``tau_<d>``) with NaN as ``None``.
calibrate_agreement = python_function(DECLARATION)
