"""Nominal Krippendorff's alpha from a reliability matrix, via the coincidence matrix.

For a reliability matrix with raters as rows and units as columns, each cell a
category code or missing, Krippendorff (2011) defines:

* ``m_u``: the number of values in unit ``u`` (non-missing cells). Only units
  with ``m_u >= 2`` are *pairable*; the others are dropped.
* the **coincidence matrix** ``o_ck = sum_u (number of ordered pairs of values
  (c, k) in u from different raters) / (m_u - 1)``, that is, with ``n_uc`` the
  number of values ``c`` in unit ``u``,
  ``o_ck = sum_u (n_uc * n_uk - [c == k] * n_uc) / (m_u - 1)``;
* ``n_c = sum_k o_ck`` and ``n = sum_c n_c`` (the number of pairable values);
* for nominal data (``delta_ck = [c != k]``):
  ``D_o = (n - sum_c o_cc) / n`` and ``D_e = (n**2 - sum_c n_c**2) / (n (n - 1))``;
* ``alpha = 1 - D_o / D_e`` at most 1: 1 is perfect agreement, 0 agreement at
  chance level, below 0 systematic disagreement (its lower limit depends on the
  data; it approaches -1 for maximal disagreement between two equally frequent
  categories).

``alpha`` is undefined (NaN, with a reason) when fewer than two pairable values
exist (``n < 2``) or when the pairable values show no variation (``D_e = 0``:
every value is the same category).

Reference: K. Krippendorff, "Computing Krippendorff's Alpha-Reliability",
University of Pennsylvania, 2011 (https://repository.upenn.edu/asc_papers/43).

This module does not import FiftyOne and is shared by every method that ends in
a nominal reliability matrix (threshold-matching baselines, KαLOS).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Hashable, Sequence

import numpy as np

__all__ = [
    "AlphaResult",
    "encode_values",
    "coincidence_matrix",
    "alpha_from_coincidence",
    "alpha_from_sums",
    "NO_VARIATION_EPS",
    "nominal_alpha",
]


@dataclass(frozen=True)
class AlphaResult:
    """Nominal Krippendorff's alpha with its parts.

    Attributes:
        alpha: ``1 - observed / expected`` (at most 1); NaN when undefined.
        observed: observed disagreement ``D_o`` in ``[0, 1]`` (NaN if ``n < 2``).
        expected: expected disagreement ``D_e`` in ``[0, 1]`` (NaN if ``n < 2``).
        n_pairable: ``n``, the number of pairable values (values in units with
            at least two values).
        n_units: the number of pairable units.
        reason: why ``alpha`` is NaN; ``""`` when it is defined.
    """

    alpha: float
    observed: float
    expected: float
    n_pairable: float
    n_units: int
    reason: str = ""

    @property
    def defined(self) -> bool:
        return not np.isnan(self.alpha)


def encode_values(
    values: np.ndarray | Sequence, missing: Sequence[Hashable] = (None,)
) -> tuple[np.ndarray, list]:
    """Turns an array of hashable category values into integer codes.

    Args:
        values: array of any shape of hashable values (class names, ints, ...).
        missing: values that mean "no value" (coded ``-1``). Float NaN is always
            missing.

    Returns:
        ``(codes, categories)``: an int64 array of the same shape, ``-1`` where
        missing, otherwise the index into ``categories`` (sorted by ``str``
        for a deterministic order independent of input order).
    """
    arr = np.asarray(values, dtype=object)
    flat = arr.reshape(-1)
    missing_set = set(m for m in missing if m is not None)
    none_missing = any(m is None for m in missing)

    def is_missing(v) -> bool:
        if v is None:
            return none_missing
        if isinstance(v, float) and np.isnan(v):
            return True
        try:
            return v in missing_set
        except TypeError:
            return False

    present = [not is_missing(v) for v in flat]
    cats = sorted({v for v, p in zip(flat, present) if p}, key=lambda v: (str(type(v).__name__), str(v)))
    index = {v: i for i, v in enumerate(cats)}
    codes = np.fromiter(
        (index[v] if p else -1 for v, p in zip(flat, present)), dtype=np.int64, count=len(flat)
    )
    return codes.reshape(arr.shape), cats


def _as_codes(reliability: np.ndarray, missing: int) -> np.ndarray:
    """Validates a raters x units matrix of codes; returns int64 with -1 missing."""
    rel = np.asarray(reliability)
    if rel.ndim != 2:
        raise ValueError(f"reliability must be a 2-D raters x units array, got shape {rel.shape}")
    if rel.dtype == object:
        raise TypeError("reliability must hold numeric codes; use encode_values() for labels")
    if np.issubdtype(rel.dtype, np.floating):
        miss = np.isnan(rel) | (rel == missing)
        if np.any(np.isinf(rel)):
            raise ValueError("reliability contains infinite values")
        vals = rel[~miss]
        if vals.size and np.any(vals != np.round(vals)):
            raise ValueError("reliability codes must be integers (or NaN for missing)")
        codes = np.where(miss, -1, np.nan_to_num(rel, nan=-1)).astype(np.int64)
    elif np.issubdtype(rel.dtype, np.integer) or rel.dtype == bool:
        codes = rel.astype(np.int64)
        codes = np.where(codes == missing, -1, codes)
    else:
        raise TypeError(f"unsupported dtype {rel.dtype} for reliability codes")
    if np.any(codes < -1):
        raise ValueError(f"category codes must be >= 0 (missing is {missing} or NaN)")
    return codes


def coincidence_matrix(
    reliability: np.ndarray, missing: int = -1, n_categories: int | None = None
) -> np.ndarray:
    """The coincidence matrix of a raters x units reliability matrix.

    ``o_ck = sum_u (n_uc * n_uk - [c == k] * n_uc) / (m_u - 1)`` over units with
    ``m_u >= 2`` values, where ``n_uc`` counts the values ``c`` in unit ``u``
    (Krippendorff 2011, section B). The matrix is symmetric and its total is the
    number of pairable values ``n``.

    Args:
        reliability: ``(raters, units)`` integer codes ``>= 0``; ``missing`` (default
            ``-1``) or NaN (float input) marks a missing value.
        missing: the code for a missing value.
        n_categories: size of the returned matrix (default ``max code + 1``).

    Returns:
        ``(C, C)`` float64 coincidence matrix indexed by code.
    """
    codes = _as_codes(reliability, missing)
    return _coincidence(codes, n_categories)


def _coincidence(codes: np.ndarray, n_categories: int | None) -> np.ndarray:
    n_raters, n_units = codes.shape
    C = int(codes.max()) + 1 if codes.size and codes.max() >= 0 else 0
    if n_categories is not None:
        if n_categories < C:
            raise ValueError(f"n_categories={n_categories} but the largest code is {C - 1}")
        C = int(n_categories)
    counts = _unit_counts(codes, C)  # (units, C)
    m = counts.sum(axis=1)
    keep = m >= 2
    counts = counts[keep].astype(np.float64)
    w = 1.0 / (m[keep] - 1.0)
    o = (counts * w[:, None]).T @ counts
    o[np.diag_indices(C)] -= (counts * w[:, None]).sum(axis=0)
    return o


def _unit_counts(codes: np.ndarray, C: int) -> np.ndarray:
    """``(units, C)`` number of values of each category in each unit."""
    n_raters, n_units = codes.shape
    present = codes >= 0
    unit = np.broadcast_to(np.arange(n_units), codes.shape)[present]
    flat = unit * C + codes[present]
    return np.bincount(flat, minlength=n_units * C).reshape(n_units, C) if C else np.zeros((n_units, 0), np.int64)


#: ``D_e`` at or below this is no variation (float noise of a single category).
NO_VARIATION_EPS = 1e-15


def alpha_from_sums(n, same, squares) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Nominal α from its three sums, vectorised over groups of units: the one formula every α here uses.

    With ``n`` pairable values, ``same = sum_c o_cc`` (the coincidence matrix's
    trace) and ``squares = sum_c n_c**2``:
    ``D_o = max((n - same) / n, 0)``, ``D_e = (n**2 - squares) / (n (n - 1))``,
    ``alpha = 1 - D_o / D_e`` (Krippendorff 2011), at most 1, 0 at chance.

    Returns:
        ``(alpha, D_o, D_e)`` as arrays (0-d for scalars): NaN where ``n < 2``;
        ``alpha`` NaN and ``D_e`` 0 where ``D_e <= NO_VARIATION_EPS`` (no variation).
    """
    n, same, squares = (np.asarray(x, dtype=np.float64) for x in (n, same, squares))
    with np.errstate(divide="ignore", invalid="ignore"):
        ok = n >= 2
        d_o = np.where(ok, np.maximum((n - same) / n, 0.0), np.nan)
        d_e = np.where(ok, (n * n - squares) / (n * (n - 1.0)), np.nan)
        alpha = np.where(ok & (d_e > NO_VARIATION_EPS), 1.0 - d_o / d_e, np.nan)
    d_e = np.where(ok & (d_e <= NO_VARIATION_EPS), 0.0, d_e)
    return alpha, d_o, d_e


