"""OT agreement on a FiftyOne dataset or view: compute, write back, register the run.

For every sample, every pair of raters assigned to it is scored with the
optimal-transport agreement of :mod:`agreement.methods.ot` (Prokhorov & Kalinin), the
corpus gets the chance-corrected αOT of :mod:`agreement.methods.ot.alpha_ot` (overall and
per rater pair), and the threshold baselines of :mod:`agreement.methods.ot.baselines`
(F1@IoU, mean IoU, Krippendorff's α over threshold matching) are computed in
the same run for comparison.

Written to the dataset (``key`` is the run key):

==========================  =======================================================
``{key}_ot``                per sample: mean OT score over its rater pairs
``{key}_ot_min``            per sample: the lowest rater-pair OT score
``{key}_ot_position``       per sample: where the score sits in its feasible range
                            (0 = the worst score possible for these box counts,
                            1 = the best)
``{key}_f1``                per sample: mean F1@IoU over its rater pairs
``{key}_mean_iou``          per sample: mean IoU of threshold-matched pairs
label ``{key}_cost``        per label: the cost it paid (``c_ij`` when matched,
                            ``beta`` for the dummy), mean over its rater pairs
label ``{key}_match``       per label: the id of the label it matched (its
                            cheapest match over rater pairs), or ``None``
label ``{key}_match_rater`` per label: the rater of that matched label, or ``None``
label ``{key}_nearest_id``  per label that is not matched: its nearest
                            counterpart, the label of another assigned rater on
                            the same sample with the lowest pair cost ``c_ij``
                            (``None``: nobody else drew anything there; a matched
                            label's counterpart is its ``{key}_match``)
label ``{key}_nearest_rater``  the rater of that label
label ``{key}_nearest_cost``   ``c_ij`` to it
label ``{key}_reason``      per label that is not matched, why not: ``"no
                            counterpart"``, ``"label differs"`` (the boxes fit
                            well enough, ``lam (1 - GIoU) / 2 < beta``, but the
                            label term makes ``c_ij >= beta``), ``"too far"``
                            (geometry alone gives ``c_ij >= beta``) or
                            ``"counterpart taken"`` (eligible, ``c_ij < beta``,
                            but the optimal matching gave the counterpart to
                            another label); ``2 beta`` for ``"oc_cost"``. A
                            matched label has none: its ``{key}_match`` says so
                            (one path fewer per label for MongoDB to set, where
                            most labels match; runs written before 2026-12 store
                            ``"matched"``, which every reader here accepts)
==========================  =======================================================

Samples with fewer than two assigned raters are not scored: their fields
are ``None`` and the run results list them with the reason (their labels
have reason ``"no counterpart"``).

Run results: ``summary`` (the headline numbers) and ``detail``:
``raters``; ``rater_pairs``, one record per rater pair that shares at least
one sample (:meth:`agreement.core.rater_pairs.RaterPairTable.to_records`: a pair
that shares no sample is absent, "no data") with ``n_shared_samples``,
``mean_ot``, ``alpha_ot``, ``alpha_ot_se``, ``observed_cost``,
``expected_cost``, ``expected_cost_se``, ``n_cross_pairs``, ``exact`` (1.0 or
0.0), ``threshold_alpha`` and, where a value is undefined,
``alpha_ot_reason`` / ``threshold_alpha_reason``; ``undefined_samples``;
``pair_sample_scores`` (``"a|b"`` → sample id → score, stored as columns); ``repairs``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

import fiftyone.core.labels as fol

from agreement.core.arrays import mean_of_defined
from agreement.core.rater_pairs import RaterPairTable
from agreement.fo.frames.units import chance_groups
from agreement.fo.panel.label_explanations import reason_explanations
from agreement.fo.panel.rater_tables import PARTNERS, Column, count_columns, partner_means, row_texts
from agreement.fo.planning.plan_ot import ot_planning
from agreement.fo.runs.chance_strata import chance_strata
from agreement.fo.runs.declaration import MethodDeclaration, Param, python_function
from agreement.fo.runs.method_spec import MethodHooks, MethodOutput, MethodSpec, RaterTable
from agreement.fo.runs.results import AgreementResults
from agreement.fo.storage.assignment import read_assignment
from agreement.methods.ot import NORMALIZATIONS
from agreement.methods.ot.alpha_ot import CellSets, finish_alpha_ot, plan_chance
from agreement.methods.ot.baselines import UnitCounts, ot_scores_and_threshold_baselines, pooled_scores
from agreement.reporting.figures.base import sig3
from agreement.reporting.figures.ot_view import view_alpha_ot

__all__ = ["compute_ot_agreement", "METHOD", "SAMPLE_SUFFIXES", "LABEL_SUFFIXES", "SPEC", "DECLARATION", "HOOKS",
           "RATER_COLUMNS", "view_alpha_ot"]

METHOD = "iaa.ot_agreement"
SAMPLE_SUFFIXES = ("ot", "ot_min", "ot_position", "f1", "mean_iou")
LABEL_SUFFIXES = ("cost", "match", "match_rater", "nearest_rater", "nearest_id", "nearest_cost", "reason")
MAX_LISTED_UNDEFINED = 1000



def _check(read, params: dict) -> None:
    if read.annotations.cuboids is not None:
        raise ValueError(
            "OT agreement is defined on 2D boxes and these are 3D detections: use compute_kalos with "
            "similarity='cuboid_iou', or compute_geometry_agreement with distance='cuboid_iou'"
        )


def _ot_kw(params: dict) -> dict:
    return dict(lam=params["lam"], beta=params["beta"], normalization=params["normalization"])


def _prepare(samples, plan, sample_ids: list, layout, params: dict):
    """The αOT chance sample, drawn from the view's assignment before the first shard
    (:func:`agreement.methods.ot.alpha_ot.plan_chance`): the shards collect the sets it needs as they pass.
    Cross pairs join images of comparable size, or clips of comparable length (:func:`agreement.fo.runs.chance_strata.chance_strata`)."""
    cs, cr = read_assignment(samples, plan, sample_ids)
    return plan_chance(sample_ids, cs, cr, plan.raters, max_pairs=params["max_pairs"], seed=params["seed"],
                       groups=chance_groups(samples, sample_ids),
                       strata=chance_strata(samples, sample_ids, plan.label_fields))


@dataclass(frozen=True, eq=False)
class _Shard:
    """What the corpus numbers need of one shard: per (sample, rater pair) costs, scores and F1, per-sample
    means, the matched IoUs and α unit counts of the baselines, and the sets of the chance sample."""

    pair_sample: np.ndarray
    pair_code: np.ndarray
    pair_cost: np.ndarray
    pair_score: np.ndarray
    pair_f1: np.ndarray
    sample_mean: np.ndarray
    matched_iou: np.ndarray
    n_matched: int
    n_boxes: float
    units: UnitCounts
    sets: CellSets
    undefined: dict


def _kernel(read, params: dict, extra: dict) -> MethodOutput:
    """OT scores, threshold baselines and the chance sample's sets of one shard."""
    corpus = read.annotations
    chance, lo = extra["state"], extra["sample_offset"]
    R = corpus.num_raters
    scores, base = ot_scores_and_threshold_baselines(corpus, iou_threshold=params["iou_threshold"],
                                                     **_ot_kw(params))
    undefined = {str(s): r for s, r in zip(corpus.sample_ids, scores.reasons, strict=False) if r}
    shard = _Shard(
        pair_sample=(np.asarray(scores.pair_sample, dtype=np.int64) + lo),
        pair_code=np.asarray(scores.pair_rater_a, dtype=np.int64) * R + scores.pair_rater_b,
        pair_cost=np.asarray(scores.pair_cost, dtype=np.float64), pair_score=np.asarray(scores.pair_score),
        pair_f1=np.asarray(base.pair_f1), sample_mean=np.asarray(scores.mean), matched_iou=base.matched_iou,
        n_matched=int(np.asarray(base.pair_n_matched).sum()),
        n_boxes=float((np.asarray(base.pair_n_a) + np.asarray(base.pair_n_b)).sum()), units=base.units,
        sets=CellSets.of(corpus, chance.cells_of_samples(lo, lo + corpus.num_samples), sample_offset=lo),
        undefined=dict(list(undefined.items())[:MAX_LISTED_UNDEFINED]),
    )
    samples = {"ot": scores.mean, "ot_min": scores.min, "ot_position": scores.position,
               "f1": base.sample_f1, "mean_iou": base.sample_mean_iou}
    return MethodOutput({}, {}, sample_values=samples, label_values=_label_results(corpus, scores), stats=shard)


