r"""Sparse reliability matrices and nominal Krippendorff's α over them.

A reliability matrix has a row per rater and a column per unit; most of it is
missing when many raters each see a few samples (a crowd of 500 raters with
10 per image fills 2 % of it). :class:`SparseReliability` keeps only the
present values as ``(rater, column, code)`` triples, so memory and work grow
with the number of values, never with raters × units.

Nominal α (Krippendorff 2011). For a set of columns (units) ``u`` with
``n_uc`` values of code ``c`` and ``m_u = Σ_c n_uc`` values, over the
*pairable* units (``m_u ≥ 2``):

.. math::

    n = \sum_u m_u,\quad
    O = \sum_u \frac{\sum_c n_{uc}(n_{uc} - 1)}{m_u - 1},\quad
    n_c = \sum_u n_{uc},\quad
    D_o = \frac{n - O}{n},\quad
    D_e = \frac{n^2 - \sum_c n_c^2}{n (n - 1)},\quad
    \alpha = 1 - \frac{D_o}{D_e}

(``O`` is the trace of the coincidence matrix). α is at most 1, 0 at chance,
negative below; undefined (NaN with a reason) when ``n < 2`` or ``D_e = 0``.

Every function here is vectorised over groups of columns (per sample, per
class, per rater pair) and over left-out raters, so that diagnostics over R
raters cost a few passes over the values, not R passes over a dense matrix.

This module does not import FiftyOne.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
from numpy.typing import ArrayLike

from agreement.core.krippendorff import alpha_from_sums

__all__ = [
    "SparseReliability",
    "GroupedAlpha",
    "GroupSums",
    "group_sums",
    "grouped_values_alpha",
    "LeaveOneOutSums",
    "leave_one_rater_out",
    "leave_one_rater_out_sums",
    "UNDEFINED_FEW",
    "UNDEFINED_NO_VARIATION",
    "concat_ranges",
]

UNDEFINED_FEW = "fewer than 2 pairable values: no unit has two or more values"
UNDEFINED_NO_VARIATION = "no variation: every pairable value is the same category (D_e = 0)"


def concat_ranges(start: np.ndarray, length: np.ndarray) -> np.ndarray:
    """``concatenate([arange(a, a + n) for a, n in zip(start, length)])``, vectorised.

    Args:
        start: ``(k,)`` int first value of each range.
        length: ``(k,)`` int ``>= 0`` length of each range.

    Returns:
        int64 ``(sum(length),)``: the ranges end to end.
    """
    start = np.asarray(start, dtype=np.int64)
    length = np.asarray(length, dtype=np.int64)
    total = int(length.sum())
    return np.repeat(start - (np.cumsum(length) - length), length) + np.arange(total)


@dataclass(frozen=True)
class SparseReliability:
    """The present values of a raters × units reliability matrix, sorted by column then rater.

    Attributes:
        rater: ``(V,)`` int row (rater) of each value.
        column: ``(V,)`` int column (unit) of each value.
        code: ``(V,)`` int category code ``>= 0`` of each value.
        n_raters: the matrix's number of rows (raters).
        n_columns: the matrix's number of columns (units).
    """

    rater: np.ndarray
    column: np.ndarray
    code: np.ndarray
    n_raters: int
    n_columns: int

    @classmethod
    def build(cls, rater: ArrayLike, column: ArrayLike, code: ArrayLike, n_raters: int,
              n_columns: int) -> "SparseReliability":
        """From unsorted triples (at most one value per ``(rater, column)``).

        Args:
            rater: ``(V,)`` int rater of each value, in ``[0, n_raters)``.
            column: ``(V,)`` int column (unit) of each value, in ``[0, n_columns)``.
            code: ``(V,)`` int code ``>= 0`` of each value.
            n_raters: number of raters.
            n_columns: number of columns.

        Returns:
            The values sorted by column, then rater.

        Raises:
            ValueError: arrays of different lengths, or a negative code.
        """
        rater = np.asarray(rater, dtype=np.int64).reshape(-1)
        column = np.asarray(column, dtype=np.int64).reshape(-1)
        code = np.asarray(code, dtype=np.int64).reshape(-1)
        if not (len(rater) == len(column) == len(code)):
            raise ValueError("rater, column and code must have equal lengths")
        if len(code) and code.min() < 0:
            raise ValueError("codes must be >= 0 (a missing value is simply absent)")
        order = np.lexsort((rater, column))
        return cls(rater[order], column[order], code[order], int(n_raters), int(n_columns))

    @classmethod
    def from_dense(cls, rel: np.ndarray) -> "SparseReliability":
        """From a ``(raters, units)`` int matrix with ``-1`` for missing.

        Args:
            rel: ``(raters, units)`` integer codes ``>= 0``, ``-1`` where missing.

        Returns:
            Its present values, sorted by column, then rater.

        Raises:
            ValueError: not 2-D, or a code below ``-1``.
            TypeError: not integer codes.
        """
        rel = np.asarray(rel)
        if rel.ndim != 2:
            raise ValueError(f"reliability must be a 2-D raters x units array, got shape {rel.shape}")
        if not np.issubdtype(rel.dtype, np.integer):
            raise TypeError("reliability must hold integer codes (-1 for missing)")
        if rel.size and rel.min() < -1:
            raise ValueError("reliability codes must be >= 0, or -1 for missing")
        col, row = np.nonzero(rel.T >= 0)  # column-major: sorted by column, then rater
        return cls(row.astype(np.int64), col.astype(np.int64), rel[row, col].astype(np.int64),
                   rel.shape[0], rel.shape[1])

    def dense(self) -> np.ndarray:
        """The ``(raters, units)`` matrix, ``-1`` for missing (for small matrices and tests)."""
        out = np.full((self.n_raters, self.n_columns), -1, dtype=np.int64)
        out[self.rater, self.column] = self.code
        return out

    def __len__(self) -> int:
        return len(self.code)

    @property
    def n_codes(self) -> int:
        """``max(code) + 1`` (0 when empty)."""
        return int(self.code.max()) + 1 if len(self.code) else 0

    def column_bounds(self) -> np.ndarray:
        """``(n_columns + 1,)``: the values of column ``u`` are ``bounds[u]:bounds[u + 1]``."""
        return np.searchsorted(self.column, np.arange(self.n_columns + 1))

    def value_of(self, rater: np.ndarray, column: np.ndarray) -> np.ndarray:
        """The code at each ``(rater, column)``, ``-1`` where missing.

        Args:
            rater: int raters.
            column: int columns, broadcastable with ``rater``.

        Returns:
            int64 codes, of their broadcast shape.
        """
        key = self.column * max(self.n_raters, 1) + self.rater
        q = np.asarray(column, dtype=np.int64) * max(self.n_raters, 1) + np.asarray(rater, dtype=np.int64)
        if not len(key):
            return np.full(np.shape(q), -1, dtype=np.int64)
        pos = np.clip(np.searchsorted(key, q), 0, len(key) - 1)
        return np.where(key[pos] == q, self.code[pos], -1)


@dataclass(frozen=True)
class GroupedAlpha:
    """Nominal α of several groups of columns: arrays over the groups.

    Attributes:
        alpha: α, NaN where undefined.
        observed: ``D_o`` in ``[0, 1]`` (NaN where ``n < 2``).
        expected: ``D_e`` in ``[0, 1]`` (NaN where ``n < 2``; 0 without variation).
        n: pairable values.
        n_units: pairable units.
    """

    alpha: np.ndarray
    observed: np.ndarray
    expected: np.ndarray
    n: np.ndarray
    n_units: np.ndarray

    def reasons(self) -> np.ndarray:
        """Why each α is NaN (``""`` where defined)."""
        out = np.full(len(self.alpha), "", dtype=object)
        und = np.isnan(self.alpha)
        out[und & (self.n < 2)] = UNDEFINED_FEW
        out[und & (self.n >= 2)] = UNDEFINED_NO_VARIATION
        return out


def _finish(n: np.ndarray, O: np.ndarray, Q: np.ndarray, n_units: np.ndarray) -> GroupedAlpha:
    """α of each group from its sums (:func:`agreement.core.krippendorff.alpha_from_sums`)."""
    alpha, d_o, d_e = alpha_from_sums(n, O, Q)
    return GroupedAlpha(alpha, d_o, d_e, n, n_units)


def _column_counts(column: np.ndarray, code: np.ndarray, n_columns: int,
                   n_codes: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per column ``m_u`` and the distinct ``(column, code, n_uc)`` triples."""
    C = max(n_codes, 1)
    m = np.bincount(column, minlength=n_columns).astype(np.float64)
    key, cnt = np.unique(column.astype(np.int64) * C + code, return_counts=True)
    return m, key // C, key % C, cnt.astype(np.float64)


