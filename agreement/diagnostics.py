r"""KαLOS diagnostics: which rater, which class and which group of raters drive disagreement.

All diagnostics start from a :class:`~agreement.kalos.KalosResult` (its
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

References
----------
T. Tschirschwitz and V. Rodehorst, "KαLOS finds Consensus: A Meta-Algorithm
for Evaluating Inter-Annotator Agreement in Complex Vision Tasks" (annotator
vitality, class recognition difficulty, collaboration clusters,
intra-annotator agreement).
K. Krippendorff, "Computing Krippendorff's Alpha-Reliability", 2011.

This module does not import FiftyOne.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import reduce
from typing import Hashable, Iterator, Mapping, Sequence

import numpy as np
from numpy.typing import ArrayLike
from scipy.cluster.hierarchy import leaves_list, linkage, optimal_leaf_ordering
from scipy.spatial.distance import squareform

from agreement.arrays import unique_sorted
from agreement.data import MultiRaterAnnotations
from agreement.kalos import NO_OBJECT, KalosResult, SimilarityFn, kalos_alpha
from agreement.rater_pairs import RaterPairTable, shared_pairs_of_cells
from agreement.reliability import (
    GroupSums,
    SparseReliability,
    concat_ranges,
    group_sums,
    leave_one_rater_out,
    leave_one_rater_out_sums,
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
#: about this many values, adding each run's exact statistics (:class:`agreement.reliability.GroupSums`,
#: :class:`agreement.reliability.LeaveOneOutSums`) in sample order: memory is bounded whatever the corpus
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


@dataclass(frozen=True)
class RaterVitality:
    """How much each rater raises (positive) or lowers (negative) agreement.

    Attributes
    ----------
    raters : tuple of str
    alpha : float
        Global α with every rater.
    alpha_without : ndarray (R,)
        Global α of the pooled matrix without each rater's row.
    vitality : ndarray (R,)
        ``alpha - alpha_without``; NaN where either is undefined.
    reason : ndarray (R,) of str
        Why ``vitality`` is NaN (``""`` where defined).
    sample_vitality : (S, R) array-like, stored sparsely
        Per sample: the sample's α minus its α without the rater (NaN where
        undefined, e.g. a sample with fewer than three assigned raters or
        one the rater was not assigned); ``.sample``, ``.rater``, ``.value``
        hold the (sample, assigned rater) entries, ``np.asarray`` the dense array.
    mean_vitality : ndarray (R,)
        Mean of ``sample_vitality`` over the samples where it is defined.
    n_samples : ndarray (R,) of int
        Samples behind ``mean_vitality``.
    """

    raters: tuple
    alpha: float
    alpha_without: np.ndarray
    vitality: np.ndarray
    reason: np.ndarray
    sample_vitality: "_SampleVitality"
    mean_vitality: np.ndarray
    n_samples: np.ndarray

    def as_dict(self) -> dict[str, dict[str, float]]:
        """``{rater: {"vitality", "alpha_without", "mean_vitality"}}``."""
        return {
            r: {
                "vitality": float(self.vitality[k]),
                "alpha_without": float(self.alpha_without[k]),
                "mean_vitality": float(self.mean_vitality[k]),
            }
            for k, r in enumerate(self.raters)
        }


def rater_vitality(result: KalosResult) -> RaterVitality:
    r"""Rater vitality: α minus α without the rater (a jackknife over raters).

    .. math:: v_r = \alpha(X) - \alpha(X_{-r})

    where :math:`X` is the pooled reliability matrix and :math:`X_{-r}` the
    same matrix without rater ``r``'s row (units are not re-matched). Range:
    a difference of two α values, in ``[-2, 2]``; positive when the rater
    raises agreement, negative when they lower it, 0 when they make no
    difference. Needs at least three raters; with two, every vitality is NaN
    with a reason.

    Parameters
    ----------
    result : KalosResult

    Returns
    -------
    RaterVitality
        Global and per-sample vitality of every rater.

    References
    ----------
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
        return RaterVitality(tuple(result.raters), result.global_alpha, alpha_without, np.full(R, np.nan), reason,
                             _SampleVitality(S, R), np.full(R, np.nan), np.zeros(R, dtype=np.int64))
    # global: one group; a rater without any value keeps the full alpha. Per sample: only where the rater
    # was assigned (has values). Both walk the corpus in runs of samples (bounded memory).
    C = _n_codes(result)
    total, per_sample = None, []
    for s0, part in _sample_chunks(result):
        pv = part.values
        sums = leave_one_rater_out_sums(pv, np.zeros(pv.n_columns, dtype=np.int64), 1, C)
        total = sums if total is None else total.add(sums)
        s_idx, s_rater, s_res = leave_one_rater_out(pv, part.unit_sample, len(part.alpha))
        per_sample.append((s_idx + s0, s_rater, part.alpha[s_idx] - s_res.alpha))
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
    sample_v = _SampleVitality(S, R, *(np.concatenate(col) for col in zip(*per_sample)))
    vitality = result.global_alpha - alpha_without
    defined = ~np.isnan(sample_v.value)
    n = np.bincount(sample_v.rater[defined], minlength=R)
    total = np.bincount(sample_v.rater[defined], weights=sample_v.value[defined], minlength=R)
    with np.errstate(invalid="ignore"):
        mean_v = np.where(n > 0, total / np.maximum(n, 1), np.nan)
    return RaterVitality(tuple(result.raters), result.global_alpha, alpha_without, vitality, reason, sample_v,
                         mean_v, n.astype(np.int64))


