"""Krippendorff's alpha from a reliability matrix, via the coincidence matrix: every level, one core.

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

Levels of measurement. With a squared distance ``delta2_ck`` between the codes,
``D_o = sum_ck o_ck delta2_ck / n`` and ``D_e = sum_ck n_c n_k delta2_ck / (n (n - 1))``
(:func:`distance_matrix`, :func:`level_alpha`); nominal is ``delta2_ck = [c != k]``,
the formulas above. The levels (Krippendorff 2011, section D):

* ``"nominal"``: ``delta2_ck = [c != k]``;
* ``"ordinal"`` (codes are ranks): ``delta2_ck = (sum_{g=c..k} n_g - (n_c + n_k) / 2)**2``;
* ``"interval"``: ``delta2_ck = (v_c - v_k)**2``;
* ``"ratio"``: ``delta2_ck = ((v_c - v_k) / (v_c + v_k))**2`` (0 where ``v_c + v_k = 0``),
  values ``v >= 0`` with an absolute zero; invariant to scaling every value by a positive constant;
* a user distance: a callable of two arrays of values (as the ``krippendorff``
  package's ``level_of_measurement`` callable: ``f(v1, v2)``, or
  ``f(v1, v2, i1, i2, n_v, dtype)`` with the codes ``i`` and the pairable values
  per code ``n_v``), or a ``(K, K)`` matrix of squared distances between the codes
  (square, symmetric, zero on the diagonal, non-negative, finite).

``v`` are the numeric values of the codes (``values``; default the codes themselves).

Reference: K. Krippendorff, "Computing Krippendorff's Alpha-Reliability",
University of Pennsylvania, 2011 (https://repository.upenn.edu/asc_papers/43).

The one Krippendorff core: one orientation (raters as rows, units as columns; the coincidence
matrix is built in :mod:`agreement.core.coincidence`), one result type (:class:`AlphaResult`), one
dispatch from a coincidence matrix to α at every level (:func:`alpha_of_coincidences`,
:func:`alpha_from_coincidence`). It does not import FiftyOne and is shared by every method that ends in
a reliability matrix or a coincidence matrix (threshold-matching baselines, KαLOS, image-level classes
and tags, semantic masks, tracks).
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, Callable, Literal, Sequence, Union

import numpy as np
from numpy.typing import ArrayLike

from agreement.core.coincidence import (
    as_codes,
    coincidence_matrix,
    coincidence_sparse,
    encode_values,
    unit_counts,
)

__all__ = [
    "LEVELS",
    "Level",
    "Distance",
    "check_level",
    "check_distance_matrix",
    "distance_matrix",
    "alpha_from_distances",
    "level_alpha",
    "AlphaResult",
    "encode_values",
    "coincidence_matrix",
    "alpha_from_coincidence",
    "alpha_of_coincidences",
    "alpha_from_sums",
    "takes_marginals",
    "REASON_FEW",
    "REASON_FLAT",
    "REASON_SAME_CATEGORY",
    "NO_VARIATION_EPS",
    "nominal_alpha",
]


@dataclass(frozen=True)
class AlphaResult:
    """Krippendorff's alpha with its parts.

    Attributes:
        alpha: ``1 - observed / expected`` (at most 1); NaN when undefined.
        observed: observed disagreement ``D_o`` (nominal: in ``[0, 1]``; NaN if ``n < 2``).
        expected: expected disagreement ``D_e`` (nominal: in ``[0, 1]``; NaN if ``n < 2``).
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
        """``alpha`` is a number (not NaN)."""
        return not np.isnan(self.alpha)


#: ``D_e`` at or below this is no variation (float noise of a single category).
NO_VARIATION_EPS = 1e-15


