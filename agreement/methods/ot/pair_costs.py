"""Corpus-level pair costs (:mod:`agreement.methods.ot`): the pair cost, GIoU and IoU of arbitrary box pairs of
a corpus (:class:`PairCosts`, the paired forms of the matrix functions, bit-identical), the box
pairs of many set pairs in blocks (:func:`set_pair_entries`, :func:`chunks_of`), and what solving many set
pairs at once gives back (:class:`SolvedSetPairs`).

This module does not import FiftyOne.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from agreement.geometry.boxes import paired_iou
from agreement.methods.ot.pairs import check_ot_boxes

# ---------------------------------------------------------------------------
# Corpus level: pair costs of arbitrary box pairs, and many set pairs at once
# ---------------------------------------------------------------------------


# Box pairs per block of pair-cost arithmetic (a few 256 KiB temporaries).
_COST_BLOCK = 1 << 15


def _label_codes(labels: np.ndarray) -> np.ndarray:
    index: dict = {}
    return np.fromiter((index.setdefault(v, len(index)) for v in labels), np.int64, len(labels))


class PairCosts:
    """Corners and label codes of a corpus' boxes, for the pair cost of any box pairs.

    :meth:`giou` and :meth:`iou` are the paired forms of
    :func:`agreement.geometry.boxes.pairwise_giou` and ``pairwise_iou`` (the
    same operations in the same order, so bit-identical, zero-area cases
    included), and :meth:`cost` the paired form of :func:`pair_cost_matrix`.
    """

    def __init__(self, boxes: np.ndarray, labels: np.ndarray, lam: float):
        boxes = check_ot_boxes(boxes, "boxes")
        self.boxes = boxes
        self.x1, self.y1 = boxes[:, 0].copy(), boxes[:, 1].copy()
        self.x2, self.y2 = boxes[:, 2] + self.x1, boxes[:, 3] + self.y1
        self.area = (self.x2 - self.x1) * (self.y2 - self.y1)
        self.codes = _label_codes(labels)
        self.lam = float(lam)

    def giou(self, i: np.ndarray, j: np.ndarray, iou_out: np.ndarray | None = None) -> np.ndarray:
        """GIoU of the box pairs ``(i[k], j[k])``: ``|A ∩ B| / |A ∪ B| - |C - (A ∪ B)| / |C|``, ``C`` the
        smallest enclosing box (Rezatofighi et al., CVPR 2019).

        Args:
            i: ``(k,)`` int box rows.
            j: ``(k,)`` int box rows.
            iou_out: optional ``(k,)`` float64 array: their IoU is stored there too (the same operations as
                :meth:`iou`, so bit-identical to it).

        Returns:
            ``(k,)`` float64 GIoU in ``[-1, 1]``.
        """
        x1, y1, x2, y2, area = self.x1, self.y1, self.x2, self.y2, self.area
        xa2, xb2, xa1, xb1 = x2[i], x2[j], x1[i], x1[j]
        o: np.ndarray = np.minimum(xa2, xb2)
        o -= np.maximum(xa1, xb1)
        np.maximum(o, 0.0, out=o)
        u = np.maximum(xa2, xb2)
        u -= np.minimum(xa1, xb1)
        ya2, yb2, ya1, yb1 = y2[i], y2[j], y1[i], y1[j]
        v = np.minimum(ya2, yb2)
        v -= np.maximum(ya1, yb1)
        np.maximum(v, 0.0, out=v)
        o *= v  # |A ∩ B|
        v = np.maximum(ya2, yb2)
        v -= np.minimum(ya1, yb1)
        u *= v  # |C|
        v = area[i] + area[j]
        v -= o  # |A ∪ B|
        zero = v == 0.0  # both areas zero (an intersection is then zero too)
        if zero.any():
            v[zero] = 1.0
            u[zero] = 1.0
        np.divide(o, v, out=o)
        if iou_out is not None:
            iou_out[:] = o
        np.divide(v, u, out=v)
        np.minimum(v, 1.0, out=v)
        np.subtract(1.0, v, out=v)
        o -= v
        if zero.any():
            z = np.flatnonzero(zero)
            same = (xa1[z] == xb1[z]) & (ya1[z] == yb1[z]) & (xa2[z] == xb2[z]) & (ya2[z] == yb2[z])
            o[z] = np.where(same, 1.0, -1.0)
            if iou_out is not None:
                iou_out[z] = same.astype(np.float64)
        return o

    def iou(self, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        """IoU of the box pairs ``(i[k], j[k])``: :func:`agreement.geometry.boxes.paired_iou` (bit-identical to
        ``pairwise_iou``), in cache-sized blocks.

        Args:
            i: ``(k,)`` int box rows.
            j: ``(k,)`` int box rows.

        Returns:
            ``(k,)`` float64 IoU in ``[0, 1]``.
        """
        out = np.empty(len(i))
        for lo in range(0, len(i), _COST_BLOCK):
            ib, jb = i[lo:lo + _COST_BLOCK], j[lo:lo + _COST_BLOCK]
            out[lo:lo + len(ib)] = paired_iou(self.boxes[ib], self.boxes[jb])
        return out

    def geometric(self, i: np.ndarray, j: np.ndarray, iou_out: np.ndarray | None = None) -> np.ndarray:
        """The localisation term ``lam (1 - GIoU) / 2`` of the pair cost.

        Args:
            i: ``(k,)`` int box rows.
            j: ``(k,)`` int box rows.
            iou_out: as :meth:`giou`.

        Returns:
            ``(k,)`` float64 in ``[0, lam]``.
        """
        g = self.giou(i, j, iou_out)
        np.subtract(1.0, g, out=g)
        g *= 0.5 * self.lam
        return g

    def cost(self, i: np.ndarray, j: np.ndarray, iou_out: np.ndarray | None = None) -> np.ndarray:
        """``c = lam (1 - GIoU) / 2 + (1 - lam) [label_i != label_j]`` of the pairs.

        Computed in blocks of ``_COST_BLOCK`` pairs, whose temporaries stay in the CPU cache (several times
        faster than whole-array operations).

        Args:
            i: ``(k,)`` int box rows.
            j: ``(k,)`` int box rows.
            iou_out: optional ``(k,)`` float64 array: the pairs' IoU is stored there as :meth:`iou` computes it.

        Returns:
            ``(k,)`` float64 costs in ``[0, 1]``.
        """
        out = np.empty(len(i))
        for lo in range(0, len(i), _COST_BLOCK):
            ib, jb = i[lo:lo + _COST_BLOCK], j[lo:lo + _COST_BLOCK]
            c = self.geometric(ib, jb, None if iou_out is None else iou_out[lo:lo + _COST_BLOCK])
            if self.lam < 1.0:
                c += (1.0 - self.lam) * (self.codes[ib] != self.codes[jb])
            np.clip(c, 0.0, 1.0, out=out[lo:lo + _COST_BLOCK])
        return out


def set_pair_entries(a0: np.ndarray, na: np.ndarray, b0: np.ndarray, nb: np.ndarray,
             problems: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every box pair of the set pairs ``problems`` (A rows ``a0 + [0, na)``, B rows ``b0 + [0, nb)``).

    Only repeats and additions over the box pairs (no division, no gather).

    Args:
        a0: ``(P,)`` first A row of each set pair.
        na: ``(P,)`` A boxes of each set pair.
        b0: ``(P,)`` first B row of each set pair.
        nb: ``(P,)`` B boxes of each set pair.
        problems: the set pairs of the chunk (indices into those arrays).

    Returns:
        ``(a_problem, ia, jb, an, bn)``: the problem of each A box of the chunk (indexed by A node), and per
        box pair its A row, B row, A node and B node (the positions of the two boxes among the chunk's A / B
        boxes).
    """
    na_p, nb_p = na[problems], nb[problems]
    n_a = int(na_p.sum())
    ta = np.repeat(problems, na_p)  # problem of each A node
    a_row = a0[ta] + (np.arange(n_a) - np.repeat(np.cumsum(na_p) - na_p, na_p))
    cnt = nb[ta]  # box pairs of each A node
    seg = np.cumsum(cnt) - cnt
    b_off = np.repeat(np.cumsum(nb_p) - nb_p, na_p)  # first B node of each A node's problem
    ar = np.arange(int(cnt.sum()))
    ia = np.repeat(a_row, cnt)
    an = np.repeat(np.arange(n_a), cnt)
    jb = ar + np.repeat(b0[ta] - seg, cnt)
    bn = ar + np.repeat(b_off - seg, cnt)
    return ta, ia, jb, an, bn


