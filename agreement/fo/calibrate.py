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
from agreement.similarity import SIMILARITIES, supported_similarities

__all__ = ["calibrate_agreement", "METHOD", "SPEC"]

METHOD = "iaa.calibration"


def _compute(read, params: dict, report, extra: dict) -> MethodOutput:
    """Observed vs expected disagreement per distance (pure :func:`agreement.calibration.calibrate`)."""
    report(0.0, "observed and expected disagreement")
    distances = params["distances"]
    if distances is None:  # every distance the labels' geometry supports
        distances = supported_similarities(read.annotations)
        if not distances:
            raise ValueError("no distance can be computed on every label of these annotations; "
                             f"name the ones to compare with distances=[...] (from {list(SIMILARITIES)})")
    result = calibrate(read.annotations, distances=tuple(distances), seed=params["seed"])
    summary = {**result.summary(), "distances": list(distances),
               "distances_selection": "given" if params["distances"] else "auto"}
    if params.get("plot_path"):
        from agreement.calibration import plot_calibration_png

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


def calibrate_agreement(
    samples,
    key: str,
    fields: Sequence[str] | None = None,
    field: str | None = None,
    rater_attr: str = "annotator",
    raters_field: str | None = None,
    box_policy: str = "clip",
    assume_crossed: bool = False,
    distances: Sequence[str] | None = None,
    seed: int = 0,
    overwrite: bool = False,
    plot_path: str | None = None,
    progress: Callable[[float, str], None] | None = None,
) -> dict:
    """Calibrates ``distances`` on ``samples`` and stores the result as run ``key``.

    ``distances``: the candidates (names of :data:`agreement.similarity.SIMILARITIES`);
    ``None`` (default): every one the labels' geometry supports
    (:func:`agreement.similarity.supported_similarities`: ``iou``, ``giou`` and
    ``centroid`` on boxes, the polygon, mask and keypoint ones where the labels
    carry those, ``cuboid_iou`` alone on 3D cuboids). The summary records
    which were compared (``distances``, ``distances_selection``).

    Returns the flat summary of :meth:`agreement.calibration.CalibrationResult.summary`
    (``best_distance``, ``ks``, ``tau_star``, ``similarity_threshold`` (the τ
    to give KαLOS), ``beta_star``, ``beta_star_oc_cost``, and per distance
    ``ks_<d>``, ``ks2_<d>``, ``tau_<d>``) with NaN as ``None``; with
    ``plot_path``, also writes the two distributions per distance as a PNG there.
    """
    distances = list(dict.fromkeys(distances)) if distances else None
    unknown = [d for d in distances or () if d not in SIMILARITIES]
    if unknown:
        raise ValueError(f"unknown distance(s) {unknown}; choose from {list(SIMILARITIES)}")
    params = {"distances": distances, "seed": int(seed), "plot_path": plot_path}
    layout = {"fields": fields, "field": field, "rater_attr": rater_attr, "raters_field": raters_field,
              "box_policy": box_policy, "assume_crossed": assume_crossed}
    return run_method(samples, key, SPEC, layout, params, overwrite=overwrite, progress=progress)
