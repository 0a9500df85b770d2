r"""Agreement on sets of tags (multi-label classification).

Input: ``present (S, R, K)`` bool (rater ``r`` gave tag ``k`` on sample
``s``) and ``rated (S, R)`` bool (the rater gave a set, possibly empty;
``False`` is missing data), as in :class:`agreement.core.ratings.TagRatings`.

Two views of agreement:

* **per tag** (:func:`per_class_alpha`): nominal Krippendorff's alpha of the
  presence/absence of each tag, a binary reliability matrix per tag;
* **per set** (:func:`masi_alpha`): Krippendorff's alpha over whole label sets
  with the MASI distance (Passonneau 2006), which gives partial credit to
  overlapping sets; and the per-sample mean pairwise MASI agreement
  (:func:`sample_masi_agreement`).

MASI (Measuring Agreement on Set-valued Items, Passonneau 2006):
``d(A, B) = 1 - J(A, B) M(A, B)`` with the Jaccard index
``J = |A & B| / |A | B|`` and the monotonicity weight ``M = 1`` if ``A = B``,
``2/3`` if one is a subset of the other, ``1/3`` if they intersect otherwise,
``0`` if they are disjoint. Range ``[0, 1]``. Two empty sets are equal:
distance 0 (``J`` is ``0/0`` there; nltk's ``masi_distance`` raises
``ZeroDivisionError`` on them). nltk 3.10 uses the exact weights 2/3 and 1/3;
older nltk releases used 0.67 and 0.33.

References: K. Krippendorff, "Computing Krippendorff's Alpha-Reliability",
2011; R. Passonneau, "Measuring Agreement on Set-valued Items (MASI) for
Semantic and Pragmatic Annotation", LREC 2006. This module does not import FiftyOne.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

import numpy as np
import scipy.sparse as sp

from agreement.core.krippendorff import alpha_from_sums
from agreement.core.rater_pairs import shared_pairs_of_cells
from agreement.methods.classes.alpha import (
    REASON_FEW,
    REASON_FLAT,
    ClassAlpha,
    coincidence_sparse,
    unit_counts,
)

__all__ = [
    "PerClassAlpha",
    "per_class_alpha",
    "masi_distance",
    "masi_matrix",
    "masi_pairs",
    "encode_sets",
    "masi_alpha",
    "sample_masi_agreement",
]

#: Row blocks of the expected-disagreement sum over pairs of distinct sets.
_BLOCK = 1024


def _check_sets(present: np.ndarray, rated: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    present = np.asarray(present, dtype=bool)
    rated = np.asarray(rated, dtype=bool)
    if present.ndim != 3 or rated.shape != present.shape[:2]:
        raise ValueError(f"present must be (S, R, K) and rated (S, R); got {present.shape} and {rated.shape}")
    if (present & ~rated[:, :, None]).any():
        s, r, k = map(int, np.argwhere(present & ~rated[:, :, None])[0])
        raise ValueError(f"sample {s}, rater {r}: tag {k} is present but the rater's set is missing (rated False)")
    return present, rated


@dataclass(frozen=True)
class PerClassAlpha:
    """Nominal alpha of each tag's presence/absence.

    Attributes:
        alpha: ``(K,)`` alpha per tag (NaN where undefined).
        observed: ``(K,)`` ``D_o``.
        expected: ``(K,)`` ``D_e``.
        n_pairable: ``(K,)`` pairable values (the same for every tag: the rated cells of pairable samples).
        reason: ``(K,)`` object array, why alpha is NaN (``""`` where defined).
    """

    alpha: np.ndarray
    observed: np.ndarray
    expected: np.ndarray
    n_pairable: np.ndarray
    reason: np.ndarray


def per_class_alpha(present: np.ndarray, rated: np.ndarray) -> PerClassAlpha:
    """Nominal Krippendorff's alpha of each tag, over presence (1) / absence (0) where the rater gave a set.

    For tag ``k``, the reliability matrix is ``x_sr = present[s, r, k]`` where
    ``rated[s, r]`` and missing elsewhere. With ``m_u`` sets on unit ``u`` of
    which ``p_u`` contain the tag: ``o_11 = sum_u p_u (p_u - 1) / (m_u - 1)``,
    ``o_00`` likewise for absences, ``n_1 = sum_u p_u`` over pairable units,
    and ``alpha = 1 - (n - 1) (n - o_00 - o_11) / (n**2 - n_0**2 - n_1**2)``
    (Krippendorff 2011). Range: at most 1. NaN with a reason when the tag is
    never or always given on pairable samples (no variation) or fewer than two
    sets exist on a sample.

    Args:
        present: ``(S, R, K)`` bool.
        rated: ``(S, R)`` bool.

    Returns:
        :class:`PerClassAlpha`.
    """
    present, rated = _check_sets(present, rated)
    m = rated.sum(axis=1).astype(np.float64)
    keep = m >= 2
    p = present[keep].sum(axis=1).astype(np.float64)  # (S_p, K)
    mk = m[keep][:, None]
    q = mk - p
    w = 1.0 / (mk - 1.0)
    same = (w * (p * (p - 1.0) + q * (q - 1.0))).sum(axis=0)
    n1, n0 = p.sum(axis=0), q.sum(axis=0)
    n = n1 + n0
    alpha, d_o, d_e = alpha_from_sums(n, same, n0 * n0 + n1 * n1)
    K = present.shape[2]
    reason = np.full(K, "", dtype=object)
    few = ~(n >= 2)
    reason[few] = REASON_FEW.format(n=float(n[0]) if K else 0.0)
    reason[~few & np.isnan(alpha)] = "no variation: the tag is given on every set or on none (D_e = 0)"
    return PerClassAlpha(np.asarray(alpha), np.asarray(d_o), np.asarray(d_e), np.asarray(n), reason)


def masi_distance(a: Iterable, b: Iterable) -> float:
    """The MASI distance between two sets (Passonneau 2006).

    ``d = 1 - J M`` with ``J = |A & B| / |A | B|`` and ``M = 1`` (equal),
    ``2/3`` (one a subset of the other), ``1/3`` (they intersect otherwise),
    ``0`` (disjoint).

    Args:
        a: a set (any iterable of hashable tags).
        b: another.

    Returns:
        ``d`` in ``[0, 1]``; 0 for two empty sets.

    Reference:
        R. Passonneau, "Measuring Agreement on Set-valued Items (MASI) for Semantic and Pragmatic
        Annotation", LREC 2006.

    Examples:
        >>> masi_distance({1, 2}, {1, 2, 3, 4})  # doctest: +ELLIPSIS
        0.666...
    """
    a, b = set(a), set(b)
    inter, union = len(a & b), len(a | b)
    if union == 0:
        return 0.0
    if a == b:
        m = 1.0
    elif inter == min(len(a), len(b)):
        m = 2.0 / 3.0
    elif inter > 0:
        m = 1.0 / 3.0
    else:
        m = 0.0
    return 1.0 - inter / union * m


def masi_matrix(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """MASI distances between the rows of two boolean set matrices (:func:`masi_distance`, vectorised).

    Args:
        A: ``(P, K)`` bool, one set per row.
        B: ``(Q, K)`` bool.

    Returns:
        ``(P, Q)`` float in ``[0, 1]``.
    """
    A = np.asarray(A, dtype=np.float64)
    B = np.asarray(B, dtype=np.float64)
    inter = A @ B.T
    sa, sb = A.sum(axis=1)[:, None], B.sum(axis=1)[None, :]
    union = sa + sb - inter
    m = np.where(inter == union, 1.0, np.where(inter == np.minimum(sa, sb), 2.0 / 3.0,
                                               np.where(inter > 0, 1.0 / 3.0, 0.0)))
    with np.errstate(divide="ignore", invalid="ignore"):
        j = np.where(union > 0, inter / union, 1.0)
    return 1.0 - j * m


def encode_sets(present: np.ndarray, rated: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each rated cell's set as a value id.

    ``codes[s, r]`` indexes ``sets`` (the distinct sets observed, in lexicographic order of their indicator
    rows, so independent of the order of samples and raters), ``-1`` where the set is missing.

    Args:
        present: ``(S, R, K)`` bool, tag ``k`` is in rater ``r``'s set on sample ``s``.
        rated: ``(S, R)`` bool, the rater gave a set (possibly empty) on the sample.

    Returns:
        ``(codes, sets)``: ``codes`` int64 ``(S, R)``, ``sets`` bool ``(V, K)``.
    """
    present, rated = _check_sets(present, rated)
    S, R, K = present.shape
    codes = np.full((S, R), -1, dtype=np.int64)
    cells = present[rated]
    if not len(cells):
        return codes, np.zeros((0, K), dtype=bool)
    sets, inv = np.unique(cells, axis=0, return_inverse=True)
    codes[rated] = inv.reshape(-1)
    return codes, sets.astype(bool)


