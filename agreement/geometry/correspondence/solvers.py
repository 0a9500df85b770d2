"""The correspondence solvers on the hard components (:mod:`agreement.geometry.correspondence`): greedy
union-find, Hungarian, agglomerative clustering and multi-graph matching (``pylibmgm``). Each writes
representatives into ``label``: every annotation of a unit gets the same value, distinct from all
others.

This module does not import FiftyOne.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import numpy as np
from scipy.cluster.hierarchy import fcluster, linkage
from scipy.optimize import linear_sum_assignment

from agreement.core.arrays import unique_sorted
from agreement.geometry.correspondence.costs import C_MIN, SOLVERS


@dataclass(frozen=True)
class HardProblem:
    """What a solver solves: the candidate pairs ``(pi[e], pj[e])`` of the hard components, in the canonical
    processing order, with their similarity ``sim`` and cost ``c`` (``cost``: ψ's name; ``tau``: the
    threshold), over annotations of rater codes ``raters``, class codes ``classes``, canonical ranks ``rank``
    (-1 where not computed) and connected component ``comp``. The solver writes ``label`` in place."""

    raters: np.ndarray
    classes: np.ndarray
    rank: np.ndarray
    label: np.ndarray
    comp: np.ndarray
    pi: np.ndarray
    pj: np.ndarray
    sim: np.ndarray
    c: np.ndarray
    tau: float
    cost: str


# --------------------------------------------------------------------------
# Solvers on the hard components. Each writes representatives into `label`:
# every annotation of a unit gets the same value, distinct from all others
# (annotation indices are used as representatives).
# --------------------------------------------------------------------------


def _greedy(problem: HardProblem) -> None:
    """Union-find over pre-sorted candidate pairs with the one-rater-per-unit rule."""
    raters, label, pi, pj = problem.raters, problem.label, problem.pi, problem.pj
    cluster: dict[int, int] = {}
    members: dict[int, list[int]] = {}
    mask: dict[int, int] = {}
    rat = raters.tolist()
    for a, b in zip(pi.tolist(), pj.tolist(), strict=True):
        ca = cluster.get(a, a)
        cb = cluster.get(b, b)
        if ca == cb:
            continue
        ma = mask.get(ca, 1 << rat[a])
        mb = mask.get(cb, 1 << rat[b])
        if ma & mb:
            continue  # the merged unit would hold one rater twice
        la = members.get(ca) or [a]
        lb = members.get(cb) or [b]
        if len(la) < len(lb):
            ca, cb, la, lb = cb, ca, lb, la
        for x in lb:
            cluster[x] = ca
        la.extend(lb)
        members[ca] = la
        members.pop(cb, None)
        mask[ca] = ma | mb
        mask.pop(cb, None)
    for x, cx in cluster.items():
        label[x] = cx


def _components(comp: np.ndarray, pi: np.ndarray, pj: np.ndarray,
                rank: np.ndarray) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Yields ``(nodes, edge_index)`` per component of the given edges; nodes in canonical rank order."""
    ec = comp[pi]
    order = np.argsort(ec, kind="stable")
    ec_sorted = ec[order]
    bounds = np.flatnonzero(np.r_[True, ec_sorted[1:] != ec_sorted[:-1], True])
    for k in range(len(bounds) - 1):
        e = order[bounds[k]:bounds[k + 1]]
        nodes = unique_sorted(np.r_[pi[e], pj[e]])
        nodes = nodes[np.argsort(rank[nodes], kind="stable")]
        yield nodes, e


def _local_costs(nodes: np.ndarray, pi: np.ndarray, pj: np.ndarray, c: np.ndarray, e: np.ndarray) -> np.ndarray:
    """Dense ``(k, k)`` cost matrix of a component; 0 where not a candidate."""
    pos = {int(x): t for t, x in enumerate(nodes.tolist())}
    k = len(nodes)
    m = np.zeros((k, k))
    a = np.fromiter((pos[x] for x in pi[e].tolist()), dtype=np.int64, count=len(e))
    b = np.fromiter((pos[x] for x in pj[e].tolist()), dtype=np.int64, count=len(e))
    m[a, b] = c[e]
    m[b, a] = c[e]
    return m


def _hungarian(problem: HardProblem) -> None:
    """Sequential Hungarian matching per component, raters in code order."""
    raters, label, comp, pi, pj, c, rank = (problem.raters, problem.label, problem.comp, problem.pi, problem.pj,
                                            problem.c, problem.rank)
    for nodes, e in _components(comp, pi, pj, rank):
        m = _local_costs(nodes, pi, pj, c, e)
        r = raters[nodes]
        units: list[dict[int, int]] = []  # rater code -> local node index
        for rk in np.unique(r).tolist():
            unmatched = np.flatnonzero(r == rk).tolist()
            for prev in sorted({p for u in units for p in u}):
                if not unmatched:
                    break
                slots = [u for u in units if prev in u and rk not in u]
                if not slots:
                    continue
                rows = [u[prev] for u in slots]
                sub = m[np.ix_(rows, unmatched)]
                ri, ci = linear_sum_assignment(sub)
                taken = set()
                for a, b in zip(ri.tolist(), ci.tolist(), strict=True):
                    if sub[a, b] < 0.0:  # a candidate pair
                        slots[a][rk] = unmatched[b]
                        taken.add(unmatched[b])
                unmatched = [x for x in unmatched if x not in taken]
            units.extend({rk: x} for x in unmatched)
        for u in units:
            idx = nodes[list(u.values())]
            label[idx] = idx.min()


