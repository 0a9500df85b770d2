r"""Calibration of the distance function and of the localisation threshold τ.

KαLOS (Tschirschwitz & Rodehorst, "KαLOS finds Consensus") chooses its
localisation parameters from the data rather than by convention. For a
candidate distance ``d = 1 - s`` (``s`` a similarity in ``[0, 1]``: box IoU,
GIoU mapped to ``[0, 1]``, centroid closeness, ...) two empirical
distributions are compared:

* **observed disagreement** ``D_o``: for every annotation ``x`` of rater ``a``
  on sample ``i`` and every *other* rater ``b`` assigned to ``i``,

  .. math:: D_o \ni \min_{y \in B_{i}} d(x, y), \quad\text{or } 1 \text{ if } B_i = \emptyset

  (``B_i`` is ``b``'s set on ``i``; an empty set is explicit absence and counts
  as the maximal distance 1; a rater not assigned to ``i`` is skipped);
* **expected (chance) disagreement** ``D_e``: the same nearest-neighbour
  distance, but against the set of a randomly drawn rater on a randomly drawn
  *other* sample ``j != i`` (one draw per non-empty (sample, rater) set, 1
  when the drawn set is empty), as the reference draws them (which uses
  Python's global ``random``; here a seeded numpy generator).

Similarities come from :func:`agreement.similarity.similarity_matrix` (box
``"iou"``, ``"giou"`` = ``(1 + GIoU) / 2``, ``"centroid"``, ``"polygon_iou"``,
``"polygon_giou"``, ``"mask_iou"``, ``"oks"``); every distance is in
``[0, 1]``. One matrix per (sample, rater): a rater's annotations against
those of every later-named rater on the sample (each cross pair once), split
by rater and reduced by ``min`` along rows and columns.

If raters agree beyond chance, ``D_o`` is concentrated near 0 and ``D_e``
near 1. Their separation is measured by the Kolmogorov–Smirnov statistic, and
the distance that separates best is the one with the largest statistic. The
threshold τ* is the Bayes decision boundary (equal priors) between the two:
the first crossing of their estimated densities above the mode of ``D_o``.

Conventions (and how they relate to the reference package ``kalos``):

* **KS, one-sided** (the one KαLOS uses):
  :math:`D^+ = \sup_x \bigl(F_{D_o}(x) - F_{D_e}(x)\bigr) \in [0, 1]`, i.e.
  ``scipy.stats.ks_2samp(d_o, d_e, alternative="greater").statistic``: how
  much more mass ``D_o`` has below any distance than ``D_e``. 1 means every
  observed distance is below every expected one, 0 that ``D_o`` is nowhere
  stochastically smaller (no agreement beyond chance). This is ``kalos``'s
  ``calculate_ks_statistic`` (max of ``cdf_do - cdf_de`` over the pooled
  values). **Two-sided**: :math:`D = \sup_x |F_{D_o} - F_{D_e}|`
  (``scipy.stats.ks_2samp``'s default statistic), also reported; it is the larger of
  :math:`D^+` and :math:`D^-` and can be large for below-chance agreement.
  No p-values are reported: the values of ``D_o`` are not independent
  (every pair is counted from both sides, annotations share images), so the
  statistic is used as an effect size, as in KαLOS.
* **Densities**: Gaussian kernel density estimates (``scipy.stats.gaussian_kde``,
  Scott's rule bandwidth ``n^{-1/5} sd``, no boundary correction) evaluated on
  ``grid_size`` equally spaced points of ``[0, 1]`` (1000 by default), as
  ``kalos``'s ``find_bayesian_boundary``. Above 50,000 values the estimate is
  computed from a 16,384-bin histogram with the same bandwidth (an error far
  below the grid step).
* **τ* selection** (``tau_method``):

  1. ``"crossing"``: the first sign change of ``f_o - f_e`` at a grid point
     above the ``D_o`` mode (in either direction, as the reference), located
     by linear interpolation between the two grid points that bracket it
     (the reference returns the left grid point; the two differ by less than
     one grid step, ``1 / (grid_size - 1)``);
  2. ``"valley"`` (no crossing above the mode): the minimum of
     ``f_o + f_e`` between the two modes, as the reference;
  3. ``"ks_max"`` (densities undefined because a sample has fewer than two
     distinct values, e.g. identical raters give ``D_o`` all 0, or the two
     modes coincide): the middle of the interval on which
     ``F_o - F_e`` attains its maximum (the empirical point of best
     separation). The reference returns a fixed 0.5 in these cases;
  4. undefined (NaN, with a reason) when a distribution is empty or the
     one-sided KS statistic is 0.

  ``tau_fallback`` is ``""`` for a crossing and the reason otherwise. τ*
  inherits the sampling noise of ``D_e`` (one draw per set): where both
  densities are low between the modes the crossing moves with the seed (on
  the shared LVIS subset, box IoU, seeds 0-3: τ* 0.687-0.711; GIoU 0.359-0.373).
  Compare seeds before trusting the third digit.
* **Scale**: τ* is a *distance*. The KαLOS solver thresholds a *similarity*:
  pass ``similarity_threshold = 1 - τ*`` as its ``tau``.
* **β* for OT** (Prokhorov & Kalinin, supplement: β* = τ* at λ = 1): in the
  OT agreement of :mod:`agreement.ot` a pair is matched iff its pair cost is
  below β (``"paper"`` normalisation); at λ = 1 the pair cost is
  ``(1 - GIoU) / 2``, which *is* the ``"giou"`` distance here
  (``1 - (1 + GIoU) / 2``). So β* is τ* **of the** ``"giou"`` **distance**,
  whichever distance separates best, and the OT matching at (λ = 1, β*) then
  accepts exactly the pairs the calibrated threshold accepts (up to ties:
  OT needs ``cost < β``). Under ``"oc_cost"`` a pair is matched iff
  ``cost < 2 β``, so the equivalent is ``τ*/2``; for λ < 1 same-label pairs
  cost ``λ (1 - GIoU) / 2``, hence ``β = λ τ*`` (:func:`beta_from_tau`).

Determinism. Samples are ordered canonically (sorted by ``str`` of the id, as
:func:`agreement.alpha_ot.canonical_sample_order`), raters by name; the draws
of ``D_e`` come from ``numpy.random.default_rng(seed)`` in that order and are
shared by every distance (paired comparison). The same corpus gives the same
``D_o`` and ``D_e`` (values and order) whatever the order of its samples.

Reference: D. Tschirschwitz and V. Rodehorst, "KαLOS finds Consensus: A
Meta-Algorithm for Evaluating Inter-Annotator Agreement in Complex Vision
Tasks" (principled configuration); A. Prokhorov and A. Kalinin, "Quantifying
Annotation Agreement in Object Detection with Optimal Transport" (supplement,
choice of β).

This module does not import FiftyOne; only :func:`plot_calibration_png`
imports matplotlib.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats

from agreement.arrays import unique_sorted
from agreement.alpha_ot import canonical_sample_order
from agreement.data import MultiRaterAnnotations
from agreement.similarity import SIMILARITIES, check_similarity, similarity_matrix

__all__ = [
    "DEFAULT_DISTANCES",
    "CalibrationPlot",
    "CalibrationResult",
    "DistanceCalibration",
    "TauSelection",
    "beta_from_tau",
    "calibrate",
    "disagreement_samples",
    "ks_one_sided",
    "ks_two_sided",
    "plot_calibration_png",
    "select_tau",
]

DEFAULT_DISTANCES = ("iou", "giou", "centroid")
KNOWN_DISTANCES = SIMILARITIES

_BINNED_KDE_ABOVE = 50_000
_KDE_BINS = 16_384


# --------------------------------------------------------------------------
# D_o and D_e
# --------------------------------------------------------------------------


def _check_seed(seed: Any) -> int:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or int(seed) < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    return int(seed)


def _check_distance(distance: Any) -> str:
    if not isinstance(distance, str) or distance not in KNOWN_DISTANCES:
        raise ValueError(f"unknown distance {distance!r}; expected one of {KNOWN_DISTANCES}")
    return distance


@dataclass(frozen=True)
class _Plan:
    """Which sets are compared: observed (sample, rater a, rater b) triples and
    the expected draws (reference cell -> drawn cell), in canonical order."""

    observed: tuple[tuple[int, int, int], ...]
    ref_sample: np.ndarray
    ref_rater: np.ndarray
    draw_sample: np.ndarray
    draw_rater: np.ndarray
    n_eligible: int


def _plan(data: MultiRaterAnnotations, seed: int) -> _Plan:
    order = canonical_sample_order(data.sample_ids)
    assigned = data.assigned
    counts = data.counts()
    observed = []
    for s in order:
        raters = np.flatnonzero(assigned[s])
        for i, a in enumerate(raters):
            for b in raters[i + 1:]:
                if counts[s, a] or counts[s, b]:
                    observed.append((int(s), int(a), int(b)))
    # Expected: one draw per non-empty (sample, rater) set.
    eligible = order[assigned[order].any(axis=1)]  # samples with an assigned rater
    E = len(eligible)
    ref_s, ref_r = [], []
    for s in order:
        for r in np.flatnonzero(assigned[s] & (counts[s] > 0)):
            ref_s.append(s)
            ref_r.append(r)
    ref_s = np.asarray(ref_s, dtype=np.intp)
    ref_r = np.asarray(ref_r, dtype=np.intp)
    if E < 2 or len(ref_s) == 0:
        empty = np.zeros(0, dtype=np.intp)
        return _Plan(tuple(observed), empty, empty, empty, empty, E)
    rng = np.random.default_rng(seed)
    pos = np.full(data.num_samples, -1, dtype=np.intp)
    pos[eligible] = np.arange(E)
    k = rng.integers(0, E - 1, size=len(ref_s))
    k += k >= pos[ref_s]  # skip the reference sample itself: never the same sample
    draw_s = eligible[k]
    n_assigned = assigned[draw_s].sum(axis=1)
    j = rng.integers(0, n_assigned)  # rank of the drawn rater among those assigned
    rank = np.cumsum(assigned[draw_s], axis=1) - 1
    draw_r = np.argmax(assigned[draw_s] & (rank == j[:, None]), axis=1).astype(np.intp)
    return _Plan(tuple(observed), ref_s, ref_r, draw_s, draw_r, E)


def _distance_matrix(name: str, data: MultiRaterAnnotations, rows_a: slice, rows_b: slice, sigmas) -> np.ndarray:
    """``1 - similarity`` of two row ranges (non-finite values are caught by
    :func:`_finish`, once, rather than per matrix)."""
    ra, rb = np.arange(rows_a.start, rows_a.stop), np.arange(rows_b.start, rows_b.stop)
    sim = np.asarray(similarity_matrix(name, data, ra, rb, sigmas=sigmas), dtype=np.float64)
    if sim.shape != (len(ra), len(rb)):
        raise ValueError(f"similarity {name!r} returned shape {sim.shape}, expected {(len(ra), len(rb))}")
    return np.subtract(1.0, sim)


def _finish(name: str, data: MultiRaterAnnotations, chunks: list, samples: list) -> np.ndarray:
    """Concatenates the chunks; raises naming the first sample with a non-finite
    distance; clips rounding to ``[0, 1]`` (similarities are in ``[0, 1]``)."""
    if not chunks:
        return np.zeros(0)
    out = np.concatenate(chunks)
    if not np.all(np.isfinite(out)):
        bad = next(s for c, s in zip(chunks, samples) if not np.all(np.isfinite(c)))
        raise ValueError(
            f"similarity {name!r} is not finite on sample {data.sample_names[bad]!r}: check its annotations "
            "(agreement.validation repairs or rejects bad geometry)"
        )
    np.clip(out, 0.0, 1.0, out=out)
    return out


def _observed(data: MultiRaterAnnotations, distance: str, plan: _Plan, sigmas=None) -> np.ndarray:
    # Triples (s, a, b) come grouped by (s, a) with b increasing; rater b's rows
    # follow a's on the sample, so a's rows against the rows of every later
    # rater are one matrix (the upper triangle of rater pairs, each cross pair
    # computed once), split by column ranges.
    chunks, samples = [], []
    triples = plan.observed
    i = 0
    while i < len(triples):
        s, a, _ = triples[i]
        j = i
        while j < len(triples) and triples[j][0] == s and triples[j][1] == a:
            j += 1
        later = [t[2] for t in triples[i:j]]
        ra = data.rows(s, a)
        na = ra.stop - ra.start
        first, last = data.rows(s, later[0]), data.rows(s, later[-1])
        block = slice(first.start, last.stop)  # rows of raters later[0]..later[-1] on s
        d = _distance_matrix(distance, data, ra, block, sigmas) if na and block.stop > block.start else None
        for b in later:
            rb = data.rows(s, b)
            nb = rb.stop - rb.start
            if nb == 0:
                chunks.append(np.ones(na))  # b's explicit absence: a's annotations unmatched
            elif na == 0:
                chunks.append(np.ones(nb))
            else:
                sub = d[:, rb.start - block.start:rb.stop - block.start]
                chunks.append(sub.min(axis=1))
                samples.append(s)
                chunks.append(sub.min(axis=0))
            samples.append(s)
        i = j
    return _finish(distance, data, chunks, samples)


def _expected(data: MultiRaterAnnotations, distance: str, plan: _Plan, sigmas=None) -> np.ndarray:
    chunks, samples = [], []
    for s, r, s2, r2 in zip(plan.ref_sample, plan.ref_rater, plan.draw_sample, plan.draw_rater):
        ra, rb = data.rows(s, r), data.rows(s2, r2)
        if rb.stop == rb.start:
            chunks.append(np.ones(ra.stop - ra.start))
        else:
            chunks.append(_distance_matrix(distance, data, ra, rb, sigmas).min(axis=1))
        samples.append(s)
    return _finish(distance, data, chunks, samples)


def disagreement_samples(
    data: MultiRaterAnnotations, distance: str, seed: int = 0, *, sigmas: ArrayLike | None = None
) -> tuple[np.ndarray, np.ndarray]:
    r"""Observed and expected disagreement samples of one distance.

    .. math::

        D_o &= \bigl\{\min_{y \in B_i} d(x, y) \;:\; x \in A_i,\ a \ne b
               \text{ both assigned to } i\bigr\} \\
        D_e &= \bigl\{\min_{y \in B'_j} d(x, y) \;:\; x \in A_i,\
               (j, b') \text{ drawn},\ j \ne i\bigr\}

    with ``d = 1 - similarity``, and ``min`` over an empty set taken as 1
    (explicit absence: the other rater drew nothing). Raters not assigned to a
    sample (implicit absence) contribute nothing. For ``D_e``, every non-empty
    set ``A_i`` (sample ``i``, rater ``a``) gets one draw: a sample ``j != i``
    uniformly among the samples with at least one assigned rater, then a rater
    ``b'`` uniformly among those assigned to ``j`` (possibly ``a`` itself, as in
    the reference); ``B'_j`` may be empty (then 1).

    Parameters
    ----------
    data : MultiRaterAnnotations
        The corpus.
    distance : str
        A similarity name of :func:`agreement.similarity.similarity_matrix`:
        ``"iou"``, ``"giou"`` (``(1 + GIoU) / 2``), ``"centroid"``,
        ``"polygon_iou"``, ``"polygon_giou"``, ``"mask_iou"``, ``"oks"``.
    seed : int, default=0
        Seed of the ``D_e`` draws (``numpy.random.default_rng(seed)``; the draws
        do not depend on the distance).
    sigmas : array-like of shape (K,), optional
        Per-keypoint σ for ``"oks"`` (default: the COCO person σ).

    Returns
    -------
    d_observed : ndarray of shape (n_o,), float64
        In ``[0, 1]``; ``n_o = sum_i sum_{a != b} |A_i|`` over raters ``a, b``
        both assigned to ``i``. Samples in canonical order (``str`` of the
        id), then rater pairs ``a < b`` by name: ``a``'s annotations against
        ``b``, then ``b``'s against ``a``.
    d_expected : ndarray of shape (n_e,), float64
        In ``[0, 1]``; one value per annotation (``n_e`` = all annotations) when
        at least two samples have an assigned rater, empty otherwise.

    Raises
    ------
    ValueError
        Unknown distance, a negative or non-integer seed, annotations lacking
        the geometry the distance needs (from
        :func:`agreement.similarity.check_similarity`, which names them), or a
        similarity that is not finite (the message names the sample).

    References
    ----------
    Tschirschwitz & Rodehorst, "KαLOS finds Consensus" (principled
    configuration, empirical disagreement distributions).
    """
    _check_distance(distance)
    plan = _plan(data, _check_seed(seed))
    check_similarity(distance, data, sigmas=sigmas)
    return _observed(data, distance, plan, sigmas), _expected(data, distance, plan, sigmas)


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

    Parameters
    ----------
    d_observed, d_expected : array-like of shape (n,) and (m,)
        Finite distances (any real values; calibration uses ``[0, 1]``).

    Returns
    -------
    float
        In ``[0, 1]``: 1 when every observed value lies below every expected
        one, 0 when ``D_o`` is nowhere stochastically smaller than ``D_e``.

    Raises
    ------
    ValueError
        An empty or non-finite input.

    References
    ----------
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

    Parameters
    ----------
    d_observed, d_expected : array-like of shape (n,) and (m,)
        Finite distances.

    Returns
    -------
    float
        In ``[0, 1]``; 0 for identical empirical distributions. Unlike
        :func:`ks_one_sided` it is also large when ``D_o`` is *larger* than
        ``D_e`` (agreement below chance).

    Raises
    ------
    ValueError
        An empty or non-finite input.

    References
    ----------
    Smirnov (1948); ``scipy.stats.ks_2samp``.
    """
    d_o = _as_sample(d_observed, "d_observed")
    d_e = _as_sample(d_expected, "d_expected")
    _, diff = _ecdf_difference(d_o, d_e)
    return float(np.abs(diff).max())


