r"""Krippendorff's alpha for one class per rater and sample, at the nominal, ordinal, interval or ratio level,
or with a user distance.

The input is a matrix of class codes ``codes`` of shape ``(S, R)``:
``S`` units (samples) as rows, ``R`` raters as columns, each cell a class code
in ``0 .. K-1`` or ``-1`` for a missing value (the layout of
:class:`agreement.core.ratings.ClassRatings`). It is the transpose of the
reliability matrix of the one Krippendorff core (:mod:`agreement.core.coincidence`,
:mod:`agreement.core.krippendorff`: raters as rows), which every function here
calls: the counts, the coincidence matrix, the result type (:class:`ClassAlpha` is
:class:`agreement.core.krippendorff.AlphaResult`), the distances and the formula
are the core's; this module adds the ``(S, R)`` checks and the unit bootstrap.

Besides ``codes``, every function here and in :mod:`agreement.methods.classes.diagnostics` takes a long
pandas DataFrame in place of ``codes`` (crowd-kit's ``task``, ``worker``, ``label`` columns; other names
through ``columns=``) or krippendorff's ``(raters × units)`` matrix as ``reliability_data=`` (``NaN`` or
``None`` missing); numeric labels keep their values for the interval and ratio levels. A bare wide matrix
without missing values is refused as ambiguous unless ``orientation="units_by_raters"`` confirms it
(:mod:`agreement.core.tables`, the orientation rule).

Following Krippendorff (2011):

* ``n_uc`` is the number of values ``c`` in unit ``u`` and ``m_u = sum_c n_uc``;
  only units with ``m_u >= 2`` are *pairable*;
* the **coincidence matrix** is
  ``o_ck = sum_u (n_uc n_uk - [c = k] n_uc) / (m_u - 1)`` over pairable units,
  ``n_c = sum_k o_ck`` and ``n = sum_c n_c`` (the number of pairable values);
* with a squared difference ``delta2_ck`` of the level of measurement,
  ``D_o = sum_ck o_ck delta2_ck / n`` and
  ``D_e = sum_ck n_c n_k delta2_ck / (n (n - 1))``;
* ``alpha = 1 - D_o / D_e``, at most 1: 1 perfect agreement, 0 agreement at
  chance level, below 0 systematic disagreement.

The differences (:func:`delta_matrix`):

* nominal: ``delta2_ck = [c != k]``;
* ordinal (codes are ranks ``0 < 1 < ... < K-1``):
  ``delta2_ck = (sum_{g=c..k} n_g - (n_c + n_k) / 2)**2``, i.e. the squared
  distance between the mid-ranks ``r_g = sum_{h<=g} n_h - n_g / 2`` of the two
  classes in the pooled pairable values;
* interval: ``delta2_ck = (v_c - v_k)**2`` with ``v`` the numeric value of each code;
* ratio: ``delta2_ck = ((v_c - v_k) / (v_c + v_k))**2`` (0 where ``v_c + v_k = 0``; values ``v >= 0``);
* a user distance: a callable of two arrays of values (as the ``krippendorff``
  package's ``level_of_measurement`` callable) or a ``(K, K)`` matrix of
  squared distances between the codes (square, symmetric, zero diagonal,
  non-negative, finite).

``alpha`` is undefined (NaN, with a reason) when there are fewer than two
pairable values or when they show no variation (``D_e = 0``).

Reference: K. Krippendorff, "Computing Krippendorff's Alpha-Reliability",
University of Pennsylvania, 2011 (https://repository.upenn.edu/asc_papers/43).
This module does not import FiftyOne.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np
import scipy.sparse as sp

from agreement.core import coincidence as _core
from agreement.core.coincidence import coincidence_sparse, pairable_counts, unit_coincidences
from agreement.core.krippendorff import (
    LEVELS,
    REASON_FEW,
    REASON_FLAT,
    AlphaResult,
    Distance,
    Level,
    alpha_from_coincidence,
    alpha_of_coincidences,
    check_level,
    distance_matrix,
)
from agreement.core.tables import ClassTable, check_orientation, class_table

__all__ = [
    "LEVELS",
    "Level",
    "Distance",
    "ClassAlpha",
    "check_codes",
    "resolve_codes",
    "unit_counts",
    "coincidence_matrix",
    "coincidence_sparse",
    "unit_coincidences",
    "delta_matrix",
    "alpha_from_coincidence",
    "class_alpha",
    "bootstrap_alpha",
    "REASON_FEW",
    "REASON_FLAT",
]

#: At most this many resampling weights are held in memory at once by :func:`bootstrap_alpha`.
_BOOT_CHUNK = 1 << 22

#: The one result type: :class:`agreement.core.krippendorff.AlphaResult` (the same class).
ClassAlpha = AlphaResult

#: The squared differences of a level: :func:`agreement.core.krippendorff.distance_matrix` (the same function).
delta_matrix = distance_matrix


def check_codes(codes: np.ndarray, *, n_classes: int | None = None) -> tuple[np.ndarray, int]:
    """Validates a ``(S, R)`` matrix of class codes (``-1`` missing) and returns it as int64 with ``K``.

    Args:
        codes: ``(S, R)`` integer codes in ``[-1, K-1]``.
        n_classes: ``K`` (default: the largest code + 1).

    Returns:
        ``(codes, K)``: the codes as int64 and the number of classes.

    Raises:
        ValueError: not two-dimensional, not integer, a code below ``-1`` or at least ``n_classes``.
    """
    arr = np.asarray(codes)
    if arr.ndim != 2:
        raise ValueError(f"codes must be a (samples, raters) matrix, got shape {arr.shape}")
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        if not np.issubdtype(arr.dtype, np.floating) or not np.all(arr == np.round(arr)):
            raise ValueError(f"codes must be integers (-1 for missing), got dtype {arr.dtype}")
    arr = arr.astype(np.int64, copy=False)
    top = int(arr.max()) + 1 if arr.size else 0
    if arr.size and arr.min() < -1:
        raise ValueError(f"codes must be >= -1 (-1 is missing), got {int(arr.min())}")
    K = top if n_classes is None else int(n_classes)
    if top > K:
        raise ValueError(f"code {top - 1} is out of range for n_classes={K}")
    return arr, max(K, 0)


def resolve_codes(codes: Any = None, /, *, reliability_data: Any = None, columns: Mapping[str, str] | None = None,
                  orientation: str | None = None, n_classes: int | None = None, level: Distance = "nominal",
                  values: np.ndarray | Sequence | None = None
                  ) -> tuple[ClassTable, np.ndarray, int, np.ndarray | Sequence | None]:
    """Codes, a long DataFrame or krippendorff's ``reliability_data`` as checked ``(S, R)`` codes.

    :func:`agreement.core.tables.class_table` (one input), :func:`check_codes`, the level
    (:func:`agreement.core.krippendorff.check_level`), then the orientation rule
    (:func:`agreement.core.tables.check_orientation`), so that a wrong code or level is reported first.
    A DataFrame's or reliability data's classes give ``K`` (unless ``n_classes``) and, when numeric, the
    ``values`` of the interval and ratio levels (unless ``values``).

    Args:
        codes: ``(S, R)`` class codes (``-1`` missing) or a long DataFrame.
        reliability_data: krippendorff's ``(R, S)`` matrix, ``NaN``/``None`` missing.
        columns: a DataFrame's column names by role (``task``, ``worker``, ``label``).
        orientation: ``"units_by_raters"`` confirms a wide complete ``codes`` matrix.
        n_classes: ``K`` (default: the number of classes of the input).
        level: the level of measurement (to refuse interval or ratio on labels that are not numbers).
        values: ``(K,)`` numeric value of each code.

    Returns:
        ``(table, codes, K, values)``.

    Raises:
        ValueError: any refusal of :func:`agreement.core.tables.class_table` or :func:`check_codes`; the
            interval or ratio level on labels that are not numbers without ``values``.
    """
    table = class_table(codes, reliability_data=reliability_data, columns=columns, orientation=orientation)
    if table.source == "codes":
        arr, K = check_codes(table.codes, n_classes=n_classes)
        check_level(level, values, K)
        check_orientation(arr, orientation)
        return table, arr, K, values
    K = table.n_classes if n_classes is None else int(n_classes)
    arr, K = check_codes(table.codes, n_classes=K)
    if values is None and table.values is not None:
        values = table.values
    if values is None and isinstance(level, str) and level in ("interval", "ratio"):
        raise ValueError(f"level {level!r} needs numeric labels, got {table.classes[:5]}...; pass values= (one "
                         f"number per class, in the order {table.classes[:5]}...) or use 'nominal' or 'ordinal'")
    return table, arr, K, values


def unit_counts(codes: np.ndarray, *, n_classes: int | None = None) -> sp.csr_matrix:
    """``n_uc``: the number of values of each class in each unit, as a sparse ``(S, K)`` matrix.

    :func:`agreement.core.coincidence.unit_counts` of the transpose (the core takes raters as rows).

    Args:
        codes: ``(S, R)`` class codes, ``-1`` missing.
        n_classes: ``K`` (default: the largest code + 1).

    Returns:
        ``(S, K)`` float64 CSR counts.
    """
    codes, K = check_codes(codes, n_classes=n_classes)
    return _core.unit_counts(codes.T, n_categories=K)


def coincidence_matrix(codes: np.ndarray, *, n_classes: int | None = None) -> np.ndarray:
    """The ``(K, K)`` coincidence matrix ``o_ck = sum_u (n_uc n_uk - [c = k] n_uc) / (m_u - 1)``.

    Sums over pairable units (``m_u >= 2``); symmetric, with row sums ``n_c``
    (Krippendorff 2011). :func:`agreement.core.coincidence.coincidence_matrix` of the
    transpose, built from sparse counts in time linear in the number of ratings.

    Args:
        codes: ``(S, R)`` class codes, ``-1`` missing.
        n_classes: ``K`` (default: the largest code + 1).

    Returns:
        ``(K, K)`` float64.
    """
    return np.asarray(coincidence_sparse(unit_counts(codes, n_classes=n_classes)).todense(), dtype=np.float64)


def class_alpha(codes: Any = None, /, *, level: Distance = "nominal", values: np.ndarray | Sequence | None = None,
                n_classes: int | None = None, reliability_data: Any = None, columns: Mapping[str, str] | None = None,
                orientation: str | None = None) -> ClassAlpha:
    """Krippendorff's alpha of a ``(samples, raters)`` matrix of class codes.

    ``alpha = 1 - D_o / D_e`` with ``D_o = sum_ck o_ck delta2_ck / n`` and
    ``D_e = sum_ck n_c n_k delta2_ck / (n (n - 1))`` from the coincidence matrix
    ``o`` (:func:`coincidence_matrix`), its row sums ``n_c`` and ``n = sum_c n_c``;
    ``delta2`` is the level's squared difference (:func:`delta_matrix`). Range:
    at most 1; 1 perfect agreement, 0 chance, below 0 systematic disagreement.
    Missing values (``-1``) are allowed anywhere; units with fewer than two
    values are not pairable and do not count.

    Args:
        codes: ``(S, R)`` class codes in ``0 .. K-1``, ``-1`` missing (rows units, columns raters).
        level: ``"nominal"``, ``"ordinal"`` (codes are ranks), ``"interval"``, ``"ratio"``
            (``delta2_ck = ((v_c - v_k) / (v_c + v_k))**2``, values ``>= 0``), a callable distance of two
            value arrays (as the ``krippendorff`` package's) or a ``(K, K)`` matrix of squared distances
            between the codes (square, symmetric, zero diagonal, non-negative, finite).
        values: ``(K,)`` numeric value of each code, for ``"interval"``, ``"ratio"`` and callables
            (default: the codes themselves).
        n_classes: ``K`` (default: the largest code + 1); classes nobody used change nothing.
        reliability_data: instead of ``codes``, krippendorff's ``(raters × units)`` matrix, ``NaN`` or
            ``None`` missing, numbers or strings (numbers keep their values for interval and ratio).
        columns: when ``codes`` is a long DataFrame, its column names by role (default
            ``{"task": "task", "worker": "worker", "label": "label"}``, crowd-kit's).
        orientation: ``"units_by_raters"`` confirms a ``codes`` matrix with more columns than rows and no
            ``-1`` (refused as ambiguous otherwise: :mod:`agreement.core.tables`).

    Returns:
        :class:`ClassAlpha` ``(alpha, observed, expected, n_pairable, n_units, reason)``;
        NaN with a reason when fewer than two pairable values exist or they show no variation.

    Raises:
        ValueError: codes out of range, both ``codes`` and ``reliability_data``, NaN in ``codes``, a
            DataFrame without the columns or with two labels of one worker on one task, an ambiguous
            orientation, an unknown level.

    Reference:
        K. Krippendorff, "Computing Krippendorff's Alpha-Reliability", 2011.

    Examples:
        >>> class_alpha(np.array([[0, 0], [1, 1], [0, 1]])).alpha  # doctest: +ELLIPSIS
        0.444...
        >>> class_alpha(reliability_data=[[0, 1, 0], [0, 1, 1]]).alpha  # doctest: +ELLIPSIS
        0.444...
    """
    _, codes, K, values = resolve_codes(codes, reliability_data=reliability_data, columns=columns,
                                        orientation=orientation, n_classes=n_classes, level=level, values=values)
    check_level(level, values, K)
    counts = unit_counts(codes, n_classes=K)
    n_units = int((np.asarray(counts.sum(axis=1)).reshape(-1) >= 2).sum())
    o = np.asarray(coincidence_sparse(counts).todense(), dtype=np.float64)
    return alpha_from_coincidence(o, n_units=n_units, level=level, values=values)


def bootstrap_alpha(codes: Any = None, /, *, level: Distance = "nominal", values: np.ndarray | Sequence | None = None,
                    n_boot: int = 1000, seed: int = 0, ci: float = 0.95, n_classes: int | None = None,
                    reliability_data: Any = None, columns: Mapping[str, str] | None = None,
                    orientation: str | None = None) -> tuple[float, float]:
    """A percentile bootstrap confidence interval of :func:`class_alpha` that resamples units.

    Each replicate draws ``S_p`` pairable units with replacement (``S_p`` the
    number of pairable units; units without a pair add nothing to alpha) and
    computes alpha of the coincidence matrix ``o* = sum_u w_u o^u``, with
    ``w_u`` the number of times unit ``u`` was drawn and ``o^u`` its
    contribution (:func:`unit_coincidences`, precomputed once, sparse). For
    the ordinal level the differences follow each replicate's marginals.
    The interval is the ``(1 - ci)/2`` and ``(1 + ci)/2`` percentiles of the
    defined replicates (Efron & Tibshirani 1993, percentile method).

    Args:
        codes: ``(S, R)`` class codes, ``-1`` missing.
        level: ``"nominal"``, ``"ordinal"``, ``"interval"``, ``"ratio"``, a callable or a ``(K, K)`` matrix.
        values: ``(K,)`` numeric value of each code (interval, ratio, callable).
        n_boot: the number of replicates.
        seed: seed of ``numpy.random.default_rng``: the same seed gives the same interval.
        ci: the coverage, in ``(0, 1)``.
        n_classes: ``K`` (default: the largest code + 1).
        reliability_data: instead of ``codes``, krippendorff's ``(raters × units)`` matrix (:func:`class_alpha`).
        columns: a long DataFrame's column names by role (:func:`class_alpha`).
        orientation: ``"units_by_raters"`` confirms a wide complete ``codes`` matrix (:func:`class_alpha`).

    Returns:
        ``(low, high)``; ``(nan, nan)`` when no replicate has a defined alpha.

    Reference:
        K. Krippendorff, "Computing Krippendorff's Alpha-Reliability", 2011;
        B. Efron and R. Tibshirani, "An Introduction to the Bootstrap", 1993.
    """
    if not 0.0 < ci < 1.0:
        raise ValueError(f"ci must be in (0, 1), got {ci}")
    if n_boot < 1:
        raise ValueError(f"n_boot must be at least 1, got {n_boot}")
    _, codes, K, values = resolve_codes(codes, reliability_data=reliability_data, columns=columns,
                                        orientation=orientation, n_classes=n_classes, level=level, values=values)
    check_level(level, values, K)
    U, freq = _unit_patterns(unit_counts(codes, n_classes=K))
    S_p = int(freq.sum())
    if S_p == 0:
        return (np.nan, np.nan)
    rng = np.random.default_rng(seed)
    UT = U.T.tocsr()
    P = len(freq)
    chunk = max(1, _BOOT_CHUNK // P)
    alphas = []
    for start in range(0, n_boot, chunk):
        b = min(chunk, n_boot - start)
        w = rng.multinomial(S_p, freq / S_p, size=b).astype(np.float64)  # (b, P) draws of each pattern
        o = np.asarray(UT @ w.T).T.reshape(b, K, K)
        alphas.append(alpha_of_coincidences(o, level=level, values=values)[0])
    a = np.concatenate(alphas)
    if not np.isfinite(a).any():
        return (np.nan, np.nan)
    low, high = np.nanpercentile(a, [50.0 * (1.0 - ci), 50.0 * (1.0 + ci)])
    return float(low), float(high)


def _unit_patterns(counts: sp.csr_matrix) -> tuple[sp.csr_matrix, np.ndarray]:
    """The distinct count vectors of the pairable units (sorted), their coincidence rows and frequencies.

    Drawing ``S_p`` units uniformly with replacement is drawing the distinct
    patterns from a multinomial with their frequencies: the same distribution,
    with far fewer categories when many units look alike, and independent of
    the order of the units.
    """
    N, _, _ = pairable_counts(counts)
    if N.shape[0] * max(N.shape[1], 1) <= (1 << 26):
        patterns, freq = np.unique(N.toarray(), axis=0, return_counts=True)
        P = sp.csr_matrix(patterns)
    else:  # too wide to compare densely: every unit is its own pattern
        P, freq = N, np.ones(N.shape[0], dtype=np.int64)
    U, _ = unit_coincidences(P)
    return U, freq.astype(np.float64)
