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
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

import numpy as np
from scipy.optimize import linear_sum_assignment
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from agreement.core.rater_pairs import RaterPairTable
from agreement.methods.ot.bounds import relative_position, score_bounds
from agreement.methods.ot.pair_costs import PairCosts, SolvedSetPairs, chunks_of, set_pair_entries
from agreement.methods.ot.pairs import (
    NORMALIZATIONS,
    OTMatching,
    check_ot_params,
    ot_cost_from_matrix,
    ot_from_cost_matrix,
    ot_match,
    ot_score,
    pair_cost_matrix,
)
from agreement.methods.ot.sample_scores import (
    ROW_REASONS,
    OTSampleScores,
    assigned_pair_cells,
    box_edges,
    pair_set_rows,
    row_results,
    sample_skip_reasons,
)

if TYPE_CHECKING:
    from agreement.core.data import MultiRaterAnnotations

# The test of max_weight_matchings patches agreement.methods.ot._MAX_PERMUTATIONS: the solver and the code that
# calls it (solve_set_pairs, set_pair_costs, sample_ot_scores) stay in this module.


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
    *,
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
        a_node: ``(E,)`` int A node id of each edge, in ``[0, n_a_nodes)``.
        b_node: ``(E,)`` int B node id of each edge, in ``[0, n_b_nodes)``.
        weight: ``(E,)`` positive weights (a pair with no edge has weight 0).
        n_a_nodes: the size of the A node set.
        n_b_nodes: the size of the B node set.
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
        _match_components(a_node[hard], b_node[hard], w=weight[hard], idx=hard, NA=n_a_nodes, NB=n_b_nodes,
                          cardinality_first=cardinality_first, matched=matched)
    return matched


def _match_components(ra: np.ndarray, rb: np.ndarray, w: np.ndarray, idx: np.ndarray, NA: int, NB: int,
                      cardinality_first: bool, matched: np.ndarray) -> None:
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


def _brute_force(cl: np.ndarray, rows: np.ndarray, cols: np.ndarray, w: np.ndarray, r: int, q: int) -> np.ndarray:
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
    flags: np.ndarray = inj[best[cl], rows] == cols
    return flags


def _lsa_components(cl: np.ndarray, rows: np.ndarray, cols: np.ndarray, w: np.ndarray, r: int,
                    q: int) -> np.ndarray:
    """linear_sum_assignment per component (large components), as edge flags."""
    out = np.zeros(len(cl), dtype=bool)
    order = np.argsort(cl, kind="stable")
    bounds = np.flatnonzero(np.r_[True, cl[order][1:] != cl[order][:-1], True])
    for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
        e = order[lo:hi]
        dense = np.zeros((r, q))
        dense[rows[e], cols[e]] = w[e]
        rr, qq = linear_sum_assignment(dense, maximize=True)
        chosen = np.zeros((r, q), dtype=bool)
        chosen[rr, qq] = True
        out[e] = chosen[rows[e], cols[e]]
    return out


# ---------------------------------------------------------------------------
# Many set pairs of a corpus at once (pair costs: agreement.methods.ot.pair_costs)
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class BoxPairBlock:
    """A block of box pairs of :func:`solve_set_pairs`, as :func:`set_pair_entries` gives them (``ta``: the set
    pair of each of its problems; ``ia``, ``jb``: the rows of each box pair; ``an``, ``bn``: their A and B
    nodes), with ``n_b`` the block's B nodes and the IoU of each box pair."""

    ta: np.ndarray
    ia: np.ndarray
    jb: np.ndarray
    an: np.ndarray
    bn: np.ndarray
    n_b: int
    iou: np.ndarray


#: ``on_block(block)``: called with every :class:`BoxPairBlock` of :func:`solve_set_pairs`.
BlockHook = Callable[[BoxPairBlock], None]


@dataclass(frozen=True)
class SetPairs:
    """Many set pairs of one corpus: set pair ``t`` holds the A rows ``a0[t] + [0, na[t])`` and the B rows
    ``b0[t] + [0, nb[t])`` (as :func:`assigned_pair_cells` gives them)."""

    a0: np.ndarray
    na: np.ndarray
    b0: np.ndarray
    nb: np.ndarray

    @classmethod
    def of_cells(cls, offsets: np.ndarray, cells_a: np.ndarray, cells_b: np.ndarray) -> SetPairs:
        """The set pairs of the (sample, rater) cells ``cells_a[t]`` and ``cells_b[t]`` of a corpus whose
        cell ``c`` holds the rows ``offsets[c]:offsets[c + 1]``."""
        return cls(a0=offsets[cells_a], na=offsets[cells_a + 1] - offsets[cells_a], b0=offsets[cells_b],
                   nb=offsets[cells_b + 1] - offsets[cells_b])