def alpha_from_sums(n: ArrayLike, same: ArrayLike, squares: ArrayLike) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Nominal α from its three sums, vectorised over groups of units: the one formula every α here uses.

    With ``n`` pairable values, ``same = sum_c o_cc`` (the coincidence matrix's
    trace) and ``squares = sum_c n_c**2``:
    ``D_o = max((n - same) / n, 0)``, ``D_e = (n**2 - squares) / (n (n - 1))``,
    ``alpha = 1 - D_o / D_e`` (Krippendorff 2011), at most 1, 0 at chance.

    Args:
        n: pairable values, per group.
        same: the trace of each group's coincidence matrix.
        squares: ``sum_c n_c**2`` of each group.

    Returns:
        ``(alpha, D_o, D_e)`` as arrays (0-d for scalars): NaN where ``n < 2``;
        ``alpha`` NaN and ``D_e`` 0 where ``D_e <= NO_VARIATION_EPS`` (no variation).
    """
    m, o, q = (np.asarray(x, dtype=np.float64) for x in (n, same, squares))
    with np.errstate(divide="ignore", invalid="ignore"):
        ok = m >= 2
        d_o = np.where(ok, np.maximum((m - o) / m, 0.0), np.nan)
        d_e = np.where(ok, (m * m - q) / (m * (m - 1.0)), np.nan)
        alpha = np.where(ok & (d_e > NO_VARIATION_EPS), 1.0 - d_o / d_e, np.nan)
    d_e = np.where(ok & (d_e <= NO_VARIATION_EPS), 0.0, d_e)
    return alpha, d_o, d_e


def nominal_alpha(reliability: np.ndarray, *, missing: int = -1) -> AlphaResult:
    """Nominal Krippendorff's alpha of a raters x units reliability matrix.

    ``alpha = 1 - D_o / D_e = 1 - (n - 1) (n - sum_c o_cc) / (n**2 - sum_c n_c**2)``
    with ``o`` the coincidence matrix (see :func:`coincidence_matrix`), ``n_c``
    its row sums and ``n`` the number of pairable values. Range: at most 1;
    1 perfect agreement, 0 agreement at chance level, negative below chance.
    :func:`level_alpha` at the nominal level.

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
    return level_alpha(reliability, level="nominal", missing=missing)


# --- levels of measurement and user distances -------------------------------------------------------------

Level = Literal["nominal", "ordinal", "interval", "ratio"]
#: A level's name, a callable distance of two value arrays, or a ``(K, K)`` matrix of squared distances.
Distance = Union[str, Callable[..., np.ndarray], np.ndarray]
LEVELS: tuple[str, ...] = ("nominal", "ordinal", "interval", "ratio")
_NUMERIC = ("interval", "ratio")


def check_distance_matrix(d: np.ndarray | Sequence, *, n_codes: int | None = None, name: str = "level") -> np.ndarray:
    """Validates a matrix of squared distances between codes and returns it as float64.

    Args:
        d: ``(K, K)`` squared distances ``delta2_ck`` between the codes.
        n_codes: the number of codes ``K`` it must cover at least (``None``: any).
        name: the parameter named in the messages.

    Raises:
        ValueError: not square, too small, not finite, negative, not symmetric or not zero on the diagonal.
    """
    m = np.asarray(d, dtype=np.float64)
    if m.ndim != 2 or m.shape[0] != m.shape[1]:
        raise ValueError(f"{name}: a distance matrix must be square (K x K), got shape {m.shape}")
    if n_codes is not None and m.shape[0] < n_codes:
        raise ValueError(f"{name}: the distance matrix is {m.shape[0]} x {m.shape[0]} but the data has "
                         f"{n_codes} codes; give a squared distance for every pair of codes")
    if not np.all(np.isfinite(m)):
        raise ValueError(f"{name}: the distance matrix must be finite (it holds NaN or inf)")
    if np.any(m < 0):
        raise ValueError(f"{name}: the distance matrix must be non-negative (squared distances); "
                         f"its least entry is {m.min():g}")
    if np.any(np.diag(m) != 0):
        raise ValueError(f"{name}: the distance matrix must be zero on the diagonal (a code is at distance 0 "
                         f"from itself); its largest diagonal entry is {np.abs(np.diag(m)).max():g}")
    if not np.allclose(m, m.T, rtol=1e-12, atol=0.0):
        raise ValueError(f"{name}: the distance matrix must be symmetric (delta2_ck = delta2_kc); the largest "
                         f"difference is {np.abs(m - m.T).max():g}")
    return m


def check_level(level: Distance, values: np.ndarray | Sequence | None, n_codes: int) -> np.ndarray | None:
    """Validates a level (name, callable or matrix) with the values of the codes.

    Args:
        level: ``"nominal"``, ``"ordinal"``, ``"interval"``, ``"ratio"``, a callable distance or a
            ``(K, K)`` matrix of squared distances (module docstring).
        values: ``(K,)`` numeric value of each code (interval, ratio, callable; default the codes).
        n_codes: ``K``.

    Returns:
        The values of the codes as float64 for ``"interval"``, ``"ratio"`` and callables, else ``None``.

    Raises:
        ValueError: an unknown level, values missing for a code or not finite, negative values at the
            ratio level, values given with a distance matrix, an invalid matrix.
    """
    if isinstance(level, str):
        if level not in LEVELS:
            raise ValueError(f"level must be one of {LEVELS}, a callable distance or a (K x K) matrix of squared "
                             f"distances, got {level!r}")
        if level not in _NUMERIC:
            return None
    elif callable(level):
        pass
    else:
        if values is not None:
            raise ValueError("values are not used with a distance matrix (level=matrix): put the distances "
                             "between the codes in the matrix and leave values=None")
        check_distance_matrix(level, n_codes=n_codes)
        return None
    if values is None:
        return np.arange(n_codes, dtype=np.float64)
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    if len(v) < n_codes:
        raise ValueError(f"values must give a number for each of the {n_codes} codes, got {len(v)}")
    if not np.all(np.isfinite(v)):
        raise ValueError("values must be finite numbers")
    if isinstance(level, str) and level == "ratio" and np.any(v[:n_codes] < 0):
        raise ValueError(f"level='ratio' needs values >= 0 (a ratio scale has an absolute zero), got "
                         f"{v[:n_codes].min():g}; use level='interval' for values that can be negative")
    return v