def _ks_max_point(d_o: np.ndarray, d_e: np.ndarray) -> tuple[float, float]:
    """``(D+, x)``: the one-sided statistic and the middle of the first interval
    ``[v_k, v_{k+1})`` of pooled values on which ``F_o - F_e`` attains it."""
    v, diff = _ecdf_difference(d_o, d_e)
    k = int(np.argmax(diff))
    ks = float(max(diff[k], 0.0))
    x = float(v[k]) if k + 1 == len(v) else 0.5 * float(v[k] + v[k + 1])
    return ks, x


# --------------------------------------------------------------------------
# τ*
# --------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class TauSelection:
    """τ* and the densities it was read from.

    Attributes:
        tau: τ* on the distance scale, in ``[0, 1]``, or NaN.
        method: ``"crossing"``, ``"valley"``, ``"ks_max"`` or ``"undefined"``.
        fallback: ``""`` for a crossing, otherwise why the crossing was not used
            (and, for ``"undefined"``, why there is no τ*).
        mode_observed, mode_expected: grid points of the density maxima (NaN
            where the density is undefined).
        grid: ``(G,)`` evaluation points on ``[0, 1]``.
        density_observed, density_expected: ``(G,)`` kernel density estimates
            (NaN where undefined).
    """

    tau: float
    method: str
    fallback: str
    mode_observed: float
    mode_expected: float
    grid: np.ndarray
    density_observed: np.ndarray
    density_expected: np.ndarray