def solve_set_pairs(pc: PairCosts, pairs: SetPairs, *, beta: float, normalization: str,
                    max_block: int = 1 << 17, n_rows: int | None = None,
                    on_block: BlockHook | None = None) -> SolvedSetPairs:
    """Exact OT cost of many set ``pairs`` (A rows ``a0[t] + [0, na[t])`` against B rows ``b0[t] + [0, nb[t])``).

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
    a0, na, b0, nb = (np.asarray(x, dtype=np.intp) for x in (pairs.a0, pairs.na, pairs.b0, pairs.nb))
    P = len(a0)
    w = 2.0 if normalization == "paper" else 1.0
    thr = beta if normalization == "paper" else 2.0 * beta
    k = np.zeros(P, np.intp)
    csum = np.zeros(P)
    detail = n_rows is not None
    n_detail = n_rows if n_rows is not None else 0  # rows of the detail arrays
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
    if detail:
        near_cost = np.full(n_detail, np.inf)
        near_key = np.full(n_detail, np.iinfo(np.int64).max, dtype=np.int64)
    # Without detail only the eligible pairs matter; a pair of different labels costs at least
    # ``1 - lam`` (its localisation term is >= 0, in floating point too), so when that is not below the
    # threshold such pairs are dropped before their costs are computed (the same eligible edges, in the
    # same order: the same matchings and costs, bit for bit).
    same_label_only = not detail and on_block is None and pc.lam < 1.0 and (1.0 - pc.lam) >= thr
    for problems in chunks_of(na * nb, max_block):
        ta, ia, jb, an, bn = set_pair_entries(a0, na, b0, nb, problems)
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
            on_block(BoxPairBlock(ta=ta, ia=ia, jb=jb, an=an, bn=bn, n_b=int(nb[problems].sum()), iou=iou))
        el = np.flatnonzero(c < thr)
        hit = el[max_weight_matchings(an[el], bn[el], w * (thr - c[el]), len(ta), int(nb[problems].sum()))]
        t = ta[an[hit]]
        np.add.at(k, t, 1)
        np.add.at(csum, t, c[hit])
        if detail:
            parts.append((t, ia[hit], jb[hit], c[hit]))
            _nearest_update(near_cost, near_key, ia=ia, jb=jb, c=c, hit=hit, n_rows=n_detail)
    N = (na + nb).astype(np.float64)
    total = w * csum + beta * (N - 2 * k)
    denom = N if normalization == "paper" else N - k
    with np.errstate(invalid="ignore", divide="ignore"):
        cost = np.where(N > 0, total / np.where(denom > 0, denom, 1.0), 0.0)
    if not detail:
        return SolvedSetPairs(cost, k)

    def cat(j: int, dt: type) -> np.ndarray:
        return np.concatenate([p[j] for p in parts]).astype(dt) if parts else np.zeros(0, dt)

    has = np.isfinite(near_cost)
    nearest = np.where(has, near_key % max(n_detail, 1), -1).astype(np.intp)
    return SolvedSetPairs(cost=cost, n_matched=k, m_problem=cat(0, np.intp), m_row_a=cat(1, np.intp),
                          m_row_b=cat(2, np.intp), m_cost=cat(3, np.float64), nearest_row=nearest,
                          nearest_cost=np.where(has, near_cost, np.nan))


def _nearest_update(near_cost: np.ndarray, near_key: np.ndarray, ia: np.ndarray, jb: np.ndarray, c: np.ndarray,
                    hit: np.ndarray, n_rows: int) -> None:
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
    data: MultiRaterAnnotations,
    rater_a: int | str,
    rater_b: int | str,
    samples_a: np.ndarray,
    samples_b: np.ndarray,
    *,
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
    and cross-sample (chance) costs of :mod:`agreement.methods.ot.alpha_ot`. Both raters
    must be assigned to the respective samples (implicit absence has no set).

    Args:
        data: a :class:`agreement.core.data.MultiRaterAnnotations`.
        rater_a: index or name of the rater of the A sets.
        rater_b: index or name of the rater of the B sets (may equal ``rater_a``).
        samples_a: sample index of each A set.
        samples_b: sample index of each B set (as many as ``samples_a``).
        lam: localisation weight in ``[0, 1]``, as in :func:`ot_match`.
        beta: dummy cost in ``(0, 1]``, as in :func:`ot_match`.
        normalization: ``"paper"`` or ``"oc_cost"``, as in :func:`ot_match`.
        max_block: memory cap (entries) of one pair-cost block.

    Returns:
        ``(len(samples_a),)`` float64 OT costs in ``[0, beta]`` (``"paper"``).

    Reference: Prokhorov & Kalinin, "Quantifying Annotation Agreement in Object
    Detection with Optimal Transport".
    """
    check_ot_params(lam, beta, normalization=normalization)
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
    pc = PairCosts(data.boxes, data.labels, lam)
    return solve_set_pairs(pc, SetPairs.of_cells(off, ca, cb), beta=float(beta), normalization=normalization,
                           max_block=max_block).cost