def chunks_of(sizes: np.ndarray, cap: int) -> list[np.ndarray]:
    """Consecutive chunks of item indices with about ``cap`` total size.

    Args:
        sizes: ``(n,)`` size of each item.
        cap: the target total size of a chunk (an item larger than ``cap`` is a chunk of its own, or shares
            one with its neighbours).

    Returns:
        The chunks, int arrays of consecutive indices covering ``0 .. n - 1`` in order.
    """
    n = len(sizes)
    if n == 0:
        return []
    cid = (np.cumsum(sizes) - sizes) // max(int(cap), 1)
    bounds = np.flatnonzero(np.r_[True, cid[1:] != cid[:-1], True])
    return [np.arange(lo, hi) for lo, hi in zip(bounds[:-1], bounds[1:], strict=True)]


@dataclass(frozen=True, eq=False)
class SolvedSetPairs:
    """Results of :func:`solve_set_pairs`: per set pair, matched pairs, nearest per row."""

    cost: np.ndarray
    n_matched: np.ndarray
    m_problem: np.ndarray | None = None
    m_row_a: np.ndarray | None = None
    m_row_b: np.ndarray | None = None
    m_cost: np.ndarray | None = None
    nearest_row: np.ndarray | None = None
    nearest_cost: np.ndarray | None = None