def _kde(values: np.ndarray, grid: np.ndarray) -> np.ndarray | None:
    """Gaussian KDE (Scott's rule) on ``grid``; ``None`` when undefined."""
    n = len(values)
    if n < 2 or np.ptp(values) == 0.0:
        return None
    try:
        if n <= _BINNED_KDE_ABOVE:
            return stats.gaussian_kde(values, bw_method="scott")(grid)
        lo, hi = float(values.min()), float(values.max())
        counts, edges = np.histogram(values, bins=_KDE_BINS, range=(lo, hi))
        keep = counts > 0
        centres = 0.5 * (edges[:-1] + edges[1:])[keep]
        # Scott's factor of the full sample, not of the bins' effective size.
        return stats.gaussian_kde(centres, bw_method=n ** -0.2, weights=counts[keep])(grid)
    except (np.linalg.LinAlgError, ValueError):
        return None


def select_tau(
    d_observed: Sequence[float] | np.ndarray,
    d_expected: Sequence[float] | np.ndarray,
    grid_size: int = 1000,
) -> TauSelection:
    r"""The distance threshold τ* between observed and expected disagreement.

    With :math:`\hat f_o, \hat f_e` the Gaussian kernel density estimates
    (Scott's rule) on ``grid_size`` points :math:`x_k` of ``[0, 1]`` and
    :math:`m_o = \arg\max \hat f_o`,

    .. math:: \tau^* = \min\{x \ge x_k > m_o : \operatorname{sign}(\hat f_o - \hat f_e)
              \text{ changes between } x_k \text{ and } x_{k+1}\}

    the first crossing above the ``D_o`` mode, located by linear interpolation
    in ``[x_k, x_{k+1}]``: the Bayes decision boundary between "same object"
    (``D_o``) and "chance" (``D_e``) with equal priors. Fallbacks (see the
    module docstring): the density valley between the two modes
    (``"valley"``), the middle of the interval where :math:`F_o - F_e` is
    largest (``"ks_max"``), NaN (``"undefined"``).

    Parameters
    ----------
    d_observed, d_expected : array-like
        Distances in ``[0, 1]`` (may be empty: the result is then undefined).
    grid_size : int, default=1000
        Number of evaluation points (at least 3).

    Returns
    -------
    TauSelection
        τ* in ``[0, 1]`` (or NaN), the method, the fallback reason, the modes
        and the densities on the grid.

    Raises
    ------
    ValueError
        Values outside ``[0, 1]`` or not finite; ``grid_size < 3``.

    References
    ----------
    Tschirschwitz & Rodehorst, "KαLOS finds Consensus" (τ* from the
    intersection of the D_o and D_e densities; ``kalos``'s
    ``find_bayesian_boundary``).
    """
    grid_size = int(grid_size)
    if grid_size < 3:
        raise ValueError(f"grid_size must be at least 3, got {grid_size}")
    d_o = np.asarray(d_observed, dtype=np.float64).reshape(-1)
    d_e = np.asarray(d_expected, dtype=np.float64).reshape(-1)
    for name, arr in (("d_observed", d_o), ("d_expected", d_e)):
        if not np.all(np.isfinite(arr)) or np.any(arr < 0.0) or np.any(arr > 1.0):
            raise ValueError(f"{name} must hold finite distances in [0, 1]")
    grid = np.linspace(0.0, 1.0, grid_size)
    nan_curve = np.full(grid_size, np.nan)
    if len(d_o) == 0 or len(d_e) == 0:
        which = "observed" if len(d_o) == 0 else "expected"
        return TauSelection(math.nan, "undefined", f"no {which} disagreement values", math.nan, math.nan,
                            grid, nan_curve, nan_curve.copy())
    f_o, f_e = _kde(d_o, grid), _kde(d_e, grid)
    mode_o = float(grid[np.argmax(f_o)]) if f_o is not None else math.nan
    mode_e = float(grid[np.argmax(f_e)]) if f_e is not None else math.nan
    curve_o = f_o if f_o is not None else nan_curve
    curve_e = f_e if f_e is not None else nan_curve.copy()

    def done(tau: float, method: str, fallback: str) -> TauSelection:
        return TauSelection(float(tau), method, fallback, mode_o, mode_e, grid, curve_o, curve_e)

    if f_o is None or f_e is None:
        bad = [n for n, f in (("observed", f_o), ("expected", f_e)) if f is None]
        reason = (f"the {' and '.join(bad)} density is undefined (fewer than two distinct values), "
                  "so τ* is the point of largest CDF separation")
    else:
        diff = f_o - f_e
        sign = np.sign(diff)
        change = np.flatnonzero((sign[:-1] != sign[1:]) & (grid[:-1] > mode_o))
        if len(change):
            k = int(change[0])
            a, b = diff[k], diff[k + 1]
            t = 0.0 if a == 0.0 else a / (a - b)  # a != b here since the signs differ
            return done(grid[k] + t * (grid[k + 1] - grid[k]), "crossing", "")
        i_o, i_e = int(np.argmax(f_o)), int(np.argmax(f_e))
        if i_o != i_e:
            lo, hi = min(i_o, i_e), max(i_o, i_e)
            valley = lo + int(np.argmin((f_o + f_e)[lo:hi + 1]))
            return done(grid[valley], "valley",
                        "the densities do not cross above the D_o mode; τ* is the density minimum between the modes")
        reason = "the densities do not cross above the D_o mode and the modes coincide, so τ* is the point of largest CDF separation"
    ks, x = _ks_max_point(d_o, d_e)
    if ks <= 0.0:
        return done(math.nan, "undefined",
                    "observed disagreement is nowhere smaller than expected (one-sided KS = 0): no threshold separates them")
    return done(x, "ks_max", reason)