# ---------------------------------------------------------------------------
# Per-sample scores (the result and per-box reasons: agreement.methods.ot.sample_scores)
# ---------------------------------------------------------------------------


def sample_ot_scores(data: MultiRaterAnnotations, *, lam: float = 0.5, beta: float = 0.5, normalization: str = "paper",
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
        data: a :class:`agreement.core.data.MultiRaterAnnotations`.
        lam: localisation weight in ``[0, 1]``.
        beta: dummy cost in ``(0, 1]``.
        normalization: ``"paper"`` or ``"oc_cost"``.
        max_block: box pairs per vectorised block (a memory cap, except for a
            single set pair with more box pairs).
        on_block: called with every block of box pairs and their IoU
            (:data:`BlockHook`), for a measure that shares this pass
            (:func:`agreement.methods.ot.baselines.ot_scores_and_threshold_baselines`).

    Returns:
        :class:`OTSampleScores` (per sample, per rater pair, per box, and the
        sparse table of rater pairs with their mean score).

    Reference: Prokhorov & Kalinin, "Quantifying Annotation Agreement in Object
    Detection with Optimal Transport".
    """
    check_ot_params(lam, beta, normalization=normalization)
    pc = PairCosts(data.boxes, data.labels, lam)
    S, Nrows = data.num_samples, len(data)
    s, a, b, pid, a0, na, b0, nb = assigned_pair_cells(data)
    solved = solve_set_pairs(pc, SetPairs(a0, na, b0, nb), beta=float(beta), normalization=normalization,
                              max_block=max_block, n_rows=Nrows, on_block=on_block)
    pair_cost = solved.cost
    pair_score = 1.0 - pair_cost
    n_pairs = np.bincount(s, minlength=S).astype(np.intp)
    ok = n_pairs > 0
    mean = np.full(S, np.nan)
    mn = np.full(S, np.inf)
    mean[ok] = np.bincount(s, pair_score, S)[ok] / n_pairs[ok]
    np.minimum.at(mn, s, pair_score)
    mn[~ok] = np.nan
    bounds = score_bounds(na, nb, lam=lam, beta=beta, normalization=normalization)
    pair_lower = np.asarray(bounds.lower, np.float64).reshape(-1)
    pair_upper = np.asarray(bounds.upper, np.float64).reshape(-1)
    pair_pos = np.asarray(relative_position(pair_score, pair_lower, pair_upper), np.float64).reshape(-1)
    lower = np.full(S, np.nan)
    upper = np.full(S, np.nan)
    lower[ok] = np.bincount(s, pair_lower, S)[ok] / n_pairs[ok]
    upper[ok] = np.bincount(s, pair_upper, S)[ok] / n_pairs[ok]
    position = np.asarray(relative_position(mean, lower, upper), np.float64).reshape(-1)

    edges = box_edges(solved, a0, na, b0, nb, float(beta))
    rows = row_results(data, pc, solved, float(beta), normalization)
    table = RaterPairTable.from_shared_pairs(data.raters, a, b, pid)
    table.values["mean_ot"] = table.mean_over_shared(pid, pair_score)
    return OTSampleScores(
        sample_ids=data.sample_ids, mean=mean, min=mn, n_pairs=n_pairs, lower=lower, upper=upper,
        position=position, reasons=tuple(sample_skip_reasons(data)), pair_sample=s, pair_rater_a=a,
        pair_rater_b=b, pair_cost=pair_cost, pair_score=pair_score, pair_n_a=na, pair_n_b=nb,
        pair_n_matched=solved.n_matched, pair_lower=pair_lower, pair_upper=pair_upper,
        pair_position=pair_pos, pair_table_row=pid, **edges, **rows, raters=tuple(data.raters),
        rater_pairs=table, lam=float(lam), beta=float(beta), normalization=normalization,
    )