def takes_marginals(fn: Callable) -> bool:
    """Whether a distance callable takes the ``krippendorff`` package's keywords.

    Args:
        fn: a callable distance (module docstring).

    Returns:
        True when its signature has ``**kwargs`` or the keywords ``i1``, ``i2`` and ``n_v`` (it is then given the
        marginals ``n_v`` too), else False (also for a callable without an inspectable signature).
    """
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return any(p.kind is p.VAR_KEYWORD for p in params.values()) or {"i1", "i2", "n_v"} <= set(params)


def _user_distance(fn: Callable, v: np.ndarray, n_c: np.ndarray) -> np.ndarray:
    """One ``(K, K)`` matrix of a callable distance, validated."""
    K = len(n_c)
    i = np.arange(K)
    if takes_marginals(fn):
        kw: dict[str, Any] = dict(i1=i[:, None], i2=i[None, :], n_v=n_c)
        if "dtype" in inspect.signature(fn).parameters or any(
                p.kind is p.VAR_KEYWORD for p in inspect.signature(fn).parameters.values()):
            kw["dtype"] = np.float64
        d = fn(v[:K, None], v[None, :K], **kw)
    else:
        d = fn(v[:K, None], v[None, :K])
    d = np.broadcast_to(np.asarray(d, dtype=np.float64), (K, K))
    return check_distance_matrix(d, n_codes=K, name="level (the callable's distances)")


def distance_matrix(level: Distance, n_c: np.ndarray, *, values: np.ndarray | Sequence | None = None) -> np.ndarray:
    """The squared distances ``delta2_ck`` of a level of measurement (Krippendorff 2011, section D).

    * nominal: ``[c != k]``;
    * ordinal: ``(sum_{g=c..k} n_g - (n_c + n_k) / 2)**2 = (r_k - r_c)**2`` with the mid-ranks
      ``r_g = sum_{h<=g} n_h - n_g / 2`` (codes are ranks);
    * interval: ``(v_c - v_k)**2``;
    * ratio: ``((v_c - v_k) / (v_c + v_k))**2``, 0 where ``v_c + v_k = 0``; in ``[0, 1]`` for ``v >= 0``;
    * a ``(K, K)`` matrix: itself (validated); a callable: its values on every pair of codes
      (evaluated per batch element when it takes the marginals ``n_v``).

    Args:
        level: a level's name, a callable distance or a ``(K, K)`` matrix (see the module).
        n_c: ``(..., K)`` pairable values per code (the coincidence matrix's row sums); a leading batch
            shape gives a batch of matrices.
        values: ``(K,)`` numeric value of each code (interval, ratio, callable; default the codes).

    Returns:
        ``(..., K, K)`` float64, zero on the diagonal, symmetric, non-negative.
    """
    n_c = np.asarray(n_c, dtype=np.float64)
    K = n_c.shape[-1]
    batch = n_c.shape[:-1]
    v = check_level(level, values, K)
    if isinstance(level, str):
        if level == "nominal":
            nominal: np.ndarray = np.broadcast_to(1.0 - np.eye(K), batch + (K, K)).copy()
            return nominal
        if level == "ordinal":
            mid = np.cumsum(n_c, axis=-1) - n_c / 2.0
            ordinal: np.ndarray = (mid[..., :, None] - mid[..., None, :]) ** 2
            return ordinal
        assert v is not None
        a, b = v[:K, None], v[None, :K]
        if level == "interval":
            d = (a - b) ** 2
        else:
            s = a + b
            d = np.divide(a - b, s, out=np.zeros((K, K)), where=s != 0) ** 2
        numeric: np.ndarray = np.broadcast_to(d, batch + (K, K)).copy()
        return numeric
    if not callable(level):
        given: np.ndarray = np.broadcast_to(check_distance_matrix(level, n_codes=K)[:K, :K], batch + (K, K)).copy()
        return given
    assert v is not None
    if not takes_marginals(level) or not batch:
        flat = n_c.reshape(-1, K)[0] if batch else n_c
        user: np.ndarray = np.broadcast_to(_user_distance(level, v, flat), batch + (K, K)).copy()
        return user
    flat = n_c.reshape(-1, K)
    return np.stack([_user_distance(level, v, x) for x in flat]).reshape(batch + (K, K))


