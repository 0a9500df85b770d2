"""Feasible range of the OT agreement score for given box counts, and where a score sits in it.

Setting (see :mod:`agreement.methods.ot`): two sets of ``n`` and ``m`` labelled boxes,
pair cost ``c_ij = lam (1 - GIoU_ij) / 2 + (1 - lam) [label_i != label_j]`` in
``[0, 1]``, dummy cost ``beta`` in ``(0, 1]``, ``N = n + m``, ``lo = min(n, m)``,
``hi = max(n, m)``, ``k`` the number of matched pairs.

The largest pair cost the geometry and labels allow is ``c_max = 1`` when the
labels may differ (``GIoU -> -1`` for tiny boxes in opposite corners, labels
different) and ``c_max = lam`` when every pair shares a label
(``same_labels=True``). The optimal cost is a continuous, non-decreasing
function of every ``c_ij``, so the feasible costs form an interval between the
all-zero configuration (one set contains copies of the other) and the
all-``c_max`` configuration (extremes may be reached only in the limit, e.g.
``GIoU -> -1``).

**Paper normalisation** ``cost = (sum_M 2 c_ij + beta (N - 2k)) / N``:

* lowest cost ``beta (hi - lo) / N`` (``lo`` perfect pairs, ``hi - lo`` dummies);
* highest cost ``beta`` when ``c_max >= beta`` (worst case: every box goes to a
  dummy; the paper's case ``beta < lam``), else
  ``(2 lo c_max + beta (hi - lo)) / N`` (the paper's case ``lam <= beta`` with
  agreeing labels: dummies only for the ``hi - lo`` surplus boxes; at equal
  counts the score range is exactly ``lam``).
* score = 1 - cost, so ``1 - beta <= lower <= upper <= 1`` and, as ``hi / lo``
  grows, both bounds approach ``1 - beta``.

**OC-cost normalisation** ``cost = (sum_M c_ij + beta (N - 2k)) / (N - k)``
(Otani et al., CVPR 2022): a pair is matched only when ``c_ij < 2 beta``;

* lowest cost ``beta (hi - lo) / hi``;
* highest cost ``(lo c_max + beta (hi - lo)) / hi`` when ``c_max < 2 beta``, else
  the supremum ``beta N / hi`` (pairs just below ``2 beta``: the cost can exceed
  ``beta``, up to ``2 beta`` at ``n = m``).

**Known transport plan** (``n_matched = k`` given): the paper bounds the score by
the plan's dummy count: matched pair costs range over ``[0, min(c_max, t))``
with ``t = beta`` (paper) or ``2 beta`` (OC-cost), so
``cost in [beta (N - 2k) / N, (2 k min(c_max, beta) + beta (N - 2k)) / N]``
(paper) or ``[beta (N - 2k) / (N - k), (k min(c_max, 2 beta) + beta (N - 2k)) / (N - k)]``
(OC-cost). A ``k < lo`` is infeasible (NaN) when every pair is eligible
(``c_max < t``).

Reference: Prokhorov & Kalinin, "Quantifying Annotation Agreement in Object
Detection with Optimal Transport" (score bounds for known transport plans);
Otani et al., "Optimal Correction Cost for Object Detection Evaluation", CVPR
2022.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["ScoreBounds", "score_bounds", "relative_position", "match_giou_threshold"]

NORMALIZATIONS = ("paper", "oc_cost")


@dataclass(frozen=True)
class ScoreBounds:
    """Feasible OT score range ``[lower, upper]`` (arrays broadcast from the inputs).

    Attributes:
        lower: lowest feasible score (``1 -`` highest cost); NaN if infeasible.
        upper: highest feasible score (``1 -`` lowest cost); NaN if infeasible.
        reason: ``""``, or why some entries are NaN.
    """

    lower: np.ndarray | float
    upper: np.ndarray | float
    reason: str = ""

    @property
    def width(self) -> np.ndarray | float:
        """``upper - lower``, the length of the feasible range."""
        return self.upper - self.lower

    def contains(self, score: float | np.ndarray, atol: float = 1e-9) -> np.ndarray | bool:
        """Whether ``score`` lies in ``[lower - atol, upper + atol]``."""
        return (np.asarray(score) >= self.lower - atol) & (np.asarray(score) <= self.upper + atol)


def _check(lam: float, beta: float, normalization: str) -> None:
    if not (0.0 <= lam <= 1.0) or not np.isfinite(lam):
        raise ValueError(f"lam must be in [0, 1], got {lam!r}")
    if not (0.0 < beta <= 1.0) or not np.isfinite(beta):
        raise ValueError(f"beta must be in (0, 1], got {beta!r}")
    if normalization not in NORMALIZATIONS:
        raise ValueError(f"normalization must be one of {NORMALIZATIONS}, got {normalization!r}")


def score_bounds(
    n: int | np.ndarray,
    m: int | np.ndarray,
    *,
    lam: float = 0.5,
    beta: float = 0.5,
    normalization: str = "paper",
    same_labels: bool = False,
    n_matched: int | np.ndarray | None = None,
) -> ScoreBounds:
    """Feasible OT score range for box counts ``(n, m)`` and parameters ``(lam, beta)``.

    Paper normalisation (``N = n + m``, ``lo = min(n, m)``, ``hi = max(n, m)``,
    ``c_max = lam`` if ``same_labels`` else 1)::

        upper = 1 - beta (hi - lo) / N
        lower = 1 - beta                                   if c_max >= beta
              = 1 - (2 lo c_max + beta (hi - lo)) / N      otherwise

    OC-cost normalisation::

        upper = 1 - beta (hi - lo) / hi
        lower = 1 - beta N / hi                            if c_max >= 2 beta (supremum)
              = 1 - (lo c_max + beta (hi - lo)) / hi       otherwise

    With ``n_matched = k`` (a known transport plan) the range is the one of
    plans with exactly ``k`` matched pairs (module docstring). Both sets empty
    give ``[1, 1]``. Range: ``1 - beta <= lower <= upper <= 1`` (paper);
    ``1 - 2 beta <= lower`` (OC-cost).

    Args:
        n: box count of one set (a scalar or an array; broadcast with ``m``).
        m: box count of the other set (a scalar or an array).
        lam: weight of localisation in the pair cost, in ``[0, 1]``.
        beta: dummy cost, in ``(0, 1]``.
        normalization: ``"paper"`` or ``"oc_cost"``.
        same_labels: every pair shares a label (so ``c_ij <= lam``); the
            paper's special cases ``lam <= beta`` / ``beta < lam`` are stated for
            this setting.
        n_matched: optional number of matched pairs of a known plan.

    Returns:
        :class:`ScoreBounds`; floats for scalar input, arrays otherwise.

    Reference: Prokhorov & Kalinin, "Quantifying Annotation Agreement in Object
    Detection with Optimal Transport"; Otani et al., CVPR 2022 (OC-cost).
    """
    _check(lam, beta, normalization)
    scalar = np.ndim(n) == 0 and np.ndim(m) == 0 and (n_matched is None or np.ndim(n_matched) == 0)
    n = np.asarray(n, dtype=np.float64)
    m = np.asarray(m, dtype=np.float64)
    if np.any(n < 0) or np.any(m < 0):
        raise ValueError("box counts must be >= 0")
    n, m = np.broadcast_arrays(n, m)
    N = n + m
    lo = np.minimum(n, m)
    hi = np.maximum(n, m)
    c_max = lam if same_labels else 1.0
    t = beta if normalization == "paper" else 2.0 * beta  # eligibility: c_ij < t
    reason = ""
    with np.errstate(invalid="ignore", divide="ignore"):
        if n_matched is None:
            if normalization == "paper":
                cost_min = beta * (hi - lo) / N
                cost_max = beta * np.ones_like(N) if c_max >= beta else (2 * lo * c_max + beta * (hi - lo)) / N
            else:
                cost_min = beta * (hi - lo) / hi
                cost_max = beta * N / hi if c_max >= 2 * beta else (lo * c_max + beta * (hi - lo)) / hi
        else:
            k = np.broadcast_to(np.asarray(n_matched, dtype=np.float64), N.shape)
            if np.any(k < 0) or np.any(k != np.round(k)):
                raise ValueError("n_matched must be a non-negative integer")
            c_top = min(c_max, t)
            D = N if normalization == "paper" else N - k
            w = 2.0 if normalization == "paper" else 1.0
            cost_min = beta * (N - 2 * k) / D
            cost_max = (w * k * c_top + beta * (N - 2 * k)) / D
            bad = (k > lo) | ((c_max < t) & (k < lo))
            if np.any(bad):
                reason = ("infeasible n_matched: more pairs than min(n, m), or fewer while every pair "
                          "is eligible (c_max below the matching threshold)")
                cost_min = np.where(bad, np.nan, cost_min)
                cost_max = np.where(bad, np.nan, cost_max)
        empty = N == 0
        cost_min = np.where(empty, 0.0, cost_min)
        cost_max = np.where(empty, 0.0, cost_max)
    lower, upper = 1.0 - cost_max, 1.0 - cost_min
    if scalar:
        return ScoreBounds(float(lower), float(upper), reason)
    return ScoreBounds(lower, upper, reason)


def relative_position(
    score: float | np.ndarray, lower: float | np.ndarray, upper: float | np.ndarray
) -> np.ndarray | float:
    """Where a score sits in its feasible range: ``(score - lower) / (upper - lower)``.

    0 at the worst feasible score for those box counts, 1 at the best. NaN when
    the range is a single point (``upper - lower < 1e-12``: e.g. one set empty,
    or both) or when an input is NaN. Values are clipped to ``[0, 1]`` against
    float noise.
    """
    score = np.asarray(score, dtype=np.float64)
    lower = np.asarray(lower, dtype=np.float64)
    upper = np.asarray(upper, dtype=np.float64)
    width = upper - lower
    with np.errstate(invalid="ignore", divide="ignore"):
        pos = np.where(width > 1e-12, (score - lower) / np.where(width > 1e-12, width, 1.0), np.nan)
    pos = np.clip(pos, 0.0, 1.0)
    return float(pos) if pos.ndim == 0 else pos


def match_giou_threshold(
    lam: float, beta: float, *, same_label: bool = True, normalization: str = "paper"
) -> float:
    """The GIoU above which a pair of boxes can be matched (is *eligible*).

    A pair is matched only if ``c_ij < beta`` (paper) or ``c_ij < 2 beta``
    (OC-cost); with ``c_ij = lam (1 - g) / 2 + (1 - lam) [labels differ]`` this
    is ``g > 1 - 2 (t - (1 - lam) [labels differ]) / lam`` with ``t`` the
    threshold. For same-label pairs and ``rho = beta / lam`` (paper):
    ``g > 1 - 2 rho``, so every same-label pair is eligible when ``rho > 1``
    (threshold below -1) and only overlapping boxes (``GIoU > 0`` implies
    ``IoU > 0``) when ``rho <= 1/2``.

    Returns:
        The threshold; ``-inf`` if every pair is eligible whatever its geometry
        (including ``lam = 0`` with a cost below the threshold), ``+inf`` if
        none is.

    Reference: Prokhorov & Kalinin, "Quantifying Annotation Agreement in Object
    Detection with Optimal Transport".
    """
    _check(lam, beta, normalization)
    t = beta if normalization == "paper" else 2.0 * beta
    budget = t - (0.0 if same_label else 1.0 - lam)
    if lam == 0.0:
        return -np.inf if budget > 0 else np.inf
    g = 1.0 - 2.0 * budget / lam
    if g < -1.0:
        return -np.inf
    if g >= 1.0:
        return np.inf
    return float(g)
