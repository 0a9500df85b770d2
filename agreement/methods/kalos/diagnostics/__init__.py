r"""KαLOS diagnostics: which rater, which class and which group of raters drive disagreement.

All diagnostics start from a :class:`~agreement.methods.kalos.KalosResult` (its
pooled reliability matrix of raters × units) and recompute nominal
Krippendorff's α, ``alpha = 1 - D_o / D_e`` (Krippendorff 2011; at most 1, 0 at
chance, negative below chance), on a filtered matrix. Units are **not**
re-matched: a diagnostic answers "how would α change if this rater's row,
or these units, were left out of the same reliability matrix". Undefined
values are NaN with a reason, never 1.0.

* **Rater vitality** (:func:`rater_vitality`): ``v_r = alpha - alpha_{-r}``,
  α minus α of the matrix without rater ``r``'s row (a jackknife). Positive:
  the rater raises agreement (leaving them out lowers α); negative: the rater
  lowers it. Needs three or more raters (without one of two raters, no pair
  is left). Computed globally (pooled matrix) and per sample; a unit that
  only ``r`` drew stays as a unit where the others agree there is nothing
  (the reference tool's "global vitality" does the same).
* **Class difficulty** (:func:`class_difficulty`): for each class ``c``,
  α over the units in which at least one rater drew ``c``: how reliably
  raters find and name objects of that class.
* **Collaboration clusters** (:func:`collaboration_clusters`): the pairwise
  α of every two raters, and a hierarchical clustering of the raters on the
  distance ``1 - alpha`` (average linkage, optimal leaf order) that groups
  raters who agree with each other.
* **Intra-annotator consistency** (:func:`session_consistency`,
  :func:`intra_annotator_consistency`, :func:`sessions_as_raters`): one
  rater annotating the same images in several sessions, each session
  treated as a rater; α between sessions measures self-consistency.

References:
    T. Tschirschwitz and V. Rodehorst, "KαLOS finds Consensus: A Meta-Algorithm
    for Evaluating Inter-Annotator Agreement in Complex Vision Tasks" (annotator
    vitality, class recognition difficulty, collaboration clusters,
    intra-annotator agreement).
    K. Krippendorff, "Computing Krippendorff's Alpha-Reliability", 2011.

This module does not import FiftyOne.
"""

from __future__ import annotations

from dataclasses import replace
from functools import reduce
from typing import Iterator

import numpy as np
from scipy.cluster.hierarchy import leaves_list, linkage, optimal_leaf_ordering
from scipy.spatial.distance import squareform

from agreement.core.arrays import unique_sorted
from agreement.core.rater_pairs import RaterPairTable, shared_pairs_of_cells
from agreement.core.reliability import (
    GroupSums,
    SparseReliability,
    concat_ranges,
    group_sums,
    leave_one_rater_out,
    leave_one_rater_out_sums,
)
from agreement.methods.kalos import KalosResult
from agreement.methods.kalos.diagnostics.results import (
    ClassDifficulty,
    CollaborationClusters,
    RaterVitality,
    SampleVitality,
)
from agreement.methods.kalos.diagnostics.sessions import (
    IntraConsistency,
    intra_annotator_consistency,
    session_consistency,
    sessions_as_raters,
)

__all__ = [
    "RaterVitality",
    "ClassDifficulty",
    "CollaborationClusters",
    "IntraConsistency",
    "rater_vitality",
    "class_difficulty",
    "collaboration_clusters",
    "pair_reliability",
    "sessions_as_raters",
    "session_consistency",
    "intra_annotator_consistency",
]


#: Reliability values a diagnostic handles at once. It walks the corpus in runs of whole samples of
#: about this many values, adding each run's exact statistics (:class:`agreement.core.reliability.GroupSums`,
#: :class:`agreement.core.reliability.LeaveOneOutSums`) in sample order: memory is bounded whatever the corpus
#: size (the jackknife needs about 200 bytes per value at once), and the result depends on the corpus
#: only, not on how it was sharded.
CHUNK_VALUES = 1_000_000


