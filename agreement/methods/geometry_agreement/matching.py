"""The threshold matching of many set pairs at once: the eligible entries (similarity ``>= t``) of
similarity blocks, with small box blocks stacked into one call, and the matching that keeps, per
set pair, a maximum-cardinality then maximum-similarity one-to-one subset of them (Hungarian
algorithm on ``K + s``; :mod:`agreement.methods.geometry_agreement`).

This module does not import FiftyOne.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Sequence

import numpy as np
from scipy.optimize import linear_sum_assignment

from agreement.core.arrays import unique_sorted
from agreement.geometry.boxes import (
    giou_to_similarity,
    pairwise_centroid_closeness,
    pairwise_giou,
    pairwise_iou,
)
from agreement.methods.geometry_agreement.ties import TIE_EPS, pair_tiebreak

if TYPE_CHECKING:
    from agreement.core.data import MultiRaterAnnotations

#: ``f(rows_a, rows_b)``: the ``(len(rows_a), len(rows_b))`` similarities of two sets of annotation rows.
SimilarityBlock = Callable[[np.ndarray, np.ndarray], np.ndarray]

_STACK_BLOCK = 8_192  # entries of a block of stacked small tasks (box similarities)


# --------------------------------------------------------------------------
# Similarities: agreement.geometry.similarity, with stacked blocks for boxes
# --------------------------------------------------------------------------


def _stacked_box_similarity(name: str, data: MultiRaterAnnotations, rows_a: np.ndarray,
                            rows_b: np.ndarray) -> np.ndarray:
    """The box similarities of :func:`agreement.geometry.similarity.similarity_matrix`
    (same formulas) for ``rows_a`` spanning several samples: used only to
    stack many small blocks into one call (see :func:`stacker`)."""
    a, b = data.boxes[rows_a], data.boxes[rows_b]
    if name == "iou":
        return pairwise_iou(a, b)
    if name == "giou":
        clipped: np.ndarray = np.clip(giou_to_similarity(pairwise_giou(a, b)), 0.0, 1.0)
        return clipped
    wh = image_sizes_of(data)[0]  # centroid: every sample has this size (or none is known)
    size = tuple(wh.tolist()) if np.all(np.isfinite(wh)) and np.all(wh > 0) else None
    return pairwise_centroid_closeness(a, b, image_size=size)


def image_sizes_of(data: MultiRaterAnnotations) -> np.ndarray:
    """``(S, 2)`` float ``(width, height)`` of each sample of ``data``, NaN where unknown (as the corpus
    fills them in when built).

    Args:
        data: the corpus.

    Returns:
        ``data.image_sizes``, or an all-NaN ``(S, 2)`` array when the corpus has none.
    """
    if data.image_sizes is None:
        return np.full((data.num_samples, 2), np.nan)
    return data.image_sizes


def stacker(distance: str, data: MultiRaterAnnotations) -> SimilarityBlock | None:
    """A function computing blocks whose ``rows_a`` span several samples, or None.

    Box similarities are cheap per entry and cost mostly call overhead, so
    small blocks are stacked into one call (the cross-block entries are
    computed and discarded). Centroid closeness depends on the image size of
    ``rows_a``'s sample, so it is stacked only when every sample has the same
    size (or none is known). Costly similarities (polygons, masks, keypoints)
    are never stacked.
    """
    if distance == "centroid":
        sz = image_sizes_of(data)
        fin = np.isfinite(sz).all(axis=1)
        if not ((~fin).all() or (fin.all() and np.all(sz == sz[0]))):
            return None
    elif distance not in ("iou", "giou"):
        return None
    return lambda rows_a, rows_b: _stacked_box_similarity(distance, data, rows_a, rows_b)


# --------------------------------------------------------------------------
# Matching of eligible entries
# --------------------------------------------------------------------------


def match_entries(pair: np.ndarray, i: np.ndarray, j: np.ndarray, sim: np.ndarray, n_rows: int,
                  tie_keys: Callable[[np.ndarray], np.ndarray] | None = None) -> np.ndarray:
    """Which eligible entries the threshold matching keeps, for many set pairs.

    ``pair[e]`` is the set pair of entry ``e`` (rows ``i[e]`` of side A and
    ``j[e]`` of side B, similarity ``sim[e] >= t``). Set pairs whose eligible
    entries already form a matching (no row or column with two) keep them
    all; the others are solved by the Hungarian algorithm on
    ``K + sim + TIE_EPS * tie`` (maximum cardinality, then maximum total
    similarity). ``tie`` (:func:`agreement.methods.geometry_agreement.ties.pair_tiebreak`
    of ``tie_keys(rows)``, the rows' content keys) decides between matchings of
    equal total similarity (many pairs of similarity exactly 0 at threshold 0,
    or similarities too small to move ``K + sim`` in double precision) by the
    two annotations' geometry, so that the matching does not depend on the
    order of labels, samples or raters; without ``tie_keys`` such ties follow
    the input order.
    """
    E = len(pair)
    matched = np.zeros(E, dtype=bool)
    if E == 0:
        return matched
    base = np.int64(n_rows + 1)
    ki = pair.astype(np.int64) * base + i
    kj = pair.astype(np.int64) * base + j
    _, inv_i, cnt_i = np.unique(ki, return_inverse=True, return_counts=True)
    _, inv_j, cnt_j = np.unique(kj, return_inverse=True, return_counts=True)
    conflict = (cnt_i[inv_i] > 1) | (cnt_j[inv_j] > 1)
    bad_pairs = unique_sorted(pair[conflict])
    is_bad = np.isin(pair, bad_pairs)
    matched[~is_bad] = True
    if len(bad_pairs):
        idx = np.flatnonzero(is_bad)
        idx = idx[np.argsort(pair[idx], kind="stable")]
        p_sorted = pair[idx]
        # Local row / column numbers inside each set pair, all at once.
        ui, li = np.unique(ki[idx], return_inverse=True)
        uj, lj = np.unique(kj[idx], return_inverse=True)
        pi_first = np.searchsorted(ui // base, bad_pairs, side="left")
        pj_first = np.searchsorted(uj // base, bad_pairs, side="left")
        pi_n = np.diff(np.r_[pi_first, len(ui)])
        pj_n = np.diff(np.r_[pj_first, len(uj)])
        bounds = np.searchsorted(p_sorted, bad_pairs, side="left")
        ends = np.r_[bounds[1:], len(idx)]
        tie = (TIE_EPS * pair_tiebreak(tie_keys(i[idx]), tie_keys(j[idx])) if tie_keys is not None
               else np.zeros(len(idx)))
        for q, (lo, hi) in enumerate(zip(bounds.tolist(), ends.tolist(), strict=True)):
            e = idx[lo:hi]
            r_loc = li[lo:hi] - pi_first[q]
            c_loc = lj[lo:hi] - pj_first[q]
            w = np.zeros((int(pi_n[q]), int(pj_n[q])))
            w[r_loc, c_loc] = (min(w.shape) + 1.0) + sim[e] + tie[lo:hi]
            r, c = linear_sum_assignment(w, maximize=True)
            chosen = np.zeros(w.shape, dtype=bool)
            chosen[r, c] = True
            matched[e] = chosen[r_loc, c_loc]
    return matched


def eligible_entries(sim_fn: SimilarityBlock, stack_fn: SimilarityBlock | None, t: float,
                     tasks_a: Sequence[np.ndarray], tasks_b: Sequence[np.ndarray],
                     block: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Entries with similarity ``>= t`` of every task ``(rows_a, rows_b)``.

    ``sim_fn(rows_a, rows_b)`` computes one task's block (``rows_a`` of one
    sample); ``stack_fn``, when not None, computes blocks whose ``rows_a``
    span several samples, and consecutive small tasks are then stacked into
    blocks of at most ``block`` entries.

    Returns ``(colpos, row_a, row_b, sim)``: ``colpos`` indexes the
    concatenation of ``tasks_b`` (so it tells the task and the column).
    """
    block = _STACK_BLOCK if block is None else block
    n = len(tasks_a)
    out: tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray], list[np.ndarray]] = ([], [], [], [])
    if n == 0:
        return np.zeros(0, np.intp), np.zeros(0, np.intp), np.zeros(0, np.intp), np.zeros(0, np.float64)
    la = [len(x) for x in tasks_a]
    lb = [len(x) for x in tasks_b]
    col0 = np.concatenate([[0], np.cumsum(lb)])
    k = 0
    while k < n:
        e, na, nb = k + 1, la[k], lb[k]
        if stack_fn is not None:
            while e < n and (na + la[e]) * (nb + lb[e]) <= block:
                na += la[e]
                nb += lb[e]
                e += 1
        if e - k == 1 or stack_fn is None:  # one task (tasks are stacked only with a stack_fn)
            A, B = tasks_a[k], tasks_b[k]
            if not len(A) or not len(B):
                k = e
                continue
            M = sim_fn(A, B)
            ia, ib = np.nonzero(M >= t)
        else:
            A = np.concatenate(tasks_a[k:e])
            B = np.concatenate(tasks_b[k:e])
            M = stack_fn(A, B)
            ta = np.repeat(np.arange(e - k), la[k:e])
            tb = np.repeat(np.arange(e - k), lb[k:e])
            ia, ib = np.nonzero((ta[:, None] == tb[None, :]) & (M >= t))
        out[0].append(col0[k] + ib)
        out[1].append(A[ia])
        out[2].append(B[ib])
        out[3].append(M[ia, ib])
        k = e
    return (np.concatenate(out[0]).astype(np.intp), np.concatenate(out[1]).astype(np.intp),
            np.concatenate(out[2]).astype(np.intp), np.concatenate(out[3]).astype(np.float64))
