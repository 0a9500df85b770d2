r"""KαLOS: localisation-first, chance-corrected agreement for object annotations.

KαLOS (Tschirschwitz & Rodehorst) measures how far several raters agree on
the objects of an image, "localisation first, classification second":

1. **Correspondence.** On each sample, the annotations of all raters are
   clustered into *units* (one object each, at most one annotation per
   rater) by a solver over candidate pairs, i.e. pairs of different raters
   with similarity ``s >= tau`` (box IoU by default), under the class-aware
   cost ψ_soft (see :mod:`agreement.geometry.correspondence`).
2. **Reliability matrix.** Raters × units. A rater who drew an annotation of
   the unit contributes its class; a rater assigned to the sample who drew
   nothing in the unit contributes the category ``no_object`` (an active "I
   see no object here"); a rater not assigned to the sample contributes a
   missing value. A sample where every assigned rater drew nothing
   contributes one unit of unanimous ``no_object`` to the pooled (corpus)
   matrix: agreement that the image is empty.
3. **Nominal Krippendorff's α** (Krippendorff 2011, via
   :mod:`agreement.core.krippendorff`): ``alpha = 1 - D_o / D_e`` with the
   coincidence matrix ``o``, ``n_c = sum_k o_ck``, ``n = sum_c n_c``,
   ``D_o = (n - sum_c o_cc) / n`` and ``D_e = (n**2 - sum_c n_c**2) / (n (n - 1))``.
   Computed per sample (the sample's units), globally (the pooled matrix of
   the corpus) and as the mean over the samples where it is defined.
   Range: at most 1; 1 perfect agreement, 0 chance level, below 0
   systematic disagreement.

Undefined α, and the reference tool's 1.0
-----------------------------------------
α is ``0 / 0`` when a sample has fewer than two assigned raters, when nobody
drew anything on it, or when its values show no variation (``D_e = 0``: every
rater drew the same objects, all of one class). Here it is NaN with a reason
(:attr:`KalosResult.reason`) and such samples are left out of the mean, whose
count is reported (:attr:`KalosResult.n_undefined`). **The reference tool
(``kalos`` 0.8, ``vision_alpha``) reports 1.0 for every such sample** and
averages those 1.0s into its "mean image alpha". That inflates its mean
towards 1 in proportion to the share of empty and single-class images, and
makes a perfectly agreed single-class image indistinguishable from one
nobody annotated. On the shared LVIS subset (200 images, 2 raters, box IoU,
τ = 0.5, greedy, ψ_soft) α is undefined on 51 images (14 where both raters
drew nothing, 37 where both drew the same objects, all of one class); the
reference's mean image α is 0.689 (its 51 conventional 1.0s included), the
mean over the 149 defined images reported here is 0.582. Every defined
per-image α, every unit and the pooled (global) α, 0.648, are the same in
both (the reference pools in the same way).

Speed
-----
For box IoU (``"iou"``, the default) the similarities of every cross-rater
pair of every sample are computed in a few vectorised passes over the whole
corpus (the paired form of :func:`agreement.geometry.boxes.pairwise_iou`,
bit-identical to it); other similarities (GIoU, centroid, polygons, masks,
keypoints) are computed per sample and rater pair through
:func:`agreement.geometry.similarity.similarity_matrix`. The correspondence runs on
all samples at once (:func:`agreement.geometry.correspondence.solve_units`), and the
per-sample α is computed for all samples in one grouped pass
(:func:`grouped_alpha`). On the shared LVIS data and on a generated
5-rater corpus this is well over 5x faster per sample than the reference
(``bench/kalos_bench.py``).

References:
    T. Tschirschwitz and V. Rodehorst, "KαLOS finds Consensus: A Meta-Algorithm
    for Evaluating Inter-Annotator Agreement in Complex Vision Tasks"; reference
    implementation ``pip install kalos``.
    K. Krippendorff, "Computing Krippendorff's Alpha-Reliability", University of
    Pennsylvania, 2011.

This module does not import FiftyOne.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Sequence

import numpy as np

from agreement.core.arrays import mean_of_defined
from agreement.core.data import MultiRaterAnnotations, encode_classes
from agreement.core.reliability import SparseReliability, concat_ranges
from agreement.geometry.correspondence import check_cost, check_solver, check_tau, solve_units
from agreement.geometry.similarity import SimilarityOptions, check_similarity

# Internals reachable here too (the tests check the paired box IoU against the matrix form).
from agreement.methods.kalos.candidates import (  # noqa: F401
    CandidatePairs,
    SimilarityFn,
    candidate_pairs,
    find_candidates,
    paired_row_iou,
    similarity_name,
)
from agreement.methods.kalos.nominal import CoincidenceCounts, grouped_alpha, reliability_alpha, single_class_bound
from agreement.methods.kalos.results import KalosResult, SensitivityCurve

__all__ = [
    "NO_OBJECT",
    "DEFAULT_TAUS",
    "KalosResult",
    "SensitivityCurve",
    "kalos_alpha",
    "sensitivity_curve",
    "reliability_alpha",
    "CoincidenceCounts",
    "KalosShard",
    "kalos_shard",
    "merge_kalos_shards",
    "grouped_alpha",
    "candidate_pairs",
]

#: The category of a rater who was assigned a sample but drew nothing in a unit.
NO_OBJECT = "no_object"
#: The τ sweep of the localisation sensitivity curve (as in the KαLOS paper).
DEFAULT_TAUS: tuple[float, ...] = (0.1, 0.175, 0.25, 0.375, 0.5, 0.625, 0.75, 0.9)


# --------------------------------------------------------------------------
# The pipeline
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class _Prepared:
    codes: np.ndarray  # (N,) class code of each row
    categories: tuple  # class names, then no_object
    cand: CandidatePairs
    repaired: int  # polygon annotations repaired by the similarity's validation


def _encode_classes(data: MultiRaterAnnotations, no_object: str) -> tuple[np.ndarray, tuple]:
    codes, classes = encode_classes(data)
    if any(c == no_object for c in classes):
        raise ValueError(
            f"a class is named {no_object!r}, which is the code KαLOS uses for 'this rater drew no object "
            "here'; rename that class or pass another no_object name (no_object=...)"
        )
    return codes, classes + (no_object,)


def _check_data(data: MultiRaterAnnotations) -> None:
    if not isinstance(data, MultiRaterAnnotations):
        raise TypeError(f"data must be a MultiRaterAnnotations, got {type(data).__name__}")
    if data.num_raters < 2:
        raise ValueError(
            f"KαLOS compares raters: it needs at least two, got {data.num_raters} ({list(data.raters)})"
        )


def _prepare(
    data: MultiRaterAnnotations, similarity: str | SimilarityFn, tau_min: float, no_object: str,
    options: SimilarityOptions | None = None,
) -> _Prepared:
    _check_data(data)
    codes, categories = _encode_classes(data, no_object)
    repaired = 0
    if isinstance(similarity, str):
        repaired = int(check_similarity(similarity, data).get("repaired_polygons", 0))
    return _Prepared(codes, categories, find_candidates(data, similarity, tau_min, options=options), repaired)


def _run(
    data: MultiRaterAnnotations, prep: _Prepared, similarity: str | SimilarityFn, tau: float, solver: str, cost: str
) -> KalosResult:
    S = data.num_samples
    c = prep.cand
    keep = c.s >= tau
    unit = solve_units(
        data.rater_index, prep.codes, c.i[keep], c.j[keep], c.s[keep], tau=tau, solver=solver, cost=cost,
        group=data.sample_index, keys=data.boxes,
    )
    no_obj = len(prep.categories) - 1
    n_units = np.zeros(S, dtype=np.int64)
    if len(unit):
        starts = np.flatnonzero(np.r_[True, data.sample_index[1:] != data.sample_index[:-1]])
        n_units[data.sample_index[starts]] = np.maximum.reduceat(unit, starts) + 1
    n_assigned = data.assigned.sum(axis=1)
    empty = (n_units == 0) & (n_assigned >= 1)
    per = n_units + empty
    col_start = np.cumsum(per) - per
    unit_sample = np.repeat(np.arange(S), per)
    empty_unit = np.repeat(empty, per)
    unit_column = col_start[data.sample_index] + unit
    values = _pooled_values(data, prep.codes, per, col_start, unit_column, no_obj)
    alpha, d_o, d_e, _ = grouped_alpha(values, unit_sample, S)
    reason = _undefined_reasons(alpha, n_assigned, n_units, values, col_start, prep.categories)
    counts = CoincidenceCounts.of(values, len(prep.categories))
    glob = counts.alpha()
    undefined = np.isnan(alpha)
    n_def = int((~undefined).sum())
    mean = mean_of_defined(alpha)
    result = KalosResult(
        alpha=alpha, reason=reason, observed=d_o, expected=d_e, n_units=n_units, unit=unit,
        unit_column=unit_column, values=values, unit_sample=unit_sample, categories=prep.categories,
        no_object_code=no_obj, raters=tuple(data.raters), sample_ids=data.sample_ids,
        global_alpha=float(glob.alpha), global_reason=glob.reason, global_observed=float(glob.observed),
        global_expected=float(glob.expected), mean_alpha=mean, n_defined=n_def,
        n_undefined=int(undefined.sum()), similarity=similarity_name(similarity), tau=float(tau),
        solver=solver, cost=cost, empty_unit=empty_unit, repaired_polygons=prep.repaired, counts=counts,
    )
    return _bounded(result)


def _bounded(result: KalosResult) -> KalosResult:
    """``result`` with its global and mean α NaN, with the reason, where nominal α cannot exceed 0
    (:func:`agreement.methods.kalos.nominal.single_class_bound`, from the pooled counts: the same on the
    whole corpus and on merged shards)."""
    why = single_class_bound(result.counts, result.no_object_code) if result.counts is not None else ""
    if not why:
        return replace(result, bound_reason="")
    return replace(result, global_alpha=float("nan"), global_reason=why, mean_alpha=float("nan"), bound_reason=why)


def _pooled_values(data: MultiRaterAnnotations, codes: np.ndarray, per: np.ndarray, col_start: np.ndarray,
                   unit_column: np.ndarray, no_obj: int) -> SparseReliability:
    """The pooled reliability values: every assigned rater × every unit of its sample.

    ``no_object`` by default; the rater's class where it has an annotation in
    the unit. Size Σ_s k_s · units_s for k_s raters assigned to sample s.
    """
    R = data.num_raters
    ss, rr = np.nonzero(data.assigned)  # by sample, then rater
    reps = per[ss]
    v_rater = np.repeat(rr, reps)
    v_col = concat_ranges(col_start[ss], reps)
    v_code = np.full(len(v_col), no_obj, dtype=np.int64)
    values = SparseReliability.build(v_rater, v_col, v_code, R, int(per.sum()))
    if len(unit_column):
        key = values.column * R + values.rater
        pos = np.searchsorted(key, unit_column.astype(np.int64) * R + data.rater_index)
        values.code[pos] = codes
    return values


def _undefined_reasons(alpha: np.ndarray, n_assigned: np.ndarray, n_units: np.ndarray, values: SparseReliability,
                       col_start: np.ndarray, categories: Sequence[str]) -> np.ndarray:
    """Why each undefined per-sample α is undefined."""
    reason = np.full(len(alpha), "", dtype=object)
    first_value = np.searchsorted(values.column, col_start)
    for s in np.flatnonzero(np.isnan(alpha)).tolist():
        if n_assigned[s] == 0:
            reason[s] = "no rater is assigned to this sample"
        elif n_assigned[s] == 1:
            reason[s] = "only one rater is assigned to this sample: agreement needs at least two"
        elif n_units[s] == 0:
            reason[s] = "no annotations: every assigned rater drew nothing (the reference tool reports 1.0)"
        else:
            cat = categories[int(values.code[first_value[s]])]
            reason[s] = (
                f"no variation: every assigned rater drew the same {n_units[s]} object(s), all of class "
                f"{cat!r}, so D_e = 0 and alpha = 0/0 (the reference tool reports 1.0)"
            )
    return reason


def kalos_alpha(
    data: MultiRaterAnnotations,
    *,
    similarity: str | SimilarityFn = "iou",
    tau: float = 0.5,
    solver: str = "greedy",
    cost: str = "soft",
    no_object: str = NO_OBJECT,
    options: SimilarityOptions | None = None,
) -> KalosResult:
    r"""KαLOS agreement: units by correspondence, then nominal Krippendorff's α.

    Per sample, annotations of different raters with similarity ``s >= tau``
    are candidate pairs; the solver clusters them into units (at most one
    annotation per rater) under the cost ψ (``"soft"``: ``-s - 1`` for the
    same class, ``-s`` otherwise). The reliability matrix has a row per rater
    and a column per unit: the rater's class in the unit, ``no_object`` if the
    rater was assigned the sample but has no annotation in the unit, missing
    if not assigned; a sample where every assigned rater drew nothing adds
    one unanimous ``no_object`` column to the pooled matrix. Then

    .. math:: \alpha = 1 - \frac{D_o}{D_e}
              = 1 - (n - 1)\frac{n - \sum_c o_{cc}}{n^2 - \sum_c n_c^2}

    (nominal Krippendorff's α from the coincidence matrix ``o``) per sample,
    over the pooled matrix (``global_alpha``), and averaged over the samples
    where it is defined (``mean_alpha``).

    Args:
        data (MultiRaterAnnotations): At least two raters. ``data.assigned`` separates explicit absence
            (assigned, drew nothing: ``no_object``) from implicit absence
            (not assigned: missing).
        similarity (str or callable, default="iou"): A name of :func:`agreement.geometry.similarity.similarity_matrix`
            (``"iou"``, ``"giou"``, ``"centroid"``, ``"polygon_iou"``, ...), or a function ``f(data, rows_a, rows_b)``
            returning similarities in ``[0, 1]``.
        tau (float in (0, 1], default=0.5): Similarity threshold for candidate pairs.
        solver ({"greedy", "hungarian", "agglomerative", "mgm"}, default="greedy"): See
            :mod:`agreement.geometry.correspondence`.
        cost ({"soft", "plain"}, default="soft"): ψ_soft or ``-s``.
        no_object (str, default="no_object"): Name of the "no object" category; must not be a class name.
        options (SimilarityOptions, optional): The 3D similarities' parameters
            (:class:`agreement.geometry.similarity.SimilarityOptions`); default: their defaults.

    Returns:
        KalosResult: Per-sample α (NaN with a reason where undefined, never 1.0), units,
            the pooled reliability matrix, global α, mean α and undefined count.

    Raises:
        ValueError: ``tau`` outside ``(0, 1]``; unknown solver, cost or similarity; a class
            named like ``no_object``; fewer than two raters; an annotation
            without class; non-finite boxes or a similarity outside ``[0, 1]``.

    Notes:
        The reference tool (``kalos``) reports 1.0 where α is undefined and
        includes those 1.0s in its mean image α; see the module docstring.

    References:
        T. Tschirschwitz and V. Rodehorst, "KαLOS finds Consensus".
        K. Krippendorff, "Computing Krippendorff's Alpha-Reliability", 2011.
    """
    tau = check_tau(tau)
    check_solver(solver)
    check_cost(cost)
    prep = _prepare(data, similarity, tau, no_object, options)
    return _run(data, prep, similarity, tau, solver, cost)


def sensitivity_curve(
    data: MultiRaterAnnotations,
    *,
    taus: Sequence[float] = DEFAULT_TAUS,
    similarity: str | SimilarityFn = "iou",
    solver: str = "greedy",
    cost: str = "soft",
    no_object: str = NO_OBJECT,
    options: SimilarityOptions | None = None,
) -> SensitivityCurve:
    """Localisation sensitivity: KαLOS α as a function of the threshold τ.

    Runs :func:`kalos_alpha` at every ``tau`` in ``taus`` (similarities are
    computed once, at the smallest τ). A curve that stays flat over a range
    of τ says that the raters' boxes are either clearly the same object or
    clearly not; a steep curve says that agreement depends on how strictly
    "the same object" is defined (Tschirschwitz & Rodehorst).

    Args:
        data (MultiRaterAnnotations): The annotations, as in :func:`kalos_alpha`.
        taus (sequence of float in (0, 1]): Default: 0.1, 0.175, 0.25, 0.375, 0.5, 0.625, 0.75, 0.9.
        similarity: As in :func:`kalos_alpha`.
        solver: As in :func:`kalos_alpha`.
        cost: As in :func:`kalos_alpha`.
        no_object: As in :func:`kalos_alpha`.
        options: As in :func:`kalos_alpha`.

    Returns:
        SensitivityCurve: ``taus`` sorted, with global α, mean α (over defined samples), the
            undefined count and the number of units at each.
    """
    ts = sorted({check_tau(t) for t in taus})
    if not ts:
        raise ValueError("taus must hold at least one threshold in (0, 1]")
    check_solver(solver)
    check_cost(cost)
    prep = _prepare(data, similarity, ts[0], no_object, options)
    points = [_CurvePoint.of(_run(data, prep, similarity, t, solver, cost)) for t in ts]
    return _curve(ts, [points], similarity_name(similarity), solver, cost)


@dataclass(frozen=True)
class _CurvePoint:
    """What the τ curve keeps of one shard's KαLOS at one τ: per-sample α, the counts, the unit count."""

    alpha: np.ndarray
    counts: CoincidenceCounts
    n_units: int

    @classmethod
    def of(cls, result: KalosResult) -> "_CurvePoint":
        """The point of a result computed here (which always carries its counts)."""
        assert result.counts is not None
        return cls(result.alpha, result.counts, int(result.n_columns))


def _merged_counts(parts: Sequence[CoincidenceCounts]) -> CoincidenceCounts:
    out = parts[0]
    for p in parts[1:]:
        out = out.merge(p)
    return out


def _curve(taus: Sequence[float], shards: Sequence[Sequence[_CurvePoint]], similarity: str, solver: str,
           cost: str) -> SensitivityCurve:
    """The curve of a corpus from its shards' points (``shards[k][t]``: shard ``k`` at ``taus[t]``)."""
    glob, mean, undefined, units = [], [], [], []
    for t in range(len(taus)):
        alpha = np.concatenate([sh[t].alpha for sh in shards])
        glob.append(_merged_counts([sh[t].counts for sh in shards]).alpha().alpha)
        mean.append(mean_of_defined(alpha))
        undefined.append(int(np.isnan(alpha).sum()))
        units.append(sum(sh[t].n_units for sh in shards))
    return SensitivityCurve(
        taus=np.asarray(taus, dtype=np.float64), global_alpha=np.asarray(glob, dtype=np.float64),
        mean_alpha=np.asarray(mean, dtype=np.float64), n_undefined=np.asarray(undefined, dtype=np.int64),
        n_units=np.asarray(units, dtype=np.int64), similarity=similarity, solver=solver, cost=cost,
    )


@dataclass(frozen=True)
class KalosShard:
    """KαLOS of one shard of a corpus (:func:`kalos_shard`), to be merged with the others
    (:func:`merge_kalos_shards`).

    Attributes:
        result: the shard's :class:`KalosResult` at ``tau`` (per-sample, per-unit and per-label values).
        taus: the τ values of the sensitivity curve.
        curve: per τ, what the curve needs of the shard.
    """

    result: KalosResult
    taus: tuple
    curve: tuple
    has_labels: bool = True

    def without_labels(self) -> "KalosShard":
        """The shard without its per-label arrays (written back already: the merge does not need them)."""
        empty = np.zeros(0, dtype=np.int64)
        return KalosShard(replace(self.result, unit=empty, unit_column=empty), self.taus, self.curve, False)


def kalos_shard(
    data: MultiRaterAnnotations,
    *,
    tau: float = 0.5,
    taus: Sequence[float] = DEFAULT_TAUS,
    similarity: str | SimilarityFn = "iou",
    solver: str = "greedy",
    cost: str = "soft",
    no_object: str = NO_OBJECT,
    options: SimilarityOptions | None = None,
) -> KalosShard:
    """KαLOS at ``tau`` and at every τ of the sensitivity curve, on one shard of a corpus.

    Per-sample α, units and per-label unit ids depend only on each sample's
    own annotations, and every corpus statistic is kept in a form that merges
    exactly (:class:`CoincidenceCounts`, per-sample arrays), so that
    :func:`merge_kalos_shards` of the shards of a corpus, taken in a fixed
    sample order, gives the same bits as one shard of the whole corpus in
    that order. Shards must share raters and the class vocabulary
    (``data.classes``) so that their codes agree.

    Parameters are those of :func:`kalos_alpha` and :func:`sensitivity_curve`;
    similarities are computed once, at the smallest τ.
    """
    tau = check_tau(tau)
    ts = tuple(sorted({check_tau(t) for t in taus}))
    if not ts:
        raise ValueError("taus must hold at least one threshold in (0, 1]")
    check_solver(solver)
    check_cost(cost)
    prep = _prepare(data, similarity, min(tau, ts[0]), no_object, options)
    result = _run(data, prep, similarity, tau, solver, cost)
    curve = tuple(_CurvePoint.of(result if t == tau else _run(data, prep, similarity, t, solver, cost)) for t in ts)
    return KalosShard(result, ts, curve)


def merge_kalos_shards(shards: Sequence[KalosShard]) -> tuple[KalosResult, SensitivityCurve]:
    """The corpus KαLOS and its τ curve from the shards of :func:`kalos_shard`, in corpus order.

    Per-sample arrays are concatenated, the pooled reliability values are
    concatenated with their columns offset (so diagnostics of
    :mod:`agreement.methods.kalos.diagnostics` see the whole corpus), and the global α is
    that of the merged :class:`CoincidenceCounts`. Per-label arrays (``unit``,
    ``unit_column``) are concatenated only when every shard kept them (see
    :meth:`KalosShard.without_labels`); otherwise they are empty.

    Raises:
        ValueError: no shards, or shards with different raters, categories or configuration.
    """
    if not shards:
        raise ValueError("merge_kalos_shards needs at least one shard")
    first = shards[0].result
    for sh in shards[1:]:
        r = sh.result
        if (r.raters, r.categories, r.similarity, r.tau, r.solver, r.cost, sh.taus) != (
                first.raters, first.categories, first.similarity, first.tau, first.solver, first.cost,
                shards[0].taus):
            raise ValueError("KαLOS shards of one corpus must share raters, class vocabulary and parameters")
    results = [sh.result for sh in shards]
    n_samples = np.cumsum([0] + [len(r.alpha) for r in results])
    n_cols = np.cumsum([0] + [r.n_columns for r in results])
    cat = np.concatenate
    values = SparseReliability(
        cat([r.values.rater for r in results]),
        cat([r.values.column + off for r, off in zip(results, n_cols[:-1], strict=True)]),
        cat([r.values.code for r in results]), first.values.n_raters, int(n_cols[-1]))
    empty = np.zeros(0, dtype=np.int64)
    keep_labels = all(sh.has_labels for sh in shards)
    unit = cat([r.unit for r in results]) if keep_labels else empty
    unit_column = cat([r.unit_column + off for r, off in zip(results, n_cols[:-1], strict=True)]) if keep_labels else empty
    parts = [r.counts for r in results]
    if any(p is None for p in parts):
        raise ValueError("KαLOS shards must carry their coincidence counts (results of kalos_alpha)")
    counts = _merged_counts([p for p in parts if p is not None])
    glob = counts.alpha()
    alpha = cat([r.alpha for r in results])
    undefined = np.isnan(alpha)
    merged = replace(
        first, alpha=alpha, reason=cat([r.reason for r in results]), observed=cat([r.observed for r in results]),
        expected=cat([r.expected for r in results]), n_units=cat([r.n_units for r in results]),
        unit=unit, unit_column=unit_column, values=values,
        unit_sample=cat([r.unit_sample + off for r, off in zip(results, n_samples[:-1], strict=True)]),
        sample_ids=cat([np.asarray(r.sample_ids, dtype=object) for r in results]),
        global_alpha=float(glob.alpha), global_reason=glob.reason, global_observed=float(glob.observed),
        global_expected=float(glob.expected), mean_alpha=mean_of_defined(alpha), n_defined=int((~undefined).sum()),
        n_undefined=int(undefined.sum()), empty_unit=cat([r.empty_unit for r in results]),
        repaired_polygons=sum(r.repaired_polygons for r in results), counts=counts,
    )
    curve = _curve(shards[0].taus, [sh.curve for sh in shards], first.similarity, first.solver, first.cost)
    return _bounded(merged), curve