def _n_codes(result: KalosResult) -> int:
    """The number of category codes of ``result`` (its classes and ``no_object``): one key width for every
    run of :func:`_sample_chunks`."""
    return max(result.values.n_codes, len(result.categories), 1)


def _sample_chunks(result: KalosResult, max_values: int | None = None) -> Iterator[tuple[int, KalosResult]]:
    """Consecutive runs of whole samples of ``result`` with about ``max_values`` values each (a sample is
    never cut; at least one run, empty for an empty corpus): ``(first sample, the run as a result)``,
    whose ``values``, ``unit_sample`` and ``alpha`` are the run's own (columns and samples from 0)."""
    v = result.values
    S = len(result.alpha)
    limit = max(1, int(max_values or CHUNK_VALUES))
    col_start = np.searchsorted(result.unit_sample, np.arange(S + 1))
    val_start = v.column_bounds()[col_start]
    s0 = 0
    while True:
        s1 = int(np.searchsorted(val_start, val_start[s0] + limit, side="right")) - 1
        s1 = min(max(s1, s0 + 1), S)
        c0, c1, v0, v1 = col_start[s0], col_start[s1], val_start[s0], val_start[s1]
        local = SparseReliability(v.rater[v0:v1], v.column[v0:v1] - c0, v.code[v0:v1], v.n_raters, int(c1 - c0))
        yield s0, replace(result, values=local, unit_sample=result.unit_sample[c0:c1] - s0,
                          alpha=result.alpha[s0:s1])
        if s1 >= S:
            return
        s0 = s1


# --------------------------------------------------------------------------
# Rater vitality
# --------------------------------------------------------------------------


def rater_vitality(result: KalosResult, *, per_sample: bool = True) -> RaterVitality:
    r"""Rater vitality: α minus α without the rater (a jackknife over raters).

    .. math:: v_r = \alpha(X) - \alpha(X_{-r})

    where :math:`X` is the pooled reliability matrix and :math:`X_{-r}` the
    same matrix without rater ``r``'s row (units are not re-matched). Range:
    a difference of two α values, in ``[-2, 2]``; positive when the rater
    raises agreement, negative when they lower it, 0 when they make no
    difference. Needs at least three raters; with two, every vitality is NaN
    with a reason.

    Args:
        result (KalosResult): A KαLOS result (:func:`agreement.methods.kalos.kalos_alpha`).
        per_sample (bool): Also the per-sample vitality (``sample_vitality``, ``mean_vitality``,
            ``n_samples``); ``False``: only the global numbers (the per-sample fields are empty, NaN and 0),
            at about half the cost.

    Returns:
        RaterVitality: Global and per-sample vitality of every rater.

    References:
        T. Tschirschwitz and V. Rodehorst, "KαLOS finds Consensus" (annotator
        vitality; the reference's global vitality drops the row in the same way).
    """
    values = result.values
    R = values.n_raters
    S = len(result.alpha)
    alpha_without = np.full(R, np.nan)
    reason = np.full(R, "", dtype=object)
    if R < 3:
        reason[:] = (
            f"vitality needs at least three raters (got {R}): without one of two raters no pair of raters is left"
        )
        return RaterVitality(raters=tuple(result.raters), alpha=result.global_alpha, alpha_without=alpha_without,
                             vitality=np.full(R, np.nan), reason=reason, sample_vitality=SampleVitality(S, R),
                             mean_vitality=np.full(R, np.nan), n_samples=np.zeros(R, dtype=np.int64))
    # global: one group; a rater without any value keeps the full alpha. Per sample: only where the rater
    # was assigned (has values). Both walk the corpus in runs of samples (bounded memory).
    C = _n_codes(result)
    total, per_sample_parts = None, []
    for s0, part in _sample_chunks(result):
        pv = part.values
        sums = leave_one_rater_out_sums(pv, np.zeros(pv.n_columns, dtype=np.int64), 1, n_codes=C)
        total = sums if total is None else total.add(sums)
        if per_sample:
            s_idx, s_rater, s_res = leave_one_rater_out(pv, part.unit_sample, len(part.alpha))
            per_sample_parts.append((s_idx + s0, s_rater, part.alpha[s_idx] - s_res.alpha))
    assert total is not None  # a result has at least one chunk of samples
    _, g_rater, g_res = total.finish()
    alpha_without[:] = result.global_alpha
    alpha_without[g_rater] = g_res.alpha
    why = g_res.reasons()
    for k, r in enumerate(g_rater.tolist()):
        if np.isnan(result.global_alpha):
            reason[r] = f"the global alpha is undefined: {result.global_reason}"
        elif np.isnan(g_res.alpha[k]):
            reason[r] = f"alpha without rater {result.raters[r]!r} is undefined: {why[k]}"
    if np.isnan(result.global_alpha):
        reason[:] = f"the global alpha is undefined: {result.global_reason}"
    sample_v = SampleVitality(S, R)  # empty: not asked for
    if per_sample:
        sample_v = SampleVitality(S, R, *(np.concatenate(col) for col in zip(*per_sample_parts, strict=True)))
    vitality = result.global_alpha - alpha_without
    defined = ~np.isnan(sample_v.value)
    n = np.bincount(sample_v.rater[defined], minlength=R)
    summed = np.bincount(sample_v.rater[defined], weights=sample_v.value[defined], minlength=R)
    with np.errstate(invalid="ignore"):
        mean_v = np.where(n > 0, summed / np.maximum(n, 1), np.nan)
    return RaterVitality(raters=tuple(result.raters), alpha=result.global_alpha, alpha_without=alpha_without,
                         vitality=vitality, reason=reason, sample_vitality=sample_v, mean_vitality=mean_v,
                         n_samples=n.astype(np.int64))