def beta_from_tau(tau_giou: float, lam: float = 1.0, normalization: str = "paper") -> float:
    r"""OT dummy cost β equivalent to a calibrated GIoU-distance threshold.

    In :mod:`agreement.ot` a same-label pair is matched iff its cost
    :math:`c = \lambda (1 - \mathrm{GIoU}) / 2 = \lambda\, d_{giou}` is below
    β (``"paper"``) or below 2β (``"oc_cost"``). Matching exactly the pairs with
    :math:`d_{giou} < \tau^*` therefore needs

    .. math:: \beta^* = \lambda \tau^* \;(\text{paper}), \qquad
              \beta^* = \lambda \tau^* / 2 \;(\text{oc\_cost})

    and at λ = 1, paper normalisation, :math:`\beta^* = \tau^*` (Prokhorov &
    Kalinin, supplement).

    Parameters
    ----------
    tau_giou : float
        τ* of the ``"giou"`` distance ``(1 - GIoU) / 2``, in ``[0, 1]``.
    lam : float, default=1.0
        The OT localisation weight λ in ``(0, 1]``.
    normalization : {"paper", "oc_cost"}, default="paper"

    Returns
    -------
    float
        β* in ``(0, 1]``, or NaN when τ* is NaN or 0 (β must be positive).

    References
    ----------
    Prokhorov & Kalinin, "Quantifying Annotation Agreement in Object Detection
    with Optimal Transport" (supplement).
    """
    if normalization not in ("paper", "oc_cost"):
        raise ValueError(f"normalization must be 'paper' or 'oc_cost', got {normalization!r}")
    lam = float(lam)
    if not (0.0 < lam <= 1.0):
        raise ValueError(f"lam must be in (0, 1], got {lam!r}")
    tau = float(tau_giou)
    if not math.isfinite(tau) or tau <= 0.0:
        return math.nan
    if tau > 1.0:
        raise ValueError(f"tau_giou must be a distance in [0, 1], got {tau!r}")
    beta = lam * tau if normalization == "paper" else lam * tau / 2.0
    return float(beta)


