r"""How many raters per item does a task need? A statistic against raters per item, and its projection.

Three steps, each usable alone:

1. :func:`rater_curve` measures a corpus statistic (by default Krippendorff's α, :func:`alpha_statistic`)
   with ``k = 2, 3, ...`` raters per item, by subsampling raters within items: for each ``k``, every item
   with at least ``k`` ratings keeps ``k`` of its raters drawn at random (without replacement, a seeded
   :class:`numpy.random.Generator`), the statistic is computed on that data, and this is repeated
   ``repeats`` times. Per ``k`` the result holds the mean of the draws, their ``(1 - c)/2`` and
   ``(1 + c)/2`` percentiles (``c`` the confidence), the items kept and the cost in labels
   (``k × items``).
2. α does not grow with ``k``: it is the reliability of *one* rater (a per-pair quantity; more raters
   per item only estimate it more precisely). What grows with ``k`` is the reliability of the
   ``k``-rater *consensus*, which classical test theory projects with the Spearman–Brown formula
   ``rho_k = k r / (1 + (k - 1) r)`` (:func:`consensus_reliability`).
3. :func:`raters_needed` gives the smallest ``k`` whose consensus reliability, projected from the
   *lower* bound of the measured interval, reaches a target, and its cost in labels.

The input is reliability data as a ``(items, raters)`` float matrix, ``NaN`` where a rater did not label
the item (the transpose of the ``krippendorff`` package's ``reliability_data``). α itself is computed by
the library's one Krippendorff core (:func:`agreement.core.krippendorff.level_alpha`).

References:
    C. Spearman, "Correlation calculated from faulty data", British Journal of Psychology 3, 1910;
    W. Brown, "Some experimental results in the correlation of mental abilities", British Journal of
    Psychology 3, 1910; K. Krippendorff, "Computing Krippendorff's Alpha-Reliability", 2011;
    B. Efron and R. Tibshirani, "An Introduction to the Bootstrap", 1993.

This module does not import FiftyOne.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Callable, Sequence

import numpy as np
from numpy.typing import ArrayLike

from agreement.core.krippendorff import LEVELS, level_alpha

__all__ = [
    "Statistic",
    "RaterCurve",
    "RatersNeeded",
    "alpha_statistic",
    "rater_curve",
    "consensus_reliability",
    "raters_needed",
    "PROJECTIONS",
]

#: A corpus statistic of reliability data: a ``(items, raters)`` float matrix (``NaN`` missing) -> a number
#: (``NaN`` when undefined).
Statistic = Callable[[np.ndarray], float]

_NUMERIC_LEVELS = ("interval", "ratio")
#: How :func:`raters_needed` reads beyond a curve: Spearman–Brown (reliabilities), or not at all.
PROJECTIONS = ("spearman_brown", "none")


@dataclass(frozen=True)
class RaterCurve:
    """A statistic against the number of raters per item, from rater subsampling (:func:`rater_curve`).

    Every per-``k`` attribute is a tuple aligned with ``ks``.

    Attributes:
        statistic: the statistic's name (e.g. ``"alpha_nominal"``).
        ks: the raters per item measured, increasing, each ``>= 2`` (``>= 1`` for a statistic of one rater,
            whose ``min_k`` is 1).
        mean: the mean of the defined draws at each ``k`` (NaN when none is defined).
        low: the ``(1 - confidence)/2`` percentile of the defined draws.
        high: the ``(1 + confidence)/2`` percentile of the defined draws.
        n_items: the items kept at each ``k`` (those with at least ``k`` ratings).
        labels: the cost in labels at each ``k``: ``k × n_items``.
        n_undefined: the draws at each ``k`` whose statistic was NaN (left out of mean and percentiles).
        confidence: the coverage of ``[low, high]``, in ``(0, 1)``.
        repeats: the draws per ``k``.
        seed: the seed of the draws.
        resample_items: whether each draw also resampled the kept items with replacement.
        n_items_total: the items (rows) of the data.
        n_raters: the raters (columns) of the data.
    """

    statistic: str
    ks: tuple[int, ...]
    mean: tuple[float, ...]
    low: tuple[float, ...]
    high: tuple[float, ...]
    n_items: tuple[int, ...]
    labels: tuple[int, ...]
    n_undefined: tuple[int, ...]
    confidence: float
    repeats: int
    seed: int
    resample_items: bool
    n_items_total: int
    n_raters: int

    @property
    def max_k(self) -> int:
        """The largest number of raters per item measured."""
        return self.ks[-1]

    def consensus(self) -> dict[str, tuple[float, ...]]:
        """The Spearman–Brown reliability of the ``k``-rater consensus at each measured ``k``.

        ``rho_k = k r / (1 + (k - 1) r)`` of ``mean``, ``low`` and ``high`` (:func:`consensus_reliability`;
        monotone in ``r``, so the bounds stay bounds). Meaningful for α/ICC-type reliabilities only.

        Returns:
            ``{"mean": ..., "low": ..., "high": ...}`` aligned with ``ks``.
        """
        k = np.asarray(self.ks, dtype=np.float64)
        return {name: tuple(float(x) for x in _spearman_brown(np.asarray(getattr(self, name)), k))
                for name in ("mean", "low", "high")}

    def as_dict(self) -> dict[str, Any]:
        """Plain values for JSON (NaN kept): every attribute, tuples as lists, and ``max_k``."""
        out = {key: list(v) if isinstance(v, tuple) else v for key, v in asdict(self).items()}
        out["max_k"] = self.max_k
        return out


@dataclass(frozen=True)
class RatersNeeded:
    """The smallest number of raters per item whose consensus reaches a target (:func:`raters_needed`).

    Attributes:
        k: the raters per item; ``None`` when no number of raters reaches the target (see ``reason``).
        target: the consensus reliability asked for, in ``(0, 1)``.
        confidence: the coverage of the curve's interval whose lower bound was projected; ``None`` for a
            single reliability value (no interval).
        reliability: the projected consensus reliability at ``k`` (``rho_k`` of ``single_rater``); NaN when
            ``k`` is ``None``.
        single_rater: the one-rater reliability ``r`` projected at ``k`` (the lower bound of the curve at the
            measured ``k`` used, or the value given).
        measured: ``k`` is within the measured curve (``k <= max_k``); ``False`` when projected beyond it or
            computed from a single value.
        labels_per_item: the labels ``k`` raters cost per item (``k``); ``None`` with ``k``.
        labels: ``k × items`` of the curve's data; ``None`` for a single value or when ``k`` is ``None``.
        reason: why ``k`` is ``None``; ``""`` otherwise.
        projection: ``"spearman_brown"`` (``reliability`` is the consensus reliability ``rho_k``) or ``"none"``
            (the statistic itself is read at measured ``k`` only: ``reliability`` and ``single_rater`` are the
            lower bound of the statistic at ``k``).
    """

    k: int | None
    target: float
    confidence: float | None
    reliability: float
    single_rater: float
    measured: bool
    labels_per_item: int | None
    labels: int | None
    reason: str = ""
    projection: str = "spearman_brown"

    def as_dict(self) -> dict[str, Any]:
        """Plain values for JSON (NaN kept)."""
        return asdict(self)


def alpha_statistic(*, level: str = "nominal") -> Statistic:
    """Krippendorff's α of ``(items, raters)`` float reliability data at a level, as a :data:`Statistic`.

    The distinct values become codes in increasing order (so ordinal ranks follow the values) and keep
    their values for the interval and ratio levels; then
    :func:`agreement.core.krippendorff.level_alpha` of the ``(raters, items)`` codes:
    ``alpha = 1 - D_o / D_e`` (Krippendorff 2011), at most 1, 0 at chance; NaN when fewer than two
    pairable values exist or they do not vary.

    Args:
        level: ``"nominal"``, ``"ordinal"``, ``"interval"`` or ``"ratio"`` (values ``>= 0``).

    Returns:
        A function of a ``(items, raters)`` float matrix (``NaN`` missing) returning α as a float; its
        ``__name__`` is ``"alpha_<level>"``.

    Raises:
        ValueError: an unknown level.

    Reference:
        K. Krippendorff, "Computing Krippendorff's Alpha-Reliability", 2011.

    Examples:
        >>> alpha_statistic(level="nominal")(np.array([[0.0, 0.0], [1.0, 1.0], [0.0, 1.0]]))  # doctest: +ELLIPSIS
        0.444...
    """
    if level not in LEVELS:
        raise ValueError(f"level must be one of {LEVELS}, got {level!r}")

    def statistic(values: np.ndarray) -> float:
        data = np.asarray(values, dtype=np.float64)
        rated = ~np.isnan(data)
        distinct, inverse = np.unique(data[rated], return_inverse=True)
        codes = np.full(data.shape, -1, dtype=np.int64)
        codes[rated] = inverse
        numeric = distinct if level in _NUMERIC_LEVELS else None
        return float(level_alpha(codes.T, level=level, values=numeric).alpha)

    statistic.__name__ = statistic.__qualname__ = f"alpha_{level}"
    return statistic


def _check_data(values: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """``(data, counts)``: the checked ``(items, raters)`` float matrix and the ratings per item."""
    try:
        data = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise ValueError(f"values must be a numeric (items, raters) matrix with NaN for missing: {err}") from None
    if data.ndim != 2:
        raise ValueError(f"values must be a 2-D (items, raters) matrix, got shape {data.shape}")
    if data.shape[0] == 0 or data.shape[1] == 0:
        raise ValueError(f"values is empty: shape {data.shape} (items, raters)")
    if np.isinf(data).any():
        item, rater = (int(i) for i in np.argwhere(np.isinf(data))[0])
        raise ValueError(f"values has an infinite value at item {item}, rater {rater}; use NaN for missing")
    if data.shape[1] < 2:
        raise ValueError(f"values has {data.shape[1]} rater (column); rater subsampling needs at least 2")
    counts = (~np.isnan(data)).sum(axis=1)
    if counts.max() < 2:
        raise ValueError("no item has ratings from 2 or more raters: nothing to measure agreement on")
    return data, counts


def _check_ks(ks: Sequence[int] | None, top: int, low: int = 2) -> tuple[int, ...]:
    """The raters per item to measure, checked and sorted: the given ones, or by default every ``k`` from ``low``
    to 12 and, beyond, about 25 % apart up to ``top`` (``top`` included: a crowd of 90 raters per item costs 26
    points, not 89)."""
    if ks is None:
        dense = list(range(low, min(top, 12) + 1))
        k = 12
        while k < top:
            k = min(top, max(k + 1, int(round(k * 1.25))))
            dense.append(k)
        return tuple(dense)
    out = []
    for k in ks:
        if isinstance(k, bool) or not float(k).is_integer():
            raise ValueError(f"ks must be integers, got {k!r}")
        if not low <= int(k) <= top:
            raise ValueError(f"ks: k = {int(k)} is outside {low} .. {top} (the most ratings any item has)")
        out.append(int(k))
    if not out:
        raise ValueError("ks is empty: give at least one number of raters per item, or None for all")
    return tuple(sorted(set(out)))


def _check_confidence(confidence: float) -> float:
    """``confidence`` as a float in ``(0, 1)``."""
    if isinstance(confidence, bool) or not 0.0 < float(confidence) < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    return float(confidence)


def _min_k(statistic: Statistic) -> int:
    """The fewest raters per item ``statistic`` is defined with: its ``min_k`` attribute (1 or 2), else 2."""
    low = getattr(statistic, "min_k", 2)
    if isinstance(low, bool) or low not in (1, 2):
        raise ValueError(f"statistic.min_k must be 1 or 2, got {low!r}")
    return int(low)


def _evaluate(statistic: Statistic, draw: np.ndarray, items: np.ndarray) -> float:
    """``statistic`` of one draw; a statistic with ``needs_items`` also gets the draw's rows of the data."""
    if getattr(statistic, "needs_items", False):
        return float(statistic(draw, items=items))  # type: ignore[call-arg]
    return float(statistic(draw))