# --------------------------------------------------------------------------
# Class difficulty
# --------------------------------------------------------------------------


def class_difficulty(result: KalosResult) -> ClassDifficulty:
    r"""Class recognition difficulty: α over the units that contain each class.

    For class ``c``, :math:`\alpha_c = \alpha(X[:, U_c])` with
    :math:`U_c = \{u : \exists r,\ X_{ru} = c\}`: every unit where some rater
    drew ``c``, with all raters' values in it (other classes and
    ``no_object`` included). Low :math:`\alpha_c` (at most 1; 0 chance level)
    means objects of ``c`` are often missed or named differently. NaN with a
    reason where undefined (e.g. every unit of ``c`` agreed: no variation).

    Args:
        result (KalosResult): A KαLOS result (:func:`agreement.methods.kalos.kalos_alpha`).

    Returns:
        ClassDifficulty: The statistics of every class.

    References:
        T. Tschirschwitz and V. Rodehorst, "KαLOS finds Consensus" (class
        recognition difficulty).
    """
    K = len(result.categories) - 1
    C = _n_codes(result)
    n_ann = np.zeros(K, dtype=np.int64)
    n_units = np.zeros(K, dtype=np.int64)
    total = None
    for _, part in _sample_chunks(result):  # runs of samples: bounded memory (see CHUNK_VALUES)
        values = part.values
        is_cls = values.code != result.no_object_code
        codes = values.code[is_cls]
        n_ann += np.bincount(codes, minlength=K).astype(np.int64)[:K]
        pairs = unique_sorted(values.column[is_cls] * max(K, 1) + codes)
        cols, grp = pairs // max(K, 1), pairs % max(K, 1)
        # every value of each (column, class) pair's column, the pair as the new column
        bounds = values.column_bounds()
        lo, hi = bounds[cols], bounds[cols + 1]
        reps = hi - lo
        member = concat_ranges(lo, reps)
        sums = group_sums(np.repeat(np.arange(len(cols)), reps), values.code[member], len(cols), grp, K, n_codes=C)
        total = sums if total is None else total.add(sums)
        n_units += np.bincount(grp, minlength=K).astype(np.int64)
    assert total is not None  # a result has at least one chunk of samples
    res = total.finish()
    alpha, n = res.alpha, res.n
    reason = np.full(K, "", dtype=object)
    for k in np.flatnonzero(np.isnan(alpha)).tolist():
        if n_units[k] == 0:
            reason[k] = "no annotation of this class"
        elif n[k] < 2:
            reason[k] = "no unit of this class has two or more values (one rater only)"
        else:
            reason[k] = "no variation: every rater gave this class in every unit that contains it (D_e = 0)"
    return ClassDifficulty(tuple(result.categories[:K]), alpha, n_units, n_ann, reason)


