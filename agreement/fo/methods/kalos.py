"""KαLOS on a FiftyOne dataset or view: compute, write back, register the run.

Localisation first, classification second (Tschirschwitz & Rodehorst, "KαLOS
finds Consensus"): per sample, a correspondence solver clusters the raters'
annotations into units (candidates where similarity ≥ τ), a rater assigned to
the sample with no member in a unit contributes ``no_object``, and nominal
Krippendorff's α over the reliability matrix is the score
(:mod:`agreement.methods.kalos`). The run also holds the τ sensitivity curve and the
diagnostics of :mod:`agreement.methods.kalos.diagnostics`.

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

import numpy as np

from agreement.fo.methods.similarity_params import scene_unit_params
from agreement.fo.panel.label_explanations import unit_explanations
from agreement.fo.panel.rater_tables import PARTNERS, Column, count_columns, row_texts
from agreement.fo.planning.box_relabel import box_relabel
from agreement.fo.planning.plan_kalos import kalos_planning
from agreement.fo.runs.declaration import MethodDeclaration, Param, python_function
from agreement.fo.runs.method_spec import MethodHooks, MethodOutput, MethodSpec, RaterTable
from agreement.fo.runs.results import AgreementResults
from agreement.fo.storage.reading import LABEL_TYPES
from agreement.geometry.correspondence import COSTS, SOLVERS
from agreement.geometry.similarity_3d import SimilarityOptions
from agreement.methods.kalos import DEFAULT_TAUS, kalos_shard, merge_kalos_shards
from agreement.methods.kalos.diagnostics import (
    class_difficulty,
    collaboration_clusters,
    intra_annotator_consistency,
    rater_vitality,
)
from agreement.reporting.figures.kalos import kalos_bars, kalos_curves

__all__ = ["compute_kalos", "METHOD", "SPEC", "DECLARATION", "HOOKS", "RATER_COLUMNS"]

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
        by_id.update(zip(ids, sess, strict=True))
    sessions = np.array([by_id.get(i) for i in data.label_ids] + [None], dtype=object)[:-1]
    missing = np.flatnonzero([s is None for s in sessions])
    if len(missing):
        i = int(missing[0])
        raise ValueError(
            f"intra-annotator consistency: label {data.label_ids[i]!r} on sample {data.sample_names[data.sample_index[i]]!r} "
            f"has no {session_attr!r} attribute naming its session"
        )
    return sessions


def _similarity_options(params: dict) -> SimilarityOptions:
    """The 3D similarities' parameters of the run (passed to the kernel explicitly)."""
    return SimilarityOptions(point3d_scale=params["point3d_scale"], polyline3d_tolerance=params["polyline3d_tolerance"])


def _kernel(read, params: dict, extra: dict) -> MethodOutput:
    """KαLOS of one shard: per-sample α and unit counts, per-label unit ids, and the shard's mergeable
    statistics (:func:`agreement.methods.kalos.kalos_shard`)."""
    shard = kalos_shard(read.annotations, tau=params["tau"], taus=params["taus"], similarity=params["similarity"],
                        solver=params["solver"], cost=params["cost"], options=_similarity_options(params))
    result = shard.result
    units = result.unit.astype(object)  # Python ints; None where a label has no unit
    units[result.unit < 0] = None
    return MethodOutput({}, {}, sample_values={"alpha": result.alpha, "n_units": result.n_units.astype(int)},
                        label_values={"unit": units}, stats=shard.without_labels())


def _finish(stats: list, params: dict, context=None, intra: dict | None = None) -> tuple[dict, dict]:
    """The corpus numbers of the merged shards: global and mean α, the τ curve, the diagnostics."""
    result, curve = merge_kalos_shards(stats)
    vitality = rater_vitality(result, per_sample=False)  # the run records the global numbers only
    difficulty = class_difficulty(result)
    clusters = collaboration_clusters(result)
    undefined = {str(s): str(r) for s, r in zip(result.sample_ids, result.reason, strict=False) if r}
    hardest = np.argsort(np.where(np.isfinite(difficulty.alpha), difficulty.alpha, np.inf), kind="stable")
    summary = {
        "global_alpha": result.global_alpha,
        "global_reason": result.global_reason,
        "mean_alpha": result.mean_alpha,
        "mean_reason": result.mean_reason,
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
                                        cost=params["cost"], options=_similarity_options(params))
    summary, detail = _finish([out.stats], params, intra=intra)
    return MethodOutput(summary, detail, sample_values=out.sample_values, label_values=out.label_values)