class _SampleVitality:
    """Per-sample vitality, kept sparse: one value per (sample, assigned rater).

    Indexing ``sv[s, r]`` gives the value (NaN where undefined or the rater
    was not assigned); ``np.asarray(sv)`` the dense ``(S, R)`` array.
    """

    def __init__(self, S: int, R: int, sample=None, rater=None, value=None):
        self.shape = (S, R)
        self.sample = np.zeros(0, np.int64) if sample is None else np.asarray(sample, np.int64)
        self.rater = np.zeros(0, np.int64) if rater is None else np.asarray(rater, np.int64)
        self.value = np.zeros(0) if value is None else np.asarray(value, np.float64)

    def __array__(self, dtype=None, copy=None):
        out = np.full(self.shape, np.nan)
        out[self.sample, self.rater] = self.value
        return out if dtype is None else out.astype(dtype)

    def __getitem__(self, index):
        return np.asarray(self)[index]


# --------------------------------------------------------------------------
# Class difficulty
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class ClassDifficulty:
    """Agreement on the units of each class.

    Attributes
    ----------
    classes : tuple of str
        The class names (``no_object`` excluded), in code order.
    alpha : ndarray (K,)
        α over the units in which at least one rater drew the class; NaN where undefined.
    n_units : ndarray (K,) of int
        Those units.
    n_annotations : ndarray (K,) of int
        Annotations of the class.
    reason : ndarray (K,) of str
    """

    classes: tuple
    alpha: np.ndarray
    n_units: np.ndarray
    n_annotations: np.ndarray
    reason: np.ndarray

    def hardest(self, k: int | None = None) -> list[tuple[str, float]]:
        """Classes from the lowest α up (undefined last), ``k`` of them (all by default)."""
        order = np.lexsort((np.arange(len(self.classes)), np.nan_to_num(self.alpha, nan=np.inf)))
        return [(self.classes[i], float(self.alpha[i])) for i in order[:k]]

    def as_dict(self) -> dict[str, dict[str, float]]:
        return {
            c: {"alpha": float(self.alpha[k]), "n_units": int(self.n_units[k]), "n_annotations": int(self.n_annotations[k])}
            for k, c in enumerate(self.classes)
        }


