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
Up to ``max_samples`` samples (a seeded choice, the same for the same
corpus) are compared, which bounds the cost on large corpora.

This module does not import FiftyOne.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from agreement.data import MultiRaterAnnotations

__all__ = ["TauChoice", "select_tau", "AUTO_TAU_RANGE", "AUTO_TAU_SAMPLES", "resolve_tau"]

#: ``(lo, hi)``: where :func:`select_tau` looks for ``τ``.
AUTO_TAU_RANGE = (0.3, 0.5)
#: Samples compared by :func:`select_tau` at most.
AUTO_TAU_SAMPLES = 2000
_STEP = 0.01
_BINS = np.linspace(0.0, 1.0, 101)


@dataclass(frozen=True)
class TauChoice:
    """What :func:`select_tau` chose and from what.

    Attributes:
        tau: ``τ^*`` in ``[lo, hi]``.
        lo, hi: the range searched.
        n_samples: samples compared.
        n_cross_pairs: cross-rater pairs with positive similarity among them.
        n_within_pairs: same-rater pairs with positive similarity among them.
        expected_splits, expected_merges: ``\\sum_{x<τ^*} \\hat s`` and ``\\sum_{x≥τ^*} \\hat d``.
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
    from agreement.similarity import similarity_matrix

    return lambda a, b: similarity_matrix(similarity, data, a, b)


def _sample_rows(data: MultiRaterAnnotations, max_samples: int, seed: int) -> list[np.ndarray]:
    """The rows of each compared sample (those with two labels or more; a seeded subset of at most
    ``max_samples``)."""
    n = np.bincount(data.sample_index, minlength=data.num_samples) if len(data) else np.zeros(data.num_samples, int)
    candidates = np.flatnonzero(n >= 2)
    if len(candidates) > max_samples:
        candidates = np.sort(np.random.default_rng(seed).choice(candidates, max_samples, replace=False))
    order = np.argsort(data.sample_index, kind="stable")
    starts = np.concatenate([[0], np.cumsum(n)])
    return [order[starts[s]:starts[s + 1]] for s in candidates.tolist()]


def _within_sample_pairs(rows_of: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(i, j, g)``: every pair of rows ``i < j`` (positions in their sample's rows) of each sample ``g``
    of ``rows_of``, as rows of the corpus."""
    n = np.array([len(r) for r in rows_of], dtype=np.int64)
    flat = np.concatenate(rows_of) if rows_of else np.zeros(0, np.int64)
    group = np.repeat(np.arange(len(n)), n)
    end = np.repeat(np.cumsum(n), n)  # one past the last position of each row's sample
    pos = np.arange(len(flat))
    partners = end - pos - 1
    i = np.repeat(pos, partners)
    j = i + 1 + (np.arange(len(i)) - np.repeat(np.cumsum(partners) - partners, partners))
    return flat[i], flat[j], group[i]