SPEC = MethodSpec(
    method=METHOD,
    sample_suffixes=("alpha", "n_units"),
    label_suffixes=("unit",),
    compute=_compute,
    read_options=lambda p: {"image_sizes": True, "masks": p["similarity"] == "mask_iou"},
    extra=lambda samples, read, p: {"sessions": _sessions(samples, read, p["session_attr"])
                                    if p["session_attr"] else None},
    kernel=_kernel,
    finish=_finish,
    whole_corpus=lambda p: (f"intra-annotator consistency (session_attr={p['session_attr']!r}) needs every "
                            "sample of a rater's sessions together") if p["session_attr"] else None,
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
SOLVER_HELP = {
    "greedy": "greedy (default): best pairs first, one annotation per rater per unit",
    "hungarian": "sequential Hungarian, rater by rater",
    "agglomerative": "agglomerative clustering",
    "mgm": "multi-graph matching (pylibmgm)",
}


def _derive(params: dict) -> dict:
    """The recorded parameters: the τ curve's values default to :data:`agreement.methods.kalos.DEFAULT_TAUS`."""
    return {**params, "taus": [float(t) for t in (params["taus"] or DEFAULT_TAUS)]}


#: The panel's view of its runs (:data:`agreement.reporting.figures.method_figures.METHOD_VIEWS`).
VIEW = {
    "title": "KαLOS",
    "score_suffix": "alpha",
    "score_label": "Krippendorff's α of the sample",
    "score_axis": "α of the sample (1 perfect, 0 chance)",
    "score_name": "α",
    "score_range": lambda params: (-1.0, 1.0),
    "cards": [
        {"key": "global_alpha", "label": "global α (pooled)", "reason": "global_reason"},
        {"key": "mean_alpha", "label": "mean α (defined samples)", "reason": "mean_reason"},
        {"key": "n_undefined", "label": "samples with α undefined", "integer": True, "reasons": "undefined_samples"},
        {"key": "tau", "label": "τ"},
    ],
    # the text report's lines beside the cards (AgreementResults.report)
    "report_cards": [
        {"key": "n_defined", "label": "samples with α defined", "integer": True},
        {"key": "n_units", "label": "objects (clusters of labels)", "integer": True},
    ],
    "pair_matrix": ("alpha", "α per rater pair"),
    "pair_value": "α",
    "view_labels": ("mean α (defined samples)", "samples with α undefined"),
    "bars": lambda detail, info: kalos_bars(detail),
    "curves": lambda detail, info: kalos_curves(detail, info=info),
}


#: The columns of its rater table, the default sort column first.
RATER_COLUMNS = (
    Column("vitality", "vitality",
           description="global α minus α without the rater (< 0: the rater lowers agreement)"),
    Column("alpha_without", "α without", False, description="the global α without the rater"),
    Column("partner_agreement", "agrees",
           description="share of the objects it or a partner drew on shared samples that both drew alike "
                       "(observed agreement, pooled over its pairs)"),
    PARTNERS,
) + count_columns()


def _rater_rows(samples, info: dict, detail: dict) -> list[dict] | None:
    """A KαLOS run's raters: vitality and α without them (``detail["rater_vitality"]``), agreement with
    their partners (pooled observed agreement of their pairs), labels and samples
    (:func:`agreement.fo.panel.rater_counts.rater_label_counts`); ``None`` without vitality."""
    from agreement.fo.panel.rater_counts import kalos_pair_counts, rater_label_counts

    vit = detail.get("rater_vitality") or {}
    if not vit.get("raters"):
        return None
    counts, pair_counts = rater_label_counts(samples, info), kalos_pair_counts(samples, info)
    vitality = dict(zip(vit.get("raters") or [], vit.get("vitality") or [], strict=False))
    without = dict(zip(vit.get("raters") or [], vit.get("alpha_without") or [], strict=False))
    agree: dict[str, list[int]] = {}
    for key, c in (pair_counts or {}).items():
        for r in key.split("|"):
            a = agree.setdefault(r, [0, 0, 0])
            a[0], a[1], a[2] = a[0] + int(c["n_agree"]), a[1] + int(c["n_units"]), a[2] + 1
    rows = []
    for r in (str(x) for x in detail.get("raters") or []):
        g = agree.get(r)
        row = {"rater": r, "vitality": vitality.get(r), "alpha_without": without.get(r),
               "partner_agreement": g[0] / g[1] if g and g[1] else None, "n_partners": g[2] if g else None,
               "n_labels": (counts.get(r) or {}).get("labels"), "n_samples": (counts.get(r) or {}).get("samples")}
        rows.append(row_texts(row, RATER_COLUMNS))
    return rows


def _pair_counts(samples, info: dict) -> dict | None:
    from agreement.fo.panel.rater_counts import kalos_pair_counts

    return kalos_pair_counts(samples, info)


def _pair_note(records: list, name: str, value_name: str, contrast, obs_median, obs_pooled) -> str:
    from agreement.reporting.pair_statistics import contrast_note

    return contrast_note(contrast, value_name, observed_median=obs_median, observed_pooled=obs_pooled, kalos=True)


def _lone(samples, info: dict, rater: str):
    from agreement.fo.views.disagreements import lone_unit_labels_view

    return lone_unit_labels_view(samples, info, rater)


def _disputed(samples, info: dict, label_class: str):
    from agreement.fo.views.disagreements import disputed_unit_labels_view

    return disputed_unit_labels_view(samples, info, label_class)


def _disagreeing(samples, info: dict, raters):
    from agreement.fo.views.disagreements import disagreeing_unit_labels_view

    return disagreeing_unit_labels_view(samples, info, raters)


def _conflicts(samples, info: dict, raters: list[str]):
    from agreement.fo.reports.conflict_table import unit_conflicts

    return unit_conflicts(samples, info, raters)


#: What its runs show beside the view (:class:`agreement.fo.runs.method_spec.MethodHooks`).
HOOKS = MethodHooks(
    rater_tables=(RaterTable(METHOD, RATER_COLUMNS, "**Raters** (whole run)", _rater_rows),),
    pooled_key="global_alpha",
    pair_counts=_pair_counts,
    pair_note=_pair_note,
    explain_labels=lambda sample, info, labels: unit_explanations(info["key"], labels),
    drill_modes=("unmatched", "class"),
    unmatched_view=_lone,
    class_view=_disputed,
    disagreeing_view=_disagreeing,
    conflicts=_conflicts,
    conflicts_how="from the KαLOS units (the labels of a unit are one object)",
    relabel=box_relabel,
    planning=kalos_planning,
)


class KalosResults(AgreementResults):
    """KαLOS (Tschirschwitz & Rodehorst): ``global_alpha`` (pooled nominal α), ``mean_alpha`` over defined
    samples, ``n_undefined``, ``tau``; ``detail``: rater vitality, class difficulty, sensitivity curve,
    rater pairs."""

    view = VIEW


DECLARATION = MethodDeclaration(
    operator="compute_kalos",
    label="Annotator Agreement: KaLOS",
    description="Localisation-first correspondence, then Krippendorff's alpha per sample and corpus, with diagnostics",
    spec=SPEC,
    results_cls=KalosResults,
    params=(
        Param("similarity", str, "iou", "Similarity",
              "How alike two annotations are; the label type must carry that geometry",
              choices=tuple(SIMILARITY_HELP), choice_help=SIMILARITY_HELP),
        Param("tau", float, 0.5, "τ (similarity threshold)",
              "Annotations of different raters can be the same object only if similarity ≥ τ "
              "(calibrate_agreement suggests one from your data)", low=0.0, high=1.0, low_open=True),
        Param("solver", str, "greedy", "Correspondence solver", "How the annotations of a sample become units",
              choices=SOLVERS, choice_help=SOLVER_HELP),
        Param("cost", str, "soft", "Cost", "soft: prefer same-class matches (−s − 1 vs −s); plain: −s",
              choices=COSTS),
        Param("taus", list, DEFAULT_TAUS, "τ curve", "The τ values of the sensitivity curve of α", low=0.0,
              high=1.0, low_open=True),
        Param("session_attr", str, None, "Session attribute",
              "Optional label attribute naming sessions, for intra-annotator consistency (raters who labelled "
              "the same images in several sessions)"),
        *scene_unit_params("similarity"),
    ),
    outputs=(("global_alpha", "Global alpha (pooled)", "float"),
             ("mean_alpha", "Mean alpha over samples where defined", "float"),
             ("n_undefined", "Samples where alpha is undefined", "int")),
    key_prefix="kalos",
    derive=_derive,
    hooks=HOOKS,
)

#: ``compute_kalos(samples, key, *, fields=..., similarity="iou", tau=0.5, ...)``: KαLOS on a dataset or view,
#: stored as run ``key``; returns the headline numbers (``global_alpha``, ``global_reason``, ``mean_alpha``,
#: ``n_defined``, ``n_undefined``, ``n_units``, ``tau``, ``similarity``, ``solver``, ``cost`` and the repair counts).
compute_kalos = python_function(DECLARATION)