def _finish(stats: list, params: dict, context) -> tuple[dict, dict]:
    """αOT from the observed costs and the collected chance sets; the baselines and rater pairs merged."""
    chance = context.state
    cat = np.concatenate
    pair_code, pair_cost, pair_score = (cat([getattr(sh, f) for sh in stats])
                                        for f in ("pair_code", "pair_cost", "pair_score"))
    alpha = finish_alpha_ot(chance, CellSets.concat([sh.sets for sh in stats]), pair_cost, pair_code,
                            **_ot_kw(params))
    R = len(chance.raters)
    table = alpha.pairs
    codes = table.a.astype(np.int64) * R + table.b
    mean_ot = table.mean_over_shared(np.searchsorted(codes, pair_code), pair_score)
    units = UnitCounts.merge([sh.units for sh in stats], codes)
    threshold_alpha, threshold_reason = units.pair_alpha()
    pooled = units.alpha()
    f1_micro, f1_macro, mean_iou = pooled_scores(
        cat([sh.pair_f1 for sh in stats]), cat([sh.matched_iou for sh in stats]),
        sum(sh.n_matched for sh in stats), sum(sh.n_boxes for sh in stats))
    sample_mean = cat([sh.sample_mean for sh in stats])
    undefined: dict[str, Any] = {}
    for sh in stats:
        undefined.update(list(sh.undefined.items())[:MAX_LISTED_UNDEFINED - len(undefined)])
    n_undefined = int(np.isnan(sample_mean).sum())
    summary = {
        "alpha_ot": alpha.alpha, "alpha_ot_se": alpha.alpha_se, "alpha_ot_exact": bool(alpha.exact),
        "alpha_ot_reason": alpha.reason, "observed_cost": alpha.observed, "expected_cost": alpha.expected,
        "expected_cost_se": alpha.expected_se, "n_cross_pairs": alpha.n_cross_pairs,
        "n_cross_pairs_evaluated": alpha.n_expected,
        "mean_ot": mean_of_defined(sample_mean),
        "n_samples": len(sample_mean), "n_scored": len(sample_mean) - n_undefined, "n_undefined": n_undefined,
        "f1": f1_micro, "f1_macro": f1_macro, "mean_iou": mean_iou,
        "threshold_alpha": pooled.alpha, "threshold_alpha_reason": pooled.reason,
    }
    keep = ("alpha_ot", "alpha_ot_se", "observed_cost", "expected_cost", "expected_cost_se", "n_cross_pairs",
            "exact")
    merged = RaterPairTable(table.raters, table.a, table.b, table.n_shared,
                            values={"mean_ot": mean_ot, **{k: table.values[k] for k in keep},
                                    "threshold_alpha": threshold_alpha},
                            reasons={"alpha_ot": table.reasons["alpha_ot"], "threshold_alpha": threshold_reason})
    detail = {
        "rater_pairs": merged.to_columns(arrays=True),
        "undefined_samples": undefined,
        "pair_sample_scores": _pair_sample_scores(chance.raters, context.sample_ids,
                                                  cat([sh.pair_sample for sh in stats]), pair_code, pair_score),
    }
    return summary, detail