# --------------------------------------------------------------------------
# Collaboration clusters
# --------------------------------------------------------------------------


#: Above this many raters the leaf order is linkage order (optimal leaf ordering costs O(R^3)).
OPTIMAL_ORDER_MAX_RATERS = 300


def _assigned_cells(result: KalosResult) -> tuple[np.ndarray, np.ndarray]:
    """The (sample, rater) cells with a value in some unit of the sample (i.e. assigned), sorted by
    sample then rater; in memory of the cells, never samples × raters (a crowd's assignment), and
    found ``CHUNK_VALUES`` values at a time."""
    v = result.values
    R = v.n_raters
    parts = [unique_sorted(result.unit_sample[v.column[lo:lo + CHUNK_VALUES]].astype(np.int64) * R
                           + v.rater[lo:lo + CHUNK_VALUES])
             for lo in range(0, len(v.column), CHUNK_VALUES)]
    key = unique_sorted(np.concatenate(parts)) if parts else np.zeros(0, np.int64)
    return key // R, key % R


def _pair_units(
    result: KalosResult, sample: np.ndarray, a: np.ndarray, b: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The two-rater units of every (sample, a, b): ``(triple, code_a, code_b)`` per unit.

    A unit of the sample counts when a or b drew an object in it; a triple
    with no such unit gets one unanimous ``no_object`` unit (both looked at
    the sample and agree it is empty for them).
    """
    v, no = result.values, result.no_object_code
    starts = np.searchsorted(result.unit_sample, np.arange(len(result.alpha) + 1))
    per = np.diff(starts)
    t = np.repeat(np.arange(len(sample)), per[sample])
    col = concat_ranges(starts[sample], per[sample])
    ca, cb = v.value_of(a[t], col), v.value_of(b[t], col)
    drew = (ca != no) | (cb != no)
    t, ca, cb = t[drew], ca[drew], cb[drew]
    empty = np.flatnonzero(np.bincount(t, minlength=len(sample)) == 0)
    t = np.concatenate([t, empty])
    ca = np.concatenate([ca, np.full(len(empty), no)])
    cb = np.concatenate([cb, np.full(len(empty), no)])
    order = np.argsort(t, kind="stable")
    return t[order], ca[order], cb[order]


def pair_reliability(result: KalosResult, a: int, b: int) -> np.ndarray:
    """The two-rater reliability matrix of raters ``a`` and ``b`` taken from a KαLOS result.

    Their values in the units of the samples both were assigned, restricted
    to the units in which at least one of them drew an object, plus one
    unanimous ``no_object`` unit for every such sample where neither drew
    anything (the reference tool adds the same unit for a rater pair that
    agrees an image is empty). Units drawn only by other raters are left
    out: to these two raters they do not exist. Units on samples only one of
    them was assigned hold one value each, are not pairable, and are left
    out. Units are not re-matched.

    Returns:
        ndarray of int64, shape (2, units): Codes as in ``result.reliability``.
    """
    cs, cr = _assigned_cells(result)
    both = np.intersect1d(cs[cr == a], cs[cr == b], assume_unique=True)
    _, ca, cb = _pair_units(result, both, np.full(len(both), a), np.full(len(both), b))
    return np.stack([ca, cb]).astype(np.int64)


def _pairwise_alpha(result: KalosResult) -> RaterPairTable:
    """α of :func:`pair_reliability` for every rater pair that shares a sample, in one grouped pass."""
    sample, a, b, pair_id = shared_pairs_of_cells(*_assigned_cells(result), len(result.alpha),
                                                  result.values.n_raters)  # sorted by sample
    table = RaterPairTable.from_shared_pairs(result.raters, a, b, pair_id)
    C = _n_codes(result)

    def run_sums(s0: int, part: KalosResult) -> GroupSums:
        lo, hi = np.searchsorted(sample, [s0, s0 + len(part.alpha)])
        t, ca, cb = _pair_units(part, sample[lo:hi] - s0, a[lo:hi], b[lo:hi])
        return group_sums(np.repeat(np.arange(len(t)), 2), np.stack([ca, cb], axis=1).reshape(-1), len(t),
                          pair_id[lo:hi][t], len(table), n_codes=C)

    res = reduce(GroupSums.add, (run_sums(s0, part) for s0, part in _sample_chunks(result))).finish()
    table.values["alpha"] = res.alpha
    table.values["n_units"] = res.n_units.astype(np.float64)
    table.reasons["alpha"] = res.reasons()
    return table


def collaboration_clusters(result: KalosResult, *, method: str = "average") -> CollaborationClusters:
    r"""Pairwise rater agreement and a hierarchical clustering of raters.

    For every two raters ``a, b`` that share a sample: :math:`\alpha_{ab}` is
    nominal α of :func:`pair_reliability` (their values, over the units
    either of them drew on the samples both were given). Work grows with
    the (sample, assigned pair) count, not with R². Raters are then
    clustered on :math:`d_{ab} = 1 - \alpha_{ab}` (in ``[0, 2]``; 1, chance,
    where α is undefined or the pair never shared a sample) with
    :func:`scipy.cluster.hierarchy.linkage` (``method``, default average
    linkage) and ordered by :func:`~scipy.cluster.hierarchy.optimal_leaf_ordering`,
    so that raters who agree with each other sit next to each other.

    Args:
        result (KalosResult): A KαLOS result (:func:`agreement.methods.kalos.kalos_alpha`).
        method (str, default="average"): Linkage method of :func:`scipy.cluster.hierarchy.linkage` for a
            non-Euclidean distance: ``"average"``, ``"complete"``, ``"single"``
            or ``"weighted"``.

    Returns:
        CollaborationClusters: The pairwise agreement and its clustering.

    References:
        T. Tschirschwitz and V. Rodehorst, "KαLOS finds Consensus" (collaboration
        clusters).
    """
    if method not in ("average", "complete", "single", "weighted"):
        raise ValueError(f"unknown linkage method {method!r}; choose 'average', 'complete', 'single' or 'weighted'")
    R = result.values.n_raters
    pairs = _pairwise_alpha(result)
    dist = np.ones((R, R))
    alpha = pairs.values["alpha"]
    d = np.where(np.isnan(alpha), 1.0, np.clip(1.0 - alpha, 0.0, 2.0))
    dist[pairs.a, pairs.b] = dist[pairs.b, pairs.a] = d
    np.fill_diagonal(dist, 0.0)
    if R >= 2:
        condensed = squareform(dist, checks=False)
        z = linkage(condensed, method=method)
        if 3 <= R <= OPTIMAL_ORDER_MAX_RATERS:
            z = optimal_leaf_ordering(z, condensed)
        order = leaves_list(z).astype(np.int64)
    else:  # pragma: no cover - KαLOS needs two raters
        z = np.zeros((0, 4))
        order = np.arange(R, dtype=np.int64)
    return CollaborationClusters(tuple(result.raters), pairs, dist, z, order)