def _draws(data: np.ndarray, k: int, *, statistic: Statistic, repeats: int, rng: np.random.Generator,
           resample_items: bool, items: np.ndarray) -> np.ndarray:
    """``repeats`` values of ``statistic`` on ``data`` (items with at least ``k`` ratings, rows ``items`` of
    the whole data) with ``k`` raters per item drawn without replacement (and the items drawn with
    replacement when ``resample_items``)."""
    rated = ~np.isnan(data)
    rows = np.arange(data.shape[0])[:, None]
    if not resample_items and bool((rated.sum(axis=1) == k).all()):
        return np.full(repeats, _evaluate(statistic, data, items))  # every draw keeps every rating: one value
    out = np.empty(repeats, dtype=np.float64)
    for r in range(repeats):
        keys = rng.random(data.shape)
        keys[~rated] = np.inf  # unrated raters sort last: the first k are k distinct raters of the item
        chosen = np.argpartition(keys, k - 1, axis=1)[:, :k] if k < data.shape[1] else np.argsort(keys, axis=1)
        keep = np.zeros(data.shape, dtype=bool)
        keep[rows, chosen[:, :k]] = True
        draw, at = np.where(keep, data, np.nan), items
        if resample_items:
            pick = rng.integers(0, data.shape[0], size=data.shape[0])
            draw, at = draw[pick], items[pick]
        out[r] = _evaluate(statistic, draw, at)
    return out


