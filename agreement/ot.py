r"""OT agreement: an optimal-transport cost between two raters' labelled box sets.

Definition (Prokhorov & Kalinin, "Quantifying Annotation Agreement in Object
Detection with Optimal Transport"). For rater A's ``n`` boxes and rater B's
``m`` boxes on one sample:

* pair cost ``c_ij = lam (1 - GIoU_ij) / 2 + (1 - lam) [label_i != label_j]``,
  in ``[0, 1]`` (``lam`` in ``[0, 1]`` weighs localisation against
  classification);
* every box of a matched pair pays ``c_ij`` and every unmatched box pays the
  dummy cost ``beta`` in ``(0, 1]``; the matching ``M`` (a partial one-to-one
  matching) minimises

  .. math:: T(M) = \sum_{(i,j) \in M} 2 c_{ij} + \beta (n + m - 2 |M|),

  solved exactly (an assignment problem, no entropic approximation);
* **OT cost** ``= min_M T(M) / (n + m)`` in ``[0, beta]`` (0 when both sets are
  empty), **OT score** ``= 1 - cost`` in ``[1 - beta, 1]``.

Derivation. ``T(M) = beta (n + m) + sum_{(i,j) in M} 2 (c_ij - beta)``: matching a
pair changes the total by ``2 (c_ij - beta)``, so only pairs with
``c_ij < beta`` are ever matched (ties are left unmatched here), which is the
source of the paper's properties: with ``rho = beta / lam`` every same-label
pair is eligible when ``rho > 1``, matches need overlapping boxes when
``rho <= 1/2``; at equal counts and ``lam <= beta`` (agreeing labels) no box goes
to a dummy; the cost never exceeds ``beta`` (the all-dummy plan). It is the
exact balanced optimal-transport problem with unit mass per box, a dummy of
mass ``m`` on A's side and of mass ``n`` on B's side, box-to-box cost
``2 c_ij``, box-to-dummy cost ``beta`` and dummy-to-dummy cost 0, divided by
``n + m`` (the tests check this against POT's ``ot.emd``).

Solver. Minimising ``T`` over partial matchings equals a rectangular
assignment on the savings ``s_ij = min(2 (c_ij - beta), 0)``: a partial matching
of negative-saving pairs extends to a full rectangular assignment with zero
entries, and a full assignment's value is the value of its negative-saving
pairs. :func:`scipy.optimize.linear_sum_assignment` on this ``n x m`` matrix
is therefore exact, and smaller than the ``(n + m) x (n + m)`` matrix with
explicit dummy rows and columns, which it is equivalent to.

``normalization="oc_cost"`` is the convention of OC-cost (Otani et al.,
"Optimal Correction Cost for Object Detection Evaluation", CVPR 2022): a dummy
of cost ``beta`` on each side, a matched pair costs ``c_ij`` (once), so leaving
a pair unmatched costs ``2 beta`` against ``c_ij``, and the minimal transported
total ``sum_M c_ij + beta (n + m - 2k)`` is divided by the number of transport
entries ``n + m - k`` (``k = |M|``). A pair is matched iff ``c_ij < 2 beta``;
the cost is **discontinuous** at ``c_ij = 2 beta``: for ``beta < 0.5`` a worse
pair (``c_ij`` just above ``2 beta`` instead of just below) raises the score,
since ``c_ij / 1 ~ 2 beta`` drops to ``2 beta / 2 = beta``; and the cost can
exceed ``beta`` (up to ``2 beta``).

This module does not import FiftyOne.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
from scipy.optimize import linear_sum_assignment

from agreement.geometry.boxes import pairwise_giou
from agreement.ot_bounds import relative_position, score_bounds

__all__ = [
    "NORMALIZATIONS",
    "OTMatching",
    "OTSampleScores",
    "check_ot_params",
    "pair_cost_matrix",
    "ot_from_cost_matrix",
    "ot_cost_from_matrix",
    "ot_match",
    "ot_score",
    "sample_ot_scores",
    "set_pair_costs",
]

NORMALIZATIONS = ("paper", "oc_cost")


def check_ot_params(lam: float, beta: float, normalization: str = "paper") -> None:
    """Raises ``ValueError`` unless ``lam in [0, 1]``, ``beta in (0, 1]`` and the
    normalisation is ``"paper"`` or ``"oc_cost"``."""
    try:
        lam_f, beta_f = float(lam), float(beta)
    except (TypeError, ValueError):
        raise ValueError(f"lam and beta must be numbers, got lam={lam!r}, beta={beta!r}") from None
    if not (np.isfinite(lam_f) and 0.0 <= lam_f <= 1.0):
        raise ValueError(f"lam must be in [0, 1], got {lam!r}")
    if not (np.isfinite(beta_f) and 0.0 < beta_f <= 1.0):
        raise ValueError(f"beta must be in (0, 1], got {beta!r}")
    if normalization not in NORMALIZATIONS:
        raise ValueError(f"normalization must be one of {NORMALIZATIONS}, got {normalization!r}")


def _check_boxes(boxes, name: str) -> np.ndarray:
    arr = np.asarray(boxes, dtype=np.float64)
    if arr.size == 0:
        return arr.reshape(0, 4)
    if arr.ndim != 2 or arr.shape[1] != 4:
        raise ValueError(f"{name} must be an (n, 4) array of [x, y, w, h] boxes, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinite coordinates")
    if np.any(arr[:, 2:] < 0):
        raise ValueError(f"{name} contains a box with negative width or height")
    return arr


def _labels(labels, n: int, name: str) -> np.ndarray:
    arr = np.empty(n, dtype=object)
    vals = list(labels) if labels is not None else [None] * n
    if len(vals) != n:
        raise ValueError(f"{name} has {len(vals)} entries for {n} boxes")
    arr[:] = vals
    return arr


def _mismatch(labels_a: np.ndarray, labels_b: np.ndarray) -> np.ndarray:
    """``(n, m)`` bool, ``label_a[i] != label_b[j]`` (codes or hashable objects)."""
    if labels_a.dtype != object and labels_b.dtype != object:
        return labels_a[:, None] != labels_b[None, :]
    index: dict = {}
    ca = np.fromiter((index.setdefault(v, len(index)) for v in labels_a), np.int64, len(labels_a))
    cb = np.fromiter((index.setdefault(v, len(index)) for v in labels_b), np.int64, len(labels_b))
    return ca[:, None] != cb[None, :]


def pair_cost_matrix(
    boxes_a: np.ndarray,
    labels_a: Sequence | np.ndarray | None,
    boxes_b: np.ndarray,
    labels_b: Sequence | np.ndarray | None,
    lam: float = 0.5,
) -> np.ndarray:
    """Pair costs ``c_ij = lam (1 - GIoU_ij) / 2 + (1 - lam) [label_i != label_j]``.

    Args:
        boxes_a: ``(n, 4)`` relative ``[x, y, w, h]`` boxes of rater A.
        labels_a: ``n`` class labels (any hashable; ``None`` for all-unlabelled).
        boxes_b: ``(m, 4)`` boxes of rater B.
        labels_b: ``m`` class labels.
        lam: localisation weight in ``[0, 1]``.

    Returns:
        ``(n, m)`` float64 in ``[0, 1]`` (0 for identical boxes with equal labels).

    Reference: Prokhorov & Kalinin, "Quantifying Annotation Agreement in Object
    Detection with Optimal Transport" (GIoU: Rezatofighi et al., CVPR 2019).
    """
    check_ot_params(lam, 0.5)
    a = _check_boxes(boxes_a, "boxes_a")
    b = _check_boxes(boxes_b, "boxes_b")
    la = _labels(labels_a, len(a), "labels_a")
    lb = _labels(labels_b, len(b), "labels_b")
    return _cost(a, la, b, lb, float(lam))


def _cost(a: np.ndarray, la: np.ndarray, b: np.ndarray, lb: np.ndarray, lam: float) -> np.ndarray:
    if len(a) == 0 or len(b) == 0:
        return np.zeros((len(a), len(b)))
    c = pairwise_giou(a, b)  # fresh array, modified in place
    # lam (1 - g) / 2 + (1 - lam) mismatch
    np.subtract(1.0, c, out=c)
    c *= 0.5 * lam
    if lam < 1.0:
        c += (1.0 - lam) * _mismatch(la, lb)
    np.clip(c, 0.0, 1.0, out=c)
    return c


@dataclass(frozen=True, eq=False)
class OTMatching:
    """The optimal matching between two box sets and its cost.

    Attributes:
        cost: normalised OT cost (``[0, beta]`` for ``"paper"``, ``[0, 2 beta)``
            for ``"oc_cost"``).
        score: ``1 - cost``.
        total: the minimal transported total ``T`` before normalisation
            (``sum_M 2 c_ij + beta (n + m - 2k)`` for ``"paper"``,
            ``sum_M c_ij + beta (n + m - 2k)`` for ``"oc_cost"``).
        n_a, n_b: the set sizes ``n`` and ``m``.
        n_matched: ``k``, the number of matched pairs.
        match_a: ``(n,)`` int, index into B of the box matched to each box of A,
            ``-1`` for a box sent to the dummy.
        match_b: ``(m,)`` int, index into A, ``-1`` for the dummy.
        paid_a: ``(n,)`` cost each box of A paid: ``c_ij`` if matched, ``beta``
            otherwise (under ``"paper"`` ``cost == mean(paid_a ∪ paid_b)``).
        paid_b: ``(m,)`` likewise for B.
        beta: the dummy cost used.
        normalization: ``"paper"`` or ``"oc_cost"``.
    """

    cost: float
    score: float
    total: float
    n_a: int
    n_b: int
    n_matched: int
    match_a: np.ndarray = field(repr=False)
    match_b: np.ndarray = field(repr=False)
    paid_a: np.ndarray = field(repr=False)
    paid_b: np.ndarray = field(repr=False)
    beta: float = 0.5
    normalization: str = "paper"


def _solve(c: np.ndarray, beta: float, normalization: str) -> tuple[float, float, np.ndarray, np.ndarray]:
    """Exact minimal total, normalised cost and matched pairs ``(rows, cols)``."""
    n, m = c.shape
    N = n + m
    if N == 0:
        return 0.0, 0.0, np.zeros(0, np.intp), np.zeros(0, np.intp)
    w = 2.0 if normalization == "paper" else 1.0
    thr = beta if normalization == "paper" else 2.0 * beta
    if n == 0 or m == 0 or not np.any(c < thr):
        rows = cols = np.zeros(0, np.intp)
    else:
        s = np.minimum(w * (c - thr), 0.0)
        rows, cols = linear_sum_assignment(s)
        keep = s[rows, cols] < 0.0
        rows, cols = rows[keep], cols[keep]
    k = len(rows)
    total = w * float(c[rows, cols].sum()) + beta * (N - 2 * k)
    denom = N if normalization == "paper" else N - k
    return total, total / denom, rows, cols


def ot_from_cost_matrix(c: np.ndarray, beta: float = 0.5, normalization: str = "paper") -> OTMatching:
    """Exact OT matching and cost for a given ``(n, m)`` pair-cost matrix.

    ``"paper"``: ``cost = min_M [sum_M 2 c_ij + beta (n + m - 2|M|)] / (n + m)``,
    in ``[0, beta]`` for ``c`` in ``[0, 1]``; only pairs with ``c_ij < beta`` are
    matched. ``"oc_cost"``: the matching minimising
    ``sum_M c_ij + beta (n + m - 2|M|)`` (pairs with ``c_ij < 2 beta``), divided
    by ``n + m - |M|``. Both empty: cost 0, score 1.

    Args:
        c: ``(n, m)`` pair costs, typically from :func:`pair_cost_matrix`.
        beta: dummy cost in ``(0, 1]``.
        normalization: ``"paper"`` (default) or ``"oc_cost"``.

    Returns:
        :class:`OTMatching`.

    Reference: Prokhorov & Kalinin (OT agreement); Otani et al., CVPR 2022
    (OC-cost).
    """
    check_ot_params(0.5, beta, normalization)
    c = _check_cost_matrix(c)
    n, m = c.shape
    total, cost, rows, cols = _solve(c, float(beta), normalization)
    match_a = np.full(n, -1, np.intp)
    match_b = np.full(m, -1, np.intp)
    match_a[rows] = cols
    match_b[cols] = rows
    paid_a = np.full(n, float(beta))
    paid_b = np.full(m, float(beta))
    paid_a[rows] = c[rows, cols]
    paid_b[cols] = c[rows, cols]
    return OTMatching(
        cost=cost, score=1.0 - cost, total=total, n_a=n, n_b=m, n_matched=len(rows),
        match_a=match_a, match_b=match_b, paid_a=paid_a, paid_b=paid_b,
        beta=float(beta), normalization=normalization,
    )


def ot_cost_from_matrix(c: np.ndarray, beta: float = 0.5, normalization: str = "paper") -> float:
    """The normalised OT cost of :func:`ot_from_cost_matrix` only (no matching arrays)."""
    check_ot_params(0.5, beta, normalization)
    return _solve(_check_cost_matrix(c), float(beta), normalization)[1]


def _check_cost_matrix(c) -> np.ndarray:
    c = np.asarray(c, dtype=np.float64)
    if c.ndim != 2:
        raise ValueError(f"cost matrix must be 2-D, got shape {c.shape}")
    if c.size and not np.all(np.isfinite(c)):
        raise ValueError("cost matrix contains NaN or infinite values")
    return c


def ot_match(
    boxes_a: np.ndarray,
    labels_a: Sequence | np.ndarray | None,
    boxes_b: np.ndarray,
    labels_b: Sequence | np.ndarray | None,
    lam: float = 0.5,
    beta: float = 0.5,
    normalization: str = "paper",
) -> OTMatching:
    """OT agreement between two labelled box sets, with the matching.

    ``c_ij = lam (1 - GIoU_ij) / 2 + (1 - lam) [label_i != label_j]``;
    ``cost = min_M [sum_M 2 c_ij + beta (n + m - 2|M|)] / (n + m)`` in
    ``[0, beta]`` (``"paper"``, default) or the OC-cost normalisation (module
    docstring); ``score = 1 - cost`` in ``[1 - beta, 1]`` for ``"paper"``. Both
    sets empty: score 1. Symmetric in A and B and invariant to box order.

    Args:
        boxes_a, boxes_b: ``(n, 4)`` / ``(m, 4)`` relative ``[x, y, w, h]``.
        labels_a, labels_b: class labels (hashable), one per box.
        lam: localisation weight in ``[0, 1]`` (default 0.5).
        beta: dummy cost in ``(0, 1]`` (default 0.5).
        normalization: ``"paper"`` or ``"oc_cost"``.

    Returns:
        :class:`OTMatching` (which box matched which, what each box paid).

    Reference: Prokhorov & Kalinin, "Quantifying Annotation Agreement in Object
    Detection with Optimal Transport"; Otani et al., CVPR 2022 (OC-cost).
    """
    check_ot_params(lam, beta, normalization)
    c = pair_cost_matrix(boxes_a, labels_a, boxes_b, labels_b, lam)
    return ot_from_cost_matrix(c, beta, normalization)


def ot_score(
    boxes_a: np.ndarray,
    labels_a: Sequence | np.ndarray | None,
    boxes_b: np.ndarray,
    labels_b: Sequence | np.ndarray | None,
    lam: float = 0.5,
    beta: float = 0.5,
    normalization: str = "paper",
) -> float:
    """OT score ``1 - cost`` of :func:`ot_match`: in ``[1 - beta, 1]`` (``"paper"``),
    1 for identical sets and for two empty sets."""
    check_ot_params(lam, beta, normalization)
    c = pair_cost_matrix(boxes_a, labels_a, boxes_b, labels_b, lam)
    return 1.0 - _solve(c, float(beta), normalization)[1]


# ---------------------------------------------------------------------------
# Corpus level: label coding and the vectorised engine for many set pairs
# ---------------------------------------------------------------------------


def _label_codes(labels: np.ndarray) -> np.ndarray:
    index: dict = {}
    return np.fromiter((index.setdefault(v, len(index)) for v in labels), np.int64, len(labels))


class _CorpusCosts:
    """Per-rater row indices of a :class:`MultiRaterAnnotations` and a
    vectorised evaluator of OT costs for many (rater a on sample i, rater b on
    sample j) set pairs.

    For a rater pair, the pair costs of a block of A-rows against a block of
    B-rows are computed in one :func:`pair_cost_matrix` call; per set pair the
    sub-block is a contiguous slice. Set pairs with no eligible pair (no
    ``c_ij`` below the matching threshold) or exactly one have closed forms;
    the others go to ``linear_sum_assignment``.
    """

    def __init__(self, data, lam: float, beta: float, normalization: str, max_block: int = 4_000_000):
        check_ot_params(lam, beta, normalization)
        _check_boxes(data.boxes, "boxes")
        self.data = data
        self.lam, self.beta, self.normalization = float(lam), float(beta), normalization
        self.codes = _label_codes(data.labels)
        self.max_block = int(max_block)
        S = data.num_samples
        self.rows: list[np.ndarray] = []
        self.offsets: list[np.ndarray] = []
        for r in range(data.num_raters):
            rows = np.flatnonzero(data.rater_index == r)  # sorted by sample (data is sorted)
            self.rows.append(rows)
            self.offsets.append(np.searchsorted(data.sample_index[rows], np.arange(S + 1)))

    def count(self, r: int, s: np.ndarray) -> np.ndarray:
        off = self.offsets[r]
        return off[np.asarray(s) + 1] - off[np.asarray(s)]

    def _gather(self, r: int, samples: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Rows of rater r on ``samples`` (concatenated) and local offsets."""
        off = self.offsets[r]
        starts, stops = off[samples], off[samples + 1]
        lens = stops - starts
        local = np.concatenate([[0], np.cumsum(lens)])
        if local[-1] == 0:
            return np.zeros(0, np.intp), local
        idx = np.repeat(starts - local[:-1], lens) + np.arange(local[-1])
        return self.rows[r][idx], local

    def costs(self, a: int, b: int, ii: np.ndarray, jj: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """OT costs and matched-pair counts for set pairs (rater a on ii[t], rater b on jj[t])."""
        ii = np.asarray(ii, dtype=np.intp)
        jj = np.asarray(jj, dtype=np.intp)
        P = len(ii)
        out = np.empty(P)
        kout = np.zeros(P, np.intp)
        if P == 0:
            return out, kout
        beta, norm = self.beta, self.normalization
        w = 2.0 if norm == "paper" else 1.0
        thr = beta if norm == "paper" else 2.0 * beta
        n_all = self.count(a, ii)
        m_all = self.count(b, jj)
        N_all = n_all + m_all
        # Trivial pairs: one side empty.
        trivial = (n_all == 0) | (m_all == 0)
        out[trivial] = np.where(N_all[trivial] == 0, 0.0, beta)
        todo = np.flatnonzero(~trivial)
        if todo.size == 0:
            return out, kout
        # Column side: every B sample needed, split into column chunks.
        J = np.unique(jj[todo])
        col_rows_cap = max(1, int(np.sqrt(self.max_block)))
        mJ = self.count(b, J)
        col_chunk = _chunks(mJ, col_rows_cap)  # chunk id per J entry
        I = np.unique(ii[todo])
        nI = self.count(a, I)
        # Pairs grouped by column chunk, then by row chunk: each block is built once.
        jpos = np.searchsorted(J, jj[todo])
        for cc in np.unique(col_chunk):
            Jc = J[col_chunk == cc]
            rows_b, loc_b = self._gather(b, Jc)
            sel_c = todo[col_chunk[jpos] == cc]
            if sel_c.size == 0:
                continue
            ipos_c = np.searchsorted(I, ii[sel_c])
            Ic_all = np.unique(ipos_c)
            row_cap = max(1, self.max_block // max(1, len(rows_b)))
            row_chunk = _chunks(nI[Ic_all], row_cap)
            for rc in np.unique(row_chunk):
                Ic = I[Ic_all[row_chunk == rc]]
                rows_a, loc_a = self._gather(a, Ic)
                sel = sel_c[np.isin(ii[sel_c], Ic)]
                self._block(rows_a, loc_a, Ic, rows_b, loc_b, Jc, ii[sel], jj[sel], sel, out, kout, w, thr)
        return out, kout

    def _block(self, rows_a, loc_a, Ic, rows_b, loc_b, Jc, pi, pj, sel, out, kout, w, thr) -> None:
        d = self.data
        beta, norm = self.beta, self.normalization
        c = _cost(d.boxes[rows_a], self.codes[rows_a], d.boxes[rows_b], self.codes[rows_b], self.lam)
        s = c - thr
        s *= w  # savings of matching a pair; eligible iff < 0
        li = np.searchsorted(Ic, pi)
        lj = np.searchsorted(Jc, pj)
        grp_a = np.repeat(np.arange(len(Ic)), np.diff(loc_a))
        grp_b = np.repeat(np.arange(len(Jc)), np.diff(loc_b))
        r, q = np.nonzero(s < 0.0)
        key = grp_a[r] * len(Jc) + grp_b[q]
        ncell = len(Ic) * len(Jc)
        cnt = np.bincount(key, minlength=ncell)
        one = np.bincount(key, weights=s[r, q], minlength=ncell)  # exact when cnt == 1
        pk = li * len(Jc) + lj
        n = loc_a[li + 1] - loc_a[li]
        m = loc_b[lj + 1] - loc_b[lj]
        N = (n + m).astype(np.float64)
        e = cnt[pk]
        gain = np.where(e == 1, one[pk], 0.0)
        k = (e >= 1).astype(np.intp)
        hard = np.flatnonzero(e >= 2)
        if hard.size:
            # Python scalars: this loop is the hot path when many pairs are eligible.
            la_, lb_ = loc_a.tolist(), loc_b.tolist()
            for t, i0, j0 in zip(hard.tolist(), li[hard].tolist(), lj[hard].tolist()):
                blk = s[la_[i0]:la_[i0 + 1], lb_[j0]:lb_[j0 + 1]]
                rr, qq = linear_sum_assignment(np.minimum(blk, 0.0))
                v = blk[rr, qq]
                v = v[v < 0.0]
                gain[t] = v.sum()
                k[t] = v.size
        total = beta * N + gain
        denom = N if norm == "paper" else N - k
        out[sel] = total / denom
        kout[sel] = k


def _chunks(sizes: np.ndarray, cap: int) -> np.ndarray:
    """Greedy consecutive chunks of total size <= cap (a chunk holds at least one item)."""
    ids = np.empty(len(sizes), np.intp)
    cur, acc = 0, 0
    for t, sz in enumerate(sizes):
        if acc and acc + sz > cap:
            cur += 1
            acc = 0
        ids[t] = cur
        acc += sz
    return ids


def set_pair_costs(
    data,
    rater_a: int | str,
    rater_b: int | str,
    samples_a: np.ndarray,
    samples_b: np.ndarray,
    lam: float = 0.5,
    beta: float = 0.5,
    normalization: str = "paper",
    max_block: int = 4_000_000,
) -> np.ndarray:
    """OT costs between rater a's set on ``samples_a[t]`` and rater b's set on ``samples_b[t]``.

    The same cost as :func:`ot_match` for each set pair, computed in bulk: the
    pair costs of all needed boxes of a against all needed boxes of b are
    built in blocks of at most about ``max_block`` entries, and set pairs with
    at most one eligible box pair (``c_ij`` below the matching threshold) are
    solved in closed form. Used for same-sample (observed) and cross-sample
    (chance) costs of :mod:`agreement.alpha_ot`. Both raters must be assigned
    to the respective samples (implicit absence has no set).

    Args:
        data: a :class:`agreement.data.MultiRaterAnnotations`.
        rater_a, rater_b: rater indices or names (may be equal).
        samples_a, samples_b: equal-length sample indices.
        lam, beta, normalization: as :func:`ot_match`.
        max_block: memory cap (entries) of one pair-cost block.

    Returns:
        ``(len(samples_a),)`` float64 OT costs.

    Reference: Prokhorov & Kalinin, "Quantifying Annotation Agreement in Object
    Detection with Optimal Transport".
    """
    a = data.raters.index(rater_a) if isinstance(rater_a, str) else int(rater_a)
    b = data.raters.index(rater_b) if isinstance(rater_b, str) else int(rater_b)
    ii = np.asarray(samples_a, dtype=np.intp).reshape(-1)
    jj = np.asarray(samples_b, dtype=np.intp).reshape(-1)
    if len(ii) != len(jj):
        raise ValueError("samples_a and samples_b must have equal lengths")
    if len(ii) and (not data.assigned[ii, a].all() or not data.assigned[jj, b].all()):
        raise ValueError("every set pair needs both raters assigned to their samples")
    engine = _CorpusCosts(data, lam, beta, normalization, max_block)
    return engine.costs(a, b, ii, jj)[0]


# ---------------------------------------------------------------------------
# Per-sample scores over every pair of assigned raters
# ---------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class OTSampleScores:
    """OT agreement of every sample over every pair of its assigned raters.

    Per sample (length ``S``, in the corpus order):

    Attributes:
        sample_ids: ``(S,)`` sample identifiers.
        mean: mean OT score over the sample's rater pairs (NaN if fewer than two
            raters are assigned).
        min: the lowest rater-pair score (NaN likewise).
        n_pairs: number of rater pairs scored.
        lower, upper: mean over the sample's rater pairs of each pair's
            feasible score range (:func:`agreement.ot_bounds.score_bounds`,
            labels free to differ).
        position: where ``mean`` sits in ``[lower, upper]`` (0 worst, 1 best;
            NaN when the range is a single point).
        reasons: ``""`` or why the sample is not scored.

    Per rater pair on a sample (length ``P``):

    Attributes:
        pair_sample: sample index.
        pair_rater_a, pair_rater_b: rater indices, ``a < b``.
        pair_cost, pair_score: OT cost and ``1 - cost``.
        pair_n_a, pair_n_b, pair_n_matched: set sizes and matched pairs.
        pair_lower, pair_upper, pair_position: feasible score range and position.

    Per box of a rater pair (length ``E``: each pair contributes ``n + m`` rows):

    Attributes:
        edge_pair: index into the pair arrays.
        edge_row: the box (row of the corpus arrays).
        edge_partner_row: the row of the box it matched, ``-1`` for the dummy.
        edge_paid: the cost it paid (``c_ij`` or ``beta``).

    Per box of the corpus (length ``N``):

    Attributes:
        row_paid: mean cost the box paid over the rater pairs it took part in
            (NaN if none: its sample has a single rater).
        row_matched_row: the row of its cheapest match over those pairs (for
            two raters: the box it matched), ``-1`` if it never matched.
        row_n_matched: in how many rater pairs it was matched.

    Corpus:

    Attributes:
        raters: rater names.
        rater_pair_mean: ``(R, R)`` mean score of each rater pair over the
            samples both were assigned (symmetric; NaN on the diagonal and for
            pairs that share no sample).
        rater_pair_count: ``(R, R)`` number of shared samples.
        lam, beta, normalization: the parameters.
    """

    sample_ids: np.ndarray
    mean: np.ndarray
    min: np.ndarray
    n_pairs: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    position: np.ndarray
    reasons: tuple[str, ...]
    pair_sample: np.ndarray
    pair_rater_a: np.ndarray
    pair_rater_b: np.ndarray
    pair_cost: np.ndarray
    pair_score: np.ndarray
    pair_n_a: np.ndarray
    pair_n_b: np.ndarray
    pair_n_matched: np.ndarray
    pair_lower: np.ndarray
    pair_upper: np.ndarray
    pair_position: np.ndarray
    edge_pair: np.ndarray
    edge_row: np.ndarray
    edge_partner_row: np.ndarray
    edge_paid: np.ndarray
    row_paid: np.ndarray
    row_matched_row: np.ndarray
    row_n_matched: np.ndarray
    raters: tuple[str, ...]
    rater_pair_mean: np.ndarray
    rater_pair_count: np.ndarray
    lam: float
    beta: float
    normalization: str

    @property
    def n_scored(self) -> int:
        return int(np.sum(self.n_pairs > 0))

    @property
    def mean_score(self) -> float:
        """Mean over scored samples of the per-sample mean score (NaN if none)."""
        v = self.mean[~np.isnan(self.mean)]
        return float(v.mean()) if v.size else float("nan")


def sample_ot_scores(data, lam: float = 0.5, beta: float = 0.5, normalization: str = "paper") -> OTSampleScores:
    """OT agreement per sample over every pair of raters assigned to it.

    For each sample and each pair of raters ``a < b`` both assigned to it
    (explicit absence, an empty set, counts; implicit absence does not), the
    OT score ``1 - cost(A, B)`` of :func:`ot_match`; per sample the mean and
    the minimum over its pairs. Samples with fewer than two assigned raters are
    reported (NaN with a reason), not scored. The cost matrix of a sample is
    computed once for all its raters.

    Args:
        data: a :class:`agreement.data.MultiRaterAnnotations`.
        lam: localisation weight in ``[0, 1]``.
        beta: dummy cost in ``(0, 1]``.
        normalization: ``"paper"`` or ``"oc_cost"``.

    Returns:
        :class:`OTSampleScores` (per sample, per rater pair, per box, and the
        rater-pair matrix of mean scores).

    Reference: Prokhorov & Kalinin, "Quantifying Annotation Agreement in Object
    Detection with Optimal Transport".
    """
    check_ot_params(lam, beta, normalization)
    boxes = _check_boxes(data.boxes, "boxes")
    codes = _label_codes(data.labels)
    S, R, Nrows = data.num_samples, data.num_raters, len(data)
    mean = np.full(S, np.nan)
    mn = np.full(S, np.nan)
    n_pairs = np.zeros(S, np.intp)
    reasons: list[str] = []
    P_s, P_a, P_b, P_cost, P_na, P_nb, P_k = [], [], [], [], [], [], []
    E_pair, E_row, E_partner, E_paid = [], [], [], []
    npair = 0
    for s in range(S):
        assigned = np.flatnonzero(data.assigned[s])
        if len(assigned) < 2:
            reasons.append(
                "no rater assigned" if len(assigned) == 0 else
                f"only one rater assigned ({data.raters[assigned[0]]!r}): no pair to compare"
            )
            continue
        reasons.append("")
        lo_s, hi_s = data.offsets[s * R], data.offsets[(s + 1) * R]
        c_all = _cost(boxes[lo_s:hi_s], codes[lo_s:hi_s], boxes[lo_s:hi_s], codes[lo_s:hi_s], float(lam))
        sl = {r: data.rows(s, int(r)) for r in assigned}
        costs = []
        for x, a in enumerate(assigned):
            ra = sl[a]
            for b in assigned[x + 1:]:
                rb = sl[b]
                c = c_all[ra.start - lo_s:ra.stop - lo_s, rb.start - lo_s:rb.stop - lo_s]
                total, cost, rows, cols = _solve(c, float(beta), normalization)
                n, m = c.shape
                costs.append(cost)
                P_s.append(s); P_a.append(a); P_b.append(b); P_cost.append(cost)
                P_na.append(n); P_nb.append(m); P_k.append(len(rows))
                pa = np.full(n, -1, np.intp); pb = np.full(m, -1, np.intp)
                paid_a = np.full(n, float(beta)); paid_b = np.full(m, float(beta))
                pa[rows] = rb.start + cols
                pb[cols] = ra.start + rows
                paid_a[rows] = c[rows, cols]
                paid_b[cols] = c[rows, cols]
                E_pair.append(np.full(n + m, npair, np.intp))
                E_row.append(np.concatenate([np.arange(ra.start, ra.stop), np.arange(rb.start, rb.stop)]))
                E_partner.append(np.concatenate([pa, pb]))
                E_paid.append(np.concatenate([paid_a, paid_b]))
                npair += 1
        scores = 1.0 - np.asarray(costs)
        mean[s] = scores.mean()
        mn[s] = scores.min()
        n_pairs[s] = len(scores)

    pair_sample = np.asarray(P_s, np.intp)
    pair_a = np.asarray(P_a, np.intp)
    pair_b = np.asarray(P_b, np.intp)
    pair_cost = np.asarray(P_cost, np.float64)
    pair_score = 1.0 - pair_cost
    pair_na = np.asarray(P_na, np.intp)
    pair_nb = np.asarray(P_nb, np.intp)
    bounds = score_bounds(pair_na, pair_nb, lam, beta, normalization)
    pair_lower = np.asarray(bounds.lower, np.float64).reshape(-1)
    pair_upper = np.asarray(bounds.upper, np.float64).reshape(-1)
    pair_pos = np.asarray(relative_position(pair_score, pair_lower, pair_upper), np.float64).reshape(-1)

    lower = np.full(S, np.nan)
    upper = np.full(S, np.nan)
    if len(pair_sample):
        cnt = np.bincount(pair_sample, minlength=S)
        ok = cnt > 0
        lower[ok] = (np.bincount(pair_sample, pair_lower, S)[ok]) / cnt[ok]
        upper[ok] = (np.bincount(pair_sample, pair_upper, S)[ok]) / cnt[ok]
    position = np.asarray(relative_position(mean, lower, upper), np.float64).reshape(-1)

    cat = (lambda xs, dt: np.concatenate(xs).astype(dt) if xs else np.zeros(0, dt))
    edge_pair = cat(E_pair, np.intp)
    edge_row = cat(E_row, np.intp)
    edge_partner = cat(E_partner, np.intp)
    edge_paid = cat(E_paid, np.float64)

    # Per row: mean paid, matches count, cheapest match (ties: first rater pair).
    row_cnt = np.bincount(edge_row, minlength=Nrows)
    with np.errstate(invalid="ignore", divide="ignore"):
        row_paid = np.bincount(edge_row, edge_paid, minlength=Nrows) / row_cnt
    row_paid[row_cnt == 0] = np.nan
    matched = edge_partner >= 0
    row_n_matched = np.bincount(edge_row[matched], minlength=Nrows).astype(np.intp)
    row_matched = np.full(Nrows, -1, np.intp)
    if matched.any():
        er, ep, epaid = edge_row[matched], edge_partner[matched], edge_paid[matched]
        order = np.lexsort((np.arange(len(er)), epaid, er))  # by row, then paid, then pair order
        er, ep = er[order], ep[order]
        first = np.r_[True, er[1:] != er[:-1]]
        row_matched[er[first]] = ep[first]

    # Rater-pair matrix of mean scores.
    rp_sum = np.zeros((R, R))
    rp_cnt = np.zeros((R, R), np.intp)
    np.add.at(rp_sum, (pair_a, pair_b), pair_score)
    np.add.at(rp_cnt, (pair_a, pair_b), 1)
    rp_sum = rp_sum + rp_sum.T
    rp_cnt = rp_cnt + rp_cnt.T
    with np.errstate(invalid="ignore", divide="ignore"):
        rp_mean = np.where(rp_cnt > 0, rp_sum / np.maximum(rp_cnt, 1), np.nan)

    return OTSampleScores(
        sample_ids=data.sample_ids, mean=mean, min=mn, n_pairs=n_pairs, lower=lower, upper=upper,
        position=position, reasons=tuple(reasons), pair_sample=pair_sample, pair_rater_a=pair_a,
        pair_rater_b=pair_b, pair_cost=pair_cost, pair_score=pair_score, pair_n_a=pair_na,
        pair_n_b=pair_nb, pair_n_matched=np.asarray(P_k, np.intp), pair_lower=pair_lower,
        pair_upper=pair_upper, pair_position=pair_pos, edge_pair=edge_pair, edge_row=edge_row,
        edge_partner_row=edge_partner, edge_paid=edge_paid, row_paid=row_paid,
        row_matched_row=row_matched, row_n_matched=row_n_matched, raters=tuple(data.raters),
        rater_pair_mean=rp_mean, rater_pair_count=rp_cnt, lam=float(lam), beta=float(beta),
        normalization=normalization,
    )