def masi_alpha(present: np.ndarray, rated: np.ndarray) -> ClassAlpha:
    """Krippendorff's alpha over label sets with the MASI distance.

    The values are the distinct sets observed (:func:`encode_sets`); with the
    coincidence matrix ``o`` over them (Krippendorff 2011), ``n_c = sum_k o_ck``,
    ``n = sum_c n_c`` and ``delta_ck`` the MASI distance (not squared, as in
    Passonneau 2006): ``D_o = sum_ck o_ck delta_ck / n``,
    ``D_e = sum_ck n_c n_k delta_ck / (n (n - 1))`` and ``alpha = 1 - D_o / D_e``.
    Range: at most 1. With one tag, the sets are ``{}`` and ``{tag}`` at
    distance 1 and this is the nominal alpha of the tag. ``D_o`` needs ``delta``
    only where sets met on a sample; ``D_e`` sums over all pairs of distinct
    sets in row blocks.

    Args:
        present: ``(S, R, K)`` bool.
        rated: ``(S, R)`` bool.

    Returns:
        :class:`agreement.methods.classes.alpha.ClassAlpha`; NaN with a reason
        when fewer than two pairable sets exist or all pairable sets are equal.

    Reference:
        R. Passonneau, LREC 2006; K. Krippendorff, 2011.
    """
    codes, sets = encode_sets(present, rated)
    counts = unit_counts(codes, n_classes=len(sets))
    n_units = int((np.asarray(counts.sum(axis=1)).reshape(-1) >= 2).sum())
    o = sp.coo_matrix(coincidence_sparse(counts))
    n_c = np.asarray(o.sum(axis=1)).reshape(-1)
    n = float(n_c.sum())
    if not n >= 2:
        return ClassAlpha(np.nan, np.nan, np.nan, n, n_units, REASON_FEW.format(n=n))
    d_o = float((o.data * masi_pairs(sets, o.row, o.col)).sum()) / n
    used = np.flatnonzero(n_c > 0)
    su, nu = sets[used], n_c[used]
    num = 0.0
    for start in range(0, len(used), _BLOCK):
        block = masi_matrix(su[start:start + _BLOCK], su)
        num += float(nu[start:start + _BLOCK] @ block @ nu)
    d_e = num / (n * (n - 1.0))
    if d_e <= 1e-15:
        return ClassAlpha(np.nan, d_o, 0.0, n, n_units, REASON_FLAT)
    return ClassAlpha(1.0 - d_o / d_e, d_o, d_e, n, n_units, "")