def _agglomerative(problem: HardProblem) -> None:
    """Complete linkage per component, cut so that every pair in a unit is a candidate."""
    label, comp, pi, pj, c, rank, tau, cost = (problem.label, problem.comp, problem.pi, problem.pj, problem.c,
                                               problem.rank, problem.tau, problem.cost)
    c_min = C_MIN[cost]
    cut = (-tau) - c_min  # the largest distance of a candidate pair
    far = 4.0 * (1.0 - c_min) + 1.0  # larger than any candidate distance
    for nodes, e in _components(comp, pi, pj, rank):
        m = _local_costs(nodes, pi, pj, c, e)
        d = np.where(m < 0.0, m - c_min, far)
        np.maximum(d, 0.0, out=d)
        k = len(nodes)
        iu = np.triu_indices(k, 1)
        z = linkage(d[iu], method="complete")
        # Scale-free cut: candidates have d <= cut; allow rounding in cost - c_min.
        lab = fcluster(z, t=cut + 1e-12, criterion="distance")
        for v in np.unique(lab).tolist():
            idx = nodes[lab == v]
            label[idx] = idx.min()


def _mgm(problem: HardProblem) -> None:
    """Multi-graph matching per component with pylibmgm (one graph per rater)."""
    raters, label, comp, pi, pj, c, rank = (problem.raters, problem.label, problem.comp, problem.pi, problem.pj,
                                            problem.c, problem.rank)
    try:
        import pylibmgm as lib
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError(
            "solver='mgm' needs the optional package pylibmgm (pip install pylibmgm); "
            f"choose another solver from {', '.join(map(repr, SOLVERS[:3]))}"
        ) from err
    for nodes, e in _components(comp, pi, pj, rank):
        m = _local_costs(nodes, pi, pj, c, e)
        r = raters[nodes]
        codes = np.unique(r).tolist()
        per = [np.flatnonzero(r == rk) for rk in codes]  # local nodes of each graph, rank order
        graphs = [lib.Graph(g, len(p)) for g, p in enumerate(per)]
        model = lib.MgmModel()
        for g1 in range(len(per)):
            for g2 in range(g1 + 1, len(per)):
                sub = m[np.ix_(per[g1], per[g2])]
                a, b = np.nonzero(sub < 0.0)
                gm = lib.GmModel(graphs[g1], graphs[g2], max(len(a), 1), 0)
                for x, y, v in zip(a.tolist(), b.tolist(), sub[a, b].tolist(), strict=True):
                    gm.add_assignment(x, y, v)
                model.add_model(gm)
        logger = logging.getLogger("libmgm")  # pylibmgm logs every solve at INFO
        level = logger.level
        logger.setLevel(max(level, logging.WARNING))
        try:
            sol = _solve_mgm(lib, model)
        finally:
            logger.setLevel(level)
        parent = list(range(len(nodes)))
        for (g1, g2), matches in sol.labeling().items():
            for x, y in enumerate(matches):
                if y >= 0:
                    ra, rb = _find(parent, int(per[g1][x])), _find(parent, int(per[g2][y]))
                    if ra != rb:
                        parent[max(ra, rb)] = min(ra, rb)
        roots = np.array([_find(parent, x) for x in range(len(nodes))])
        for v in np.unique(roots).tolist():
            loc = np.flatnonzero(roots == v)
            if len(np.unique(r[loc])) != len(loc):  # pragma: no cover - GREEDA is cycle-consistent
                raise RuntimeError("pylibmgm returned a cycle-inconsistent matching (one rater twice in a unit)")
            idx = nodes[loc]
            label[idx] = idx.min()


def _find(parent: list[int], x: int) -> int:
    """The root of ``x`` in the union-find forest ``parent`` (path halving, in place)."""
    while parent[x] != x:
        parent[x] = parent[parent[x]]
        x = parent[x]
    return x


def _solve_mgm(lib: Any, model: Any) -> Any:
    """GREEDA with a deterministic (sequential) graph order and exhaustive local search."""
    gen = lib.SequentialGenerator(model)
    order = gen.init(lib.MgmGenerator.matching_order.sequential)
    sol = gen.generate()
    gm_search = lib.GMLocalSearcher(model, order)
    gm_search.search(sol)
    swap = lib.SwapLocalSearcher(model)
    for _ in range(100):
        if not swap.search(sol) or not gm_search.search(sol):
            break
    return sol


SOLVE: dict[str, Callable[[HardProblem], None]] = {
    "greedy": _greedy,
    "hungarian": _hungarian,
    "agglomerative": _agglomerative,
    "mgm": _mgm,
}
