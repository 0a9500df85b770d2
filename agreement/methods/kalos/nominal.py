"""Nominal Krippendorff's α of the KαLOS reliability matrices (:mod:`agreement.methods.kalos`): the
coincidence counts of units (pooled, sparse) and α pooled over all units or per group of units.

This module does not import FiftyOne.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.sparse import csr_matrix

from agreement.core.arrays import unique_sorted
from agreement.core.krippendorff import AlphaResult, alpha_from_coincidence
from agreement.core.reliability import SparseReliability, grouped_values_alpha

# --------------------------------------------------------------------------
# Nominal alpha of reliability matrices: pooled (sparse) and grouped
# --------------------------------------------------------------------------


def _as_values(rel: np.ndarray | SparseReliability) -> SparseReliability:
    return rel if isinstance(rel, SparseReliability) else SparseReliability.from_dense(rel)


def _unit_value_counts(
    rel: np.ndarray | SparseReliability,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    """Pairable columns and their ``(column, code, count)`` triples.

    Returns ``cols`` (pairable column indices), ``m`` (values per pairable
    column), ``uc`` (position in ``cols``), ``code`` and ``cnt`` (``n_uc``) of
    every category present in a pairable column, and ``C`` (codes ``< C``).
    ``rel`` is a dense ``(raters, units)`` matrix (``-1`` missing) or a
    :class:`~agreement.core.reliability.SparseReliability`.
    """
    v = _as_values(rel)
    m_all = np.bincount(v.column, minlength=v.n_columns)
    cols = np.flatnonzero(m_all >= 2)
    C = v.n_codes
    pairable = m_all[v.column] >= 2
    col_pos = np.searchsorted(cols, v.column[pairable])
    key = col_pos.astype(np.int64) * max(C, 1) + v.code[pairable]
    uk, cnt = np.unique(key, return_counts=True)
    return cols, m_all[cols].astype(np.float64), uk // max(C, 1), uk % max(C, 1), cnt.astype(np.float64), C


@dataclass
class CoincidenceCounts:
    r"""The exact, mergeable statistics behind nominal α: integer pair counts per unit size.

    For every unit size ``m >= 2`` (values in the unit), ``pairs[m]`` is the
    ``(C, C)`` integer matrix ``P_m[c, k] = sum_{u: m_u = m} (n_uc n_uk - [c = k] n_uc)``
    (ordered pairs of values of unit ``u`` with codes ``c`` and ``k``), so that the
    coincidence matrix is ``o = sum_m P_m / (m - 1)`` (Krippendorff 2011).
    Counts of disjoint sets of units add exactly (:meth:`merge`), in any
    order: the α of a corpus computed from the counts of its shards is
    bit-identical however it was split.

    Attributes:
        n_codes: ``C``, the number of category codes.
        pairs: unit size → ``(C, C)`` int64 matrix.
        n_units: pairable units counted.
    """

    n_codes: int
    pairs: dict = field(default_factory=dict)
    n_units: int = 0

    @classmethod
    def of(cls, reliability: np.ndarray | SparseReliability, n_codes: int | None = None) -> "CoincidenceCounts":
        """The counts of a reliability matrix (dense ``(R, U)`` with ``-1`` missing, or sparse)."""
        cols, m, uc, code, cnt, C = _unit_value_counts(reliability)
        C = max(C, int(n_codes or 0))
        out = cls(C, {}, len(cols))
        if not len(cols):
            return out
        cnt = cnt.astype(np.int64)
        m_unit = m.astype(np.int64)
        m_val = m_unit[uc]
        for size in unique_sorted(m_unit).tolist():
            sel = m_val == size
            units, row = np.unique(uc[sel], return_inverse=True)
            N = csr_matrix((cnt[sel], (row.ravel(), code[sel])), shape=(len(units), C), dtype=np.int64)
            P = np.asarray((N.T @ N).toarray(), dtype=np.int64)
            P[np.diag_indices(C)] -= np.bincount(code[sel], weights=cnt[sel], minlength=C).astype(np.int64)
            out.pairs[int(size)] = P
        return out

    def merge(self, other: "CoincidenceCounts") -> "CoincidenceCounts":
        """The counts of both sets of units (exact; commutative and associative)."""
        C = max(self.n_codes, other.n_codes)
        out = CoincidenceCounts(C, {}, self.n_units + other.n_units)
        for size in sorted(set(self.pairs) | set(other.pairs)):
            P = np.zeros((C, C), dtype=np.int64)
            for part in (self.pairs.get(size), other.pairs.get(size)):
                if part is not None:
                    P[: part.shape[0], : part.shape[1]] += part
            out.pairs[size] = P
        return out

    def coincidence(self) -> np.ndarray:
        """``o = sum_m P_m / (m - 1)``, summed in increasing ``m`` (a fixed order)."""
        C = max(self.n_codes, 1)
        o = np.zeros((C, C))
        for size in sorted(self.pairs):
            P = self.pairs[size]
            o[: P.shape[0], : P.shape[1]] += P / float(size - 1)
        return o

    def alpha(self) -> AlphaResult:
        """Nominal α of the counted units (:func:`agreement.core.krippendorff.alpha_from_coincidence`)."""
        return alpha_from_coincidence(self.coincidence(), n_units=self.n_units)


def reliability_alpha(reliability: np.ndarray) -> AlphaResult:
    """Nominal Krippendorff's α of a raters × units code matrix, in sparse form.

    The same α as :func:`agreement.core.krippendorff.nominal_alpha`
    (``alpha = 1 - D_o / D_e``, coincidence matrix
    ``o_ck = sum_u (n_uc n_uk - [c = k] n_uc) / (m_u - 1)`` over units with
    ``m_u >= 2`` values; Krippendorff 2011), computed from the exact integer
    pair counts per unit size (:class:`CoincidenceCounts`): memory in the
    number of values rather than units × categories, and the same bits
    for a corpus and for the merged counts of its parts. Range: at most 1;
    NaN with a reason when undefined (fewer than two pairable values, or no
    variation).

    Args:
        reliability (ndarray of int, shape (raters, units), or SparseReliability): Category codes ``>= 0``; ``-1`` is
            a missing value.

    Returns:
        AlphaResult: From :func:`agreement.core.krippendorff.alpha_from_coincidence`.
    """
    return CoincidenceCounts.of(reliability).alpha()


def grouped_alpha(
    reliability: np.ndarray | SparseReliability, column_group: np.ndarray, n_groups: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    r"""Nominal Krippendorff's α of many column groups of one reliability matrix at once.

    For each group ``g`` of columns (units), with ``n_uc`` the count of code
    ``c`` in unit ``u``, ``m_u`` its number of values, and only pairable units
    (``m_u >= 2``):

    .. math::

        n_g = \sum_u m_u, \quad
        O_g = \sum_u \sum_c \frac{n_{uc}(n_{uc} - 1)}{m_u - 1}, \quad
        n_{gc} = \sum_u n_{uc}, \quad
        \alpha_g = 1 - \frac{D_o}{D_e} = 1 - \frac{(n_g - O_g) / n_g}
                   {(n_g^2 - \sum_c n_{gc}^2) / (n_g (n_g - 1))}

    (``O_g`` is the trace of the group's coincidence matrix; Krippendorff
    2011). Equal to :func:`agreement.core.krippendorff.nominal_alpha` of each
    group's sub-matrix, in one vectorised pass.

    Args:
        reliability (ndarray of int, shape (raters, units), or SparseReliability): Codes ``>= 0``, ``-1`` missing.
        column_group (ndarray of int, shape (units,)): Group of each column, in ``0 .. n_groups - 1``.
        n_groups (int): Number of groups.

    Returns:
        alpha, observed, expected, n_pairable (ndarray of shape (n_groups,)): α (NaN where ``n < 2`` or ``D_e = 0``, as
            in :func:`~agreement.core.krippendorff.alpha_from_coincidence`), ``D_o``, ``D_e`` (NaN where ``n < 2``) and
            ``n``.
    """
    v = _as_values(reliability)
    column_group = np.asarray(column_group, dtype=np.int64).reshape(-1)
    if len(column_group) != v.n_columns:
        raise ValueError("column_group must have one entry per column")
    res = grouped_values_alpha(v.column, v.code, v.n_columns, column_group, n_groups)
    return res.alpha, res.observed, res.expected, res.n


#: Why α is not offered when :func:`single_class_bound` holds.
SINGLE_CLASS_REASON = (
    "a single class and no unit where raters agree that nothing is there: nominal alpha cannot exceed 0 "
    "(alpha = (1 - u) / (n - u) for u class/no_object disagreements among n values); use alpha-OT "
    "(compute_ot_agreement) or the detection alpha of compute_geometry_agreement")


def single_class_bound(counts: CoincidenceCounts, no_object_code: int) -> str:
    r"""Why nominal α of ``counts`` is meaningless: one class and no ``no_object`` coincidence (else ``""``).

    With two categories, one class ``c`` and ``no_object`` ``∅``, and no pair of values in a unit that are
    both ``∅`` (``o_∅∅ = 0``: no unit where two raters agree that nothing is there, e.g. no empty image, as
    on temporal segments, where every unit holds a segment), write ``u = o_c∅`` and ``n = o_cc + 2u``:
    ``n_∅ = u``, ``n_c = n - u`` and

    ``alpha = 1 - (n - 1) u / (n_c n_∅) = (1 - u) / (n - u) <= 0`` for ``u >= 1``

    (``u = 0`` is ``D_e = 0``, already undefined): α can only say "at or below chance", whatever the
    raters do, so it is not offered (Krippendorff 2011's nominal α; the KαLOS reference counts an empty
    image as one unit of unanimous ``no_object``, which is what such a corpus lacks).

    Returns:
        :data:`SINGLE_CLASS_REASON` when the bound holds, else ``""``.
    """
    o = counts.coincidence()
    if o.shape[0] <= no_object_code:
        return ""
    n_c = o.sum(axis=1)
    real = np.delete(n_c, no_object_code) > 0
    if int(real.sum()) == 1 and n_c[no_object_code] > 0 and o[no_object_code, no_object_code] == 0:
        return SINGLE_CLASS_REASON
    return ""