def masi_pairs(sets: np.ndarray, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """MASI distances between ``sets[i]`` and ``sets[j]`` element-wise (:func:`masi_distance`, vectorised).

    Args:
        sets: ``(V, K)`` bool, one set per row.
        i: ``(P,)`` int rows of ``sets``.
        j: ``(P,)`` int rows of ``sets``.

    Returns:
        ``(P,)`` float in ``[0, 1]``.
    """
    A = np.asarray(sets, dtype=bool)[np.asarray(i)]
    B = np.asarray(sets, dtype=bool)[np.asarray(j)]
    inter = (A & B).sum(axis=1).astype(np.float64)
    sa, sb = A.sum(axis=1).astype(np.float64), B.sum(axis=1).astype(np.float64)
    union = sa + sb - inter
    m = np.where(inter == union, 1.0, np.where(inter == np.minimum(sa, sb), 2.0 / 3.0,
                                               np.where(inter > 0, 1.0 / 3.0, 0.0)))
    with np.errstate(divide="ignore", invalid="ignore"):
        jac = np.where(union > 0, inter / union, 1.0)
    return 1.0 - jac * m


def sample_masi_agreement(present: np.ndarray, rated: np.ndarray) -> np.ndarray:
    """Per sample, ``1 - `` the mean MASI distance over the pairs of raters who both gave a set.

    ``a_u = 1 - (2 / (m_u (m_u - 1))) sum_{r < r'} d_MASI(A_ur, A_ur')``.
    Range ``[0, 1]``: 1 when every set on the sample is the same.

    Args:
        present: ``(S, R, K)`` bool.
        rated: ``(S, R)`` bool.

    Returns:
        ``(S,)`` float; NaN where fewer than two raters gave a set.

    Reference:
        R. Passonneau, LREC 2006.
    """
    codes, sets = encode_sets(present, rated)
    S, R = codes.shape
    ss, rr = np.nonzero(codes >= 0)
    sample, a, b, _ = shared_pairs_of_cells(ss, rr, S, R)
    d = masi_pairs(sets, codes[sample, a], codes[sample, b]) if len(sample) else np.zeros(0)
    n_pairs = np.bincount(sample, minlength=S).astype(np.float64)
    total = np.bincount(sample, d, minlength=S)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(n_pairs > 0, 1.0 - total / n_pairs, np.nan)