def alpha_from_coincidence(o: np.ndarray, n_units: int = -1) -> AlphaResult:
    """Nominal alpha from a coincidence matrix.

    ``n_c = sum_k o_ck``, ``n = sum_c n_c``,
    ``D_o = (n - sum_c o_cc) / n``, ``D_e = (n**2 - sum_c n_c**2) / (n (n - 1))``,
    ``alpha = 1 - D_o / D_e`` at most 1 (Krippendorff 2011).

    Coincidence matrices of disjoint sets of units add, so this also pools
    several reliability matrices (e.g. one per rater pair).

    Args:
        o: ``(C, C)`` symmetric coincidence matrix.
        n_units: number of pairable units behind ``o`` (reported only).

    Returns:
        :class:`AlphaResult`; NaN with a reason when ``n < 2`` or ``D_e = 0``.
    """
    o = np.asarray(o, dtype=np.float64)
    if o.ndim != 2 or o.shape[0] != o.shape[1]:
        raise ValueError(f"coincidence matrix must be square, got shape {o.shape}")
    n_c = o.sum(axis=1)
    n = float(n_c.sum())
    if n < 2:
        return AlphaResult(np.nan, np.nan, np.nan, n, n_units,
                           f"fewer than 2 pairable values (n = {n:g}): no unit has two or more values")
    alpha, d_o, d_e = (float(x) for x in alpha_from_sums(n, float(np.trace(o)), float(np.dot(n_c, n_c))))
    if np.isnan(alpha):
        return AlphaResult(np.nan, d_o, 0.0, n, n_units,
                           "no variation: every pairable value is the same category (D_e = 0)")
    return AlphaResult(alpha, d_o, d_e, n, n_units, "")


