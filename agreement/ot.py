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
source of the paper's properties: with ``rho = beta / lam`` a same-label pair
is eligible iff ``GIoU > 1 - 2 rho``, so every same-label pair is when
``rho >= 1`` (``GIoU > -1``) and matches need overlapping boxes when
``rho <= 1/2``; a pair with *different* labels is eligible iff
``lam (1 - GIoU) / 2 < beta + lam - 1``, i.e. only when ``beta > 1 - lam``
and then iff ``GIoU > 1 - 2 (beta + lam - 1) / lam``: never at the default
``lam = beta = 0.5``, where two identical boxes with different labels cost
exactly ``beta`` and stay unmatched; at equal counts and ``lam <= beta``
(agreeing labels) no box goes to a dummy; the cost never exceeds ``beta``
(the all-dummy plan). It is the
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
explicit dummy rows and columns, which it is equivalent to. For a corpus
(:func:`sample_ot_scores`, :func:`set_pair_costs`, αOT) the same problem is
solved for many set pairs at once by :func:`max_weight_matchings` on the
eligible pairs (weights ``-s_ij``), exact as well: connected components are
independent, and most are a single pair or a star with a closed form.

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

import itertools
import math
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np
from scipy.optimize import linear_sum_assignment
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from agreement.arrays import mean_of_defined
from agreement.geometry.boxes import pairwise_giou
from agreement.ot_bounds import relative_position, score_bounds
from agreement.rater_pairs import RaterPairTable, shared_sample_pairs