def _pair_sample_scores(raters, sample_ids, pair_sample, pair_code, pair_score) -> dict[str, list]:
    """Every (sample, rater pair) scored, as the coded columns of :func:`agreement.fo.storage.compact.nested_to_columns`:
    ``outer`` codes the pair ``"a|b"``, ``inner`` the sample id, ``value`` the OT score (NaN: ``None``).

    :func:`agreement.fo.runs.store.load_agreement_results` gives it back as ``"a|b"`` → sample id → score.
    """
    names = np.asarray(raters, dtype=object)
    R = len(raters)
    pair_codes, outer = np.unique(pair_code, return_inverse=True)
    sample_codes, inner = np.unique(pair_sample, return_inverse=True)
    return {  # numeric columns as arrays: runs.register_run packs them by dtype (NaN: None when read)
        "outer_keys": (names[pair_codes // R] + "|" + names[pair_codes % R]).tolist(),
        "outer": outer.ravel().astype(np.int64),
        "inner_keys": [str(sample_ids[i]) for i in sample_codes.tolist()],
        "inner": inner.ravel().astype(np.int64),
        "value": np.asarray(pair_score, dtype=np.float64).copy(),
    }


def _label_results(corpus, scores) -> dict:
    """Per-label values (:data:`LABEL_SUFFIXES`), one per corpus row.

    The nearest counterpart and the reason explain a label that is not
    matched; on a matched label they are not written (its counterpart is
    ``match``), which keeps the write-back small where most labels match.
    """
    ids = np.append(corpus.label_ids.astype(object), [None])  # index -1: None
    names = np.array(list(corpus.raters) + [None], dtype=object)
    matched = np.asarray(scores.row_reason, dtype=object) == "matched"
    nearest_row = np.where(matched, -1, scores.row_nearest_row)
    return {
        "cost": scores.row_paid,
        "match": ids[scores.row_matched_row],
        "match_rater": names[scores.row_matched_rater],
        "nearest_rater": names[np.where(matched, -1, scores.row_nearest_rater)],
        "nearest_id": ids[nearest_row],
        "nearest_cost": np.where(matched, np.nan, scores.row_nearest_cost),
        "reason": np.where(matched, np.array(None, dtype=object), np.asarray(scores.row_reason, dtype=object)),
    }


SPEC = MethodSpec(
    method=METHOD,
    sample_suffixes=SAMPLE_SUFFIXES,
    label_suffixes=LABEL_SUFFIXES,
    compute=None,
    check=_check,
    kernel=_kernel,
    finish=_finish,
    prepare=_prepare,
)


#: The panel's view of its runs (:data:`agreement.reporting.figures.method_figures.METHOD_VIEWS`).
VIEW = {
    "title": "OT agreement",
    "score_suffix": "ot",
    "score_label": "OT score (mean over rater pairs)",
    "score_axis": "OT score of the sample (1 = identical box sets)",
    "score_name": "OT score",
    "score_range": lambda params: (1 - float(params.get("beta", 0.5)), 1.0),
    "cards": [
        {"key": "alpha_ot", "label": "αOT", "se": "alpha_ot_se", "exact": "alpha_ot_exact",
         "reason": "alpha_ot_reason"},
        {"key": "mean_ot", "label": "mean OT score"},
        {"key": "f1", "label": "F1@IoU (baseline)"},
        {"key": "threshold_alpha", "label": "threshold α (baseline)", "reason": "threshold_alpha_reason"},
        {"key": "n_undefined", "label": "samples without a score", "integer": True, "reasons": "undefined_samples"},
    ],
    "pair_matrix": ("alpha_ot", "αOT per rater pair"),
    "pair_value": "αOT",
    "view_labels": ("mean OT score", "samples without a score"),
}


#: The columns of its rater table, the default sort column first.
RATER_COLUMNS = (
    Column("pair_alpha", "pair αOT", description="mean αOT of its rater pairs, weighted by their shared samples"),
    PARTNERS,
    Column("n_shared", "shared", True, True, "samples shared, summed over its pairs"),
) + count_columns()


def _rater_rows(samples, info: dict, detail: dict) -> list[dict]:
    """An OT run's raters: their pairs' αOT (weighted by shared samples), partners, shared samples,
    labels and samples."""
    from agreement.fo.panel.rater_counts import rater_label_counts

    counts = rater_label_counts(samples, info)
    part = partner_means(list(detail.get("rater_pairs") or []), "alpha_ot", "n_shared_samples")
    rows = []
    for r in (str(x) for x in detail.get("raters") or []):
        p = part.get(r)
        row = {"rater": r, "pair_alpha": p["num"] / p["den"] if p and p["den"] else None,
               "n_partners": p["n"] if p else None, "n_shared": p["shared"] if p else None,
               "n_labels": (counts.get(r) or {}).get("labels"), "n_samples": (counts.get(r) or {}).get("samples")}
        rows.append(row_texts(row, RATER_COLUMNS))
    return rows


def _view_cards(samples, info: dict, detail: dict, ids: set | None) -> list[dict]:
    """αOT of the samples of the view, observed on them against the whole run's chance level."""
    from agreement.fo.panel.video_figures import is_frame_run

    if detail.get("pair_sample_scores") is None:
        return []
    frames = is_frame_run(info)  # a frame run's pair scores are per frame
    ids = ids if ids is not None else set(samples.values("frames.id" if frames else "id", unwind=frames))
    va = view_alpha_ot(detail["pair_sample_scores"], detail.get("rater_pairs") or [], ids)
    return [{"label": "αOT", "value": va["alpha"],
             "text": sig3(va["alpha"]) + " (observed on these samples; chance level of the whole run)"
             if va["alpha"] is not None else "undefined: no sample with two raters"}]


def _view_pair_values(detail: dict, records: list, ids: set | None) -> dict:
    va = view_alpha_ot(detail["pair_sample_scores"], records, ids)
    return {p: {"alpha_ot": v["alpha"], "n_samples": v["n_samples"]} for p, v in va["pairs"].items()}


def _disagreeing(samples, info: dict, raters):
    from agreement.fo.views.disagreements import unmatched_reason_labels_view

    return unmatched_reason_labels_view(samples, info, raters)


def _conflicts(samples, info: dict, raters: list[str]):
    from agreement.fo.reports.conflict_table import match_conflicts

    return match_conflicts(samples, info, raters)


#: What its runs show beside the view (:class:`agreement.fo.runs.method_spec.MethodHooks`).
HOOKS = MethodHooks(
    view_cards=_view_cards,
    rater_tables=(RaterTable(METHOD, RATER_COLUMNS, "**Raters** (whole run)", _rater_rows),),
    pooled_key="alpha_ot",
    view_pair_values=_view_pair_values,
    explain_labels=lambda sample, info, labels: reason_explanations(info["key"], labels),
    drill_modes=("unmatched",),
    unmatched_view=lambda samples, info, rater: _disagreeing(samples, info, [rater]),
    disagreeing_view=_disagreeing,
    pair_sample_scores=True,
    conflicts=_conflicts,
    conflicts_how="from each label's OT match, or its reason and nearest counterpart when unmatched",
    planning=ot_planning,
)


class OTAgreementResults(AgreementResults):
    """OT agreement (Prokhorov & Kalinin): ``alpha_ot`` (αOT, 1 perfect, 0 chance) with ``alpha_ot_se``,
    ``mean_ot`` (OT score in [1 − β, 1]), baselines ``f1`` and ``threshold_alpha``, ``n_undefined``;
    ``detail["rater_pairs"]`` per rater pair."""

    view = VIEW


DECLARATION = MethodDeclaration(
    operator="compute_ot_agreement",
    label="Annotator Agreement: OT agreement",
    description="Optimal-transport agreement per sample and chance-corrected alpha-OT per corpus",
    spec=SPEC,
    results_cls=OTAgreementResults,
    params=(
        Param("lam", float, 0.5, "λ (localisation weight)",
              "Pair cost = λ·(1−GIoU)/2 + (1−λ)·[labels differ]; 1 ignores labels, 0 ignores boxes",
              low=0.0, high=1.0),
        Param("beta", float, 0.5, "β (cost of an unmatched box)",
              "Boxes match only when their pair cost is below β (2β for OC-cost); the score lies in [1−β, 1]. "
              "Different labels cost 1−λ on their own, so they can match only when β > 1−λ (never at λ = β = 0.5)",
              low=0.0, high=1.0, low_open=True),
        Param("normalization", str, "paper", "Normalisation", "How the transport cost is normalised",
              choices=NORMALIZATIONS, radio=True,
              choice_help={"paper": "paper (continuous, cost in [0, β])",
                           "oc_cost": "OC-cost (Otani et al.; discontinuous at c = 2β)"}),
        Param("max_pairs", int, 100_000, "Chance budget",
              "Cross-sample pairs for alpha-OT: exact up to this many, else a seeded estimate", low=1),
        Param("seed", int, 0, "Seed", "Seed of the chance estimate"),
        Param("iou_threshold", float, 0.5, "Baseline IoU threshold",
              "For the F1@IoU and threshold-alpha baselines computed alongside", low=0.0, high=1.0, low_open=True),
    ),
    outputs=(("alpha_ot", "alpha-OT (1 perfect, 0 chance)", "float"), ("mean_ot", "Mean OT score", "float"),
             ("f1", "F1@IoU (baseline)", "float"), ("threshold_alpha", "Threshold alpha (baseline)", "float"),
             ("n_scored", "Samples scored", "int"), ("n_undefined", "Samples not scored", "int"),
             ("alpha_ot_reason", "Why alpha-OT is undefined", "str")),
    key_prefix="ot",
    label_types=(fol.Detections, fol.TemporalDetections),  # segments: boxes in relative time (agreement.fo.storage.temporal)
    hooks=HOOKS,
)

#: ``compute_ot_agreement(samples, key, *, fields=..., lam=0.5, beta=0.5, ...)``: OT agreement on a dataset or
#: view, stored as run ``key``; returns the headline numbers (``alpha_ot``, ``alpha_ot_se``, ``alpha_ot_exact``,
#: ``observed_cost`` (D_o), ``expected_cost`` (D_e), ``mean_ot``, ``n_samples``, ``n_scored``, ``n_undefined``,
#: ``alpha_ot_reason``, ``f1``, ``mean_iou``, ``threshold_alpha`` and the repair counts).
compute_ot_agreement = python_function(DECLARATION)