# --------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------


def _summary(x: np.ndarray) -> dict[str, float]:
    if len(x) == 0:
        keys = ("mean", "std", "median", "q05", "q25", "q75", "q95", "share_zero", "share_one")
        return {"n": 0, **{k: math.nan for k in keys}}
    q = np.quantile(x, [0.05, 0.25, 0.5, 0.75, 0.95])
    return {
        "n": int(len(x)), "mean": float(x.mean()), "std": float(x.std()), "median": float(q[2]),
        "q05": float(q[0]), "q25": float(q[1]), "q75": float(q[3]), "q95": float(q[4]),
        "share_zero": float(np.mean(x == 0.0)), "share_one": float(np.mean(x == 1.0)),
    }


def _list(a: np.ndarray) -> list:
    return [None if not np.isfinite(v) else float(v) for v in np.asarray(a, dtype=np.float64)]


def _num(v: float) -> float | None:
    return None if v is None or not math.isfinite(v) else float(v)


@dataclass(frozen=True, eq=False)
class CalibrationPlot:
    """Plot data of one distance, as plain arrays (for plotly or matplotlib).

    Attributes:
        bin_edges: ``(B + 1,)`` histogram edges on ``[0, 1]``.
        hist_observed, hist_expected: ``(B,)`` histogram densities (area 1;
            zeros for an empty sample).
        grid: ``(G,)`` points of ``[0, 1]``.
        density_observed, density_expected: ``(G,)`` kernel density estimates
            (NaN where undefined).
        tau: τ* (NaN when undefined), the vertical marker.
    """

    bin_edges: np.ndarray
    hist_observed: np.ndarray
    hist_expected: np.ndarray
    grid: np.ndarray
    density_observed: np.ndarray
    density_expected: np.ndarray
    tau: float

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready lists (NaN as ``None``)."""
        return {
            "bin_edges": _list(self.bin_edges),
            "hist_observed": _list(self.hist_observed),
            "hist_expected": _list(self.hist_expected),
            "grid": _list(self.grid),
            "density_observed": _list(self.density_observed),
            "density_expected": _list(self.density_expected),
            "tau": _num(self.tau),
        }


@dataclass(frozen=True, eq=False)
class DistanceCalibration:
    """Calibration of one distance.

    Attributes:
        distance: the similarity name (distance = 1 - similarity).
        d_observed, d_expected: the samples of :func:`disagreement_samples`.
        observed_summary, expected_summary: ``n``, ``mean``, ``std``, ``median``,
            quantiles ``q05``..``q95``, ``share_zero``, ``share_one`` (share at
            distance 1: no overlap or an empty other set).
        ks_one_sided: :math:`D^+ = \\sup (F_o - F_e)` (KαLOS), NaN when undefined.
        ks_two_sided: :math:`\\sup |F_o - F_e|`, NaN when undefined.
        ks_location: the middle of the interval where ``F_o - F_e`` is largest.
        tau: τ* (distance scale), NaN when undefined.
        similarity_threshold: ``1 - tau``, the value to pass as KαLOS's ``tau``.
        tau_method, tau_fallback, mode_observed, mode_expected: see
            :class:`TauSelection`.
        plot: :class:`CalibrationPlot`.
        reason: ``""`` when the statistics are defined, otherwise why not.
        repaired_polygons: polygon annotations repaired before computing a
            polygon or mask distance (see
            :func:`agreement.similarity.check_similarity`; 0 otherwise).
    """

    distance: str
    d_observed: np.ndarray
    d_expected: np.ndarray
    observed_summary: dict
    expected_summary: dict
    ks_one_sided: float
    ks_two_sided: float
    ks_location: float
    tau: float
    similarity_threshold: float
    tau_method: str
    tau_fallback: str
    mode_observed: float
    mode_expected: float
    plot: CalibrationPlot
    reason: str = ""
    repaired_polygons: int = 0

    def to_dict(self, include_samples: bool = False) -> dict[str, Any]:
        """JSON-ready dict (NaN as ``None``); the raw samples only on request."""
        out = {
            "distance": self.distance,
            "observed_summary": {k: (v if isinstance(v, int) else _num(v)) for k, v in self.observed_summary.items()},
            "expected_summary": {k: (v if isinstance(v, int) else _num(v)) for k, v in self.expected_summary.items()},
            "ks_one_sided": _num(self.ks_one_sided),
            "ks_two_sided": _num(self.ks_two_sided),
            "ks_location": _num(self.ks_location),
            "tau": _num(self.tau),
            "similarity_threshold": _num(self.similarity_threshold),
            "tau_method": self.tau_method,
            "tau_fallback": self.tau_fallback,
            "mode_observed": _num(self.mode_observed),
            "mode_expected": _num(self.mode_expected),
            "plot": self.plot.to_dict(),
            "reason": self.reason,
            "repaired_polygons": self.repaired_polygons,
        }
        if include_samples:
            out["d_observed"] = _list(self.d_observed)
            out["d_expected"] = _list(self.d_expected)
        return out


@dataclass(frozen=True, eq=False)
class CalibrationResult:
    """Calibration of several distances on one corpus.

    Attributes:
        per_distance: ``{name: DistanceCalibration}`` in the requested order.
        best_distance: the distance with the largest one-sided KS (first in
            the requested order on ties), ``None`` when no KS is defined.
        best_ks: its one-sided KS (NaN when none).
        tau: τ* of the best distance (distance scale; NaN when undefined).
        similarity_threshold: ``1 - tau``: KαLOS's ``tau`` (a similarity).
        beta_star: the OT dummy cost at λ = 1, ``"paper"`` normalisation:
            τ* of the ``"giou"`` distance (see :func:`beta_from_tau`).
        beta_star_oc_cost: the same under ``"oc_cost"`` (τ*/2).
        beta_reason: ``""`` when β* is defined, otherwise why not.
        seed: the seed of the ``D_e`` draws.
        n_samples: samples in the corpus.
        reason: ``""`` when a best distance exists, otherwise why not.
    """

    per_distance: dict
    best_distance: str | None
    best_ks: float
    tau: float
    similarity_threshold: float
    beta_star: float
    beta_star_oc_cost: float
    beta_reason: str
    seed: int
    n_samples: int
    reason: str = ""

    def summary(self) -> dict[str, Any]:
        """Flat headline numbers (NaN kept as float NaN), e.g. for an operator result:
        ``best_distance``, ``ks``, ``tau_star``, ``similarity_threshold``,
        ``beta_star``, ``beta_star_oc_cost``, and per distance ``ks_{name}``,
        ``ks2_{name}``, ``tau_{name}``, ``tau_method_{name}``."""
        out: dict[str, Any] = {
            "best_distance": self.best_distance,
            "ks": self.best_ks,
            "tau_star": self.tau,
            "similarity_threshold": self.similarity_threshold,
            "beta_star": self.beta_star,
            "beta_star_oc_cost": self.beta_star_oc_cost,
            "beta_reason": self.beta_reason,
            "reason": self.reason,
        }
        for name, c in self.per_distance.items():
            out[f"ks_{name}"] = c.ks_one_sided
            out[f"ks2_{name}"] = c.ks_two_sided
            out[f"tau_{name}"] = c.tau
            out[f"tau_method_{name}"] = c.tau_method
        return out

    def to_dict(self, include_samples: bool = False) -> dict[str, Any]:
        """JSON-ready dict (NaN as ``None``)."""
        return {
            "per_distance": {k: v.to_dict(include_samples) for k, v in self.per_distance.items()},
            "best_distance": self.best_distance,
            "best_ks": _num(self.best_ks),
            "tau": _num(self.tau),
            "similarity_threshold": _num(self.similarity_threshold),
            "beta_star": _num(self.beta_star),
            "beta_star_oc_cost": _num(self.beta_star_oc_cost),
            "beta_reason": self.beta_reason,
            "seed": self.seed,
            "n_samples": self.n_samples,
            "reason": self.reason,
        }


def _histogram(x: np.ndarray, edges: np.ndarray) -> np.ndarray:
    if len(x) == 0:
        return np.zeros(len(edges) - 1)
    counts, _ = np.histogram(x, bins=edges)
    return counts / (len(x) * np.diff(edges))


def _calibrate_one(name: str, d_o: np.ndarray, d_e: np.ndarray, n_samples: int, grid_size: int,
                   bins: int, repaired_polygons: int = 0) -> DistanceCalibration:
    edges = np.linspace(0.0, 1.0, bins + 1)
    sel = select_tau(d_o, d_e, grid_size)
    reason = ""
    if len(d_o) == 0:
        reason = ("no observed disagreement: no sample has two assigned raters with at least one annotation "
                  "between them")
    elif len(d_e) == 0:
        reason = ("no expected disagreement: it needs at least two samples with an assigned rater "
                  f"(the corpus has {n_samples} sample(s))")
    if reason:
        ks1 = ks2 = loc = math.nan
        tau_method, tau_fallback, tau = "undefined", reason, math.nan
    else:
        ks1, loc = _ks_max_point(d_o, d_e)
        ks2 = ks_two_sided(d_o, d_e)
        tau_method, tau_fallback, tau = sel.method, sel.fallback, sel.tau
    plot = CalibrationPlot(edges, _histogram(d_o, edges), _histogram(d_e, edges), sel.grid,
                           sel.density_observed, sel.density_expected, tau)
    return DistanceCalibration(
        distance=name, d_observed=d_o, d_expected=d_e,
        observed_summary=_summary(d_o), expected_summary=_summary(d_e),
        ks_one_sided=ks1, ks_two_sided=ks2, ks_location=loc, tau=tau,
        similarity_threshold=1.0 - tau, tau_method=tau_method, tau_fallback=tau_fallback,
        mode_observed=sel.mode_observed, mode_expected=sel.mode_expected, plot=plot, reason=reason,
        repaired_polygons=repaired_polygons,
    )


def calibrate(
    data: MultiRaterAnnotations,
    distances: Sequence[str] = DEFAULT_DISTANCES,
    seed: int = 0,
    *,
    grid_size: int = 1000,
    bins: int = 50,
    sigmas: ArrayLike | None = None,
) -> CalibrationResult:
    r"""Calibrates the distance function, τ* and the OT β* on a corpus.

    For each distance ``d = 1 - s``: ``D_o`` and ``D_e``
    (:func:`disagreement_samples`, the same ``D_e`` draws for every distance),
    the one-sided KS :math:`D^+ = \sup_x (F_o - F_e)` and the two-sided
    :math:`\sup_x |F_o - F_e|`, and τ* (:func:`select_tau`). The best distance
    maximises :math:`D^+` (the KαLOS criterion). β* = τ* of ``"giou"``
    (λ = 1, see :func:`beta_from_tau`).

    Parameters
    ----------
    data : MultiRaterAnnotations
        The corpus.
    distances : sequence of str, default=("iou", "giou", "centroid")
        Similarity names (see :func:`disagreement_samples`), without repeats.
    seed : int, default=0
        Seed of the ``D_e`` draws.
    grid_size : int, default=1000
        Density grid on ``[0, 1]``.
    bins : int, default=50
        Histogram bins on ``[0, 1]`` for the plot data.
    sigmas : array-like of shape (K,), optional
        Per-keypoint σ for ``"oks"`` (default: the COCO person σ).

    Returns
    -------
    CalibrationResult
        KS in ``[0, 1]`` (1 perfect separation), τ* in ``[0, 1]``, β* in
        ``(0, 1]``; NaN with a reason where undefined (no rater pairs, a
        single sample, no separation, ``"giou"`` not requested).

    Raises
    ------
    ValueError
        Unknown or repeated distance, no distance, bad seed, ``bins < 1``,
        ``grid_size < 3``, or annotations lacking the geometry of a distance
        (checked for every distance before any is computed; the message names
        them).

    References
    ----------
    Tschirschwitz & Rodehorst, "KαLOS finds Consensus" (principled
    configuration); Prokhorov & Kalinin, "Quantifying Annotation Agreement in
    Object Detection with Optimal Transport" (supplement: β* = τ* at λ = 1).
    """
    if isinstance(distances, str):
        distances = (distances,)
    distances = tuple(_check_distance(d) for d in distances)
    if not distances:
        raise ValueError("distances must name at least one distance")
    if len(set(distances)) != len(distances):
        raise ValueError(f"distances must not repeat: {list(distances)}")
    seed = _check_seed(seed)
    bins, grid_size = int(bins), int(grid_size)
    if bins < 1:
        raise ValueError(f"bins must be at least 1, got {bins}")
    if grid_size < 3:
        raise ValueError(f"grid_size must be at least 3, got {grid_size}")
    reports = {name: check_similarity(name, data, sigmas=sigmas) for name in distances}
    plan = _plan(data, seed)
    per = {}
    for name in distances:
        d_o, d_e = _observed(data, name, plan, sigmas), _expected(data, name, plan, sigmas)
        per[name] = _calibrate_one(name, d_o, d_e, data.num_samples, grid_size, bins,
                                   int(reports[name].get("repaired_polygons", 0)))
    defined = [n for n in distances if math.isfinite(per[n].ks_one_sided)]
    if defined:
        best = max(defined, key=lambda n: per[n].ks_one_sided)  # first on ties
        best_ks, tau, reason = per[best].ks_one_sided, per[best].tau, ""
    else:
        best, best_ks, tau = None, math.nan, math.nan
        reason = per[distances[0]].reason
    if "giou" not in per:
        beta = beta_oc = math.nan
        beta_reason = ("β* needs the 'giou' distance: the OT pair cost at λ = 1 is (1 - GIoU) / 2, "
                       "the 'giou' distance; add it to distances")
    else:
        g = per["giou"]
        beta = beta_from_tau(g.tau, 1.0, "paper")
        beta_oc = beta_from_tau(g.tau, 1.0, "oc_cost")
        if math.isnan(beta):
            beta_reason = (g.reason or g.tau_fallback) if math.isnan(g.tau) else \
                "τ* of 'giou' is 0, and β must be positive"
        else:
            beta_reason = ""
    return CalibrationResult(
        per_distance=per, best_distance=best, best_ks=best_ks, tau=tau, similarity_threshold=1.0 - tau,
        beta_star=beta, beta_star_oc_cost=beta_oc, beta_reason=beta_reason, seed=seed,
        n_samples=data.num_samples, reason=reason,
    )


# --------------------------------------------------------------------------
# PNG (demo)
# --------------------------------------------------------------------------


def plot_calibration_png(result: CalibrationResult, path: str | os.PathLike, dpi: int = 110) -> str:
    """Writes the ``D_o`` / ``D_e`` histograms, densities and τ* of every
    distance of ``result`` to a PNG file (one panel per distance).

    Uses matplotlib's Agg canvas directly (no pyplot, no global backend
    change); matplotlib is imported here only.

    Parameters
    ----------
    result : CalibrationResult
        From :func:`calibrate`.
    path : str or PathLike
        Output file (``.png``); parent directories must exist.
    dpi : int, default=110

    Returns
    -------
    str
        The path written.

    References
    ----------
    Tschirschwitz & Rodehorst, "KαLOS finds Consensus" (the D_o/D_e
    distribution plot of the principled configuration).
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    items = list(result.per_distance.values())
    fig = Figure(figsize=(4.8 * max(len(items), 1), 3.8), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, max(len(items), 1), squeeze=False)[0]
    for ax, c in zip(axes, items):
        p = c.plot
        centres = 0.5 * (p.bin_edges[:-1] + p.bin_edges[1:])
        width = np.diff(p.bin_edges)
        ax.bar(centres, p.hist_observed, width=width, alpha=0.45, color="tab:blue", label="$D_o$ (observed)")
        ax.bar(centres, p.hist_expected, width=width, alpha=0.45, color="tab:orange", label="$D_e$ (expected)")
        if np.all(np.isfinite(p.density_observed)):
            ax.plot(p.grid, p.density_observed, color="tab:blue", lw=1.5)
        if np.all(np.isfinite(p.density_expected)):
            ax.plot(p.grid, p.density_expected, color="tab:orange", lw=1.5)
        if math.isfinite(p.tau):
            ax.axvline(p.tau, color="black", ls="--", lw=1.2, label=f"τ* = {p.tau:.3f} ({c.tau_method})")
        ks = "n/a" if not math.isfinite(c.ks_one_sided) else f"{c.ks_one_sided:.3f}"
        star = " (best)" if c.distance == result.best_distance else ""
        ax.set_title(f"{c.distance}{star}: KS⁺ = {ks}", fontsize=10)
        ax.set_xlim(-0.01, 1.01)
        ax.set_xlabel("distance (1 − similarity)")
        ax.set_ylabel("density")
        ax.legend(fontsize=8)
        if c.reason:
            ax.text(0.5, 0.5, c.reason, ha="center", va="center", wrap=True, fontsize=8, transform=ax.transAxes)
    if not items:
        axes[0].text(0.5, 0.5, "no distances", ha="center", va="center")
    path = os.fspath(path)
    fig.savefig(path, format="png", dpi=dpi)
    return path
