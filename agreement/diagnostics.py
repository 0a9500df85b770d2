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

from dataclasses import dataclass
from typing import Hashable, Mapping, Sequence

import numpy as np
from numpy.typing import ArrayLike
from scipy.cluster.hierarchy import leaves_list, linkage, optimal_leaf_ordering
from scipy.spatial.distance import squareform

from agreement.data import MultiRaterAnnotations
from agreement.kalos import NO_OBJECT, KalosResult, SimilarityFn, grouped_alpha, kalos_alpha, reliability_alpha

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
    sample_vitality : ndarray (S, R)
        Per sample: the sample's α minus its α without the rater (NaN where
        undefined, e.g. a sample with fewer than three assigned raters or
        one the rater was not assigned).
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
    sample_vitality: np.ndarray
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
    rel = result.reliability
    R = rel.shape[0]
    S = len(result.alpha)
    alpha_without = np.full(R, np.nan)
    reason = np.full(R, "", dtype=object)
    sample_v = np.full((S, R), np.nan)
    if R < 3:
        reason[:] = (
            f"vitality needs at least three raters (got {R}): without one of two raters no pair of raters is left"
        )
        return RaterVitality(tuple(result.raters), result.global_alpha, alpha_without, np.full(R, np.nan), reason,
                             sample_v, np.full(R, np.nan), np.zeros(R, dtype=np.int64))
    keep = np.ones(R, dtype=bool)
    for r in range(R):
        keep[:] = True
        keep[r] = False
        sub = rel[keep]
        res = reliability_alpha(sub)
        alpha_without[r] = res.alpha
        if np.isnan(result.global_alpha):
            reason[r] = f"the global alpha is undefined: {result.global_reason}"
        elif np.isnan(res.alpha):
            reason[r] = f"alpha without rater {result.raters[r]!r} is undefined: {res.reason}"
        a_s, _, _, _ = grouped_alpha(sub, result.unit_sample, S)
        sample_v[:, r] = result.alpha - a_s
    # A rater not assigned to a sample has no vitality there.
    assigned = np.zeros((S, R), dtype=bool)
    cols_present = rel >= 0
    for r in range(R):
        assigned[:, r] = np.bincount(result.unit_sample, weights=cols_present[r], minlength=S) > 0
    sample_v[~assigned] = np.nan
    vitality = result.global_alpha - alpha_without
    defined = ~np.isnan(sample_v)
    n = defined.sum(axis=0)
    with np.errstate(invalid="ignore"):
        mean_v = np.where(n > 0, np.nansum(sample_v, axis=0) / np.maximum(n, 1), np.nan)
    return RaterVitality(tuple(result.raters), result.global_alpha, alpha_without, vitality, reason, sample_v,
                         mean_v, n.astype(np.int64))


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
    rel = result.reliability
    K = len(result.categories) - 1
    is_cls = (rel >= 0) & (rel != result.no_object_code)
    r_idx, u_idx = np.nonzero(is_cls)
    codes = rel[r_idx, u_idx]
    n_ann = np.bincount(codes, minlength=K).astype(np.int64)
    pairs = np.unique(u_idx.astype(np.int64) * max(K, 1) + codes)
    cols, grp = pairs // max(K, 1), pairs % max(K, 1)
    alpha, d_o, d_e, n = grouped_alpha(rel[:, cols], grp, K)
    n_units = np.bincount(grp, minlength=K).astype(np.int64)
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
    alpha : ndarray (R, R)
        Symmetric pairwise α (:func:`pair_reliability`); NaN on the diagonal
        and where undefined.
    n_units : ndarray (R, R) of int
        Pairable units behind each pairwise α.
    reason : ndarray (R, R) of str
        Why an off-diagonal α is NaN.
    distance : ndarray (R, R)
        ``1 - alpha`` clipped to ``[0, 2]``, 1 (chance) where α is undefined, 0 on the diagonal.
    linkage : ndarray (R - 1, 4)
        :func:`scipy.cluster.hierarchy.linkage` of ``distance``.
    order : ndarray (R,) of int
        Rater indices in dendrogram leaf order (optimal leaf ordering), for a heatmap.
    """

    raters: tuple
    alpha: np.ndarray
    n_units: np.ndarray
    reason: np.ndarray
    distance: np.ndarray
    linkage: np.ndarray
    order: np.ndarray

    def clusters(self, max_distance: float = 1.0) -> np.ndarray:
        """Flat cluster label of each rater, cutting the dendrogram at ``max_distance`` (``1 - alpha``)."""
        from scipy.cluster.hierarchy import fcluster

        if len(self.raters) < 2:
            return np.ones(len(self.raters), dtype=np.int64)
        return fcluster(self.linkage, t=max_distance, criterion="distance").astype(np.int64)


def pair_reliability(result: KalosResult, a: int, b: int) -> np.ndarray:
    """The two-rater reliability matrix of raters ``a`` and ``b`` taken from a KαLOS result.

    Rows ``a`` and ``b`` of the pooled matrix, restricted to the units in
    which at least one of them drew an object, plus one unanimous
    ``no_object`` unit for every sample both were assigned where neither drew
    anything (the reference tool adds the same unit for a rater pair that
    agrees an image is empty). Units drawn only by other raters are left
    out: to these two raters they do not exist. Units are not re-matched.

    Returns
    -------
    ndarray of int64, shape (2, units)
        Codes as in ``result.reliability`` (``-1`` missing).
    """
    rel = result.reliability
    S = len(result.alpha)
    no = result.no_object_code
    two = rel[[a, b]]
    obj = (two >= 0) & (two != no)
    cols = obj.any(axis=0)
    drew = np.stack([np.bincount(result.unit_sample, weights=obj[k], minlength=S) > 0 for k in range(2)])
    assigned = np.stack([np.bincount(result.unit_sample, weights=two[k] >= 0, minlength=S) > 0 for k in range(2)])
    empty_both = int((assigned.all(axis=0) & ~drew.any(axis=0)).sum())
    return np.concatenate([two[:, cols], np.full((2, empty_both), no, dtype=np.int64)], axis=1)


def collaboration_clusters(result: KalosResult, method: str = "average") -> CollaborationClusters:
    r"""Pairwise rater agreement and a hierarchical clustering of raters.

    For every two raters ``a, b``: :math:`\alpha_{ab}` is nominal α of
    :func:`pair_reliability` (their rows, over the units either of them
    drew). Raters are then clustered on :math:`d_{ab} = 1 - \alpha_{ab}`
    (in ``[0, 2]``; 1, chance, where α is undefined) with
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
    R = result.reliability.shape[0]
    alpha = np.full((R, R), np.nan)
    n_units = np.zeros((R, R), dtype=np.int64)
    reason = np.full((R, R), "", dtype=object)
    for a in range(R):
        reason[a, a] = "a rater with themself"
        for b in range(a + 1, R):
            res = reliability_alpha(pair_reliability(result, a, b))
            alpha[a, b] = alpha[b, a] = res.alpha
            n_units[a, b] = n_units[b, a] = res.n_units
            reason[a, b] = reason[b, a] = res.reason
    dist = np.where(np.isnan(alpha), 1.0, np.clip(1.0 - alpha, 0.0, 2.0))
    np.fill_diagonal(dist, 0.0)
    if R >= 2:
        condensed = squareform(dist, checks=False)
        z = linkage(condensed, method=method)
        if R >= 3:
            z = optimal_leaf_ordering(z, condensed)
        order = leaves_list(z).astype(np.int64)
    else:  # pragma: no cover - KαLOS needs two raters
        z = np.zeros((0, 4))
        order = np.arange(R, dtype=np.int64)
    return CollaborationClusters(tuple(result.raters), alpha, n_units, reason, dist, z, order)


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