def _pair_similarities(data: MultiRaterAnnotations, similarity: str | Callable, rows_of: list[np.ndarray],
                       i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """The similarity of each pair ``(i, j)`` of :func:`_within_sample_pairs` (box IoU in one vectorised
    pass; other similarities a matrix per sample)."""
    if similarity == "iou":
        from agreement.consensus.fusion import box_iou_paired

        return box_iou_paired(data.boxes[i], data.boxes[j])
    sim = _similarity_fn(data, similarity)
    out = []
    for rows in rows_of:
        iu = np.triu_indices(len(rows), 1)
        out.append(np.asarray(sim(rows, rows), dtype=np.float64)[iu])
    return np.concatenate(out) if out else np.zeros(0)


def _different_object_weights(data: MultiRaterAnnotations, rows_of: list[np.ndarray]) -> np.ndarray:
    """Per compared sample, ``max(C_s - M_s, 0) / W_s`` (0 without same-rater pairs): module docstring."""
    w = np.zeros(len(rows_of))
    for g, rows in enumerate(rows_of):
        counts = np.bincount(data.rater_index[rows])
        counts = np.sort(counts[counts > 0])
        C = (counts.sum() ** 2 - (counts ** 2).sum()) / 2
        W = (counts * (counts - 1) / 2).sum()
        M = float((counts * np.arange(len(counts) - 1, -1, -1)).sum())  # sum over rater pairs of the smaller
        w[g] = max(C - M, 0.0) / W if W > 0 else 0.0
    return w


def _histograms(data: MultiRaterAnnotations, similarity: str | Callable, rows_of: list[np.ndarray]):
    """``(h, \\hat d, n_cross, n_within)`` of the module docstring over the samples ``rows_of``."""
    i, j, g = _within_sample_pairs(rows_of)
    x = np.clip(_pair_similarities(data, similarity, rows_of, i, j), 0.0, 1.0)
    same_rater = data.rater_index[i] == data.rater_index[j]
    cross, within = ~same_rater & (x > 0), same_rater & (x > 0)
    h = np.histogram(x[cross], _BINS)[0].astype(np.float64)
    d = np.histogram(x[within], _BINS, weights=_different_object_weights(data, rows_of)[g[within]])[0]
    return h, d, int(cross.sum()), int(within.sum())


def select_tau(
    data: MultiRaterAnnotations,
    similarity: str | Callable = "iou",
    lo: float = AUTO_TAU_RANGE[0],
    hi: float = AUTO_TAU_RANGE[1],
    max_samples: int = AUTO_TAU_SAMPLES,
    seed: int = 0,
) -> TauChoice:
    r"""The correspondence threshold of fewest expected errors on ``data`` (module docstring).

    Parameters
    ----------
    data : MultiRaterAnnotations
    similarity : str or callable
        The correspondence's similarity (a name of
        :func:`agreement.similarity.similarity_matrix`, or
        ``f(data, rows_a, rows_b)``), in ``[0, 1]``.
    lo, hi : float, ``0 < lo <= hi <= 1``
        The range searched, in steps of 0.01.
    max_samples : int >= 1
        Samples compared at most (a seeded choice among those with two labels or more).
    seed : int

    Returns
    -------
    TauChoice
        ``tau`` in ``[lo, hi]``.
    """
    if not (0 < lo <= hi <= 1):
        raise ValueError(f"the range of tau must satisfy 0 < lo <= hi <= 1, got ({lo!r}, {hi!r})")
    if int(max_samples) < 1:
        raise ValueError(f"max_samples must be >= 1, got {max_samples!r}")
    rows_of = _sample_rows(data, int(max_samples), seed)
    cross, diff, n_cross, n_within = _histograms(data, similarity, rows_of)
    if n_cross == 0:
        return TauChoice(float(hi), float(lo), float(hi), len(rows_of), 0, n_within, 0.0, 0.0,
                         "no two raters' labels overlap on any sample compared")
    same = np.maximum(cross - diff, 0.0)
    below = np.concatenate([[0.0], np.cumsum(same)])  # below[k]: same-object pairs in bins < k
    above = np.concatenate([np.cumsum(diff[::-1])[::-1], [0.0]])  # above[k]: different-object pairs in bins >= k
    ks = np.arange(int(round(lo / _STEP)), int(round(hi / _STEP)) + 1)
    errors = below[ks] + above[ks]
    best = int(np.argmin(errors))  # the first (smallest tau) of the minima
    k = int(ks[best])
    return TauChoice(float(round(k * _STEP, 2)), float(lo), float(hi), len(rows_of), n_cross, n_within,
                     float(below[k]), float(above[k]))


def resolve_tau(tau: float | str, data: MultiRaterAnnotations, similarity: str | Callable,
                model_tau: float | None = None) -> tuple[float, TauChoice | None]:
    """``(τ, choice)``: a number as given (``choice`` None); ``"auto"``: a fitted model's ``τ`` when
    given (shards of a corpus use the whole corpus's), else :func:`select_tau` of ``data``."""
    if isinstance(tau, str):
        if tau != "auto":
            raise ValueError(f"tau must be a number in (0, 1] or 'auto', got {tau!r}")
        if model_tau is not None and np.isfinite(model_tau):
            return float(model_tau), None
        choice = select_tau(data, similarity)
        return choice.tau, choice
    return tau, None