def _sum_by_key(keys: Sequence[np.ndarray], weights: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The sorted distinct keys of several keyed arrays and the sum of each key's weights, in key order."""
    key = np.concatenate(keys)
    out, inv = np.unique(key, return_inverse=True)
    return out, np.bincount(inv.reshape(-1), weights=np.concatenate(weights), minlength=len(out))


@dataclass(frozen=True)
class GroupSums:
    """The additive statistics behind nominal α of groups of columns: disjoint sets of columns add.

    ``n`` (pairable values), ``O`` (the diagonal of the coincidence matrix) and
    ``n_units`` per group, and the marginals ``n_gc`` as sorted keys
    ``g * n_codes + c`` with their counts. Statistics of consecutive runs of
    columns, added in order (:meth:`add`), give the α of all of them
    (:meth:`finish`): a diagnostic can then walk a large corpus in pieces with
    bounded memory, and the result depends on the pieces only, not on how the
    corpus was sharded.
    """

    n: np.ndarray
    O: np.ndarray
    n_units: np.ndarray
    gc_key: np.ndarray
    gc_count: np.ndarray
    n_codes: int

    def add(self, other: "GroupSums") -> "GroupSums":
        """The statistics of both sets of columns (same groups, same ``n_codes``).

        Args:
            other: the statistics of other columns, disjoint from these.

        Returns:
            Their sum: the statistics of the union of both sets of columns.

        Raises:
            ValueError: different groups or codes.
        """
        if len(self.n) != len(other.n) or self.n_codes != other.n_codes:
            raise ValueError("GroupSums of different groups or codes cannot be added")
        key, count = _sum_by_key([self.gc_key, other.gc_key], [self.gc_count, other.gc_count])
        return GroupSums(self.n + other.n, self.O + other.O, self.n_units + other.n_units, key, count,
                         self.n_codes)

    def marginal_squares(self) -> np.ndarray:
        """``Q_g = Σ_c n_gc²`` per group."""
        return np.bincount(self.gc_key // self.n_codes, weights=self.gc_count * self.gc_count,
                           minlength=len(self.n))

    def finish(self) -> GroupedAlpha:
        """α of every group (formulas in the module docstring)."""
        return _finish(self.n, self.O, self.marginal_squares(), self.n_units)


def group_sums(column: np.ndarray, code: np.ndarray, n_columns: int, column_group: np.ndarray, n_groups: int,
               *, n_codes: int | None = None) -> GroupSums:
    """The :class:`GroupSums` of the values ``(column, code)``: the additive statistics of nominal α per group.

    Args:
        column: ``(V,)`` column of each value (one value per rater and column).
        code: ``(V,)`` code ``>= 0`` of each value.
        n_columns: number of columns.
        column_group: ``(n_columns,)`` group of each column, ``0 .. n_groups - 1``.
        n_groups: number of groups.
        n_codes: at least ``max(code) + 1``, the same for every part of one computation (default
            ``max(code) + 1``).

    Returns:
        The :class:`GroupSums`; :meth:`GroupSums.finish` gives the α of :func:`grouped_values_alpha`
        (Krippendorff 2011).

    Raises:
        ValueError: ``column_group`` not of length ``n_columns``.
    """
    column = np.asarray(column, dtype=np.int64)
    code = np.asarray(code, dtype=np.int64)
    column_group = np.asarray(column_group, dtype=np.int64).reshape(-1)
    if len(column_group) != n_columns:
        raise ValueError("column_group must have one entry per column")
    C = max(int(n_codes or 0), int(code.max()) + 1 if len(code) else 1)
    m, uc_col, uc_code, cnt = _column_counts(column, code, n_columns, C)
    pairable = m >= 2
    g_col = column_group
    n = np.bincount(g_col[pairable], weights=m[pairable], minlength=n_groups)
    n_units = np.bincount(g_col[pairable], minlength=n_groups).astype(np.int64)
    keep = pairable[uc_col]
    uc_col, uc_code, cnt = uc_col[keep], uc_code[keep], cnt[keep]
    g_val = g_col[uc_col]
    O = np.bincount(g_val, weights=cnt * (cnt - 1.0) / (m[uc_col] - 1.0), minlength=n_groups)
    gk, inv = np.unique(g_val * C + uc_code, return_inverse=True)
    n_gc = np.bincount(inv.reshape(-1), weights=cnt, minlength=len(gk))
    return GroupSums(n, O, n_units, gk, n_gc, C)


def grouped_values_alpha(column: np.ndarray, code: np.ndarray, n_columns: int, column_group: np.ndarray,
                         n_groups: int) -> GroupedAlpha:
    r"""Nominal α of each group of columns, from the present values only.

    Args:
        column: ``(V,)`` column of each value (one value per rater and column).
        code: ``(V,)`` code ``>= 0`` of each value.
        n_columns: number of columns.
        column_group: ``(n_columns,)`` group of each column, ``0 .. n_groups - 1``.
        n_groups: number of groups.

    Returns:
        :class:`GroupedAlpha` over the groups (formulas in the module docstring;
        Krippendorff 2011): :func:`group_sums` finished.
    """
    return group_sums(column, code, n_columns, column_group, n_groups).finish()


@dataclass(frozen=True)
class LeaveOneOutSums:
    """The additive statistics of :func:`leave_one_rater_out`: disjoint sets of columns add (:meth:`add`).

    Attributes:
        full: the groups' :class:`GroupSums` with every rater.
        combo_key: sorted ``g * n_raters + r`` of the (group, rater) combinations with a value.
        d_n: per combination, the change of ``n`` when the rater is left out.
        d_O: per combination, the change of ``O`` when the rater is left out.
        d_units: per combination, the change of the pairable units when the rater is left out.
        d_key: the keys ``combo_key * n_codes + c`` of the marginals' changes.
        d_count: the change of the marginal at each key.
        n_raters: ``R``.
    """

    full: GroupSums
    combo_key: np.ndarray
    d_n: np.ndarray
    d_O: np.ndarray
    d_units: np.ndarray
    d_key: np.ndarray
    d_count: np.ndarray
    n_raters: int

    def add(self, other: "LeaveOneOutSums") -> "LeaveOneOutSums":
        """The statistics of both sets of columns (same groups, raters and codes).

        Args:
            other: the statistics of other columns, disjoint from these.

        Returns:
            Their sum: the statistics of the union of both sets of columns.

        Raises:
            ValueError: different raters (or groups or codes).
        """
        if self.n_raters != other.n_raters:
            raise ValueError("LeaveOneOutSums of different raters cannot be added")
        parts = [self.combo_key, other.combo_key]
        combo, d_n = _sum_by_key(parts, [self.d_n, other.d_n])
        _, d_O = _sum_by_key(parts, [self.d_O, other.d_O])
        _, d_units = _sum_by_key(parts, [self.d_units.astype(np.float64), other.d_units.astype(np.float64)])
        d_key, d_count = _sum_by_key([self.d_key, other.d_key], [self.d_count, other.d_count])
        return LeaveOneOutSums(full=self.full.add(other.full), combo_key=combo, d_n=d_n, d_O=d_O,
                               d_units=d_units.astype(np.int64), d_key=d_key, d_count=d_count, n_raters=self.n_raters)

    def finish(self) -> tuple[np.ndarray, np.ndarray, GroupedAlpha]:
        """``(group, rater, alpha)`` as :func:`leave_one_rater_out` returns them."""
        R, C, full = max(self.n_raters, 1), self.full.n_codes, self.full
        g = self.combo_key // R
        K = len(self.combo_key)
        n_red = full.n[g] + self.d_n
        O_red = full.O[g] + self.d_O
        units_red = full.n_units[g] + self.d_units
        d_index = np.searchsorted(self.combo_key, self.d_key // C)
        d_code, delta = self.d_key % C, self.d_count
        # n_gc of the full group for each (combo, code) touched
        grp = g[d_index] if len(d_index) else np.zeros(0, dtype=np.int64)
        want = grp * C + d_code
        if len(full.gc_key):
            pos = np.clip(np.searchsorted(full.gc_key, want), 0, len(full.gc_key) - 1)
            base = np.where(full.gc_key[pos] == want, full.gc_count[pos], 0.0)
        else:
            base = np.zeros(len(want))
        Q_red = full.marginal_squares()[g] + np.bincount(d_index, weights=2.0 * base * delta + delta * delta,
                                                         minlength=K)
        return g, self.combo_key % R, _finish(n_red, O_red, Q_red, units_red)


def leave_one_rater_out(values: SparseReliability, column_group: np.ndarray, n_groups: int
                        ) -> tuple[np.ndarray, np.ndarray, GroupedAlpha]:
    r"""Nominal α of every group with one rater's values left out, for every rater present in the group.

    Exact jackknife without re-matching, in one pass: leaving rater ``r`` out
    of column ``u`` (where it gave code ``c``) turns ``m_u`` into ``m_u − 1``
    and ``Σ_c n_uc(n_uc − 1)`` into that minus ``2(n_uc − 1)``; a column
    left with one value stops being pairable, taking its other value out of
    the marginals. Summed per (group, rater), these changes give ``n``,
    ``O`` and ``Σ_c n_c²`` of the reduced matrix, hence α (module docstring).

    Args:
        values: the reliability values.
        column_group: ``(n_columns,)`` group of each column.
        n_groups: number of groups.

    Returns:
        ``(group, rater, alpha)``: the (group, rater) combinations where the
        rater has a value, and :class:`GroupedAlpha` of each group without
        that rater, in the same order.
    """
    return leave_one_rater_out_sums(values, column_group, n_groups).finish()


def leave_one_rater_out_sums(values: SparseReliability, column_group: np.ndarray, n_groups: int,
                             *, n_codes: int | None = None) -> LeaveOneOutSums:
    """The :class:`LeaveOneOutSums` of ``values``: the additive statistics of :func:`leave_one_rater_out`.

    Args:
        values: the sparse reliability data.
        column_group: ``(n_columns,)`` group of each column, ``0 .. n_groups - 1``.
        n_groups: number of groups.
        n_codes: at least ``values.n_codes``, the same for every part of one computation (default
            ``values.n_codes``).

    Returns:
        The :class:`LeaveOneOutSums`; its ``finish()`` gives ``(group, rater, alpha)`` as
        :func:`leave_one_rater_out` (nominal α of each group without each rater, Krippendorff 2011).
    """
    col, code, rater = values.column, values.code, values.rater
    column_group = np.asarray(column_group, dtype=np.int64).reshape(-1)
    C = max(values.n_codes, int(n_codes or 0), 1)
    R = max(values.n_raters, 1)
    m, uc_col, uc_code, cnt = _column_counts(col, code, values.n_columns, C)
    # full-group statistics
    pairable = m >= 2
    n_full = np.bincount(column_group[pairable], weights=m[pairable], minlength=n_groups)
    u_full = np.bincount(column_group[pairable], minlength=n_groups).astype(np.int64)
    P = np.bincount(uc_col, weights=cnt * (cnt - 1.0), minlength=values.n_columns)  # Σ_c n_uc(n_uc−1)
    with np.errstate(divide="ignore", invalid="ignore"):
        O_col = np.where(pairable, P / (m - 1.0), 0.0)
    O_full = np.bincount(column_group, weights=O_col, minlength=n_groups)
    keep = pairable[uc_col]
    gc_full_key, gc_inv = np.unique(column_group[uc_col[keep]] * C + uc_code[keep], return_inverse=True)
    n_gc_full = np.bincount(gc_inv.reshape(-1), weights=cnt[keep], minlength=len(gc_full_key))
    # the (group, rater) combinations and each value's change
    g = column_group[col]
    combo_key, combo = np.unique(g * R + rater, return_inverse=True)
    combo = combo.reshape(-1)
    K = len(combo_key)
    n_uc_of_value = cnt[np.searchsorted(uc_col * C + uc_code, col * C + code)]
    mu = m[col]
    after = mu - 1.0
    was = mu >= 2
    stays = after >= 2
    with np.errstate(divide="ignore", invalid="ignore"):
        O_after = np.where(stays, (P[col] - 2.0 * (n_uc_of_value - 1.0)) / (after - 1.0), 0.0)
    d_n = np.where(stays, -1.0, np.where(was, -mu, 0.0))
    d_O = O_after - np.where(was, O_col[col], 0.0)
    d_units = np.where(was & ~stays, -1.0, 0.0)
    # marginal changes Δ(combo, code): −1 for the value's code while its column stays or stops being pairable,
    # and −1 for the other value's code of a column that stops being pairable (m_u = 2)
    dv_combo = [combo[was]]
    dv_code = [code[was]]
    stop = np.flatnonzero(was & ~stays)
    if len(stop):
        bounds = values.column_bounds()
        first = bounds[col[stop]]
        other = np.where(first == stop, first + 1, first)  # the column's other value
        dv_combo.append(combo[stop])
        dv_code.append(code[other])
    dc, dcode = np.concatenate(dv_combo), np.concatenate(dv_code)
    dkey, dinv = np.unique(dc * C + dcode, return_inverse=True)
    delta = -np.bincount(dinv.reshape(-1), minlength=len(dkey)).astype(np.float64)
    # keyed by (combination, code) so that sums of several parts line up
    d_key = combo_key[dkey // C] * C + dkey % C
    return LeaveOneOutSums(full=GroupSums(n_full, O_full, u_full, gc_full_key, n_gc_full, C), combo_key=combo_key,
                           d_n=np.bincount(combo, weights=d_n, minlength=K),
                           d_O=np.bincount(combo, weights=d_O, minlength=K),
                           d_units=np.bincount(combo, weights=d_units, minlength=K).astype(np.int64), d_key=d_key,
                           d_count=delta, n_raters=R)
