r"""Diagnostics of class agreement: per sample, per rater, per rater pair and per class.

All functions take the ``(S, R)`` reliability matrix of class codes of
:mod:`agreement.methods.classes.alpha` (rows samples, columns raters, ``-1``
missing) and are vectorised: work grows with the number of ratings (and, for
:func:`pairwise`, with the number of (sample, rater pair) triples), never with
a loop over raters or pairs.

* :func:`sample_observed_agreement`: the share of agreeing pairs of ratings per sample.
* :func:`rater_vitality`: ``alpha - alpha_{-r}``, positive when rater ``r`` helps.
* :func:`agreement_with_consensus`: each rater's share of ratings equal to a consensus class.
* :func:`agreement_with_others_majority`: the same against the majority of the *other* raters of each sample.
* :func:`pairwise`: Cohen's kappa, pairwise alpha and observed agreement of every rater pair that met.
* :func:`class_difficulty` and :func:`confusion_between_raters`: from the coincidence matrix.

References: K. Krippendorff, "Computing Krippendorff's Alpha-Reliability", 2011;
J. Cohen, "A Coefficient of Agreement for Nominal Scales", Educational and
Psychological Measurement 20(1), 1960. This module does not import FiftyOne.

Every function also takes a long pandas DataFrame in place of ``codes`` (crowd-kit's ``task``, ``worker``,
``label``; names through ``columns=``) or krippendorff's ``(raters × units)`` ``reliability_data=``
(:mod:`agreement.core.tables`). Given a DataFrame, per-sample and per-rater arrays come back as pandas
Series indexed by task or worker, per-class ones as pandas objects indexed by class; otherwise as arrays.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np
import scipy.sparse as sp

from agreement.core.coincidence import unit_products
from agreement.core.krippendorff import Distance, alpha_of_coincidences, check_level, distance_matrix, takes_marginals
from agreement.core.rater_pairs import RaterPairTable, shared_pairs_of_cells
from agreement.core.tables import ClassTable, codes_of_labels, labelled, to_frame
from agreement.methods.classes.alpha import coincidence_matrix, resolve_codes, unit_counts

__all__ = [
    "agreement_with_others_majority",
    "ClassDifficulty",
    "sample_observed_agreement",
    "alpha_without_rater",
    "rater_vitality",
    "agreement_with_consensus",
    "pairwise",
    "class_difficulty",
    "confusion_between_raters",
]


def sample_observed_agreement(codes: Any = None, /, *, n_classes: int | None = None, reliability_data: Any = None,
                              columns: Mapping[str, str] | None = None, orientation: str | None = None) -> Any:
    """The share of agreeing ordered pairs of ratings on each sample.

    ``a_u = sum_c n_uc (n_uc - 1) / (m_u (m_u - 1))``: of the ordered pairs of
    different raters who both rated sample ``u``, the share that gave the same
    class (the per-unit observed agreement of Krippendorff 2011 and Fleiss' ``P_i``).
    Range ``[0, 1]``; no chance correction.

    Args:
        codes: ``(S, R)`` class codes, ``-1`` missing.
        n_classes: ``K`` (default: the largest code + 1).
        reliability_data: instead of ``codes``, krippendorff's ``(raters × units)`` matrix, ``NaN``/``None``
            missing (:func:`agreement.methods.classes.alpha.class_alpha`).
        columns: when ``codes`` is a long DataFrame, its column names by role (``task``, ``worker``, ``label``).
        orientation: ``"units_by_raters"`` confirms a wide complete ``codes`` matrix (:mod:`agreement.core.tables`).

    Returns:
        ``(S,)`` float; NaN where fewer than two raters rated the sample (a Series by task for a DataFrame).
    """
    table, codes, K, _ = resolve_codes(codes, reliability_data=reliability_data, columns=columns,
                                       orientation=orientation, n_classes=n_classes)
    counts = unit_counts(codes, n_classes=K)
    m = np.asarray(counts.sum(axis=1)).reshape(-1)
    same = np.asarray(counts.multiply(counts).sum(axis=1)).reshape(-1) - m
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(m >= 2, same / (m * (m - 1.0)), np.nan)
    return labelled(out, table, axis="items", name="observed_agreement")


def _without_rater_coincidences(codes: np.ndarray, K: int) -> np.ndarray:
    """``(R, K, K)``: the coincidence matrix of ``codes`` without each rater's column.

    With ``o^u = (n_u n_u^T - diag n_u) / (m_u - 1)``, removing a value ``c``
    from unit ``u`` turns its contribution into
    ``[(m_u - 1) o^u - e_c n_u^T - n_u e_c^T + 2 E_cc] / (m_u - 2)`` when
    ``m_u >= 3`` and into nothing when ``m_u = 2``; the per-rater sums of these
    corrections are sparse products over the rater's ratings.
    """
    S, R = codes.shape
    counts = unit_counts(codes, n_classes=K)
    U0, m_p, keep = unit_products(counts)
    m = np.zeros(S)
    m[keep] = m_p
    o_all = (np.asarray(U0.T @ (1.0 / (m_p - 1.0)))).reshape(K, K)
    s, r = np.nonzero(codes >= 0)
    c = codes[s, r]
    ms = m[s]
    # the change of the pairable unit's scaled product (m-1) o^u / (m-2) - o^u = o^u / (m-2), or -o^u when m = 2
    pos = np.searchsorted(keep, s)
    pair = ms >= 2
    coef = np.where(ms >= 3, 1.0 / np.maximum(ms - 2.0, 1.0), -1.0) / np.maximum(ms - 1.0, 1.0)
    X = sp.csr_matrix((coef[pair], (r[pair], pos[pair])), shape=(R, len(keep)))
    delta = np.asarray((X @ U0).todense()).reshape(R, K, K)
    big = ms >= 3
    inv = 1.0 / np.maximum(ms[big] - 2.0, 1.0)
    Y = sp.csr_matrix((inv, (r[big] * K + c[big], s[big])), shape=(R * K, S))
    G = np.asarray((Y @ counts).todense()).reshape(R, K, K)  # G[r, c, :] = sum n_u / (m_u - 2)
    delta -= G + G.transpose(0, 2, 1)
    diag = np.bincount(r[big] * K + c[big], 2.0 * inv, minlength=R * K).reshape(R, K)
    delta[:, np.arange(K), np.arange(K)] += diag
    out: np.ndarray = o_all[None] + delta
    return out


def alpha_without_rater(codes: Any = None, /, *, level: Distance = "nominal",
                        values: np.ndarray | Sequence | None = None, n_classes: int | None = None,
                        reliability_data: Any = None, columns: Mapping[str, str] | None = None,
                        orientation: str | None = None) -> Any:
    """``alpha_{-r}``: Krippendorff's alpha of the reliability matrix without rater ``r``'s column, for each ``r``.

    Computed from the full coincidence matrix by subtracting each rater's
    contribution (:func:`_without_rater_coincidences`), equal to ``R`` full
    recomputations. Range: at most 1.

    Args:
        codes: ``(S, R)`` class codes, ``-1`` missing.
        level: ``"nominal"``, ``"ordinal"``, ``"interval"``, ``"ratio"``, a callable distance or a
            ``(K, K)`` matrix of squared distances (:func:`agreement.core.krippendorff.distance_matrix`).
        values: ``(K,)`` numeric value of each code (interval, ratio, callable).
        n_classes: ``K`` (default: the largest code + 1).
        reliability_data: instead of ``codes``, krippendorff's ``(raters × units)`` matrix, ``NaN``/``None``
            missing (:func:`agreement.methods.classes.alpha.class_alpha`).
        columns: when ``codes`` is a long DataFrame, its column names by role (``task``, ``worker``, ``label``).
        orientation: ``"units_by_raters"`` confirms a wide complete ``codes`` matrix (:mod:`agreement.core.tables`).

    Returns:
        ``(R,)`` float; NaN where alpha without the rater is undefined (a Series by worker for a DataFrame).
    """
    table, codes, K, values = resolve_codes(codes, reliability_data=reliability_data, columns=columns,
                                            orientation=orientation, n_classes=n_classes, level=level, values=values)
    check_level(level, values, K)
    if codes.shape[1] == 0:
        return labelled(np.zeros(0), table, axis="workers", name="alpha_without")
    out = alpha_of_coincidences(_without_rater_coincidences(codes, K), level=level, values=values)[0]
    return labelled(out, table, axis="workers", name="alpha_without")


def rater_vitality(codes: Any = None, /, *, level: Distance = "nominal", values: np.ndarray | Sequence | None = None,
                   n_classes: int | None = None, reliability_data: Any = None,
                   columns: Mapping[str, str] | None = None, orientation: str | None = None) -> Any:
    """Rater vitality ``v_r = alpha - alpha_{-r}``: how much alpha drops when rater ``r`` is left out.

    ``v_r > 0``: the rater helps (alpha is higher with them); ``v_r < 0``: the
    rater lowers agreement. The same sign as the KαLOS diagnostics
    (:func:`agreement.methods.kalos.diagnostics.rater_vitality`). Range:
    differences of alphas, in ``(-inf, 2]`` in theory, small in practice.

    Args:
        codes: ``(S, R)`` class codes, ``-1`` missing.
        level: ``"nominal"``, ``"ordinal"``, ``"interval"``, ``"ratio"``, a callable distance or a
            ``(K, K)`` matrix of squared distances (:func:`agreement.core.krippendorff.distance_matrix`).
        values: ``(K,)`` numeric value of each code (interval, ratio, callable).
        n_classes: ``K`` (default: the largest code + 1).
        reliability_data: instead of ``codes``, krippendorff's ``(raters × units)`` matrix, ``NaN``/``None``
            missing (:func:`agreement.methods.classes.alpha.class_alpha`).
        columns: when ``codes`` is a long DataFrame, its column names by role (``task``, ``worker``, ``label``).
        orientation: ``"units_by_raters"`` confirms a wide complete ``codes`` matrix (:mod:`agreement.core.tables`).

    Returns:
        ``(R,)`` float; NaN where alpha or alpha without the rater is undefined
        (for instance with two raters: without one, no pair is left). A Series by worker for a DataFrame.

    Reference:
        K. Krippendorff, "Computing Krippendorff's Alpha-Reliability", 2011
        (alpha); vitality is the leave-one-rater-out jackknife difference.
    """
    table, codes, K, values = resolve_codes(codes, reliability_data=reliability_data, columns=columns,
                                            orientation=orientation, n_classes=n_classes, level=level, values=values)
    check_level(level, values, K)
    o = coincidence_matrix(codes, n_classes=K)
    alpha = float(alpha_of_coincidences(o, level=level, values=values)[0])
    without = alpha_without_rater(codes, level=level, values=values, n_classes=K, orientation="units_by_raters")
    return labelled(alpha - without, table, axis="workers", name="vitality")


def agreement_with_consensus(codes: Any, consensus_codes: Any, *, reliability_data: Any = None,
                             columns: Mapping[str, str] | None = None, orientation: str | None = None) -> Any:
    """Each rater's share of ratings equal to the consensus class of the sample.

    ``a_r = #{u : x_ur = y_u} / #{u : x_ur and y_u given}`` with ``x`` the
    ratings and ``y`` the consensus (e.g. a majority vote or Dawid–Skene).
    Range ``[0, 1]``; no chance correction.

    Args:
        codes: ``(S, R)`` class codes, ``-1`` missing.
        consensus_codes: ``(S,)`` consensus class code of each sample, ``-1`` where there is none; for a
            DataFrame, also a pandas Series of class labels indexed by task (e.g.
            ``ClassConsensus.to_pandas()["label"]``).
        reliability_data: with ``codes=None``, krippendorff's ``(raters × units)`` matrix, ``NaN``/``None``
            missing (:func:`agreement.methods.classes.alpha.class_alpha`).
        columns: when ``codes`` is a long DataFrame, its column names by role (``task``, ``worker``, ``label``).
        orientation: ``"units_by_raters"`` confirms a wide complete ``codes`` matrix (:mod:`agreement.core.tables`).

    Returns:
        ``(R,)`` float; NaN for a rater with no rating on a sample with a consensus (a Series by worker for a
        DataFrame).
    """
    table, codes, _, _ = resolve_codes(codes, reliability_data=reliability_data, columns=columns,
                                       orientation=orientation)
    y = codes_of_labels(consensus_codes, table)
    if len(y) != codes.shape[0]:
        raise ValueError(f"consensus_codes must have {codes.shape[0]} entries, got {len(y)}")
    both = (codes >= 0) & (y[:, None] >= 0)
    n = both.sum(axis=0)
    hit = (both & (codes == y[:, None])).sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(n > 0, hit / n, np.nan)
    return labelled(out, table, axis="workers", name="agreement_with_consensus")


def agreement_with_others_majority(codes: Any = None, /, *, n_classes: int | None = None, reliability_data: Any = None,
                                   columns: Mapping[str, str] | None = None,
                                   orientation: str | None = None) -> tuple[Any, Any]:
    r"""Each rater's agreement with the majority vote of the other raters of the same samples.

    For a rating ``x_ur = c`` and the other raters' class counts ``m_uk = n_uk - [k = c]``
    of sample ``u``, the rating scores ``[m_uc = max_k m_uk] / #{k : m_uk = max_k m_uk}``
    (a tie among the others' top classes gives each tied class its share, so the
    score is the probability of agreeing with a majority vote whose ties are
    broken uniformly at random). ``a_r`` is the mean score over the samples where
    ``r`` and at least one other rater gave a class. Range ``[0, 1]``; no chance
    correction. Leaving the rater out keeps them from voting for themselves,
    which would lift every rater of a small panel towards 1 (with two raters,
    a rater would always agree with a majority that includes them half the time).

    Args:
        codes: ``(S, R)`` class codes, ``-1`` missing.
        n_classes: ``K`` (default: the largest code + 1).
        reliability_data: instead of ``codes``, krippendorff's ``(raters × units)`` matrix, ``NaN``/``None``
            missing (:func:`agreement.methods.classes.alpha.class_alpha`).
        columns: when ``codes`` is a long DataFrame, its column names by role (``task``, ``worker``, ``label``).
        orientation: ``"units_by_raters"`` confirms a wide complete ``codes`` matrix (:mod:`agreement.core.tables`).

    Returns:
        ``(agreement, n)``: ``(R,)`` float (NaN for a rater who never met another) and ``(R,)`` int, the
        number of scored samples (two Series by worker for a DataFrame).
    """
    table, codes, K, _ = resolve_codes(codes, reliability_data=reliability_data, columns=columns,
                                       orientation=orientation, n_classes=n_classes)
    agreement, n = _others_majority(codes, K)
    return (labelled(agreement, table, axis="workers", name="agreement_with_others_majority"),
            labelled(n, table, axis="workers", name="n_samples"))


def _others_majority(codes: np.ndarray, K: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`agreement_with_others_majority` of checked codes."""
    S, R = codes.shape
    agreement, n = np.full(R, np.nan), np.zeros(R, dtype=np.int64)
    s, r = np.nonzero(codes >= 0)
    if not len(s):
        return agreement, n
    counts = unit_counts(codes, n_classes=K).astype(np.int64)
    score, scored = np.zeros(len(s)), np.zeros(len(s), dtype=bool)
    step = max(1, (1 << 22) // max(K, 1))  # ratings per chunk: at most ~4M dense counts at a time
    for lo in range(0, len(s), step):
        i = np.arange(lo, min(lo + step, len(s)))
        others = counts[s[i]].toarray()
        others[np.arange(len(i)), codes[s[i], r[i]]] -= 1
        top = others.max(axis=1)
        ties = (others == top[:, None]).sum(axis=1)
        hit = others[np.arange(len(i)), codes[s[i], r[i]]] == top
        scored[i] = top > 0
        score[i] = np.where(hit, 1.0 / ties, 0.0)
    n = np.bincount(r[scored], minlength=R)
    total = np.bincount(r[scored], weights=score[scored], minlength=R)
    with np.errstate(divide="ignore", invalid="ignore"):
        agreement = np.where(n > 0, total / n, np.nan)
    return agreement, n


def pairwise(codes: Any = None, /, *, level: Distance = "nominal", values: np.ndarray | Sequence | None = None,
             raters: Sequence[str] | None = None, n_classes: int | None = None, reliability_data: Any = None,
             columns: Mapping[str, str] | None = None, orientation: str | None = None) -> RaterPairTable:
    """Agreement of every pair of raters that met (both rated at least one sample).

    For raters ``a < b`` and their ``N`` shared samples, with the contingency
    table ``C_ck`` (``a`` said ``c``, ``b`` said ``k``) and its margins ``r^a``, ``r^b``:

    * ``observed_agreement = p_o = sum_c C_cc / N`` in ``[0, 1]``;
    * ``kappa = (p_o - p_e) / (1 - p_e)`` with ``p_e = sum_c r^a_c r^b_c / N**2``
      (Cohen 1960; equal to ``sklearn.metrics.cohen_kappa_score`` on the shared
      samples), at most 1, NaN when ``p_e = 1`` (both used one and the same class);
    * ``alpha``: Krippendorff's alpha of the two columns at ``level`` (every
      shared sample is a unit of two values, ``n = 2N``, ``n_c = r^a_c + r^b_c``):
      ``D_o`` = mean over shared samples of ``delta2(c_a, c_b)`` and
      ``D_e = sum_ck n_c n_k delta2_ck / (n (n - 1))``; NaN with a reason when
      the pair's values show no variation.

    Pairs that never met are **absent** from the table (no data), not 0 or NaN.
    Work grows with the (sample, rater pair) triples, ``sum_u m_u (m_u - 1) / 2``.

    Args:
        codes: ``(S, R)`` class codes, ``-1`` missing.
        level: ``"nominal"``, ``"ordinal"``, ``"interval"``, ``"ratio"``, a callable distance or a
            ``(K, K)`` matrix of squared distances (for ``alpha``).
        values: ``(K,)`` numeric value of each code (interval, ratio, callable).
        raters: the rater names (default: a DataFrame's workers, else ``"0"``, ``"1"``, ...).
        n_classes: ``K`` (default: the largest code + 1).
        reliability_data: instead of ``codes``, krippendorff's ``(raters × units)`` matrix, ``NaN``/``None``
            missing (:func:`agreement.methods.classes.alpha.class_alpha`).
        columns: when ``codes`` is a long DataFrame, its column names by role (``task``, ``worker``, ``label``).
        orientation: ``"units_by_raters"`` confirms a wide complete ``codes`` matrix (:mod:`agreement.core.tables`).

    Returns:
        :class:`agreement.core.rater_pairs.RaterPairTable` with ``n_shared`` the
        number of samples both rated and values ``kappa``, ``alpha`` and
        ``observed_agreement`` (reasons for NaN in ``reasons``); ``to_pandas()`` gives one row per pair.

    Reference:
        J. Cohen, 1960; K. Krippendorff, "Computing Krippendorff's Alpha-Reliability", 2011.
    """
    given, codes, K, values = resolve_codes(codes, reliability_data=reliability_data, columns=columns,
                                            orientation=orientation, n_classes=n_classes, level=level, values=values)
    v = check_level(level, values, K)
    S, R = codes.shape
    names = tuple(str(i) for i in (given.workers if given.named else range(R))) if raters is None else tuple(raters)
    if len(names) != R:
        raise ValueError(f"raters must name the {R} columns, got {len(names)}")
    ss, rr = np.nonzero(codes >= 0)
    sample, a, b, pid = shared_pairs_of_cells(ss, rr, S, R)
    table = RaterPairTable.from_shared_pairs(names, a, b, pid)
    P = len(table)
    ca, cb = codes[sample, a], codes[sample, b]
    N = table.n_shared.astype(np.float64)
    ra = np.bincount(pid * K + ca, minlength=P * K).reshape(P, K).astype(np.float64)
    rb = np.bincount(pid * K + cb, minlength=P * K).reshape(P, K).astype(np.float64)
    agree = np.bincount(pid, (ca == cb).astype(np.float64), minlength=P)
    with np.errstate(divide="ignore", invalid="ignore"):
        p_o = agree / N
        p_e = (ra * rb).sum(axis=1) / (N * N)
        undefined_k = np.isclose(p_e, 1.0, rtol=0.0, atol=1e-15)
        kappa = np.where(undefined_k, np.nan, (p_o - p_e) / (1.0 - p_e))
    alpha, alpha_reason = _pair_alpha(level=level, v=v, pid=pid, ca=ca, cb=cb, n_c=ra + rb, N=N)
    table.values.update({"kappa": kappa, "alpha": alpha, "observed_agreement": p_o})
    kappa_reason = np.where(undefined_k, "both raters gave one and the same class on every shared sample "
                                         "(p_e = 1)", "").astype(object)
    table.reasons.update({"kappa": kappa_reason, "alpha": alpha_reason})
    return table


def _pair_alpha(level: Distance, v: np.ndarray | None, pid: np.ndarray, ca: np.ndarray, cb: np.ndarray,
                n_c: np.ndarray, N: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Two-rater alpha per pair from the triples and the pair margins ``n_c = r^a + r^b``."""
    P, K = n_c.shape
    n = 2.0 * N
    if isinstance(level, str) and level == "nominal":
        d_pair = (ca != cb).astype(np.float64)
        d_e_num = n * n - (n_c * n_c).sum(axis=1)
        scale = np.ones(P)
    elif isinstance(level, str) and level in ("ordinal", "interval"):
        if level == "ordinal":  # mid-ranks of the pair's own pooled values
            vals = np.cumsum(n_c, axis=1) - n_c / 2.0
            pid_k = pid * K
            d_pair = (vals.reshape(-1)[pid_k + ca] - vals.reshape(-1)[pid_k + cb]) ** 2
        else:
            assert v is not None  # check_level gives the codes' values at the interval level
            vals = np.broadcast_to(v[:K], (P, K))
            d_pair = (v[ca] - v[cb]) ** 2
        mean = (n_c * vals).sum(axis=1) / n
        d_e_num = 2.0 * n * (n_c * (vals - mean[:, None]) ** 2).sum(axis=1)
        scale = np.maximum(np.max(vals, axis=1) - np.min(vals, axis=1), 1.0) ** 2
    else:  # ratio, a matrix or a callable: D_e from the distances themselves
        if callable(level) and takes_marginals(level):  # a distance of each pair's own marginals
            d = distance_matrix(level, n_c, values=v)
            d_pair = d[pid, ca, cb]
            d_e_num = np.einsum("pc,pck,pk->p", n_c, d, n_c)
            scale = np.maximum(d.max(axis=(1, 2)), 1.0) if K else np.ones(P)
        else:  # one (K, K) matrix for every pair
            d = distance_matrix(level, n_c.sum(axis=0), values=v)
            d_pair = d[ca, cb]
            d_e_num = np.einsum("pc,ck,pk->p", n_c, d, n_c)
            scale = np.full(P, max(float(d.max()) if K else 0.0, 1.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        d_o = np.bincount(pid, d_pair, minlength=P) / N
        d_e = d_e_num / (n * (n - 1.0))
        flat = d_e <= 1e-15 * scale
        alpha = np.where(flat, np.nan, 1.0 - d_o / d_e)
    reason = np.where(flat, "no variation: the pair's values do not differ (D_e = 0)", "").astype(object)
    return alpha, reason


@dataclass(frozen=True)
class ClassDifficulty:
    """How often each class is matched by another rater on the same sample.

    Attributes:
        match_rate: ``(K,)`` ``o_cc / n_c`` in ``[0, 1]``; NaN for a class without pairable values.
        n_values: ``(K,)`` ``n_c``, the pairable values of each class.
        classes: the ``K`` class values when the input named them (a DataFrame or reliability data), else None.
    """

    match_rate: np.ndarray
    n_values: np.ndarray
    classes: tuple[Any, ...] | None = None

    def to_pandas(self) -> Any:
        """One row per class (indexed by class, or by code): ``match_rate`` and ``n_values`` (pandas imported here)."""
        index = self.classes if self.classes is not None else range(len(self.match_rate))
        return to_frame({"match_rate": self.match_rate, "n_values": self.n_values}, index=index, index_name="class")


def class_difficulty(codes: Any = None, /, *, n_classes: int | None = None, reliability_data: Any = None,
                     columns: Mapping[str, str] | None = None, orientation: str | None = None) -> ClassDifficulty:
    """Per class, the share of its pairable values matched by the same class from another rater.

    ``match_c = o_cc / n_c`` from the coincidence matrix ``o`` (Krippendorff
    2011): of the pairs of values on a sample that start with a rating ``c``,
    the share whose other rating is ``c`` too. Range ``[0, 1]``; low values
    mark a class that raters confuse with others (see
    :func:`confusion_between_raters` for with which).

    Args:
        codes: ``(S, R)`` class codes, ``-1`` missing.
        n_classes: ``K`` (default: the largest code + 1).
        reliability_data: instead of ``codes``, krippendorff's ``(raters × units)`` matrix, ``NaN``/``None``
            missing (:func:`agreement.methods.classes.alpha.class_alpha`).
        columns: when ``codes`` is a long DataFrame, its column names by role (``task``, ``worker``, ``label``).
        orientation: ``"units_by_raters"`` confirms a wide complete ``codes`` matrix (:mod:`agreement.core.tables`).

    Returns:
        :class:`ClassDifficulty` (with the class values when the input named them).
    """
    table, codes, K, _ = resolve_codes(codes, reliability_data=reliability_data, columns=columns,
                                       orientation=orientation, n_classes=n_classes)
    o = coincidence_matrix(codes, n_classes=K)
    n_c = o.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = np.where(n_c > 0, np.diag(o) / n_c, np.nan)
    return ClassDifficulty(rate, n_c, _class_names(table, K))


def _class_names(table: ClassTable, K: int) -> tuple[Any, ...] | None:
    """The ``K`` class values of a named input (padded with codes for ``n_classes`` beyond them), else None."""
    if table.source == "codes":
        return None
    return tuple(table.classes) + tuple(range(len(table.classes), K))


def confusion_between_raters(codes: Any = None, /, *, n_classes: int | None = None, reliability_data: Any = None,
                             columns: Mapping[str, str] | None = None, orientation: str | None = None) -> Any:
    """The coincidence matrix normalised by rows: ``o_ck / n_c``.

    Row ``c`` is the distribution of the other rating in pairs of ratings on
    the same sample whose first rating is ``c`` (symmetric in the raters, unlike
    a confusion matrix against a reference). Rows sum to 1; the diagonal is
    :func:`class_difficulty`'s ``match_rate``.

    Args:
        codes: ``(S, R)`` class codes, ``-1`` missing.
        n_classes: ``K`` (default: the largest code + 1).
        reliability_data: instead of ``codes``, krippendorff's ``(raters × units)`` matrix, ``NaN``/``None``
            missing (:func:`agreement.methods.classes.alpha.class_alpha`).
        columns: when ``codes`` is a long DataFrame, its column names by role (``task``, ``worker``, ``label``).
        orientation: ``"units_by_raters"`` confirms a wide complete ``codes`` matrix (:mod:`agreement.core.tables`).

    Returns:
        ``(K, K)`` float; NaN rows for classes without pairable values (a DataFrame indexed by class, columns
        the other rating's class, for a DataFrame input).

    Reference:
        K. Krippendorff, "Computing Krippendorff's Alpha-Reliability", 2011.
    """
    table, codes, K, _ = resolve_codes(codes, reliability_data=reliability_data, columns=columns,
                                       orientation=orientation, n_classes=n_classes)
    o = coincidence_matrix(codes, n_classes=K)
    n_c = o.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(n_c > 0, o / n_c, np.nan)
    if not table.named:
        return out
    names = _class_names(table, K) or ()
    return to_frame({c: out[:, k] for k, c in enumerate(names)}, index=names, index_name="class")
