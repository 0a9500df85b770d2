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

Similarities come from :func:`agreement.geometry.similarity.similarity_matrix` (box
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
  OT agreement of :mod:`agreement.methods.ot` a pair is matched iff its pair cost is
  below β (``"paper"`` normalisation); at λ = 1 the pair cost is
  ``(1 - GIoU) / 2``, which *is* the ``"giou"`` distance here
  (``1 - (1 + GIoU) / 2``). So β* is τ* **of the** ``"giou"`` **distance**,
  whichever distance separates best, and the OT matching at (λ = 1, β*) then
  accepts exactly the pairs the calibrated threshold accepts (up to ties:
  OT needs ``cost < β``). Under ``"oc_cost"`` a pair is matched iff
  ``cost < 2 β``, so the equivalent is ``τ*/2``; for λ < 1 same-label pairs
  cost ``λ (1 - GIoU) / 2``, hence ``β = λ τ*`` (:func:`beta_from_tau`).

Determinism. Samples are ordered canonically (sorted by ``str`` of the id, as
:func:`agreement.methods.ot.alpha_ot.canonical_sample_order`). Each draw of ``D_e``
is a counter-based splitmix64 number keyed by the seed, the reference sample's
canonical rank and the rank of the reference set among the sets of its sample ordered by their
geometry (:func:`agreement.methods.geometry_agreement.ties.set_content_keys`); the
drawn rater is ranked the same way. So the draws never depend on rater names nor on
the order of samples, raters or labels, and are shared by every distance (paired
comparison): the same corpus gives the same ``D_o`` and ``D_e`` (as multisets; in
the same order whatever the order of its samples) after any such reordering or renaming.

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
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats

from agreement.core.data import MultiRaterAnnotations
from agreement.core.strata import IMAGE_SIZE, chance_strata_of
from agreement.geometry.similarity import check_similarity
from agreement.methods.kalos.calibration.ks import ks_max_point, ks_one_sided, ks_two_sided
from agreement.methods.kalos.calibration.plot import plot_calibration_png
from agreement.methods.kalos.calibration.results import (
    CalibrationPlot,
    CalibrationResult,
    DistanceCalibration,
    sample_summary,
)
from agreement.methods.kalos.calibration.samples import (
    check_distance,
    check_seed,
    disagreement_samples,
    expected_distances,
    observed_distances,
    plan_draws,
)

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

_BINNED_KDE_ABOVE = 50_000
_KDE_BINS = 16_384


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
            density: np.ndarray = stats.gaussian_kde(values, bw_method="scott")(grid)
            return density
        lo, hi = float(values.min()), float(values.max())
        counts, edges = np.histogram(values, bins=_KDE_BINS, range=(lo, hi))
        keep = counts > 0
        centres = 0.5 * (edges[:-1] + edges[1:])[keep]
        # Scott's factor of the full sample, not of the bins' effective size.
        binned: np.ndarray = stats.gaussian_kde(centres, bw_method=n ** -0.2, weights=counts[keep])(grid)
        return binned
    except (np.linalg.LinAlgError, ValueError):
        return None


def select_tau(
    d_observed: Sequence[float] | np.ndarray,
    d_expected: Sequence[float] | np.ndarray,
    *,
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

    Args:
        d_observed (array-like): Observed distances in ``[0, 1]`` (may be empty: the result is then undefined).
        d_expected (array-like): Expected (chance) distances in ``[0, 1]``, likewise.
        grid_size (int, default=1000): Number of evaluation points (at least 3).

    Returns:
        TauSelection: τ* in ``[0, 1]`` (or NaN), the method, the fallback reason, the modes
            and the densities on the grid.

    Raises:
        ValueError: Values outside ``[0, 1]`` or not finite; ``grid_size < 3``.

    References:
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
        return TauSelection(tau=math.nan, method="undefined", fallback=f"no {which} disagreement values",
                            mode_observed=math.nan, mode_expected=math.nan, grid=grid, density_observed=nan_curve,
                            density_expected=nan_curve.copy())
    f_o, f_e = _kde(d_o, grid), _kde(d_e, grid)
    mode_o = float(grid[np.argmax(f_o)]) if f_o is not None else math.nan
    mode_e = float(grid[np.argmax(f_e)]) if f_e is not None else math.nan
    curve_o = f_o if f_o is not None else nan_curve
    curve_e = f_e if f_e is not None else nan_curve.copy()

    def done(tau: float, method: str, fallback: str) -> TauSelection:
        return TauSelection(tau=float(tau), method=method, fallback=fallback, mode_observed=mode_o,
                            mode_expected=mode_e, grid=grid, density_observed=curve_o, density_expected=curve_e)

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
    ks, x = ks_max_point(d_o, d_e)
    if ks <= 0.0:
        return done(math.nan, "undefined",
                    "observed disagreement is nowhere smaller than expected (one-sided KS = 0): no threshold separates them")
    return done(x, "ks_max", reason)


def beta_from_tau(tau_giou: float, *, lam: float = 1.0, normalization: str = "paper") -> float:
    r"""OT dummy cost β equivalent to a calibrated GIoU-distance threshold.

    In :mod:`agreement.methods.ot` a same-label pair is matched iff its cost
    :math:`c = \lambda (1 - \mathrm{GIoU}) / 2 = \lambda\, d_{giou}` is below
    β (``"paper"``) or below 2β (``"oc_cost"``). Matching exactly the pairs with
    :math:`d_{giou} < \tau^*` therefore needs

    .. math:: \beta^* = \lambda \tau^* \;(\text{paper}), \qquad
              \beta^* = \lambda \tau^* / 2 \;(\text{oc\_cost})

    and at λ = 1, paper normalisation, :math:`\beta^* = \tau^*` (Prokhorov &
    Kalinin, supplement).

    Args:
        tau_giou (float): τ* of the ``"giou"`` distance ``(1 - GIoU) / 2``, in ``[0, 1]``.
        lam (float, default=1.0): The OT localisation weight λ in ``(0, 1]``.
        normalization ({"paper", "oc_cost"}, default="paper"): The normalisation of the OT cost.

    Returns:
        float: β* in ``(0, 1]``, or NaN when τ* is NaN or 0 (β must be positive).

    References:
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


def _histogram(x: np.ndarray, edges: np.ndarray) -> np.ndarray:
    if len(x) == 0:
        return np.zeros(len(edges) - 1)
    counts, _ = np.histogram(x, bins=edges)
    density: np.ndarray = counts / (len(x) * np.diff(edges))
    return density


def _calibrate_one(name: str, d_o: np.ndarray, d_e: np.ndarray, n_samples: int, grid_size: int,
                   bins: int, repaired_polygons: int = 0) -> DistanceCalibration:
    edges = np.linspace(0.0, 1.0, bins + 1)
    sel = select_tau(d_o, d_e, grid_size=grid_size)
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
        ks1, loc = ks_max_point(d_o, d_e)
        ks2 = ks_two_sided(d_o, d_e)
        tau_method, tau_fallback, tau = sel.method, sel.fallback, sel.tau
    plot = CalibrationPlot(bin_edges=edges, hist_observed=_histogram(d_o, edges), hist_expected=_histogram(d_e, edges),
                           grid=sel.grid, density_observed=sel.density_observed, density_expected=sel.density_expected,
                           tau=tau)
    return DistanceCalibration(
        distance=name, d_observed=d_o, d_expected=d_e,
        observed_summary=sample_summary(d_o), expected_summary=sample_summary(d_e),
        ks_one_sided=ks1, ks_two_sided=ks2, ks_location=loc, tau=tau,
        similarity_threshold=1.0 - tau, tau_method=tau_method, tau_fallback=tau_fallback,
        mode_observed=sel.mode_observed, mode_expected=sel.mode_expected, plot=plot, reason=reason,
        repaired_polygons=repaired_polygons,
    )


def calibrate(
    data: MultiRaterAnnotations,
    *,
    distances: Sequence[str] = DEFAULT_DISTANCES,
    seed: int = 0,
    grid_size: int = 1000,
    bins: int = 50,
    sigmas: ArrayLike | None = None,
    strata: ArrayLike | str | None = IMAGE_SIZE,
) -> CalibrationResult:
    r"""Calibrates the distance function, τ* and the OT β* on a corpus.

    For each distance ``d = 1 - s``: ``D_o`` and ``D_e``
    (:func:`disagreement_samples`, the same ``D_e`` draws for every distance),
    the one-sided KS :math:`D^+ = \sup_x (F_o - F_e)` and the two-sided
    :math:`\sup_x |F_o - F_e|`, and τ* (:func:`select_tau`). The best distance
    maximises :math:`D^+` (the KαLOS criterion). β* = τ* of ``"giou"``
    (λ = 1, see :func:`beta_from_tau`).

    Args:
        data (MultiRaterAnnotations): The corpus.
        distances (sequence of str, default=("iou", "giou", "centroid")): Similarity names (see
            :func:`disagreement_samples`), without repeats.
        seed (int, default=0): Seed of the ``D_e`` draws.
        grid_size (int, default=1000): Density grid on ``[0, 1]``.
        bins (int, default=50): Histogram bins on ``[0, 1]`` for the plot data.
        sigmas (array-like of shape (K,), optional): Per-keypoint σ for ``"oks"`` (default: the COCO person σ).
        strata ("image_size", array-like of shape (S,) or None, default "image_size"): Which samples the ``D_e`` draws
            pair: ``"image_size"``, images of comparable size (:func:`agreement.core.strata.chance_strata_of`; any two
            when every image is within a factor 1.25 of the others or the sizes are unknown); one integer per sample,
            samples of the same stratum (e.g. clips of comparable length,
            :func:`agreement.geometry.temporal.length_strata`); ``None``: any two.

    Returns:
        CalibrationResult: KS in ``[0, 1]`` (1 perfect separation), τ* in ``[0, 1]``, β* in
            ``(0, 1]``; NaN with a reason where undefined (no rater pairs, a
            single sample, no separation, ``"giou"`` not requested).

    Raises:
        ValueError: Unknown or repeated distance, no distance, bad seed, ``bins < 1``,
            ``grid_size < 3``, or annotations lacking the geometry of a distance
            (checked for every distance before any is computed; the message names
            them).

    References:
        Tschirschwitz & Rodehorst, "KαLOS finds Consensus" (principled
        configuration); Prokhorov & Kalinin, "Quantifying Annotation Agreement in
        Object Detection with Optimal Transport" (supplement: β* = τ* at λ = 1).
    """
    if isinstance(distances, str):
        distances = (distances,)
    distances = tuple(check_distance(d) for d in distances)
    if not distances:
        raise ValueError("distances must name at least one distance")
    if len(set(distances)) != len(distances):
        raise ValueError(f"distances must not repeat: {list(distances)}")
    seed = check_seed(seed)
    bins, grid_size = int(bins), int(grid_size)
    if bins < 1:
        raise ValueError(f"bins must be at least 1, got {bins}")
    if grid_size < 3:
        raise ValueError(f"grid_size must be at least 3, got {grid_size}")
    reports = {name: check_similarity(name, data, sigmas=sigmas) for name in distances}
    plan = plan_draws(data, seed, chance_strata_of(data, strata=strata))
    per = {}
    for name in distances:
        d_o, d_e = observed_distances(data, name, plan, sigmas), expected_distances(data, name, plan, sigmas)
        per[name] = _calibrate_one(name=name, d_o=d_o, d_e=d_e, n_samples=data.num_samples, grid_size=grid_size,
                                   bins=bins, repaired_polygons=int(reports[name].get("repaired_polygons", 0)))
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
        beta = beta_from_tau(g.tau, lam=1.0, normalization="paper")
        beta_oc = beta_from_tau(g.tau, lam=1.0, normalization="oc_cost")
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
