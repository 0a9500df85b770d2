"""OT agreement on a FiftyOne dataset or view: compute, write back, register the run.

For every sample, every pair of raters assigned to it is scored with the
optimal-transport agreement of :mod:`agreement.ot` (Prokhorov & Kalinin), the
corpus gets the chance-corrected αOT of :mod:`agreement.alpha_ot` (overall and
per rater pair), and the threshold baselines of :mod:`agreement.baselines`
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
label ``{key}_reason``      per label: ``"matched"``, or why not: ``"no
                            counterpart"``, ``"label differs"`` (the boxes fit
                            well enough, ``lam (1 - GIoU) / 2 < beta``, but the
                            label term makes ``c_ij >= beta``), ``"too far"``
                            (geometry alone gives ``c_ij >= beta``) or
                            ``"counterpart taken"`` (eligible, ``c_ij < beta``,
                            but the optimal matching gave the counterpart to
                            another label); ``2 beta`` for ``"oc_cost"``
==========================  =======================================================

Samples with fewer than two assigned raters are not scored: their fields
are ``None`` and the run results list them with the reason (their labels
have reason ``"no counterpart"``).

Run results: ``summary`` (the headline numbers) and ``detail``:
``raters``; ``rater_pairs``, one record per rater pair that shares at least
one sample (:meth:`agreement.rater_pairs.RaterPairTable.to_records`: a pair
that shares no sample is absent, "no data") with ``n_shared_samples``,
``mean_ot``, ``alpha_ot``, ``alpha_ot_se``, ``observed_cost``,
``expected_cost``, ``expected_cost_se``, ``n_cross_pairs``, ``exact`` (1.0 or
0.0), ``threshold_alpha`` and, where a value is undefined,
``alpha_ot_reason`` / ``threshold_alpha_reason``; ``undefined_samples``;
``pair_sample_scores`` (``"a|b"`` → sample id → score, stored as columns); ``repairs``.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from agreement.alpha_ot import alpha_ot
from agreement.baselines import threshold_baselines
from agreement.fo.engine import MethodOutput, MethodSpec, run_method
from agreement.ot import check_ot_params, sample_ot_scores
from agreement.rater_pairs import RaterPairTable

__all__ = ["compute_ot_agreement", "METHOD", "SAMPLE_SUFFIXES", "LABEL_SUFFIXES", "SPEC"]

METHOD = "iaa.ot_agreement"
SAMPLE_SUFFIXES = ("ot", "ot_min", "ot_position", "f1", "mean_iou")
LABEL_SUFFIXES = ("cost", "match", "match_rater", "nearest_rater", "nearest_id", "nearest_cost", "reason")
MAX_LISTED_UNDEFINED = 1000

Progress = Callable[[float, str], None]


def compute_ot_agreement(
    samples,
    key: str,
    fields: Sequence[str] | None = None,
    field: str | None = None,
    rater_attr: str = "annotator",
    raters_field: str | None = None,
    lam: float = 0.5,
    beta: float = 0.5,
    normalization: str = "paper",
    max_pairs: int = 100_000,
    seed: int = 0,
    iou_threshold: float = 0.5,
    box_policy: str = "clip",
    assume_crossed: bool = False,
    overwrite: bool = False,
    progress: Progress | None = None,
) -> dict:
    """Computes OT agreement on ``samples`` and stores it as run ``key``.

    Args:
        samples: a dataset or view (only its samples are scored and written).
        key: the run key; fields are named ``{key}_...``.
        fields / field, rater_attr, raters_field: the rater layout (see
            :func:`agreement.fo.reading.read_annotations`).
        lam: λ in [0, 1], weight of localisation ``(1 - GIoU)/2`` against label
            mismatch in the pair cost.
        beta: β in (0, 1], the cost of leaving a box unmatched.
        normalization: ``"paper"`` (default) or ``"oc_cost"``.
        max_pairs: the chance budget of αOT: cross-sample pairs evaluated
            exactly up to this many, else a fixed-seed Monte-Carlo estimate
            with a standard error.
        seed: seed of that estimate.
        iou_threshold: IoU threshold of the F1 / threshold-α baselines.
        box_policy: ``"clip"``, ``"drop"`` or ``"error"`` for boxes past the image border.
        assume_crossed: accept the fully crossed assumption when no assignment
            is recorded (attribute layout).
        overwrite: replace an existing agreement run with this key.
        progress: optional ``callback(fraction, label)``.

    Returns:
        The headline numbers as a flat dict: ``alpha_ot``, ``alpha_ot_se``,
        ``alpha_ot_exact``, ``observed_cost`` (D_o), ``expected_cost`` (D_e),
        ``mean_ot``, ``n_samples``, ``n_scored``, ``n_undefined``,
        ``alpha_ot_reason``, ``f1``, ``mean_iou``, ``threshold_alpha``,
        ``clipped_boxes``.

    Raises:
        ValueError: for parameters out of range, before anything is read.
        agreement.validation.AnnotationError: for bad input (names the sample
            and field).
        agreement.fo.runs.RunError: when the key cannot be used.
    """
    check_ot_params(lam, beta, normalization)
    if not 0 < iou_threshold <= 1:
        raise ValueError(f"iou_threshold must be in (0, 1], got {iou_threshold!r}")
    if int(max_pairs) < 1:
        raise ValueError(f"max_pairs must be a positive number of cross-sample pairs, got {max_pairs!r}")
    params = {
        "lam": lam, "beta": beta, "normalization": normalization, "max_pairs": int(max_pairs), "seed": int(seed),
        "iou_threshold": iou_threshold,
    }
    layout = {"fields": fields, "field": field, "rater_attr": rater_attr, "raters_field": raters_field,
              "box_policy": box_policy, "assume_crossed": assume_crossed}
    return run_method(samples, key, SPEC, layout, params, overwrite=overwrite, progress=progress)


def _check(read, params: dict) -> None:
    if read.annotations.cuboids is not None:
        raise ValueError(
            "OT agreement is defined on 2D boxes and these are 3D detections: use compute_kalos with "
            "similarity='cuboid_iou', or compute_geometry_agreement with distance='cuboid_iou'"
        )


def _compute(read, params: dict, report, extra: dict) -> MethodOutput:
    """Per-sample OT scores, αOT and the threshold baselines (pure :mod:`agreement` code)."""
    corpus = read.annotations
    ot_kw = dict(lam=params["lam"], beta=params["beta"], normalization=params["normalization"])
    report(0.0, "per-sample OT scores")
    scores = sample_ot_scores(corpus, **ot_kw)
    report(0.4, "alpha-OT chance baseline")
    alpha = alpha_ot(corpus, **ot_kw, max_pairs=params["max_pairs"], seed=params["seed"],
                     observed_costs=scores.pair_cost)
    report(0.7, "threshold baselines")
    base = threshold_baselines(corpus, iou_threshold=params["iou_threshold"])
    undefined = {str(s): r for s, r in zip(corpus.sample_ids, scores.reasons) if r}
    detail = {
        "rater_pairs": _rater_pair_records(scores, alpha, base),
        "undefined_samples": dict(list(undefined.items())[:MAX_LISTED_UNDEFINED]),
        "pair_sample_scores": _pair_sample_scores(scores, corpus),
    }
    samples = {"ot": scores.mean, "ot_min": scores.min, "ot_position": scores.position,
               "f1": base.sample_f1, "mean_iou": base.sample_mean_iou}
    return MethodOutput(_summary(scores, alpha, base, corpus, len(undefined)), detail,
                        sample_values=samples, label_values=_label_results(corpus, scores))


def _summary(scores, alpha, base, corpus, n_undefined: int) -> dict:
    """The headline numbers (``ExecutionResult.result`` and ``summary``)."""
    return {
        "alpha_ot": alpha.alpha,
        "alpha_ot_se": alpha.alpha_se,
        "alpha_ot_exact": bool(alpha.exact),
        "alpha_ot_reason": alpha.reason,
        "observed_cost": alpha.observed,
        "expected_cost": alpha.expected,
        "expected_cost_se": alpha.expected_se,
        "n_cross_pairs": alpha.n_cross_pairs,
        "n_cross_pairs_evaluated": alpha.n_expected,
        "mean_ot": scores.mean_score,
        "n_samples": corpus.num_samples,
        "n_scored": scores.n_scored,
        "n_undefined": n_undefined,
        "f1": base.f1_micro,
        "f1_macro": base.f1_macro,
        "mean_iou": base.mean_iou,
        "threshold_alpha": base.alpha.alpha,
        "threshold_alpha_reason": base.alpha.reason,
    }


def _pair_sample_scores(scores, corpus) -> dict[str, list]:
    """Every (sample, rater pair) scored, as the coded columns of :func:`agreement.fo.compact.nested_to_columns`:
    ``outer`` codes the pair ``"a|b"``, ``inner`` the sample id, ``value`` the OT score (NaN: ``None``).

    :func:`agreement.fo.runs.load_agreement_results` gives it back as ``"a|b"`` → sample id → score.
    """
    names = np.asarray(corpus.raters, dtype=object)
    R = len(corpus.raters)
    pair_codes, outer = np.unique(np.asarray(scores.pair_rater_a) * R + np.asarray(scores.pair_rater_b),
                                  return_inverse=True)
    sample_codes, inner = np.unique(np.asarray(scores.pair_sample), return_inverse=True)
    return {  # numeric columns as arrays: runs.register_run packs them by dtype (NaN: None when read)
        "outer_keys": (names[pair_codes // R] + "|" + names[pair_codes % R]).tolist(),
        "outer": outer.ravel().astype(np.int64),
        "inner_keys": [str(corpus.sample_ids[i]) for i in sample_codes.tolist()],
        "inner": inner.ravel().astype(np.int64),
        "value": np.asarray(scores.pair_score, dtype=np.float64).copy(),
    }


def _label_results(corpus, scores) -> dict:
    """Per-label values (:data:`LABEL_SUFFIXES`), one per corpus row.

    The nearest counterpart explains a label that is not matched; on a
    matched label it is not written (its counterpart is ``match``), which
    keeps the write-back of a crowd, where most labels match, small.
    """
    ids = np.append(corpus.label_ids.astype(object), None)  # index -1: None
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
        "reason": scores.row_reason,
    }


def _rater_pair_records(scores, alpha, base) -> list[dict]:
    """One record per rater pair that shares a sample: OT, αOT and baseline values together."""
    tables = (scores.rater_pairs, alpha.pairs, base.pairs)
    t0 = tables[0]
    for t in tables[1:]:
        if not (np.array_equal(t.a, t0.a) and np.array_equal(t.b, t0.b)):
            raise AssertionError("rater-pair tables of one corpus disagree")  # built from one assignment
    keep = ("alpha_ot", "alpha_ot_se", "observed_cost", "expected_cost", "expected_cost_se", "n_cross_pairs",
            "exact")
    merged = RaterPairTable(
        t0.raters, t0.a, t0.b, t0.n_shared,
        values={"mean_ot": t0.values["mean_ot"], **{k: alpha.pairs.values[k] for k in keep},
                "threshold_alpha": base.pairs.values["threshold_alpha"]},
        reasons={"alpha_ot": alpha.pairs.reasons["alpha_ot"],
                 "threshold_alpha": base.pairs.reasons["threshold_alpha"]},
    )
    return merged.to_columns(arrays=True)


SPEC = MethodSpec(
    method=METHOD,
    sample_suffixes=SAMPLE_SUFFIXES,
    label_suffixes=LABEL_SUFFIXES,
    compute=_compute,
    check=_check,
)