def alpha_from_distances(o: np.ndarray, d: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(alpha, D_o, D_e, n)`` of a batch of coincidence matrices and their squared distances.

    ``n_c = sum_k o_ck``, ``n = sum_c n_c``, ``D_o = max(sum_ck o_ck delta2_ck / n, 0)``,
    ``D_e = sum_ck n_c n_k delta2_ck / (n (n - 1))``, ``alpha = 1 - D_o / D_e``, at most 1, 0 at chance
    (Krippendorff 2011). NaN where ``n < 2``; ``alpha`` NaN and ``D_e`` 0 where
    ``D_e <= NO_VARIATION_EPS * max(max delta2, 1)`` (no variation).

    Args:
        o: ``(..., K, K)`` coincidence matrices.
        d: ``(..., K, K)`` squared distances (:func:`distance_matrix`), broadcastable to ``o``.
    """
    o = np.asarray(o, dtype=np.float64)
    d = np.asarray(d, dtype=np.float64)
    n_c = o.sum(axis=-1)
    n = n_c.sum(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ok = n >= 2
        d_o = np.where(ok, np.maximum((o * d).sum(axis=(-1, -2)) / n, 0.0), np.nan)
        d_e = np.where(ok, np.einsum("...c,...ck,...k->...", n_c, d, n_c) / (n * (n - 1.0)), np.nan)
        scale = np.maximum(d.max(axis=(-1, -2)), 1.0) if d.size else np.ones_like(n)
        flat = ok & (d_e <= NO_VARIATION_EPS * scale)
        alpha = np.where(ok & ~flat, 1.0 - d_o / d_e, np.nan)
    d_e = np.where(flat, 0.0, d_e)
    return alpha, d_o, d_e, n


def alpha_of_coincidences(o: np.ndarray, *, level: Distance = "nominal", values: np.ndarray | Sequence | None = None
                          ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(alpha, D_o, D_e, n)`` of a batch of coincidence matrices at a level: the one dispatch of every α.

    Nominal: :func:`alpha_from_sums` of ``n = sum_c n_c``, ``sum_c o_cc`` and ``sum_c n_c**2``
    (``D_o = (n - sum_c o_cc) / n``, ``D_e = (n**2 - sum_c n_c**2) / (n (n - 1))``); every other level:
    :func:`alpha_from_distances` with the level's :func:`distance_matrix`. ``alpha = 1 - D_o / D_e``,
    at most 1, 0 at chance (Krippendorff 2011).

    Args:
        o: ``(..., K, K)`` coincidence matrices.
        level: a level's name, a callable distance or a ``(K, K)`` matrix (module docstring).
        values: ``(K,)`` numeric value of each code (interval, ratio, callable; default the codes).

    Returns:
        Arrays over the batch (0-d for one matrix): NaN where ``n < 2``; ``alpha`` NaN and ``D_e`` 0 where
        the values show no variation.
    """
    o = np.asarray(o, dtype=np.float64)
    if isinstance(level, str) and level == "nominal":
        n_c = o.sum(axis=-1)
        squares = np.dot(n_c, n_c) if o.ndim == 2 else np.einsum("...c,...c->...", n_c, n_c)
        n = n_c.sum(axis=-1)
        alpha, d_o, d_e = alpha_from_sums(n, np.trace(o, axis1=-2, axis2=-1), squares)
        return alpha, d_o, d_e, np.asarray(n, dtype=np.float64)
    return alpha_from_distances(o, distance_matrix(level, o.sum(axis=-1), values=values))


#: Why α is NaN: too few pairable values (format with ``n``), or no variation (nominal, other levels).
REASON_FEW = "fewer than 2 pairable values (n = {n:g}): no unit has two or more values"
REASON_SAME_CATEGORY = "no variation: every pairable value is the same category (D_e = 0)"
REASON_FLAT = "no variation: the pairable values do not differ (D_e = 0)"


def alpha_from_coincidence(o: np.ndarray, *, n_units: int = -1, level: Distance = "nominal",
                           values: np.ndarray | Sequence | None = None) -> AlphaResult:
    """Krippendorff's alpha from a coincidence matrix, at any level of measurement.

    ``n_c = sum_k o_ck``, ``n = sum_c n_c``, ``D_o = sum_ck o_ck delta2_ck / n``,
    ``D_e = sum_ck n_c n_k delta2_ck / (n (n - 1))``, ``alpha = 1 - D_o / D_e`` at most 1, 0 at chance
    (Krippendorff 2011); nominal (``delta2_ck = [c != k]``): ``D_o = (n - sum_c o_cc) / n`` and
    ``D_e = (n**2 - sum_c n_c**2) / (n (n - 1))`` (:func:`alpha_of_coincidences`).

    Coincidence matrices of disjoint sets of units add, so this also pools
    several reliability matrices (e.g. one per rater pair).

    Args:
        o: ``(K, K)`` symmetric coincidence matrix.
        n_units: number of pairable units behind ``o`` (reported only).
        level: ``"nominal"``, ``"ordinal"``, ``"interval"``, ``"ratio"``, a callable distance or a
            ``(K, K)`` matrix of squared distances.
        values: ``(K,)`` numeric values of the codes (interval, ratio, callable; default the codes).

    Returns:
        :class:`AlphaResult`; NaN with a reason when ``n < 2`` or ``D_e = 0``.

    Raises:
        ValueError: ``o`` is not square, or an invalid level (:func:`check_level`).
    """
    o = np.asarray(o, dtype=np.float64)
    if o.ndim != 2 or o.shape[0] != o.shape[1]:
        raise ValueError(f"coincidence matrix must be square, got shape {o.shape}")
    check_level(level, values, o.shape[0])
    alpha, d_o, d_e, n = (float(x) for x in alpha_of_coincidences(o, level=level, values=values))
    if not n >= 2:
        return AlphaResult(np.nan, np.nan, np.nan, n, n_units, REASON_FEW.format(n=n))
    if np.isnan(alpha):
        nominal = isinstance(level, str) and level == "nominal"
        return AlphaResult(np.nan, d_o, 0.0, n, n_units, REASON_SAME_CATEGORY if nominal else REASON_FLAT)
    return AlphaResult(alpha, d_o, d_e, n, n_units, "")


def level_alpha(reliability: np.ndarray, *, level: Distance = "nominal", values: np.ndarray | Sequence | None = None,
                missing: int = -1) -> AlphaResult:
    """Krippendorff's alpha of a raters x units reliability matrix at any level of measurement.

    ``alpha = 1 - D_o / D_e`` with ``D_o = sum_ck o_ck delta2_ck / n`` and
    ``D_e = sum_ck n_c n_k delta2_ck / (n (n - 1))``, ``o`` the coincidence matrix
    (:func:`coincidence_matrix`), ``n_c`` its row sums, ``n`` the pairable values and ``delta2`` the
    level's squared distance (:func:`distance_matrix`; ratio: ``((v_c - v_k) / (v_c + v_k))**2``).
    Range: at most 1; 1 perfect agreement, 0 chance, below 0 systematic disagreement. Nominal equals
    :func:`nominal_alpha`; every level equals the ``krippendorff`` package's ``alpha``.

    Args:
        reliability: ``(raters, units)`` integer codes ``>= 0``; ``missing`` or NaN (float input) missing.
        level: ``"nominal"``, ``"ordinal"`` (codes are ranks), ``"interval"``, ``"ratio"``, a callable
            distance or a ``(K, K)`` matrix of squared distances between the codes.
        values: ``(K,)`` numeric value of each code (interval, ratio, callable; default the codes).
        missing: the code for a missing value.

    Returns:
        :class:`AlphaResult`; NaN with a reason when ``n < 2`` or the values show no variation.

    Reference:
        K. Krippendorff, "Computing Krippendorff's Alpha-Reliability", 2011.

    Examples:
        >>> level_alpha(np.array([[1, 2, 3], [1, 2, 4]]), level="ratio").alpha  # doctest: +ELLIPSIS
        0.948...
    """
    codes = as_codes(reliability, missing=missing)
    K = int(codes.max()) + 1 if codes.size and codes.max() >= 0 else 0
    if not isinstance(level, str) and not callable(level):
        K = max(K, np.shape(level)[0] if np.ndim(level) == 2 else K)
    check_level(level, values, K)
    counts = unit_counts(codes, n_categories=K)
    n_units = int((np.asarray(counts.sum(axis=1)).reshape(-1) >= 2).sum())
    o = np.asarray(coincidence_sparse(counts).todense(), dtype=np.float64)
    return alpha_from_coincidence(o, n_units=n_units, level=level, values=values)