def rater_curve(values: ArrayLike, *, statistic: Statistic, ks: Sequence[int] | None = None, repeats: int = 200,
                confidence: float = 0.9, seed: int = 0, resample_items: bool = False) -> RaterCurve:
    """A corpus statistic against the number of raters per item, by subsampling raters within items.

    For each ``k`` (default every ``k`` from ``m`` to 12, then about 25 % apart up to ``K`` included; ``K``
    the most ratings any item has, ``m`` the statistic's ``min_k`` attribute: 2 by default, 1 for a statistic
    defined with one rater per item such as the accuracy of a consensus,
    :mod:`agreement.methods.planning.consensus_accuracy`), the items with at least
    ``k`` ratings are kept; each of ``repeats`` draws keeps, per item, ``k`` of its raters drawn uniformly
    without replacement (rater columns keep their identity; the others become ``NaN``) and evaluates
    ``statistic`` on the kept items. Per ``k``: the mean of the defined draws and the percentile interval
    ``[q_{(1-c)/2}, q_{(1+c)/2}]`` (``c`` = ``confidence``), the items kept and the cost ``k × items``.
    The draws of one ``k`` come from ``numpy.random.default_rng([seed, k])``: the same seed gives the same
    curve whichever ``ks`` are asked for.

    The interval shows how much the statistic depends on *which* ``k`` raters label each item, for these
    items (it narrows as ``k`` approaches the raters available, and has width 0 where every kept item has
    exactly ``k`` ratings). With ``resample_items=True`` each draw also resamples the kept items with
    replacement (a nonparametric bootstrap, Efron & Tibshirani 1993), so the interval includes the
    uncertainty from the sample of items too.

    Args:
        values: ``(items, raters)`` reliability data, ``NaN`` where the rater did not label the item.
        statistic: reliability data -> float (NaN when undefined), e.g. :func:`alpha_statistic`. A statistic
            with a true ``needs_items`` attribute is called ``statistic(draw, items=rows)``, ``rows`` the
            indices of the draw's rows in ``values`` (to align a per-item reference, e.g. gold labels).
        ks: the raters per item to measure, each in ``m .. K`` (default every k up to 12, then about 25 % apart, and K).
        repeats: draws per ``k``, at least 1.
        confidence: the coverage of the interval, in ``(0, 1)``.
        seed: the seed of the draws.
        resample_items: also resample the kept items with replacement in each draw.

    Returns:
        :class:`RaterCurve`.

    Raises:
        ValueError: values not a non-empty 2-D numeric matrix, infinite values, fewer than 2 raters, no
            item with 2 ratings, ``ks`` outside ``m .. K``, ``repeats < 1``, ``confidence`` outside
            ``(0, 1)``, ``statistic`` not callable.

    Reference:
        K. Krippendorff, "Computing Krippendorff's Alpha-Reliability", 2011 (α);
        B. Efron and R. Tibshirani, "An Introduction to the Bootstrap", 1993 (percentile intervals).
    """
    data, counts = _check_data(values)
    if not callable(statistic):
        raise ValueError(f"statistic must be a callable of reliability data, got {type(statistic).__name__}")
    if isinstance(repeats, bool) or not float(repeats).is_integer() or int(repeats) < 1:
        raise ValueError(f"repeats must be an integer >= 1, got {repeats!r}")
    conf = _check_confidence(confidence)
    k_list = _check_ks(ks, int(counts.max()), _min_k(statistic))
    q = [50.0 * (1.0 - conf), 50.0 * (1.0 + conf)]
    mean, low, high, n_items, n_undefined = [], [], [], [], []
    for k in k_list:
        items = np.flatnonzero(counts >= k)
        kept = data[items]
        a = _draws(kept, k, statistic=statistic, repeats=int(repeats), rng=np.random.default_rng([int(seed), k]),
                   resample_items=resample_items, items=items)
        defined = a[np.isfinite(a)]
        n_undefined.append(int(a.size - defined.size))
        n_items.append(int(kept.shape[0]))
        if defined.size:
            lo, hi = np.percentile(defined, q)
            mean.append(float(defined.mean()))
            low.append(float(lo))
            high.append(float(hi))
        else:
            mean.append(np.nan)
            low.append(np.nan)
            high.append(np.nan)
    return RaterCurve(statistic=getattr(statistic, "__name__", type(statistic).__name__), ks=k_list,
                      mean=tuple(mean), low=tuple(low), high=tuple(high), n_items=tuple(n_items),
                      labels=tuple(k * n for k, n in zip(k_list, n_items, strict=True)),
                      n_undefined=tuple(n_undefined), confidence=conf, repeats=int(repeats), seed=int(seed),
                      resample_items=bool(resample_items), n_items_total=int(data.shape[0]),
                      n_raters=int(data.shape[1]))