def class_difficulty(result: KalosResult) -> ClassDifficulty:
    r"""Class recognition difficulty: α over the units that contain each class.

    For class ``c``, :math:`\alpha_c = \alpha(X[:, U_c])` with
    :math:`U_c = \{u : \exists r,\ X_{ru} = c\}`: every unit where some rater
    drew ``c``, with all raters' values in it (other classes and
    ``no_object`` included). Low :math:`\alpha_c` (at most 1; 0 chance level)
    means objects of ``c`` are often missed or named differently. NaN with a
    reason where undefined (e.g. every unit of ``c`` agreed: no variation).

    Parameters
    ----------
    result : KalosResult

    Returns
    -------
    ClassDifficulty

    References
    ----------
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
        sums = group_sums(np.repeat(np.arange(len(cols)), reps), values.code[member], len(cols), grp, K, C)
        total = sums if total is None else total.add(sums)
        n_units += np.bincount(grp, minlength=K).astype(np.int64)
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


@dataclass(frozen=True)
class CollaborationClusters:
    """Pairwise rater agreement and a clustering of raters by it.

    Attributes
    ----------
    raters : tuple of str
    pairs : RaterPairTable
        The rater pairs that share at least one sample (a pair that never
        did is absent: no data), with ``values["alpha"]`` (pairwise α,
        :func:`pair_reliability`), ``values["n_units"]`` (pairable units
        behind it) and ``reasons["alpha"]``.
    distance : ndarray (R, R)
        ``1 - alpha`` clipped to ``[0, 2]``, 1 (chance) where α is undefined
        or the pair shares no sample, 0 on the diagonal.
    linkage : ndarray (R - 1, 4)
        :func:`scipy.cluster.hierarchy.linkage` of ``distance``.
    order : ndarray (R,) of int
        Rater indices in dendrogram leaf order (optimal leaf ordering up to
        ``OPTIMAL_ORDER_MAX_RATERS`` raters), for a heatmap.
    """

    raters: tuple
    pairs: RaterPairTable
    distance: np.ndarray
    linkage: np.ndarray
    order: np.ndarray

    def _dense(self, name: str, fill, dtype=np.float64) -> np.ndarray:
        R = len(self.raters)
        out = np.full((R, R), fill, dtype=dtype)
        src = self.pairs.values[name] if name in self.pairs.values else self.pairs.reasons[name]
        out[self.pairs.a, self.pairs.b] = src
        out[self.pairs.b, self.pairs.a] = src
        return out

    @property
    def alpha(self) -> np.ndarray:
        """Dense symmetric ``(R, R)`` pairwise α, NaN on the diagonal, where undefined and where no data."""
        return self._dense("alpha", np.nan)

    @property
    def n_units(self) -> np.ndarray:
        """Dense ``(R, R)`` pairable units (0 where no data)."""
        return self._dense("n_units", 0).astype(np.int64)

    def clusters(self, max_distance: float = 1.0) -> np.ndarray:
        """Flat cluster label of each rater, cutting the dendrogram at ``max_distance`` (``1 - alpha``)."""
        from scipy.cluster.hierarchy import fcluster

        if len(self.raters) < 2:
            return np.ones(len(self.raters), dtype=np.int64)
        return fcluster(self.linkage, t=max_distance, criterion="distance").astype(np.int64)


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


def _pair_units(result: KalosResult, sample: np.ndarray, a: np.ndarray, b: np.ndarray):
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

    Returns
    -------
    ndarray of int64, shape (2, units)
        Codes as in ``result.reliability``.
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

    def run_sums(s0: int, part: KalosResult):
        lo, hi = np.searchsorted(sample, [s0, s0 + len(part.alpha)])
        t, ca, cb = _pair_units(part, sample[lo:hi] - s0, a[lo:hi], b[lo:hi])
        return group_sums(np.repeat(np.arange(len(t)), 2), np.stack([ca, cb], axis=1).reshape(-1), len(t),
                          pair_id[lo:hi][t], len(table), C)

    res = reduce(GroupSums.add, (run_sums(s0, part) for s0, part in _sample_chunks(result))).finish()
    table.values["alpha"] = res.alpha
    table.values["n_units"] = res.n_units.astype(np.float64)
    table.reasons["alpha"] = res.reasons()
    return table


def collaboration_clusters(result: KalosResult, method: str = "average") -> CollaborationClusters:
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

    Parameters
    ----------
    result : KalosResult
    method : str, default="average"
        Linkage method of :func:`scipy.cluster.hierarchy.linkage` for a
        non-Euclidean distance: ``"average"``, ``"complete"``, ``"single"``
        or ``"weighted"``.

    Returns
    -------
    CollaborationClusters

    References
    ----------
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


# --------------------------------------------------------------------------
# Intra-annotator consistency
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class IntraConsistency:
    """Agreement of one rater with themself across annotation sessions.

    Attributes
    ----------
    rater : str
    sessions : tuple of str
        The sessions, the "raters" of ``result``.
    result : KalosResult
        KαLOS over the sessions (per-sample α, units, global α, ...).
    """

    rater: str
    sessions: tuple
    result: KalosResult

    @property
    def global_alpha(self) -> float:
        return self.result.global_alpha

    @property
    def mean_alpha(self) -> float:
        return self.result.mean_alpha

    @property
    def n_undefined(self) -> int:
        return self.result.n_undefined


def sessions_as_raters(
    data: MultiRaterAnnotations,
    sessions: ArrayLike,
    rater: str,
    session_assigned: Mapping[Hashable, ArrayLike] | None = None,
) -> MultiRaterAnnotations:
    """One rater's sessions as the raters of a new corpus.

    Parameters
    ----------
    data : MultiRaterAnnotations
        The corpus, with ``rater`` among its raters.
    sessions : array-like of shape (N,)
        The session (any hashable, e.g. 1, 2 or "2024-05") of each annotation row.
    rater : str
        Whose sessions to compare.
    session_assigned : mapping, optional
        ``{session: (S,) bool}``: the samples each session covered. By
        default every session of the rater (every session label found on
        their annotations) covered every sample the rater is assigned to, so
        a session without annotations on such a sample is explicit absence
        ("nothing here"). Pass this mapping when sessions covered different
        samples, or to name a session that drew nothing at all.

    Returns
    -------
    MultiRaterAnnotations
        Same samples; raters are ``str(session)``; the rows are ``rater``'s
        annotations (boxes, labels, ids, polygons kept).
    """
    if rater not in data.raters:
        raise ValueError(f"unknown rater {rater!r}; the raters are {list(data.raters)}")
    sessions = np.asarray(sessions, dtype=object).reshape(-1)
    if len(sessions) != len(data):
        raise ValueError(f"sessions has {len(sessions)} entries for {len(data)} annotations")
    r = data.raters.index(rater)
    rows = np.flatnonzero(data.rater_index == r)
    if any(v is None for v in sessions[rows]):
        bad = int(rows[[v is None for v in sessions[rows]]][0])
        raise ValueError(
            f"annotation {bad} of rater {rater!r} on sample {data.sample_names[data.sample_index[bad]]!r} has no session"
        )
    labels = {str(v) for v in sessions[rows]}
    if session_assigned is not None:
        labels |= {str(k) for k in session_assigned}
    names = tuple(sorted(labels))
    if not names:
        raise ValueError(f"rater {rater!r} has no annotations and no session_assigned: no session to compare")
    if len({str(k) for k in (session_assigned or {})}) != len(session_assigned or {}):
        raise ValueError("session_assigned has two sessions with the same name")
    S = data.num_samples
    assigned = np.zeros((S, len(names)), dtype=bool)
    if session_assigned is None:
        assigned[:] = data.assigned[:, r][:, None]
    else:
        given = {str(k): np.asarray(v, dtype=bool).reshape(-1) for k, v in session_assigned.items()}
        for k, name in enumerate(names):
            if name not in given:
                raise ValueError(f"session {name!r} of rater {rater!r} is missing from session_assigned")
            if len(given[name]) != S:
                raise ValueError(f"session_assigned[{name!r}] has {len(given[name])} entries for {S} samples")
            assigned[:, k] = given[name]
    index = {n: k for k, n in enumerate(names)}
    s_rater = np.fromiter((index[str(v)] for v in sessions[rows]), dtype=np.intp, count=len(rows))
    off = ~assigned[data.sample_index[rows], s_rater]
    if np.any(off):
        bad = int(rows[np.flatnonzero(off)[0]])
        raise ValueError(
            f"annotation {bad} of rater {rater!r} on sample {data.sample_names[data.sample_index[bad]]!r} is in "
            f"session {str(sessions[bad])!r}, which session_assigned says did not cover that sample"
        )
    return MultiRaterAnnotations(
        sample_ids=data.sample_ids,
        raters=names,
        assigned=assigned,
        boxes=data.boxes[rows],
        labels=data.labels[rows],
        label_ids=data.label_ids[rows],
        sample_index=data.sample_index[rows],
        rater_index=s_rater,
        image_sizes=data.image_sizes,
        polygons=[data.polygons[i] for i in rows] if data.polygons is not None else None,
        sample_names=data.sample_names,
    )


def session_consistency(
    sessions_data: MultiRaterAnnotations,
    similarity: str | SimilarityFn = "iou",
    tau: float = 0.5,
    solver: str = "greedy",
    cost: str = "soft",
    rater: str = "",
    no_object: str = NO_OBJECT,
) -> IntraConsistency:
    """Intra-annotator consistency: KαLOS α between one rater's sessions.

    ``sessions_data`` is a corpus whose "raters" are one rater's annotation
    sessions of the same samples (e.g. one label field per session, or
    :func:`sessions_as_raters`). α (at most 1; 1 perfectly consistent, 0 no
    more consistent than chance) is computed as in
    :func:`agreement.kalos.kalos_alpha`.

    Returns
    -------
    IntraConsistency

    References
    ----------
    T. Tschirschwitz and V. Rodehorst, "KαLOS finds Consensus" (intra-annotator
    agreement).
    """
    res = kalos_alpha(sessions_data, similarity=similarity, tau=tau, solver=solver, cost=cost, no_object=no_object)
    return IntraConsistency(rater, tuple(sessions_data.raters), res)


def intra_annotator_consistency(
    data: MultiRaterAnnotations,
    sessions: ArrayLike,
    raters: Sequence[str] | None = None,
    session_assigned: Mapping[str, Mapping[Hashable, ArrayLike]] | None = None,
    similarity: str | SimilarityFn = "iou",
    tau: float = 0.5,
    solver: str = "greedy",
    cost: str = "soft",
    no_object: str = NO_OBJECT,
) -> dict[str, IntraConsistency]:
    """Intra-annotator consistency of every rater who annotated in two or more sessions.

    Parameters
    ----------
    data : MultiRaterAnnotations
    sessions : array-like of shape (N,)
        Session of each annotation row.
    raters : sequence of str, optional
        Whom to evaluate (default: every rater with two or more sessions).
    session_assigned : mapping, optional
        ``{rater: {session: (S,) bool}}``, see :func:`sessions_as_raters`.
    similarity, tau, solver, cost, no_object
        As in :func:`agreement.kalos.kalos_alpha`.

    Returns
    -------
    dict
        ``{rater: IntraConsistency}``.
    """
    sessions = np.asarray(sessions, dtype=object).reshape(-1)
    if len(sessions) != len(data):
        raise ValueError(f"sessions has {len(sessions)} entries for {len(data)} annotations")
    if raters is None:
        raters = []
        for r, name in enumerate(data.raters):
            given = (session_assigned or {}).get(name, {})
            found = {str(v) for v in sessions[data.rater_index == r]} | {str(k) for k in given}
            if len(found) >= 2:
                raters.append(name)
    out = {}
    for name in raters:
        sd = sessions_as_raters(data, sessions, name, (session_assigned or {}).get(name))
        if sd.num_raters < 2:
            raise ValueError(f"rater {name!r} has only one session ({list(sd.raters)}): nothing to compare")
        out[name] = session_consistency(sd, similarity, tau, solver, cost, rater=name, no_object=no_object)
    return out