def nominal_alpha(reliability: np.ndarray, missing: int = -1) -> AlphaResult:
    """Nominal Krippendorff's alpha of a raters x units reliability matrix.

    ``alpha = 1 - D_o / D_e = 1 - (n - 1) (n - sum_c o_cc) / (n**2 - sum_c n_c**2)``
    with ``o`` the coincidence matrix (see :func:`coincidence_matrix`), ``n_c``
    its row sums and ``n`` the number of pairable values. Range: at most 1;
    1 perfect agreement, 0 agreement at chance level, negative below chance.

    Args:
        reliability: ``(raters, units)`` category codes (integers ``>= 0``);
            ``missing`` (default ``-1``) or NaN (float input) marks a missing
            value. Units with fewer than two values are not pairable and are
            ignored. Use :func:`encode_values` to code class names.
        missing: the code for a missing value.

    Returns:
        :class:`AlphaResult` ``(alpha, observed, expected, n_pairable, n_units,
        reason)``; ``alpha`` is NaN with a reason when fewer than two pairable
        values exist or when they show no variation (``D_e = 0``).

    Reference:
        K. Krippendorff, "Computing Krippendorff's Alpha-Reliability", 2011.

    Examples:
        >>> nominal_alpha(np.array([[0, 1, 0], [0, 1, 1]])).alpha  # doctest: +ELLIPSIS
        0.444...
    """
    codes = _as_codes(reliability, missing)
    o = _coincidence(codes, None)
    n_units = int(((codes >= 0).sum(axis=0) >= 2).sum())
    return alpha_from_coincidence(o, n_units)