def _spearman_brown(r: np.ndarray, k: np.ndarray) -> np.ndarray:
    """``k r / (1 + (k - 1) r)`` where the denominator is positive, NaN elsewhere (unchecked)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        den = 1.0 + (k - 1.0) * r
        return np.where(den > 0, k * r / np.where(den > 0, den, 1.0), np.nan)


def consensus_reliability(alpha_1: ArrayLike, k: ArrayLike) -> np.ndarray | float:
    """The Spearman–Brown reliability of the mean (consensus) of ``k`` raters from one rater's reliability.

    ``rho_k = k r / (1 + (k - 1) r)``, with ``r`` the single-rater reliability (here α). For ``r`` in
    ``(0, 1)`` and ``k >= 1``: ``rho_1 = r``, ``rho_k`` increases with ``k`` towards 1 and stays in
    ``(0, 1)``; ``r = 0`` gives 0, ``r = 1`` gives 1. For ``r < 0`` the formula is no reliability; it is
    returned where ``1 + (k - 1) r > 0`` and NaN elsewhere. NaN in ``r`` (an undefined α) stays NaN.
    Vectorised: ``alpha_1`` and ``k`` broadcast; ``k`` may be fractional (a length factor).

    It holds for interval-type reliability with exchangeable raters of equal reliability (parallel
    measurements, classical test theory): a fair projection for α- and ICC-type reliabilities (class α at
    any level, pixel α, KαLOS α and αOT read as reliabilities), not for scores that are not reliabilities
    (HOTA, OT scores, F1, accuracy). Raters of unequal reliability make it optimistic for the weaker ones'
    consensus; a nominal consensus by vote is not a mean, so for nominal α it is an approximation.

    Args:
        alpha_1: ``r``, the reliability of one rater, in ``[-1, 1]`` (NaN allowed: undefined).
        k: the raters averaged, ``>= 1``, finite.

    Returns:
        ``rho_k``, broadcast over the inputs; a float when both are scalars.

    Raises:
        ValueError: ``r`` outside ``[-1, 1]`` or infinite, ``k < 1``, ``k`` not finite.

    References:
        C. Spearman, "Correlation calculated from faulty data", British Journal of Psychology 3, 1910;
        W. Brown, "Some experimental results in the correlation of mental abilities", British Journal of
        Psychology 3, 1910.

    Examples:
        >>> consensus_reliability(0.5, 3)
        0.75
    """
    r = np.asarray(alpha_1, dtype=np.float64)
    kk = np.asarray(k, dtype=np.float64)
    bad = ~np.isnan(r) & ~((r >= -1.0) & (r <= 1.0))
    if bad.any():
        raise ValueError(f"alpha_1 must be in [-1, 1] (NaN for undefined), got {r[bad].reshape(-1)[0]!r}")
    if not np.isfinite(kk).all() or (kk < 1.0).any():
        raise ValueError(f"k must be finite and >= 1, got {kk[~np.isfinite(kk) | (kk < 1.0)].reshape(-1)[0]!r}")
    out = _spearman_brown(r, kk)
    return float(out) if out.ndim == 0 else out


def _k_beyond(r: float, target: float) -> int:
    """The smallest integer ``k >= 1`` with ``rho_k(r) >= target`` for ``r > 0``:
    ``ceil(T (1 - r) / (r (1 - T)))``, corrected for rounding."""
    k = max(1, math.ceil(target * (1.0 - r) / (r * (1.0 - target))))
    while k > 1 and float(_spearman_brown(np.float64(r), np.float64(k - 1))) >= target:
        k -= 1
    while float(_spearman_brown(np.float64(r), np.float64(k))) < target:
        k += 1
    return k


def _check_target(target: float) -> float:
    """``target`` as a float in ``(0, 1)``."""
    if isinstance(target, bool) or not 0.0 < float(target) < 1.0:
        raise ValueError(f"target must be in (0, 1) (a consensus reliability), got {target!r}")
    return float(target)


def _needed(k: int | None, *, target: float, confidence: float | None, r: float, measured: bool,
            items: int | None, reason: str = "") -> RatersNeeded:
    """A :class:`RatersNeeded` for ``k`` (``None``: not reached, with ``reason``) at one-rater reliability ``r``."""
    if k is None:
        return RatersNeeded(k=None, target=target, confidence=confidence, reliability=np.nan, single_rater=r,
                            measured=False, labels_per_item=None, labels=None, reason=reason)
    return RatersNeeded(k=k, target=target, confidence=confidence,
                        reliability=float(_spearman_brown(np.float64(r), np.float64(k))), single_rater=r,
                        measured=measured, labels_per_item=k, labels=None if items is None else k * items)


def _needed_from_value(r: float, target: float) -> RatersNeeded:
    """:func:`raters_needed` of a single reliability value (no interval)."""
    if not -1.0 <= r <= 1.0:
        raise ValueError(f"alpha must be in [-1, 1], got {r!r}")
    if r <= 0.0:
        return _needed(None, target=target, confidence=None, r=r, measured=False, items=None,
                       reason=f"alpha = {r:.4g} <= 0: the consensus of any number of raters is no more reliable "
                              f"than chance, so no k reaches target {target:g}")
    return _needed(_k_beyond(r, target), target=target, confidence=None, r=r, measured=False, items=None)


def _needed_measured(curve: RaterCurve, target: float) -> RatersNeeded:
    """:func:`raters_needed` without a projection: the smallest measured ``k`` whose lower bound reaches
    ``target``."""
    for k, low in zip(curve.ks, curve.low, strict=True):
        if np.isfinite(low) and low >= target:
            return RatersNeeded(k=k, target=target, confidence=curve.confidence, reliability=float(low),
                                single_rater=float(low), measured=True, labels_per_item=k,
                                labels=k * curve.n_items_total, projection="none")
    top = max((x for x in curve.low if np.isfinite(x)), default=np.nan)
    return RatersNeeded(k=None, target=target, confidence=curve.confidence, reliability=np.nan,
                        single_rater=float(top), measured=False, labels_per_item=None, labels=None,
                        projection="none",
                        reason=f"the lower bound of {curve.statistic} stays below target {target:g} at every measured "
                               f"k up to {curve.max_k} (highest {top:.4g}), and {curve.statistic} has no projection "
                               "beyond the raters the data has")


def raters_needed(curve_or_alpha: RaterCurve | float, *, target: float,
                  confidence: float | None = None, projection: str = "spearman_brown") -> RatersNeeded:
    """The smallest number of raters per item whose consensus reliability reaches ``target``.

    From a :class:`RaterCurve`: ``r_k`` is the curve's lower bound (the ``(1 - c)/2`` percentile) at the
    largest measured ``k' <= k`` (at the smallest measured ``k`` for smaller ``k``, so ``k = 1`` uses the
    one-rater reliability measured with pairs), and the answer is the smallest ``k >= 1`` with
    ``rho_k = k r_k / (1 + (k - 1) r_k) >= target`` (:func:`consensus_reliability`): measured up to the
    curve's ``max_k`` and projected beyond it from the lower bound at ``max_k``, in closed form
    ``k = ceil(T (1 - r) / (r (1 - T)))``. Since ``rho_k`` increases with ``r``, a lower bound of ``r``
    gives a lower bound of ``rho_k``: ``k`` raters reach ``target`` with confidence about ``(1 + c)/2``
    one-sided, under the assumptions of :func:`consensus_reliability`. From a single value ``alpha``, the
    same projection without an interval. Cost: ``k`` labels per item, ``k × items`` for the curve's items.
    The confidence is the curve's: with ``resample_items=False`` it covers which raters label the items, not
    the sample of items (:func:`rater_curve`); at ``max_k`` on complete data that interval has width 0.

    Args:
        curve_or_alpha: a :class:`RaterCurve` of an α/ICC-type reliability, or one reliability in ``[-1, 1]``.
        target: the consensus reliability to reach, in ``(0, 1)``.
        confidence: the curve's interval coverage to use (default: the curve's own); it must match the
            curve's (recompute the curve at another coverage). Not allowed with a single value.
        projection: ``"spearman_brown"`` (default: the curve is an α/ICC-type reliability) or ``"none"`` for
            a statistic that is not a reliability (the accuracy of a consensus): then the answer is the
            smallest *measured* ``k`` whose lower bound itself reaches ``target``, and no ``k`` beyond the
            curve is claimed. ``"none"`` needs a :class:`RaterCurve`.

    Returns:
        :class:`RatersNeeded`; ``k`` is ``None`` with a reason when no ``k`` reaches ``target`` (the lower
        bound of α at ``max_k`` is ``<= 0`` or undefined).

    Raises:
        ValueError: ``target`` outside ``(0, 1)``, ``confidence`` outside ``(0, 1)`` or different from the
            curve's, ``confidence`` with a single value, a value outside ``[-1, 1]``, an unknown
            ``projection`` or ``"none"`` with a single value.

    References:
        C. Spearman 1910; W. Brown 1910 (:func:`consensus_reliability`).
    """
    tgt = _check_target(target)
    if projection not in PROJECTIONS:
        raise ValueError(f"projection must be one of {PROJECTIONS}, got {projection!r}")
    if not isinstance(curve_or_alpha, RaterCurve):
        if projection == "none":
            raise ValueError("projection='none' reads a measured curve: pass a RaterCurve, not a single value")
        if confidence is not None:
            raise ValueError("confidence needs an interval: pass a RaterCurve (rater_curve(..., confidence=...)) "
                             "instead of a single alpha")
        try:
            r = float(curve_or_alpha)
        except (TypeError, ValueError):
            raise ValueError("curve_or_alpha must be a RaterCurve or a number in [-1, 1], got "
                             f"{type(curve_or_alpha).__name__}") from None
        return _needed_from_value(r, tgt)
    curve = curve_or_alpha
    if confidence is not None and _check_confidence(confidence) != curve.confidence:
        raise ValueError(f"the curve's interval has confidence {curve.confidence:g}, not {confidence:g}: "
                         f"recompute it with rater_curve(..., confidence={confidence:g})")
    if projection == "none":
        return _needed_measured(curve, tgt)
    items = curve.n_items_total
    for k in range(1, curve.max_k + 1):
        at = max([i for i, kk in enumerate(curve.ks) if kk <= k], default=0)
        r = curve.low[at]
        if np.isfinite(r):
            rho = float(_spearman_brown(np.float64(r), np.float64(k)))
            if rho >= tgt:
                return _needed(k, target=tgt, confidence=curve.confidence, r=r, measured=True, items=items)
    r = curve.low[-1]
    if not np.isfinite(r) or r <= 0.0:
        why = "undefined" if not np.isfinite(r) else f"{r:.4g} <= 0"
        return _needed(None, target=tgt, confidence=curve.confidence, r=r, measured=False, items=items,
                       reason=f"the lower bound of {curve.statistic} at k = {curve.max_k} is {why}: no number of "
                              f"raters reaches target {tgt:g} at confidence {curve.confidence:g}")
    return _needed(_k_beyond(r, tgt), target=tgt, confidence=curve.confidence, r=r, measured=False, items=items)
