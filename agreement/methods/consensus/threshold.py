r"""``tau="auto"``: the correspondence threshold chosen from the corpus itself.

Two annotations of different raters on one sample are either two drawings
of one object or drawings of two objects. A threshold ``τ`` on their
similarity ``x`` (box IoU by default) makes two kinds of error: a pair of
the same object below ``τ`` is split into two units, a pair of different
objects at or above ``τ`` may be merged. Loose raters push the first kind's
similarities down; crowded scenes push the second kind's up, so no fixed
``τ`` suits every corpus (on the consensus experiment, ``τ = 0.5`` loses
up to 0.017 F1 on noisy raters and ``τ = 0.3`` up to 0.020 on careful ones).

The similarities of cross-rater pairs within samples, histogram ``h(x)``
(bins of 0.01), mix both kinds. The different-object part is estimated from
pairs of **one rater's own** annotations of a sample, which are drawings of
different objects (a rater draws an object once): their histogram, each
pair weighted by its sample's ratio ``(C_s - M_s) / W_s`` of cross-rater
pairs of different objects to same-rater pairs (``C_s`` cross-rater pairs,
``W_s`` same-rater pairs, ``M_s = \sum_{a<b} \min(n_a, n_b)``, the most
cross-rater pairs that can be of one object), gives ``\hat d(x)``; the
same-object part is ``\hat s(x) = \max(h(x) - \hat d(x), 0)``. Then

.. math:: \tau^* = \min \operatorname*{arg\,min}_{\tau \in \{lo, lo + 0.01, \dots, hi\}}
          \sum_{x < \tau} \hat s(x) + \sum_{x \ge \tau} \hat d(x),

the threshold of fewest expected errors (the smallest such when several
tie), in ``[lo, hi] = [0.3, 0.5]`` by default: 0.5 is the usual "same
object" IoU, and below 0.3 box IoU no longer identifies an object. Where
the corpus has no cross-rater pair with positive similarity, ``τ^* = hi``.
Up to ``max_samples`` samples holding up to ``max_pairs`` pairs of labels
(a seeded choice, the same for the same corpus) are compared, which bounds
the cost on large corpora and on crowds.

This module does not import FiftyOne.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, cast

import numpy as np

from agreement.core.data import MultiRaterAnnotations
from agreement.geometry.correspondence import check_tau
from agreement.methods.consensus.fusion import box_iou_paired
from agreement.methods.consensus.scale import member_pairs
from agreement.methods.consensus.units import UnitTable, units_from_labels

__all__ = ["TauChoice", "select_tau", "AUTO_TAU_RANGE", "AUTO_TAU_SAMPLES", "AUTO_TAU_PAIRS", "check_tau_or_auto", "resolve_tau"]

#: ``(lo, hi)``: where :func:`select_tau` looks for ``τ``.
AUTO_TAU_RANGE = (0.3, 0.5)
#: Samples, and pairs of labels within them, compared by :func:`select_tau` at most (a crowd of ten
#: raters per image has ~1,000 pairs a sample: the pair bound keeps its cost near 0.1 s).
AUTO_TAU_SAMPLES = 2000
AUTO_TAU_PAIRS = 500_000
_STEP = 0.01
_BINS = np.linspace(0.0, 1.0, 101)


@dataclass(frozen=True)
class TauChoice:
    r"""What :func:`select_tau` chose and from what.

    Attributes:
        tau: ``τ^*`` in ``[lo, hi]``.
        lo: the lower end of the range searched.
        hi: the upper end of the range searched.
        n_samples: samples compared.
        n_cross_pairs: cross-rater pairs with positive similarity among them.
        n_within_pairs: same-rater pairs with positive similarity among them.
        expected_splits: ``\sum_{x<τ^*} \hat s``, the expected splits at ``τ^*``, ``>= 0``.
        expected_merges: ``\sum_{x≥τ^*} \hat d``, the expected merges at ``τ^*``, ``>= 0``.
        reason: ``""``, or why ``τ^* = hi`` without a search (no cross-rater pair overlaps).
    """

    tau: float
    lo: float
    hi: float
    n_samples: int
    n_cross_pairs: int
    n_within_pairs: int
    expected_splits: float
    expected_merges: float
    reason: str = ""

    def as_dict(self) -> dict:
        """Plain values, for JSON."""
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def _similarity_fn(data: MultiRaterAnnotations, similarity: str | Callable) -> Callable:
    if callable(similarity):
        return lambda a, b: similarity(data, a, b)
    from agreement.geometry.similarity import similarity_matrix

    return lambda a, b: similarity_matrix(similarity, data, a, b)


def _compared_samples(data: MultiRaterAnnotations, max_samples: int, max_pairs: int, seed: int) -> UnitTable:
    """The compared samples as groups of their rows (a :class:`UnitTable` whose units are samples): those
    with two labels or more; when they are more than ``max_samples`` or hold more than ``max_pairs``
    pairs of labels, the first of them in a seeded random order, as many as fit both (at least one)."""
    n = np.bincount(data.sample_index, minlength=data.num_samples)
    candidates = np.flatnonzero(n >= 2)
    pairs = n[candidates] * (n[candidates] - 1) // 2
    if len(candidates) > max_samples or pairs.sum() > max_pairs:
        order = np.random.default_rng(seed).permutation(len(candidates))
        fits = int(np.searchsorted(np.cumsum(pairs[order]), max_pairs, side="right"))
        candidates = np.sort(candidates[order[:max(1, min(fits, max_samples))]])
    group_of_sample = np.full(data.num_samples, -1, dtype=np.int64)
    group_of_sample[candidates] = np.arange(len(candidates))
    return units_from_labels(group_of_sample[data.sample_index], data.sample_index, n_units=len(candidates))


def _pair_similarities(data: MultiRaterAnnotations, similarity: str | Callable, groups: UnitTable,
                       i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """The similarity of each within-sample pair of rows ``(i, j)`` (box IoU in one vectorised pass;
    other similarities a matrix per sample, in the pairs' order: row-major upper triangle)."""
    if similarity == "iou":
        return box_iou_paired(data.boxes[i], data.boxes[j])
    sim = _similarity_fn(data, similarity)
    out = [np.zeros(0)]
    for g in range(len(groups.unit_sample)):
        rows = groups.order[groups.starts[g]:groups.starts[g + 1]]
        out.append(np.asarray(sim(rows, rows), dtype=np.float64)[np.triu_indices(len(rows), 1)])
    return np.concatenate(out)


def _different_object_weights(data: MultiRaterAnnotations, groups: UnitTable) -> np.ndarray:
    """Per compared sample, ``max(C_s - M_s, 0) / W_s`` (0 without same-rater pairs): module docstring."""
    G, R = len(groups.unit_sample), data.num_raters
    cell, n = np.unique(groups.member_unit * R + data.rater_index[groups.order], return_counts=True)
    g = cell // R
    total = np.bincount(g, weights=n, minlength=G)
    C = (total ** 2 - np.bincount(g, weights=n * n, minlength=G)) / 2
    W = np.bincount(g, weights=n * (n - 1) / 2, minlength=G)
    # M_s = sum over rater pairs of the smaller count: each count times the counts above it in its sample
    by = np.lexsort((n, g))
    first = np.searchsorted(g[by], g[by])
    larger = np.bincount(g, minlength=G)[g[by]] - 1 - (np.arange(len(by)) - first)
    M = np.bincount(g[by], weights=n[by] * larger, minlength=G)
    return np.divide(np.maximum(C - M, 0.0), W, out=np.zeros(G), where=W > 0)


def _histograms(data: MultiRaterAnnotations, similarity: str | Callable,
                groups: UnitTable) -> tuple[np.ndarray, np.ndarray, int, int]:
    r"""``(h, \hat d, n_cross, n_within)`` of the module docstring over the compared samples ``groups``."""
    pi, pj = member_pairs(groups)
    i, j, g = groups.order[pi], groups.order[pj], groups.member_unit[pi]
    x = np.clip(_pair_similarities(data, similarity, groups, i, j), 0.0, 1.0)
    same_rater = data.rater_index[i] == data.rater_index[j]
    cross, within = ~same_rater & (x > 0), same_rater & (x > 0)
    h = np.histogram(x[cross], _BINS)[0].astype(np.float64)
    d = np.histogram(x[within], _BINS, weights=_different_object_weights(data, groups)[g[within]])[0]
    return h, d, int(cross.sum()), int(within.sum())


def select_tau(
    data: MultiRaterAnnotations,
    *,
    similarity: str | Callable = "iou",
    lo: float = AUTO_TAU_RANGE[0],
    hi: float = AUTO_TAU_RANGE[1],
    max_samples: int = AUTO_TAU_SAMPLES,
    max_pairs: int = AUTO_TAU_PAIRS,
    seed: int = 0,
) -> TauChoice:
    r"""The correspondence threshold of fewest expected errors on ``data`` (module docstring).

    Args:
        data: the annotations.
        similarity: the correspondence's similarity (a name of
            :func:`agreement.geometry.similarity.similarity_matrix`, or
            ``f(data, rows_a, rows_b)``), in ``[0, 1]``.
        lo: the lower end of the range searched, in steps of 0.01 (``0 < lo <= hi``).
        hi: the upper end of the range searched (``hi <= 1``).
        max_samples: samples compared at most (``>= 1``; a seeded choice among the samples with two
            labels or more; at least one sample).
        max_pairs: pairs of labels within those samples compared at most (``>= 1``).
        seed: the seed of that choice.

    Returns:
        The :class:`TauChoice`, its ``tau`` in ``[lo, hi]``.

    Raises:
        ValueError: ``lo``, ``hi`` not ``0 < lo <= hi <= 1``, or ``max_samples`` or ``max_pairs`` below 1.
    """
    if not (0 < lo <= hi <= 1):
        raise ValueError(f"the range of tau must satisfy 0 < lo <= hi <= 1, got ({lo!r}, {hi!r})")
    for name, v in (("max_samples", max_samples), ("max_pairs", max_pairs)):
        if int(v) < 1:
            raise ValueError(f"{name} must be >= 1, got {v!r}")
    groups = _compared_samples(data, int(max_samples), int(max_pairs), seed)
    n_samples = len(groups.unit_sample)
    cross, diff, n_cross, n_within = _histograms(data, similarity, groups)
    if n_cross == 0:
        return TauChoice(tau=float(hi), lo=float(lo), hi=float(hi), n_samples=n_samples, n_cross_pairs=0,
                         n_within_pairs=n_within, expected_splits=0.0, expected_merges=0.0,
                         reason="no two raters' labels overlap on any sample compared")
    same = np.maximum(cross - diff, 0.0)
    below = np.concatenate([[0.0], np.cumsum(same)])  # below[k]: same-object pairs in bins < k
    above = np.concatenate([np.cumsum(diff[::-1])[::-1], [0.0]])  # above[k]: different-object pairs in bins >= k
    ks = np.arange(int(round(lo / _STEP)), int(round(hi / _STEP)) + 1)
    errors = below[ks] + above[ks]
    best = int(np.argmin(errors))  # the first (smallest tau) of the minima
    k = int(ks[best])
    return TauChoice(tau=float(round(k * _STEP, 2)), lo=float(lo), hi=float(hi), n_samples=n_samples,
                     n_cross_pairs=n_cross, n_within_pairs=n_within, expected_splits=float(below[k]),
                     expected_merges=float(above[k]))


def check_tau_or_auto(tau: float | str) -> float | str:
    """``"auto"``, or ``tau`` as a number in ``(0, 1]`` (:func:`agreement.geometry.correspondence.check_tau`).

    Args:
        tau: a number in ``(0, 1]`` or ``"auto"`` (chosen from the data).

    Returns:
        ``"auto"``, or the checked number.

    Raises:
        ValueError: any other value (the message names both forms).
    """
    if isinstance(tau, str):
        if tau == "auto":
            return tau
        raise ValueError(f"tau must be a number in (0, 1] or 'auto' (chosen from the data), got {tau!r}")
    try:
        return check_tau(tau)
    except ValueError as e:
        raise ValueError(f"{e}; or tau='auto' to choose it from the data") from None


def resolve_tau(tau: float | str, data: MultiRaterAnnotations, similarity: str | Callable,
                *, model_tau: float | None = None) -> tuple[float, TauChoice | None]:
    """``(τ, choice)`` of a ``tau`` checked by :func:`check_tau_or_auto`.

    Args:
        tau: a number in ``(0, 1]`` (returned as given) or ``"auto"``.
        data: the annotations :func:`select_tau` searches on ``"auto"``.
        similarity: the correspondence's similarity.
        model_tau: a fitted model's ``τ``: ``"auto"`` reuses it when finite (shards of a corpus use the whole
            corpus's).

    Returns:
        ``(τ, choice)``: ``choice`` the :class:`TauChoice` when :func:`select_tau` chose ``τ``, else None.
    """
    if tau != "auto":
        return cast(float, tau), None  # a number: check_tau_or_auto accepts no other string
    if model_tau is not None and np.isfinite(model_tau):
        return float(model_tau), None
    choice = select_tau(data, similarity=similarity)
    return choice.tau, choice
