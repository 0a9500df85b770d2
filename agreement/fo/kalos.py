"""KαLOS on a FiftyOne dataset or view: compute, write back, register the run.

Localisation first, classification second (Tschirschwitz & Rodehorst, "KαLOS
finds Consensus"): per sample, a correspondence solver clusters the raters'
annotations into units (candidates where similarity ≥ τ), a rater assigned to
the sample with no member in a unit contributes ``no_object``, and nominal
Krippendorff's α over the reliability matrix is the score
(:mod:`agreement.kalos`). The run also holds the τ sensitivity curve and the
diagnostics of :mod:`agreement.diagnostics`.

Written to the dataset (``key`` is the run key):

==========================  =====================================================
``{key}_alpha``             per sample: α (``None`` where undefined; the reason is
                            in the run results)
``{key}_n_units``           per sample: number of units (objects) found
label ``{key}_unit``        per label: its unit's number within the sample, so the
                            annotations judged to be the same object share it
==========================  =====================================================
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from agreement.diagnostics import class_difficulty, collaboration_clusters, intra_annotator_consistency, rater_vitality
from agreement.fo.engine import MethodOutput, MethodSpec, execution_options, run_method
from agreement.fo.reading import LABEL_TYPES
from agreement.kalos import DEFAULT_TAUS, kalos_shard, merge_kalos_shards
from agreement.correspondence import check_cost, check_solver, check_tau
from agreement.similarity import SIMILARITIES, similarity_options

__all__ = ["compute_kalos", "METHOD", "SPEC"]

METHOD = "iaa.kalos"
MAX_LISTED = 1000


def _sessions(samples, read, session_attr: str) -> np.ndarray:
    """The session of every corpus row, from the label attribute ``session_attr``."""
    data = read.annotations
    by_id: dict = {}
    dataset = samples._root_dataset
    for lf in read.label_fields:
        list_field = LABEL_TYPES[dataset.get_field(lf).document_type]
        ids, sess = samples.values([f"{lf}.{list_field}.id", f"{lf}.{list_field}.{session_attr}"], unwind=True)
        by_id.update(zip(ids, sess))
    sessions = np.array([by_id.get(i) for i in data.label_ids] + [None], dtype=object)[:-1]
    missing = np.flatnonzero([s is None for s in sessions])
    if len(missing):
        i = int(missing[0])
        raise ValueError(
            f"intra-annotator consistency: label {data.label_ids[i]!r} on sample {data.sample_names[data.sample_index[i]]!r} "
            f"has no {session_attr!r} attribute naming its session"
        )
    return sessions


def _kernel(read, params: dict, extra: dict) -> MethodOutput:
    """KαLOS of one shard: per-sample α and unit counts, per-label unit ids, and the shard's mergeable
    statistics (:func:`agreement.kalos.kalos_shard`)."""
    kw = dict(similarity=params["similarity"], solver=params["solver"], cost=params["cost"])
    shard = kalos_shard(read.annotations, tau=params["tau"], taus=params["taus"], **kw)
    result = shard.result
    units = np.array([int(u) if u >= 0 else None for u in result.unit] + [None], dtype=object)[:-1]
    return MethodOutput({}, {}, sample_values={"alpha": result.alpha, "n_units": result.n_units.astype(int)},
                        label_values={"unit": units}, stats=shard.without_labels())


def _finish(stats: list, params: dict, context=None, intra: dict | None = None) -> tuple[dict, dict]:
    """The corpus numbers of the merged shards: global and mean α, the τ curve, the diagnostics."""
    result, curve = merge_kalos_shards(stats)
    vitality = rater_vitality(result)
    difficulty = class_difficulty(result)
    clusters = collaboration_clusters(result)
    undefined = {str(s): str(r) for s, r in zip(result.sample_ids, result.reason) if r}
    hardest = np.argsort(np.where(np.isfinite(difficulty.alpha), difficulty.alpha, np.inf), kind="stable")
    summary = {
        "global_alpha": result.global_alpha,
        "global_reason": result.global_reason,
        "mean_alpha": result.mean_alpha,
        "n_defined": int(result.n_defined),
        "n_undefined": int(result.n_undefined),
        "n_units": int(result.n_units.sum()),
        "tau": float(params["tau"]),
        "similarity": params["similarity"],
        "solver": params["solver"],
        "cost": params["cost"],
        "repaired_polygons": int(result.repaired_polygons),
    }
    detail = {
        "undefined_samples": dict(list(undefined.items())[:MAX_LISTED]),
        "sensitivity_curve": {"taus": curve.taus, "global_alpha": curve.global_alpha, "mean_alpha": curve.mean_alpha,
                              "n_undefined": curve.n_undefined, "n_units": curve.n_units},
        "rater_vitality": {"raters": list(vitality.raters), "alpha": vitality.alpha,
                           "alpha_without": vitality.alpha_without, "vitality": vitality.vitality,
                           "reason": [str(r) for r in vitality.reason]},
        "class_difficulty": {"classes": list(difficulty.classes), "alpha": difficulty.alpha,
                             "n_units": difficulty.n_units, "reason": [str(r) for r in difficulty.reason],
                             "hardest_first": [int(i) for i in hardest]},
        "rater_pairs": clusters.pairs.to_columns(arrays=True),
        "rater_order": [int(i) for i in clusters.order],
        "intra_annotator_consistency": {
            rater: {"sessions": [str(x) for x in c.sessions], "global_alpha": c.result.global_alpha,
                    "mean_alpha": c.result.mean_alpha, "reason": c.result.global_reason}
            for rater, c in (intra or {}).items()
        },
    }
    return summary, detail


def _compute(read, params: dict, report, extra: dict) -> MethodOutput:
    """KαLOS on the whole corpus at once: the runs that ask for intra-annotator consistency (it needs every
    sample of a rater's sessions together)."""
    report(0.0, "correspondence, alpha and sensitivity to tau")
    out = _kernel(read, params, extra)
    report(0.6, "diagnostics")
    intra = intra_annotator_consistency(read.annotations, extra["sessions"], tau=params["tau"],
                                        similarity=params["similarity"], solver=params["solver"],
                                        cost=params["cost"])
    summary, detail = _finish([out.stats], params, intra=intra)
    return MethodOutput(summary, detail, sample_values=out.sample_values, label_values=out.label_values)


SPEC = MethodSpec(
    method=METHOD,
    sample_suffixes=("alpha", "n_units"),
    label_suffixes=("unit",),
    compute=_compute,
    read_options=lambda p: {"image_sizes": True, "masks": p["similarity"] == "mask_iou"},
    context=lambda p: similarity_options(point3d_scale=p["point3d_scale"],
                                         polyline3d_tolerance=p["polyline3d_tolerance"]),
    extra=lambda samples, read, p: {"sessions": _sessions(samples, read, p["session_attr"])
                                    if p["session_attr"] else None},
    kernel=_kernel,
    finish=_finish,
    whole_corpus=lambda p: (f"intra-annotator consistency (session_attr={p['session_attr']!r}) needs every "
                            "sample of a rater's sessions together") if p["session_attr"] else None,
)


def compute_kalos(
    samples,
    key: str,
    fields: Sequence[str] | None = None,
    field: str | None = None,
    rater_attr: str = "annotator",
    raters_field: str | None = None,
    similarity: str = "iou",
    tau: float = 0.5,
    solver: str = "greedy",
    cost: str = "soft",
    taus: Sequence[float] = DEFAULT_TAUS,
    session_attr: str | None = None,
    box_policy: str = "clip",
    assume_crossed: bool = False,
    overwrite: bool = False,
    progress: Callable[[float, str], None] | None = None,
    point3d_scale: float = 2.0,
    polyline3d_tolerance: float = 0.5,
    shard_size: int | None = None,
    backend: str = "serial",
    dask_address: str | None = None,
    workers: int | None = None,
) -> dict:
    """Computes KαLOS on ``samples`` and stores it as run ``key``.

    Args:
        samples: a dataset or view.
        key: the run key.
        fields / field, rater_attr, raters_field, box_policy, assume_crossed:
            the rater layout (see :func:`agreement.fo.reading.read_annotations`).
        similarity: one of :data:`agreement.similarity.SIMILARITIES` (``"iou"``
            default; ``"polygon_iou"`` for Polylines, ``"mask_iou"`` for
            instance masks, ``"oks"`` for Keypoints).
        tau: similarity threshold in (0, 1] for a candidate pair.
        solver: ``"greedy"`` (default), ``"hungarian"``, ``"agglomerative"``
            or ``"mgm"`` (needs ``pylibmgm``).
        cost: ``"soft"`` (class-aware ψ_soft) or ``"plain"``.
        taus: the τ values of the sensitivity curve.
        session_attr: a label attribute naming the session of each annotation,
            for intra-annotator consistency (raters who labelled the same
            images in several sessions).
        point3d_scale, polyline3d_tolerance: scene-unit parameters of the
            ``"point3d"`` and ``"polyline3d_f1"`` similarities.
        shard_size: samples read, computed and written at a time (default
            :func:`agreement.fo.engine.default_shard_size`): memory follows the
            shard, and every number is the same whatever the shard size or the
            view's order. With ``session_attr`` the run needs the whole
            corpus at once and refuses a shard size smaller than the view.
        backend, dask_address, workers: where the shards run: ``"serial"``
            (default, this process) or ``"dask"``: the scheduler at
            ``dask_address``, or a local cluster of ``workers`` processes
            (default 2) started for the run (:mod:`agreement.fo.distributed`).
            The numbers are the same on either.

    Returns:
        The headline numbers: ``global_alpha``, ``global_reason``,
        ``mean_alpha``, ``n_defined``, ``n_undefined``, ``n_units``, ``tau``,
        ``similarity``, ``solver``, ``cost`` and the repair counts.
    """
    with similarity_options(point3d_scale=point3d_scale, polyline3d_tolerance=polyline3d_tolerance):
        pass  # validates both before anything is read
    check_tau(tau)
    check_solver(solver)
    check_cost(cost)
    if similarity not in SIMILARITIES:
        raise ValueError(f"unknown similarity {similarity!r}; choose from {list(SIMILARITIES)}")
    params = {"similarity": similarity, "tau": float(tau), "solver": solver, "cost": cost,
              "taus": [float(check_tau(t)) for t in (taus or DEFAULT_TAUS)], "session_attr": session_attr,
              "point3d_scale": point3d_scale, "polyline3d_tolerance": polyline3d_tolerance}
    layout = {"fields": fields, "field": field, "rater_attr": rater_attr, "raters_field": raters_field,
              "box_policy": box_policy, "assume_crossed": assume_crossed}
    return run_method(samples, key, SPEC, layout, params, overwrite=overwrite, progress=progress,
                      **execution_options(shard_size, backend, dask_address, workers))
