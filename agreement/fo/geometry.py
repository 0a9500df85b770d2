"""Chance-corrected geometry agreement on a FiftyOne dataset or view.

Wraps :func:`agreement.geometry_agreement.geometry_agreement` (Braylan, Alonso
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

from typing import Callable, Sequence

import numpy as np

from agreement.fo.engine import MethodOutput, MethodSpec, execution_options, run_method
from agreement.geometry_agreement import DISTANCES, geometry_shard, merge_geometry_shards
from agreement.similarity import similarity_options

__all__ = ["compute_geometry_agreement", "METHOD", "SPEC"]

METHOD = "iaa.geometry_agreement"
MAX_LISTED = 1000


def _shard_kw(params: dict) -> dict:
    return dict(distance=params["distance"], threshold=params["threshold"], max_pairs=params["max_pairs"])


def _kernel(read, params: dict, extra: dict) -> MethodOutput:
    """The within-item measurement of one shard (:func:`agreement.geometry_agreement.geometry_shard`):
    per-sample distance and matched share, per-label distance, and the shard's statistics."""
    shard = geometry_shard(read.annotations, **_shard_kw(params))
    out = shard.outputs
    return MethodOutput({}, {}, sample_values={"distance": out["sample_distance"],
                                               "matched_fraction": out["sample_matched_fraction"]},
                        label_values={"distance": out["row_distance"]}, stats=shard.without_rows())


def _finish(stats: list, params: dict, context) -> tuple[dict, dict]:
    """The chance sample drawn on the merged shards, its sets read back, the statistics and intervals."""
    ids = np.asarray(context.sample_ids, dtype=object)
    res = merge_geometry_shards(
        stats, lambda idx: (context.read_samples(ids[idx]), np.arange(len(idx))), **_shard_kw(params),
        bootstrap=None if params["bootstrap"] is None else int(params["bootstrap"]), seed=params["seed"],
        confidence=params["confidence"])
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
        "undefined_samples": dict(list({str(s): r for s, r in zip(ids, res.sample_reasons) if r}.items())[:MAX_LISTED]),
        "similarity_report": res.similarity_report,
    }
    return dict(res.headline()), detail


SPEC = MethodSpec(
    method=METHOD,
    sample_suffixes=("distance", "matched_fraction"),
    label_suffixes=("distance",),
    compute=None,
    read_options=lambda p: {"image_sizes": True, "masks": p["distance"] == "mask_iou"},
    context=lambda p: similarity_options(point3d_scale=p["point3d_scale"],
                                         polyline3d_tolerance=p["polyline3d_tolerance"]),
    kernel=_kernel,
    finish=_finish,
    finish_rereads=True,  # the chance sample's sets are read again after the last shard
)


def compute_geometry_agreement(
    samples,
    key: str,
    fields: Sequence[str] | None = None,
    field: str | None = None,
    rater_attr: str = "annotator",
    raters_field: str | None = None,
    box_policy: str = "clip",
    assume_crossed: bool = False,
    distance: str = "giou",
    threshold: float = 0.5,
    bootstrap: int | None = 1000,
    max_pairs: int = 200_000,
    seed: int = 0,
    confidence: float = 0.95,
    overwrite: bool = False,
    progress: Callable[[float, str], None] | None = None,
    point3d_scale: float = 2.0,
    polyline3d_tolerance: float = 0.5,
    shard_size: int | None = None,
    backend: str = "serial",
    dask_address: str | None = None,
    workers: int | None = None,
) -> dict:
    """Computes geometry agreement on ``samples`` and stores it as run ``key``.

    Args:
        distance: one of :data:`agreement.geometry_agreement.DISTANCES`
            (``"giou"`` default; ``"cuboid_iou"`` for 3D detections; ``"oks"``
            and ``"cuboid_iou"`` usually need a low ``threshold``).
        threshold: the similarity a pair needs to be matched (both within and
            between samples, so the chance baseline is comparable).
        bootstrap: resamples of samples for the percentile intervals (>= 2),
            or ``None`` for no intervals.
        max_pairs: the pair budget, in comparisons (``max(1, n m)`` for two
            sets of ``n`` and ``m`` annotations): at most this many
            between-sample comparisons for the chance baseline (all of them,
            ``between_exact``, when they are fewer). Within-sample work is
            not cut to fit it: a sample is skipped whole only when its own
            within-sample comparisons exceed ``max_pairs``; it is then listed
            in ``detail["skipped_samples"]`` and counted in
            ``n_samples_skipped``, and ``truncated`` is true exactly then.
        point3d_scale, polyline3d_tolerance: scene-unit parameters of the
            ``"point3d"`` and ``"polyline3d_f1"`` distances.
        shard_size: samples read, measured and written at a time (default
            :data:`agreement.fo.engine.DEFAULT_SHARD_SIZE`); the chance sample
            is drawn on the whole view after the last shard and its sets read
            again (at most ``max_pairs`` comparisons). The numbers are the same
            whatever the shard size or the view's order.
        backend, dask_address, workers: where the shards run: ``"serial"``
            (default, this process) or ``"dask"``: the scheduler at
            ``dask_address``, or a local cluster of ``workers`` processes
            (default 2) started for the run (:mod:`agreement.fo.distributed`).
            The numbers are the same on either.

    Returns:
        The headline numbers: ``sigma``, ``distance_alpha``, ``ks``,
        ``ks_greater``, ``ks_less``, ``detection_alpha``,
        ``classification_alpha``, each with ``_ci_low``, ``_ci_high`` and
        ``_reason``, and ``truncated``, ``n_samples_measured``,
        ``n_samples_skipped``, ``between_exact``, ... The run results
        (:func:`agreement.fo.runs.load_agreement_results`) hold this summary
        and ``detail``: ``skipped_samples`` (one ``{"sample_id",
        "comparisons", "raters", "annotations"}`` per skipped sample),
        ``undefined_samples`` (sample id → reason, at most ``MAX_LISTED``),
        the distance densities, repairs and the similarity report.
    """
    if distance not in DISTANCES:
        raise ValueError(f"unknown distance {distance!r}; choose from {list(DISTANCES)}")
    with similarity_options(point3d_scale=point3d_scale, polyline3d_tolerance=polyline3d_tolerance):
        pass  # validates both before anything is read
    if bootstrap is not None and (isinstance(bootstrap, bool) or int(bootstrap) != bootstrap or bootstrap < 2):
        raise ValueError(f"bootstrap must be an integer >= 2 (or None for no intervals), got {bootstrap!r}")
    if not 0 <= float(threshold) <= 1:
        raise ValueError(f"threshold must be in [0, 1], got {threshold!r}")
    if int(max_pairs) < 1:
        raise ValueError(f"max_pairs must be >= 1, got {max_pairs!r}")
    params = {"distance": distance, "threshold": float(threshold), "bootstrap": bootstrap,
              "max_pairs": int(max_pairs), "seed": int(seed), "confidence": float(confidence),
              "point3d_scale": point3d_scale, "polyline3d_tolerance": polyline3d_tolerance}
    layout = {"fields": fields, "field": field, "rater_attr": rater_attr, "raters_field": raters_field,
              "box_policy": box_policy, "assume_crossed": assume_crossed}
    return run_method(samples, key, SPEC, layout, params, overwrite=overwrite, progress=progress,
                      **execution_options(shard_size, backend, dask_address, workers))
