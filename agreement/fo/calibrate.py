"""Calibration of the distance function and of τ on a FiftyOne dataset or view.

Wraps :func:`agreement.calibration.calibrate` (KαLOS's data-driven choice:
observed vs expected disagreement, Kolmogorov–Smirnov separation, τ* at the
first density crossing above the observed mode, and the matching OT β*). The
run writes no fields: its results hold the headline numbers and, per
distance, both distributions as plot data.
"""

from __future__ import annotations

from typing import Callable, Sequence

from agreement.calibration import calibrate
from agreement.fo.engine import MethodOutput, MethodSpec, run_method
from agreement.similarity import SIMILARITIES

__all__ = ["calibrate_agreement", "METHOD", "DEFAULT_DISTANCES", "SPEC"]

METHOD = "iaa.calibration"
DEFAULT_DISTANCES = ("iou", "giou", "centroid")


def _compute(read, params: dict, report, extra: dict) -> MethodOutput:
    """Observed vs expected disagreement per distance (pure :func:`agreement.calibration.calibrate`)."""
    report(0.0, "observed and expected disagreement")
    result = calibrate(read.annotations, distances=tuple(params["distances"]), seed=params["seed"])
    summary = dict(result.summary())
    if params.get("plot_path"):
        from agreement.calibration import plot_calibration_png

        summary["plot_path"] = plot_calibration_png(result, params["plot_path"])
    return MethodOutput(summary, result.to_dict(include_samples=False))


SPEC = MethodSpec(
    method=METHOD,
    sample_suffixes=(),
    label_suffixes=(),
    compute=_compute,
    read_options=lambda p: {"image_sizes": True},
)


def calibrate_agreement(
    samples,
    key: str,
    fields: Sequence[str] | None = None,
    field: str | None = None,
    rater_attr: str = "annotator",
    raters_field: str | None = None,
    box_policy: str = "clip",
    assume_crossed: bool = False,
    distances: Sequence[str] = DEFAULT_DISTANCES,
    seed: int = 0,
    overwrite: bool = False,
    plot_path: str | None = None,
    progress: Callable[[float, str], None] | None = None,
) -> dict:
    """Calibrates ``distances`` on ``samples`` and stores the result as run ``key``.

    Returns the flat summary of :meth:`agreement.calibration.CalibrationResult.summary`
    (``best_distance``, ``ks``, ``tau_star``, ``similarity_threshold`` (the τ
    to give KαLOS), ``beta_star``, ``beta_star_oc_cost``, and per distance
    ``ks_<d>``, ``ks2_<d>``, ``tau_<d>``) with NaN as ``None``; with
    ``plot_path``, also writes the two distributions per distance as a PNG there.
    """
    distances = list(dict.fromkeys(distances or DEFAULT_DISTANCES))
    unknown = [d for d in distances if d not in SIMILARITIES]
    if unknown:
        raise ValueError(f"unknown distance(s) {unknown}; choose from {list(SIMILARITIES)}")
    params = {"distances": distances, "seed": int(seed), "plot_path": plot_path}
    layout = {"fields": fields, "field": field, "rater_attr": rater_attr, "raters_field": raters_field,
              "box_policy": box_policy, "assume_crossed": assume_crossed}
    return run_method(samples, key, SPEC, layout, params, overwrite=overwrite, progress=progress)
