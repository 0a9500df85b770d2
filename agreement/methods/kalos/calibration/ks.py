r"""Kolmogorov–Smirnov statistics of the calibration (:mod:`agreement.methods.kalos.calibration`): one-sided
:math:`D^+ = \sup_x (F_{D_o}(x) - F_{D_e}(x))` (KαLOS's), two-sided
:math:`D = \sup_x |F_{D_o} - F_{D_e}|`, and the point of best separation (the middle of the interval
where ``F_o - F_e`` is largest). Effect sizes, no p-values.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from agreement.core.arrays import unique_sorted

# --------------------------------------------------------------------------
# KS statistics
# --------------------------------------------------------------------------


def _as_sample(x: Any, name: str) -> np.ndarray:
    arr = np.asarray(x, dtype=np.float64).reshape(-1)
    if arr.size == 0:
        raise ValueError(f"{name} is empty")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinite values")
    return arr


def _ecdf_difference(d_o: np.ndarray, d_e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pooled sorted unique values ``v`` and ``F_o(v) - F_e(v)`` (right-continuous)."""
    so, se = np.sort(d_o), np.sort(d_e)
    v = unique_sorted(np.concatenate([so, se]))
    diff = np.searchsorted(so, v, side="right") / len(so) - np.searchsorted(se, v, side="right") / len(se)
    return v, diff


def ks_one_sided(d_observed: Sequence[float] | np.ndarray, d_expected: Sequence[float] | np.ndarray) -> float:
    r"""One-sided two-sample Kolmogorov–Smirnov statistic, as KαLOS uses it.

    .. math:: D^+ = \sup_x \bigl(F_{o}(x) - F_{e}(x)\bigr)

    with :math:`F_o, F_e` the empirical CDFs of the observed and expected
    disagreement. Equal to ``scipy.stats.ks_2samp(d_observed, d_expected,
    alternative="greater").statistic`` and to ``kalos``'s
    ``calculate_ks_statistic``.

    Args:
        d_observed (array-like of shape (n,)): Finite observed distances (any real values; calibration uses
            ``[0, 1]``).
        d_expected (array-like of shape (m,)): Finite expected (chance) distances, likewise.

    Returns:
        float: In ``[0, 1]``: 1 when every observed value lies below every expected
            one, 0 when ``D_o`` is nowhere stochastically smaller than ``D_e``.

    Raises:
        ValueError: An empty or non-finite input.

    References:
        Tschirschwitz & Rodehorst, "KαLOS finds Consensus"; N. Smirnov, "Table for
        estimating the goodness of fit of empirical distributions", Ann. Math.
        Statist. 19(2), 1948.
    """
    d_o = _as_sample(d_observed, "d_observed")
    d_e = _as_sample(d_expected, "d_expected")
    _, diff = _ecdf_difference(d_o, d_e)
    return float(max(diff.max(), 0.0))


def ks_two_sided(d_observed: Sequence[float] | np.ndarray, d_expected: Sequence[float] | np.ndarray) -> float:
    r"""Two-sided two-sample Kolmogorov–Smirnov statistic.

    .. math:: D = \sup_x \bigl|F_{o}(x) - F_{e}(x)\bigr| = \max(D^+, D^-)

    over the pooled sample values; equal to ``scipy.stats.ks_2samp(d_observed,
    d_expected).statistic`` (tested as an oracle), computed here from the same
    ECDF difference as :func:`ks_one_sided`, without scipy's p-value.

    Args:
        d_observed (array-like of shape (n,)): Finite observed distances.
        d_expected (array-like of shape (m,)): Finite expected (chance) distances.

    Returns:
        float: In ``[0, 1]``; 0 for identical empirical distributions. Unlike
            :func:`ks_one_sided` it is also large when ``D_o`` is *larger* than
            ``D_e`` (agreement below chance).

    Raises:
        ValueError: An empty or non-finite input.

    References:
        Smirnov (1948); ``scipy.stats.ks_2samp``.
    """
    d_o = _as_sample(d_observed, "d_observed")
    d_e = _as_sample(d_expected, "d_expected")
    _, diff = _ecdf_difference(d_o, d_e)
    return float(np.abs(diff).max())


def ks_max_point(d_o: np.ndarray, d_e: np.ndarray) -> tuple[float, float]:
    r"""``(D+, x)``: the one-sided statistic and where the empirical CDFs differ most.

    :math:`D^+ = \max(0, \sup_x F_o(x) - F_e(x))` as in :func:`ks_one_sided`, and ``x`` the middle of the
    first interval ``[v_k, v_{k+1})`` of pooled values on which ``F_o - F_e`` attains it.

    Args:
        d_o: finite observed distances, ``(n,)`` float64 (non-empty).
        d_e: finite expected distances, ``(m,)`` float64 (non-empty).

    Returns:
        ``(D+, x)``: ``D+`` in ``[0, 1]``, ``x`` a pooled value or the midpoint of two.
    """
    v, diff = _ecdf_difference(d_o, d_e)
    k = int(np.argmax(diff))
    ks = float(max(diff[k], 0.0))
    x = float(v[k]) if k + 1 == len(v) else 0.5 * float(v[k] + v[k + 1])
    return ks, x