__all__ = [
    "NORMALIZATIONS",
    "ROW_REASONS",
    "OTMatching",
    "OTSampleScores",
    "assigned_pair_cells",
    "pair_set_rows",
    "check_ot_params",
    "max_weight_matchings",
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
# Many small assignment problems at once
# ---------------------------------------------------------------------------

# Components whose brute-force enumeration has at most this many injections
# are solved vectorised; larger ones go to linear_sum_assignment one by one.
_MAX_PERMUTATIONS = 720
# Elements of one brute-force evaluation array (components x injections x rows).
_BRUTE_ELEMENTS = 1 << 21


def max_weight_matchings(
    a_node: np.ndarray,
    b_node: np.ndarray,
    weight: np.ndarray,
    n_a_nodes: int,
    n_b_nodes: int,
    cardinality_first: bool = False,
) -> np.ndarray:
    r"""Exact maximum-weight one-to-one matchings of many small bipartite graphs at once.

    The edges ``(a_node[e], b_node[e])`` with ``weight[e] > 0`` form a
    bipartite graph (A nodes ``0 .. n_a_nodes - 1``, B nodes
    ``0 .. n_b_nodes - 1``), typically the disjoint union of many small
    problems (one per pair of box sets). Returns a matching ``M`` maximising

    .. math:: \sum_{e \in M} w_e \quad (\text{or, with } cardinality\_first,
              \text{ first } |M| \text{, then } \sum_{e \in M} w_e)

    Connected components are independent, so each is solved on its own: an
    edge alone in its component is matched; a star (one node on a side)
    takes its heaviest edge; other components are solved exactly by a
    vectorised enumeration of the injections of the smaller side into the
    larger one (grouped by shape, at most ``_MAX_PERMUTATIONS`` injections)
    or, beyond that, by :func:`scipy.optimize.linear_sum_assignment`. Ties
    between equally good matchings are broken by edge and enumeration order
    (deterministic for a given input).

    Args:
        a_node, b_node: ``(E,)`` int node ids of each edge's ends.
        weight: ``(E,)`` positive weights (a pair with no edge has weight 0).
        n_a_nodes, n_b_nodes: the sizes of the two node sets.
        cardinality_first: maximise the number of matched edges first (for
            weights in ``(0, 1]``: IoU matching at a threshold).

    Returns:
        ``(E,)`` bool: whether each edge is matched.
    """
    a_node = np.asarray(a_node, dtype=np.intp)
    b_node = np.asarray(b_node, dtype=np.intp)
    weight = np.asarray(weight, dtype=np.float64)
    E = len(a_node)
    matched = np.zeros(E, dtype=bool)
    if E == 0:
        return matched
    deg_a = np.bincount(a_node, minlength=n_a_nodes)
    deg_b = np.bincount(b_node, minlength=n_b_nodes)
    da, db = deg_a[a_node], deg_b[b_node]
    # A star is a node whose neighbours have no other neighbour: exactly one of
    # its edges is matched, the heaviest (the first on ties). An edge alone is
    # a star of one edge.
    nb_max_a = np.zeros(n_a_nodes, np.intp)
    np.maximum.at(nb_max_a, a_node, db)
    nb_max_b = np.zeros(n_b_nodes, np.intp)
    np.maximum.at(nb_max_b, b_node, da)
    star_a = nb_max_a[a_node] == 1  # centre on side A (or a lone edge)
    star_b = (nb_max_b[b_node] == 1) & ~star_a
    for sel, centre, size in ((star_a, a_node, n_a_nodes), (star_b, b_node, n_b_nodes)):
        e = np.flatnonzero(sel)
        if e.size:
            ce = centre[e]
            best = np.full(size, -np.inf)
            np.maximum.at(best, ce, weight[e])
            top = e[weight[e] == best[ce]]
            first = np.full(size, E, dtype=np.intp)
            np.minimum.at(first, centre[top], top)
            matched[first[first < E]] = True
    hard = np.flatnonzero(~star_a & ~star_b)
    if hard.size:
        _match_components(a_node[hard], b_node[hard], weight[hard], hard, n_a_nodes, n_b_nodes,
                          cardinality_first, matched)
    return matched


def _match_components(ra, rb, w, idx, NA, NB, cardinality_first, matched) -> None:
    """Components with at least two nodes on each side: brute force by shape, or LSA."""
    # Compact node ids: A nodes 0 .. n_a - 1, then B nodes.
    ca, n_a = _compact(ra, NA)
    cb, n_b = _compact(rb, NB)
    g = coo_matrix((np.ones(len(ra), np.int8), (ca, n_a + cb)), shape=(n_a + n_b, n_a + n_b))
    ncomp, lab = connected_components(g, directed=False)
    comp = lab[ca]
    r_c = np.bincount(lab[:n_a], minlength=ncomp)
    q_c = np.bincount(lab[n_a:], minlength=ncomp)
    rank_a = _ranks(lab[:n_a])[ca]  # position of a node among its component's nodes
    rank_b = _ranks(lab[n_a:])[cb]
    # The shapes (r, q) of the components, coded 0, 1, ... in increasing (r, q); each component's
    # position among the components of its shape (in id order) numbers its problem in that group.
    shapes, shape_id = np.unique(r_c.astype(np.int64) * (n_a + n_b + 1) + q_c, return_inverse=True)
    shape_id = shape_id.reshape(-1).astype(np.uint8 if len(shapes) <= 256 else np.intp)
    by_shape = np.argsort(shape_id, kind="stable")
    group_start = np.searchsorted(shape_id[by_shape], np.arange(len(shapes)))
    problem = np.empty(ncomp, dtype=np.intp)
    problem[by_shape] = np.arange(ncomp) - group_start[shape_id[by_shape]]
    edge_shape = shape_id[comp]
    order = np.argsort(edge_shape, kind="stable")  # edges by shape, in edge order (radix sort on uint8)
    bounds = np.searchsorted(edge_shape[order], np.arange(len(shapes) + 1)).tolist()
    for g in range(len(shapes)):
        sel = order[bounds[g]:bounds[g + 1]]
        c0 = comp[sel[0]]
        r, q = int(r_c[c0]), int(q_c[c0])
        rows, cols = rank_a[sel], rank_b[sel]
        if r > q:  # enumerate injections of the smaller side
            rows, cols, r, q = cols, rows, q, r
        ww = w[sel] + (min(r, q) + 1.0 if cardinality_first else 0.0)
        cl = problem[comp[sel]]
        if math.perm(q, r) <= _MAX_PERMUTATIONS:
            matched[idx[sel]] = _brute_force(cl, rows, cols, ww, r, q)
        else:
            matched[idx[sel]] = _lsa_components(cl, rows, cols, ww, r, q)


def _compact(x: np.ndarray, size: int) -> tuple[np.ndarray, int]:
    """``x`` (values in ``[0, size)``) relabelled ``0 .. n - 1`` in increasing order, and ``n``."""
    mark = np.zeros(size, dtype=bool)
    mark[x] = True
    rank = np.cumsum(mark) - 1
    return rank[x], int(rank[-1]) + 1 if size else 0


def _ranks(comp: np.ndarray) -> np.ndarray:
    """Position of each node among the nodes of its component (nodes in id order)."""
    order = np.argsort(comp, kind="stable")
    c_sorted = comp[order]
    start = np.flatnonzero(np.r_[True, c_sorted[1:] != c_sorted[:-1]])
    pos = np.empty(len(comp), dtype=np.intp)
    pos[order] = np.arange(len(comp)) - np.repeat(start, np.diff(np.r_[start, len(comp)]))
    return pos


_PERMS: dict[tuple[int, int], np.ndarray] = {}


def _injections(q: int, r: int) -> np.ndarray:
    key = (q, r)
    if key not in _PERMS:
        _PERMS[key] = np.array(list(itertools.permutations(range(q), r)), dtype=np.intp).reshape(-1, r)
    return _PERMS[key]


def _brute_force(cl, rows, cols, w, r, q) -> np.ndarray:
    """Best injection of r rows into q columns per component (vectorised), as edge flags."""
    n_c = int(cl.max()) + 1
    dense = np.zeros((n_c, r, q))
    dense[cl, rows, cols] = w
    inj = _injections(q, r)
    best = np.empty(n_c, dtype=np.intp)
    step = max(1, _BRUTE_ELEMENTS // (len(inj) * r))
    ar = np.arange(r)
    for lo in range(0, n_c, step):
        vals = dense[lo:lo + step][:, ar, inj].sum(axis=2)  # (components, injections)
        best[lo:lo + step] = np.argmax(vals, axis=1)
    return inj[best[cl], rows] == cols


def _lsa_components(cl, rows, cols, w, r, q) -> np.ndarray:
    """linear_sum_assignment per component (large components), as edge flags."""
    out = np.zeros(len(cl), dtype=bool)
    order = np.argsort(cl, kind="stable")
    bounds = np.flatnonzero(np.r_[True, cl[order][1:] != cl[order][:-1], True])
    for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        e = order[lo:hi]
        dense = np.zeros((r, q))
        dense[rows[e], cols[e]] = w[e]
        rr, qq = linear_sum_assignment(dense, maximize=True)
        chosen = np.zeros((r, q), dtype=bool)
        chosen[rr, qq] = True
        out[e] = chosen[rows[e], cols[e]]
    return out


# ---------------------------------------------------------------------------
# Corpus level: pair costs of arbitrary box pairs, and many set pairs at once
# ---------------------------------------------------------------------------


# Box pairs per block of pair-cost arithmetic (a few 256 KiB temporaries).
_COST_BLOCK = 1 << 15


def _label_codes(labels: np.ndarray) -> np.ndarray:
    index: dict = {}
    return np.fromiter((index.setdefault(v, len(index)) for v in labels), np.int64, len(labels))


class _PairCosts:
    """Corners and label codes of a corpus' boxes, for the pair cost of any box pairs.

    :meth:`giou` and :meth:`iou` are the paired forms of
    :func:`agreement.geometry.boxes.pairwise_giou` and ``pairwise_iou`` (the
    same operations in the same order, so bit-identical, zero-area cases
    included), and :meth:`cost` the paired form of :func:`pair_cost_matrix`.
    """

    def __init__(self, boxes: np.ndarray, labels: np.ndarray, lam: float):
        boxes = _check_boxes(boxes, "boxes")
        self.x1, self.y1 = boxes[:, 0].copy(), boxes[:, 1].copy()
        self.x2, self.y2 = boxes[:, 2] + self.x1, boxes[:, 3] + self.y1
        self.area = (self.x2 - self.x1) * (self.y2 - self.y1)
        self.codes = _label_codes(labels)
        self.lam = float(lam)

    def giou(self, i: np.ndarray, j: np.ndarray, iou_out: np.ndarray | None = None) -> np.ndarray:
        """GIoU of the box pairs ``(i[k], j[k])``, in ``[-1, 1]``; with ``iou_out``, their IoU is stored
        there too (the same operations as :meth:`iou`, so bit-identical to it)."""
        x1, y1, x2, y2, area = self.x1, self.y1, self.x2, self.y2, self.area
        xa2, xb2, xa1, xb1 = x2[i], x2[j], x1[i], x1[j]
        o = np.minimum(xa2, xb2)
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
        """IoU of the box pairs ``(i[k], j[k])``, in ``[0, 1]``: the paired form of
        :func:`agreement.geometry.boxes.pairwise_iou` (bit-identical), in cache-sized blocks."""
        out = np.empty(len(i))
        x1, y1, x2, y2, area = self.x1, self.y1, self.x2, self.y2, self.area
        for lo in range(0, len(i), _COST_BLOCK):
            ib, jb = i[lo:lo + _COST_BLOCK], j[lo:lo + _COST_BLOCK]
            o = np.minimum(x2[ib], x2[jb])
            o -= np.maximum(x1[ib], x1[jb])
            np.maximum(o, 0.0, out=o)
            u = np.minimum(y2[ib], y2[jb])
            u -= np.maximum(y1[ib], y1[jb])
            np.maximum(u, 0.0, out=u)
            o *= u
            u = area[ib] + area[jb]
            u -= o
            zero = np.flatnonzero(u == 0.0)
            u[zero] = 1.0
            np.divide(o, u, out=out[lo:lo + _COST_BLOCK])
            if zero.size:
                zi, zj = ib[zero], jb[zero]
                same = (x1[zi] == x1[zj]) & (y1[zi] == y1[zj]) & (x2[zi] == x2[zj]) & (y2[zi] == y2[zj])
                out[lo + zero] = same.astype(np.float64)
        return out

    def geometric(self, i: np.ndarray, j: np.ndarray, iou_out: np.ndarray | None = None) -> np.ndarray:
        """The localisation term ``lam (1 - GIoU) / 2`` of the pair cost, in ``[0, lam]`` (``iou_out``: as
        :meth:`giou`)."""
        g = self.giou(i, j, iou_out)
        np.subtract(1.0, g, out=g)
        g *= 0.5 * self.lam
        return g

    def cost(self, i: np.ndarray, j: np.ndarray, iou_out: np.ndarray | None = None) -> np.ndarray:
        """``c = lam (1 - GIoU) / 2 + (1 - lam) [label_i != label_j]`` of the pairs, in ``[0, 1]``; with
        ``iou_out`` (length ``len(i)``), the pairs' IoU is stored there as :meth:`iou` computes it.

        Computed in blocks of ``_COST_BLOCK`` pairs, whose temporaries stay in
        the CPU cache (several times faster than whole-array operations)."""
        out = np.empty(len(i))
        for lo in range(0, len(i), _COST_BLOCK):
            ib, jb = i[lo:lo + _COST_BLOCK], j[lo:lo + _COST_BLOCK]
            c = self.geometric(ib, jb, None if iou_out is None else iou_out[lo:lo + _COST_BLOCK])
            if self.lam < 1.0:
                c += (1.0 - self.lam) * (self.codes[ib] != self.codes[jb])
            np.clip(c, 0.0, 1.0, out=out[lo:lo + _COST_BLOCK])
        return out


def _entries(a0, na, b0, nb, problems):
    """Every box pair of the set pairs ``problems`` (A rows ``a0 + [0, na)``, B rows ``b0 + [0, nb)``).

    Returns ``(a_problem, ia, jb, an, bn)``: the problem of each A box of the
    chunk (indexed by A node), and per box pair its A row, B row, A node and B
    node (the positions of the two boxes among the chunk's A / B boxes).
    Only repeats and additions over the box pairs (no division, no gather).
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


def _chunks_of(sizes: np.ndarray, cap: int) -> list[np.ndarray]:
    """Consecutive chunks of item indices with about ``cap`` total size (an item larger
    than ``cap`` is a chunk of its own, or shares one with its neighbours)."""
    n = len(sizes)
    if n == 0:
        return []
    cid = (np.cumsum(sizes) - sizes) // max(int(cap), 1)
    bounds = np.flatnonzero(np.r_[True, cid[1:] != cid[:-1], True])
    return [np.arange(lo, hi) for lo, hi in zip(bounds[:-1], bounds[1:])]


@dataclass(frozen=True, eq=False)
class _Solved:
    """Results of :func:`_solve_set_pairs`: per set pair, matched pairs, nearest per row."""

    cost: np.ndarray
    n_matched: np.ndarray
    m_problem: np.ndarray | None = None
    m_row_a: np.ndarray | None = None
    m_row_b: np.ndarray | None = None
    m_cost: np.ndarray | None = None
    nearest_row: np.ndarray | None = None
    nearest_cost: np.ndarray | None = None


#: ``on_block(ta, ia, jb, an, bn, n_b, iou)``: a block of box pairs of :func:`_solve_set_pairs` (as
#: :func:`_entries` gives them, ``n_b`` the block's B nodes) with the IoU of each pair.
BlockHook = Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, int, np.ndarray], None]


def _solve_set_pairs(pc: _PairCosts, a0, na, b0, nb, beta: float, normalization: str,
                     max_block: int = 1 << 17, n_rows: int | None = None,
                     on_block: BlockHook | None = None) -> _Solved:
    """Exact OT cost of many set pairs (A rows ``a0[t] + [0, na[t])`` against B rows ``b0[t] + [0, nb[t])``).

    The pair costs of every box pair are computed in vectorised blocks of
    about ``max_block`` entries; the matchings of all set pairs of a block are
    solved together by :func:`max_weight_matchings` on the eligible pairs
    (``c_ij`` below ``beta``, ``"paper"``, or ``2 beta``, ``"oc_cost"``) with
    weights ``w (thr - c_ij)``; the cost is ``[w sum_M c_ij + beta (n + m - 2k)] / denom``
    as in :func:`ot_from_cost_matrix`. With ``n_rows`` (detail mode) the
    matched pairs and each box's nearest counterpart over all its set pairs
    (lowest ``c_ij``; ties: the box it was matched to, then the lowest row)
    are returned too. ``on_block`` is given every block's box pairs with their
    IoU, so that a measure of the same box pairs (the threshold baselines)
    needs no enumeration or geometry of its own.
    """
    a0, na, b0, nb = (np.asarray(x, dtype=np.intp) for x in (a0, na, b0, nb))
    P = len(a0)
    w = 2.0 if normalization == "paper" else 1.0
    thr = beta if normalization == "paper" else 2.0 * beta
    k = np.zeros(P, np.intp)
    csum = np.zeros(P)
    detail = n_rows is not None
    parts: list[tuple] = []
    if detail:
        near_cost = np.full(n_rows, np.inf)
        near_key = np.full(n_rows, np.iinfo(np.int64).max, dtype=np.int64)
    # Without detail only the eligible pairs matter; a pair of different labels costs at least
    # ``1 - lam`` (its localisation term is >= 0, in floating point too), so when that is not below the
    # threshold such pairs are dropped before their costs are computed (the same eligible edges, in the
    # same order: the same matchings and costs, bit for bit).
    same_label_only = not detail and on_block is None and pc.lam < 1.0 and (1.0 - pc.lam) >= thr
    for problems in _chunks_of(na * nb, max_block):
        ta, ia, jb, an, bn = _entries(a0, na, b0, nb, problems)
        if same_label_only:
            keep = np.flatnonzero(pc.codes[ia] == pc.codes[jb])
            ia, jb, an, bn = ia[keep], jb[keep], an[keep], bn[keep]
        if len(ia) == 0:
            continue
        if on_block is None:
            c = pc.cost(ia, jb)
        else:
            iou = np.empty(len(ia))
            c = pc.cost(ia, jb, iou)
            on_block(ta, ia, jb, an, bn, int(nb[problems].sum()), iou)
        el = np.flatnonzero(c < thr)
        hit = el[max_weight_matchings(an[el], bn[el], w * (thr - c[el]), len(ta), int(nb[problems].sum()))]
        t = ta[an[hit]]
        np.add.at(k, t, 1)
        np.add.at(csum, t, c[hit])
        if detail:
            parts.append((t, ia[hit], jb[hit], c[hit]))
            _nearest_update(near_cost, near_key, ia, jb, c, hit, n_rows)
    N = (na + nb).astype(np.float64)
    total = w * csum + beta * (N - 2 * k)
    denom = N if normalization == "paper" else N - k
    with np.errstate(invalid="ignore", divide="ignore"):
        cost = np.where(N > 0, total / np.where(denom > 0, denom, 1.0), 0.0)
    if not detail:
        return _Solved(cost, k)
    cat = (lambda j, dt: np.concatenate([p[j] for p in parts]).astype(dt) if parts else np.zeros(0, dt))
    has = np.isfinite(near_cost)
    nearest = np.where(has, near_key % max(n_rows, 1), -1).astype(np.intp)
    return _Solved(cost, k, cat(0, np.intp), cat(1, np.intp), cat(2, np.intp), cat(3, np.float64),
                   nearest, np.where(has, near_cost, np.nan))


def _nearest_update(near_cost, near_key, ia, jb, c, hit, n_rows) -> None:
    """Lowest-cost counterpart per box over the box pairs of a block, in both directions
    (ties: the box it was matched to, then the lowest row), merged into the running
    ``near_cost`` / ``near_key`` (blocks merge in any order; fastest when a block's rows
    are a narrow range, as for the set pairs of consecutive samples)."""
    lo = int(min(ia.min(), jb.min()))
    hi = int(max(ia.max(), jb.max())) + 1
    cost = np.full(hi - lo, np.inf)
    key = np.full(hi - lo, np.iinfo(np.int64).max, dtype=np.int64)
    unmatched = np.ones(len(c), dtype=np.int64)
    unmatched[hit] = 0
    la, lb = ia - lo, jb - lo
    np.minimum.at(cost, la, c)
    np.minimum.at(cost, lb, c)
    for rows, partner in ((la, jb), (lb, ia)):
        top = np.flatnonzero(c == cost[rows])
        np.minimum.at(key, rows[top], unmatched[top] * n_rows + partner[top])
    g_cost, g_key = near_cost[lo:hi], near_key[lo:hi]  # views
    better = cost < g_cost
    tie = cost == g_cost
    g_key[tie] = np.minimum(g_key[tie], key[tie])
    g_key[better] = key[better]
    g_cost[better] = cost[better]


def set_pair_costs(
    data,
    rater_a: int | str,
    rater_b: int | str,
    samples_a: np.ndarray,
    samples_b: np.ndarray,
    lam: float = 0.5,
    beta: float = 0.5,
    normalization: str = "paper",
    max_block: int = 1 << 17,
) -> np.ndarray:
    """OT costs between rater a's set on ``samples_a[t]`` and rater b's set on ``samples_b[t]``.

    The same cost as :func:`ot_match` for each set pair, computed in bulk: the
    pair costs of all box pairs are built in vectorised blocks of at most
    about ``max_block`` entries and the matchings of a block are solved
    together (:func:`max_weight_matchings`). Used for same-sample (observed)
    and cross-sample (chance) costs of :mod:`agreement.alpha_ot`. Both raters
    must be assigned to the respective samples (implicit absence has no set).

    Args:
        data: a :class:`agreement.data.MultiRaterAnnotations`.
        rater_a, rater_b: rater indices or names (may be equal).
        samples_a, samples_b: equal-length sample indices.
        lam, beta, normalization: as :func:`ot_match`.
        max_block: memory cap (entries) of one pair-cost block.

    Returns:
        ``(len(samples_a),)`` float64 OT costs in ``[0, beta]`` (``"paper"``).

    Reference: Prokhorov & Kalinin, "Quantifying Annotation Agreement in Object
    Detection with Optimal Transport".
    """
    check_ot_params(lam, beta, normalization)
    a = data.raters.index(rater_a) if isinstance(rater_a, str) else int(rater_a)
    b = data.raters.index(rater_b) if isinstance(rater_b, str) else int(rater_b)
    ii = np.asarray(samples_a, dtype=np.intp).reshape(-1)
    jj = np.asarray(samples_b, dtype=np.intp).reshape(-1)
    if len(ii) != len(jj):
        raise ValueError("samples_a and samples_b must have equal lengths")
    if len(ii) and (not data.assigned[ii, a].all() or not data.assigned[jj, b].all()):
        raise ValueError("every set pair needs both raters assigned to their samples")
    R, off = data.num_raters, data.offsets
    ca, cb = ii * R + a, jj * R + b
    pc = _PairCosts(data.boxes, data.labels, lam)
    return _solve_set_pairs(pc, off[ca], off[ca + 1] - off[ca], off[cb], off[cb + 1] - off[cb],
                            float(beta), normalization, max_block).cost


# ---------------------------------------------------------------------------
# Per-sample scores over every pair of assigned raters, and per-label reasons
# ---------------------------------------------------------------------------

REASON_MATCHED = "matched"
REASON_NO_COUNTERPART = "no counterpart"
REASON_LABEL_DIFFERS = "label differs"
REASON_TOO_FAR = "too far"
REASON_COUNTERPART_TAKEN = "counterpart taken"
#: Why a box was (not) matched, per box (:attr:`OTSampleScores.row_reason`).
ROW_REASONS = (REASON_MATCHED, REASON_NO_COUNTERPART, REASON_LABEL_DIFFERS, REASON_TOO_FAR,
               REASON_COUNTERPART_TAKEN)


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

    Per rater pair on a sample (length ``P``, sorted by sample, then ``(a, b)``):

    Attributes:
        pair_sample: sample index.
        pair_rater_a, pair_rater_b: rater indices, ``a < b``.
        pair_cost, pair_score: OT cost and ``1 - cost``.
        pair_n_a, pair_n_b, pair_n_matched: set sizes and matched pairs.
        pair_lower, pair_upper, pair_position: feasible score range and position.
        pair_table_row: the row of ``(a, b)`` in :attr:`rater_pairs`.

    Per box of a rater pair (length ``E``: each pair contributes ``n + m`` rows):

    Attributes:
        edge_pair: index into the pair arrays.
        edge_row: the box (row of the corpus arrays).
        edge_partner_row: the row of the box it matched, ``-1`` for the dummy.
        edge_paid: the cost it paid (``c_ij`` or ``beta``).

    Per box of the corpus (length ``N``), over the rater pairs it took part in:

    Attributes:
        row_paid: mean cost the box paid (NaN if none: its sample has a
            single rater).
        row_matched_row: the row of its cheapest match (for two raters: the
            box it matched), ``-1`` if it never matched.
        row_matched_rater: the rater index of that match, ``-1`` if none.
        row_n_matched: in how many rater pairs it was matched.
        row_nearest_row: its nearest counterpart: the box of another assigned
            rater on the same sample with the lowest pair cost ``c_ij`` (ties:
            the box it was matched to, then the lowest row); ``-1`` if no
            other assigned rater drew anything there.
        row_nearest_rater: the rater index of that box, ``-1`` if none.
        row_nearest_cost: ``c_ij`` to it (NaN if none).
        row_reason: why the box was or was not matched (:data:`ROW_REASONS`),
            with ``thr = beta`` (``"paper"``) or ``2 beta`` (``"oc_cost"``), the
            threshold below which a pair can be matched:
            ``"matched"`` (in at least one rater pair);
            ``"no counterpart"`` (no other assigned rater drew anything on the
            sample, including a sample with a single assigned rater);
            ``"counterpart taken"`` (the nearest counterpart was eligible,
            ``c_ij < thr``, but the optimal matching gave it to another box:
            an unmatched box with an unmatched eligible partner is never
            optimal);
            ``"label differs"`` (``c_ij >= thr`` only because of the label
            term: the nearest counterpart has another class and
            ``lam (1 - GIoU) / 2 < thr``, so with equal labels it could match);
            ``"too far"`` (``lam (1 - GIoU) / 2 >= thr``: geometry alone
            rules the pair out).

    Corpus:

    Attributes:
        raters: rater names.
        rater_pairs: :class:`agreement.rater_pairs.RaterPairTable` of the rater
            pairs that share at least one sample, with value ``"mean_ot"``
            (mean score over their shared samples). A pair that shares no
            sample is absent (no data).
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
    pair_table_row: np.ndarray
    edge_pair: np.ndarray
    edge_row: np.ndarray
    edge_partner_row: np.ndarray
    edge_paid: np.ndarray
    row_paid: np.ndarray
    row_matched_row: np.ndarray
    row_matched_rater: np.ndarray
    row_n_matched: np.ndarray
    row_nearest_row: np.ndarray
    row_nearest_rater: np.ndarray
    row_nearest_cost: np.ndarray
    row_reason: np.ndarray
    raters: tuple[str, ...]
    rater_pairs: RaterPairTable
    lam: float
    beta: float
    normalization: str

    @property
    def n_scored(self) -> int:
        return int(np.sum(self.n_pairs > 0))

    @property
    def mean_score(self) -> float:
        """Mean over scored samples of the per-sample mean score (NaN if none)."""
        return mean_of_defined(self.mean)


def assigned_pair_cells(data) -> tuple[np.ndarray, ...]:
    """The (sample, rater a, rater b) triples with both raters assigned (``a < b``),
    their table rows, and the row ranges of the two sets.

    Returns ``(sample, a, b, pair_id, a0, na, b0, nb)``; work is proportional to
    the number of triples (:func:`agreement.rater_pairs.shared_sample_pairs`).
    """
    s, a, b, pid = shared_sample_pairs(data.assigned)
    return (s, a, b, pid, *pair_set_rows(data, s, a, b))


def pair_set_rows(data, sample: np.ndarray, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, ...]:
    """The row ranges of rater ``a[k]``'s and rater ``b[k]``'s sets on sample ``sample[k]``:
    ``(a0, na, b0, nb)``, the rows ``a0[k] + [0, na[k])`` and ``b0[k] + [0, nb[k])``."""
    R, off = data.num_raters, data.offsets
    ca, cb = sample * R + a, sample * R + b
    return off[ca], off[ca + 1] - off[ca], off[cb], off[cb + 1] - off[cb]


def _sample_reasons(data) -> list[str]:
    k = data.assigned.sum(axis=1)
    out = [""] * data.num_samples
    for s in np.flatnonzero(k < 2).tolist():
        out[s] = ("no rater assigned" if k[s] == 0 else
                  f"only one rater assigned ({data.raters[int(np.argmax(data.assigned[s]))]!r}): no pair to compare")
    return out


def sample_ot_scores(data, lam: float = 0.5, beta: float = 0.5, normalization: str = "paper",
                     max_block: int = 1 << 17, on_block: BlockHook | None = None) -> OTSampleScores:
    """OT agreement per sample over every pair of raters assigned to it.

    For each sample and each pair of raters ``a < b`` both assigned to it
    (explicit absence, an empty set, counts; implicit absence does not), the
    OT score ``1 - cost(A, B)`` of :func:`ot_match`, in ``[1 - beta, 1]``
    (``"paper"``); per sample the mean and the minimum over its pairs. Samples
    with fewer than two assigned raters are reported (NaN with a reason), not
    scored. Per box: what it paid, what it matched, its nearest counterpart
    and why it was or was not matched (:class:`OTSampleScores`). Work is
    proportional to the box pairs of the (sample, assigned rater pair)
    triples, never to the square of the number of raters.

    Args:
        data: a :class:`agreement.data.MultiRaterAnnotations`.
        lam: localisation weight in ``[0, 1]``.
        beta: dummy cost in ``(0, 1]``.
        normalization: ``"paper"`` or ``"oc_cost"``.
        max_block: box pairs per vectorised block (a memory cap, except for a
            single set pair with more box pairs).
        on_block: called with every block of box pairs and their IoU
            (:data:`BlockHook`), for a measure that shares this pass
            (:func:`agreement.baselines.ot_scores_and_threshold_baselines`).

    Returns:
        :class:`OTSampleScores` (per sample, per rater pair, per box, and the
        sparse table of rater pairs with their mean score).

    Reference: Prokhorov & Kalinin, "Quantifying Annotation Agreement in Object
    Detection with Optimal Transport".
    """
    check_ot_params(lam, beta, normalization)
    pc = _PairCosts(data.boxes, data.labels, lam)
    S, Nrows = data.num_samples, len(data)
    s, a, b, pid, a0, na, b0, nb = assigned_pair_cells(data)
    solved = _solve_set_pairs(pc, a0, na, b0, nb, float(beta), normalization, max_block, n_rows=Nrows,
                              on_block=on_block)
    pair_cost = solved.cost
    pair_score = 1.0 - pair_cost
    n_pairs = np.bincount(s, minlength=S).astype(np.intp)
    ok = n_pairs > 0
    mean = np.full(S, np.nan)
    mn = np.full(S, np.inf)
    mean[ok] = np.bincount(s, pair_score, S)[ok] / n_pairs[ok]
    np.minimum.at(mn, s, pair_score)
    mn[~ok] = np.nan
    bounds = score_bounds(na, nb, lam, beta, normalization)
    pair_lower = np.asarray(bounds.lower, np.float64).reshape(-1)
    pair_upper = np.asarray(bounds.upper, np.float64).reshape(-1)
    pair_pos = np.asarray(relative_position(pair_score, pair_lower, pair_upper), np.float64).reshape(-1)
    lower = np.full(S, np.nan)
    upper = np.full(S, np.nan)
    lower[ok] = np.bincount(s, pair_lower, S)[ok] / n_pairs[ok]
    upper[ok] = np.bincount(s, pair_upper, S)[ok] / n_pairs[ok]
    position = np.asarray(relative_position(mean, lower, upper), np.float64).reshape(-1)

    edges = _box_edges(solved, a0, na, b0, nb, float(beta))
    rows = _row_results(data, pc, solved, float(beta), normalization)
    table = RaterPairTable.from_shared_pairs(data.raters, a, b, pid)
    table.values["mean_ot"] = table.mean_over_shared(pid, pair_score)
    return OTSampleScores(
        sample_ids=data.sample_ids, mean=mean, min=mn, n_pairs=n_pairs, lower=lower, upper=upper,
        position=position, reasons=tuple(_sample_reasons(data)), pair_sample=s, pair_rater_a=a,
        pair_rater_b=b, pair_cost=pair_cost, pair_score=pair_score, pair_n_a=na, pair_n_b=nb,
        pair_n_matched=solved.n_matched, pair_lower=pair_lower, pair_upper=pair_upper,
        pair_position=pair_pos, pair_table_row=pid, **edges, **rows, raters=tuple(data.raters),
        rater_pairs=table, lam=float(lam), beta=float(beta), normalization=normalization,
    )


def _box_edges(solved: _Solved, a0, na, b0, nb, beta: float) -> dict[str, np.ndarray]:
    """Per box of every rater pair (the pair's A boxes, then its B boxes): partner and paid cost."""
    L = na + nb
    eo = np.cumsum(L) - L
    edge_pair = np.repeat(np.arange(len(L)), L)
    # Segments: the A rows of pair 0, its B rows, the A rows of pair 1, ...
    seg_len = np.stack([na, nb], axis=1).reshape(-1)
    seg_start = np.stack([a0, b0], axis=1).reshape(-1)
    seg_pos = np.stack([eo, eo + na], axis=1).reshape(-1)
    edge_row = np.arange(int(L.sum())) + np.repeat(seg_start - seg_pos, seg_len)
    partner = np.full(len(edge_row), -1, np.intp)
    paid = np.full(len(edge_row), beta)
    t = solved.m_problem
    pos_a = eo[t] + (solved.m_row_a - a0[t])
    pos_b = eo[t] + na[t] + (solved.m_row_b - b0[t])
    partner[pos_a], partner[pos_b] = solved.m_row_b, solved.m_row_a
    paid[pos_a], paid[pos_b] = solved.m_cost, solved.m_cost
    return dict(edge_pair=edge_pair, edge_row=edge_row.astype(np.intp), edge_partner_row=partner, edge_paid=paid)


def _row_results(data, pc: _PairCosts, solved: _Solved, beta: float, normalization: str) -> dict[str, np.ndarray]:
    """Per box: mean paid, cheapest match, nearest counterpart and the reason (see :class:`OTSampleScores`)."""
    N = len(data)
    k = data.assigned.sum(axis=1)
    cnt = (k[data.sample_index] - 1).astype(np.float64)  # rater pairs each box takes part in
    rows = np.concatenate([solved.m_row_a, solved.m_row_b])
    partner = np.concatenate([solved.m_row_b, solved.m_row_a])
    paid = np.concatenate([solved.m_cost, solved.m_cost])
    pair = np.concatenate([solved.m_problem, solved.m_problem])
    row_n_matched = np.bincount(rows, minlength=N).astype(np.intp)
    with np.errstate(invalid="ignore", divide="ignore"):
        row_paid = (np.bincount(rows, paid, minlength=N) + beta * (cnt - row_n_matched)) / cnt
    row_paid[cnt == 0] = np.nan
    # Cheapest match; ties: the first rater pair.
    best = np.full(N, np.inf)
    np.minimum.at(best, rows, paid)
    top = np.flatnonzero(paid == best[rows])
    first = np.full(N, np.iinfo(np.intp).max, np.intp)
    np.minimum.at(first, rows[top], pair[top])
    chosen = top[pair[top] == first[rows[top]]]
    row_matched = np.full(N, -1, np.intp)
    row_matched[rows[chosen]] = partner[chosen]

    near = solved.nearest_row
    near_rater = np.where(near >= 0, data.rater_index[np.maximum(near, 0)], -1).astype(np.intp)
    thr = beta if normalization == "paper" else 2.0 * beta
    reason = np.full(N, REASON_NO_COUNTERPART, dtype=object)
    reason[row_n_matched > 0] = REASON_MATCHED
    unmatched = np.flatnonzero((near >= 0) & (row_n_matched == 0))
    cost_u = solved.nearest_cost[unmatched]
    reason[unmatched[cost_u < thr]] = REASON_COUNTERPART_TAKEN
    far = unmatched[cost_u >= thr]
    geo = pc.geometric(far, near[far])
    differs = pc.codes[far] != pc.codes[near[far]]
    reason[far] = np.where(differs & (geo < thr), REASON_LABEL_DIFFERS, REASON_TOO_FAR)
    return dict(
        row_paid=row_paid, row_matched_row=row_matched,
        row_matched_rater=np.where(row_matched >= 0, data.rater_index[np.maximum(row_matched, 0)], -1).astype(np.intp),
        row_n_matched=row_n_matched, row_nearest_row=near, row_nearest_rater=near_rater,
        row_nearest_cost=solved.nearest_cost, row_reason=reason,
    )
