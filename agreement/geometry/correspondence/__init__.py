r"""Correspondence solvers: which annotations of one image are the same object.

KαLOS ("localisation first, classification second") clusters the annotations
that several raters drew on one sample into **units**, each unit holding at
most one annotation per rater; the unit is then a column of the reliability
matrix (:mod:`agreement.methods.kalos`). This module solves that clustering.

Candidates and costs
--------------------
Two annotations ``a`` and ``b`` of *different* raters are a **candidate pair**
when their similarity ``s(a, b) >= tau`` (``tau`` in ``(0, 1]``, e.g. box IoU,
see :mod:`agreement.geometry.similarity`). Only candidate pairs can end up in the same
unit. Each candidate pair has a cost (lower is better):

* ``"soft"`` (ψ_soft, the class-aware "category lenient" cost of KαLOS):
  ``c(a, b) = -s(a, b) - 1`` when ``a`` and ``b`` have the same class, and
  ``-s(a, b)`` otherwise, so a same-class match is preferred over a
  better-localised match of another class, yet a class disagreement can still
  be matched (and then counts as a *classification* disagreement);
* ``"plain"``: ``c(a, b) = -s(a, b)`` (localisation only).

Every candidate cost is strictly negative (``tau > 0``), which the solvers use.

Solvers
-------
``"greedy"`` (default, KαLOS' reference solver)
    Candidate pairs sorted by ascending cost are merged with union-find; a
    merge is refused if the merged unit would contain two annotations of one
    rater. This is exactly the reference's procedure; the reference breaks
    exact cost ties by the insertion order of its pair dictionary (order of
    raters and annotations in the file), this module by a canonical order
    that does not depend on input order: higher similarity first (a tie of
    ``-s - 1`` can hide different similarities after rounding), then the
    canonical ranks of the two annotations (their class, content keys such as
    the box, rater; see :func:`solve_units`). Hence greedy units are invariant to any permutation of
    raters and annotations. On the shared LVIS data no two candidate pairs of
    one image have equal cost, so the orders coincide.
``"hungarian"`` (sequential Hungarian matching, Tschirschwitz et al. 2022)
    Raters are added one at a time (in the order of their codes); the new
    rater's annotations are matched, by a minimum-cost bipartite assignment
    (:func:`scipy.optimize.linear_sum_assignment`) over candidate pairs,
    against the units that hold an annotation of each earlier rater and none
    of the new rater, earlier raters in order; what stays unmatched opens new
    units. Non-candidates cost 0, so the assignment is the exact minimum-cost
    matching over candidate pairs (the reference pads with a penalty of 100
    instead, which favours cardinality). Depends on the rater order.
``"agglomerative"`` (complete-linkage clustering, Amgad et al. 2022)
    Complete linkage (:func:`scipy.cluster.hierarchy.linkage`) on the distance
    ``c(a, b) - c_min`` (``c_min = -2`` for ``"soft"``, ``-1`` for
    ``"plain"``) with non-candidates (including pairs of one rater) at a large
    distance, cut at the largest candidate distance ``-tau - c_min``: a unit is
    a set of annotations *every* two of which are a candidate pair, merged in
    order of their worst cost. (The reference cuts at ``-tau - 1 - c_min`` for
    ψ_soft, which forbids every cross-class unit; here cross-class candidates
    can share a unit, as in the other solvers.)
``"mgm"`` (multi-graph matching, Kahl et al. 2025, optional)
    One graph per rater, candidate pairs as assignments with their cost,
    solved jointly and cycle-consistently by ``pylibmgm``'s GREEDA (sequential
    construction, then GM and swap local search); needs the optional package
    ``pylibmgm`` (``pip install pylibmgm``).

All solvers work on the connected components of the candidate graph
independently (no unit spans two components). A component of two
annotations is one unit under every solver; under ``"greedy"`` so is every
component whose annotations come from distinct raters (no merge can be
refused), which leaves the sequential union-find loop only for the few
components with a rater conflict.

Output
------
A unit id per annotation, ``0 .. U - 1`` within each group (sample), numbered
in the order of each unit's first annotation.

Reference
---------
T. Tschirschwitz and V. Rodehorst, "KαLOS finds Consensus: A Meta-Algorithm
for Evaluating Inter-Annotator Agreement in Complex Vision Tasks" (the KαLOS
tool, ``pip install kalos``); the reference implementation is
``kalos.correspondence.correspondence_algorithms``.

This module does not import FiftyOne.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Hashable, Mapping

import numpy as np
from numpy.typing import ArrayLike
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from agreement.core.arrays import unique_sorted
from agreement.geometry.correspondence.costs import (
    COSTS,
    SOLVERS,
    canonical_rank,
    check_cost,
    check_solver,
    check_tau,
    pair_cost,
)
from agreement.geometry.correspondence.solvers import SOLVE, HardProblem

__all__ = [
    "SOLVERS",
    "COSTS",
    "check_tau",
    "check_solver",
    "check_cost",
    "pair_cost",
    "canonical_rank",
    "solve_units",
    "correspond",
]


# --------------------------------------------------------------------------
# The engine: many samples at once, from candidate pairs
# --------------------------------------------------------------------------


def solve_units(
    raters: ArrayLike,
    classes: ArrayLike,
    pairs_i: ArrayLike,
    pairs_j: ArrayLike,
    similarity: ArrayLike,
    *,
    tau: float = 0.5,
    solver: str = "greedy",
    cost: str = "soft",
    group: ArrayLike | None = None,
    keys: ArrayLike | None = None,
) -> np.ndarray:
    """Units of annotations from their candidate pairs, for many samples at once.

    Solves the correspondence problem of every group (sample) in one call
    from the list of annotation pairs and their similarities; pairs with
    ``similarity < tau`` are ignored, so one list computed at the smallest
    ``tau`` serves a whole sweep of thresholds.

    Args:
        raters (array-like of int, shape (n,)): Rater code (``>= 0``) of each annotation.
        classes (array-like of int, shape (n,)): Class code of each annotation (compared for ψ_soft).
        pairs_i (array-like of int, shape (k,)): First annotation index of each pair; both annotations of a
            pair are of one group and of different raters.
        pairs_j (array-like of int, shape (k,)): Second annotation index of each pair.
        similarity (array-like of float, shape (k,)): Similarity of each pair, in ``[0, 1]``.
        tau (float in (0, 1]): Similarity threshold: pairs with ``similarity >= tau`` are candidates.
        solver ({"greedy", "hungarian", "agglomerative", "mgm"}): See the module docstring.
        cost ({"soft", "plain"}): See :func:`pair_cost`.
        group (array-like of int, shape (n,), optional): Group (sample) of each annotation, non-decreasing.
            Default: one group.
        keys (array-like of shape (n,) or (n, k), optional): Content keys of the annotations (e.g. boxes) for
            the canonical order of :func:`canonical_rank` (group, class, keys, rater, position), which
            breaks exact cost ties and orders the annotations given to the
            non-greedy solvers. Without keys, annotations of one class and rater
            are ordered by position, and results may depend on input order.

    Returns:
        unit (ndarray of shape (n,), int64): Unit id of each annotation within its group, ``0 .. U_g - 1``, in the
            order of each unit's first annotation. No unit holds two annotations
            of one rater; an annotation without a candidate is a unit of its own.

    Raises:
        ValueError: For an unknown solver or cost, ``tau`` outside ``(0, 1]``, a pair of
            one rater or of two groups, or similarities outside ``[0, 1]``.
        ImportError: For ``solver="mgm"`` without ``pylibmgm``.

    References:
        T. Tschirschwitz and V. Rodehorst, "KαLOS finds Consensus".
    """
    tau = check_tau(tau)
    check_solver(solver)
    check_cost(cost)
    raters, classes, group, keys, pi, pj, sim = _checked_inputs(
        (raters, classes, group, keys), (pairs_i, pairs_j, similarity))
    n = len(raters)
    keep = sim >= tau
    pi, pj, sim = pi[keep], pj[keep], sim[keep]

    label = np.arange(n, dtype=np.int64)
    if len(pi):
        ncomp, comp = connected_components(
            coo_matrix((np.ones(len(pi), dtype=np.int8), (pi, pj)), shape=(n, n)), directed=False
        )
        comp = comp.astype(np.int64)
        size = np.bincount(comp, minlength=ncomp)
        if solver == "greedy":
            # A component whose raters are all distinct becomes one unit.
            base = int(raters.max()) + 1
            distinct = np.bincount(unique_sorted(comp * base + raters) // base, minlength=ncomp)
            easy = distinct == size
        else:
            easy = size <= 2
        on_easy = (easy & (size >= 2))[comp]
        # Representative of an easy component: its id shifted past the annotation indices.
        label[on_easy] = n + comp[on_easy]
        hard = ~easy[comp[pi]]
        if np.any(hard):
            _solve_hard(_Annotations(raters, classes, group, keys), (pi[hard], pj[hard], sim[hard]), label, comp,
                        tau=tau, solver=solver, cost=cost)
    return _number_units(label, group)


def _checked_inputs(annotations: tuple, pairs: tuple) -> tuple[np.ndarray, ...]:
    """The inputs of :func:`solve_units` (``annotations``: ``(raters, classes, group, keys)``; ``pairs``:
    ``(pairs_i, pairs_j, similarity)``) as arrays, checked: ``(raters, classes, group, keys, pi, pj, sim)``
    (classes as integer codes, ``group`` zeros by default, ``keys`` as ``(n, k)`` floats or None)."""
    raters, classes, group, keys = annotations
    pairs_i, pairs_j, similarity = pairs
    raters = np.asarray(raters, dtype=np.int64).reshape(-1)
    classes = np.asarray(classes).reshape(-1)
    n = len(raters)
    if len(classes) != n:
        raise ValueError(f"classes has {len(classes)} entries for {n} annotations")
    if n and raters.min() < 0:
        raise ValueError("rater codes must be >= 0")
    if not np.issubdtype(classes.dtype, np.integer):
        classes = np.unique(classes, return_inverse=True)[1].reshape(-1)
    group = np.zeros(n, dtype=np.int64) if group is None else np.asarray(group, dtype=np.int64).reshape(-1)
    if len(group) != n:
        raise ValueError(f"group has {len(group)} entries for {n} annotations")
    if n and np.any(np.diff(group) < 0):
        raise ValueError("group must be non-decreasing (annotations sorted by sample)")
    if keys is not None:
        keys = np.asarray(keys, dtype=np.float64)
        keys = keys.reshape(n, -1) if keys.size or n else keys.reshape(0, 1)
        if len(keys) != n:
            raise ValueError(f"keys has {len(keys)} rows for {n} annotations")
    pi = np.asarray(pairs_i, dtype=np.int64).reshape(-1)
    pj = np.asarray(pairs_j, dtype=np.int64).reshape(-1)
    sim = np.asarray(similarity, dtype=np.float64).reshape(-1)
    if not (len(pi) == len(pj) == len(sim)):
        raise ValueError("pairs_i, pairs_j and similarity must have equal lengths")
    if len(pi):
        if pi.min() < 0 or pj.min() < 0 or pi.max() >= n or pj.max() >= n:
            raise ValueError("pair indices out of range")
        if np.any(raters[pi] == raters[pj]):
            raise ValueError("a candidate pair joins two annotations of one rater")
        if np.any(group[pi] != group[pj]):
            raise ValueError("a candidate pair joins annotations of two different samples")
        if not np.all((sim >= 0.0) & (sim <= 1.0)):  # also catches NaN
            raise ValueError("similarities must be in [0, 1] (NaN is not allowed)")
    return raters, classes, group, keys, pi, pj, sim


@dataclass(frozen=True)
class _Annotations:
    """The annotations of :func:`solve_units`, checked: rater and class codes, group, content keys (or None)."""

    raters: np.ndarray
    classes: np.ndarray
    group: np.ndarray
    keys: np.ndarray | None


def _solve_hard(ann: _Annotations, pairs: tuple, label: np.ndarray, comp: np.ndarray, *, tau: float, solver: str,
                cost: str) -> None:
    """Runs ``solver`` on the candidate ``pairs`` ``(pi, pj, sim)`` of the hard components (writing
    ``label``), in the canonical processing order: cost, then higher similarity, then the ranks of the
    two annotations (ranks computed only where ties or a non-greedy solver need them)."""
    raters, classes, group, keys = ann.raters, ann.classes, ann.group, ann.keys
    pi, pj, sim = pairs
    n = len(raters)
    c = pair_cost(sim, classes[pi] == classes[pj], cost=cost)
    rank = np.full(n, -1, dtype=np.int64)
    order = np.lexsort((-sim, c))
    tied = (np.diff(c[order]) == 0) & (np.diff(sim[order]) == 0)
    if solver != "greedy" or np.any(tied):
        # Canonical ranks, computed only where they are needed.
        nodes = unique_sorted(np.r_[pi, pj])
        rank[nodes] = canonical_rank(
            group[nodes], classes[nodes], keys=None if keys is None else keys[nodes], raters=raters[nodes]
        )
        lo = np.minimum(rank[pi], rank[pj])
        hi = np.maximum(rank[pi], rank[pj])
        # Canonical processing order: cost, then higher similarity, then
        # the ranks of the two annotations.
        order = np.lexsort((hi, lo, -sim, c))
    pi, pj, sim, c = pi[order], pj[order], sim[order], c[order]
    SOLVE[solver](HardProblem(raters=raters, classes=classes, rank=rank, label=label, comp=comp, pi=pi, pj=pj,
                                sim=sim, c=c, tau=tau, cost=cost))


def _number_units(label: np.ndarray, group: np.ndarray) -> np.ndarray:
    """Within-group unit ids ``0 ..`` in order of each unit's first annotation."""
    n = len(label)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    _, first, inverse = np.unique(label, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    col = np.empty(len(first), dtype=np.int64)
    col[order] = np.arange(len(first))
    col = col[inverse.reshape(-1)]  # global unit index, increasing with the first row
    starts = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
    base = np.repeat(col[starts], np.diff(np.r_[starts, n]))
    return col - base


# --------------------------------------------------------------------------
# One sample, from a similarity callback or matrices
# --------------------------------------------------------------------------


def correspond(
    raters: ArrayLike,
    classes: ArrayLike,
    similarity: Callable[[np.ndarray, np.ndarray], ArrayLike] | Mapping[tuple[Hashable, Hashable], ArrayLike],
    *,
    tau: float = 0.5,
    solver: str = "greedy",
    cost: str = "soft",
    keys: ArrayLike | None = None,
) -> np.ndarray:
    """Clusters one sample's annotations across raters into units.

    Candidate pairs are the pairs of annotations of different raters with
    similarity ``s >= tau``; the solver groups them into units of at most one
    annotation per rater, minimising the cost ψ (``"soft"``: ``-s - 1`` for
    the same class, ``-s`` otherwise; ``"plain"``: ``-s``). See the module
    docstring for the solvers.

    Args:
        raters (array-like of shape (n,)): The rater (any sortable hashable) of each annotation.
        classes (array-like of shape (n,)): The class (any hashable) of each annotation.
        similarity (callable or mapping): Either ``f(idx_a, idx_b) -> (len(idx_a), len(idx_b))`` similarities in
            ``[0, 1]`` between the annotations ``idx_a`` of one rater and
            ``idx_b`` of another (indices into the inputs), or a mapping
            ``{(rater_a, rater_b): matrix}`` whose matrix compares rater_a's
            annotations (in input order) with rater_b's; each unordered pair of
            raters that both drew something must be present in one orientation.
        tau (float in (0, 1]): Similarity threshold.
        solver ({"greedy", "hungarian", "agglomerative", "mgm"}): The correspondence solver (see the
            module docstring).
        cost ({"soft", "plain"}): The pair cost (see :func:`pair_cost`).
        keys (array-like of shape (n,) or (n, k), optional): Content keys (e.g. boxes) for the canonical tie-break (see
            :func:`solve_units`); with them the greedy units do not depend on
            the order of the inputs.

    Returns:
        unit (ndarray of shape (n,), int64): Unit id of each annotation, ``0 .. U - 1`` in order of first annotation.

    References:
        T. Tschirschwitz and V. Rodehorst, "KαLOS finds Consensus".

    Examples:
        >>> import numpy as np
        >>> s = {("a", "b"): np.array([[0.9, 0.0], [0.0, 0.6]])}
        >>> correspond(["a", "a", "b", "b"], ["cat", "dog", "cat", "cat"], s).tolist()
        [0, 1, 0, 1]
    """
    tau = check_tau(tau)
    check_solver(solver)
    check_cost(cost)
    rater_vals = np.asarray(raters, dtype=object).reshape(-1)
    n = len(rater_vals)
    names = sorted(set(rater_vals.tolist()))
    code = {r: i for i, r in enumerate(names)}
    rcode = np.fromiter((code[r] for r in rater_vals.tolist()), dtype=np.int64, count=n)
    cls_vals = np.asarray(classes, dtype=object).reshape(-1)
    if len(cls_vals) != n:
        raise ValueError(f"classes has {len(cls_vals)} entries for {n} annotations")
    cls_names = {v: i for i, v in enumerate(sorted(set(cls_vals.tolist()), key=lambda v: (type(v).__name__, str(v))))}
    ccode = np.fromiter((cls_names[v] for v in cls_vals.tolist()), dtype=np.int64, count=n)
    idx = [np.flatnonzero(rcode == k) for k in range(len(names))]
    pis: list[np.ndarray] = []
    pjs: list[np.ndarray] = []
    sims: list[np.ndarray] = []
    for a in range(len(names)):
        for b in range(a + 1, len(names)):
            ia, ib = idx[a], idx[b]
            if callable(similarity):
                mat = np.asarray(similarity(ia, ib), dtype=np.float64)
            else:
                ra, rb = names[a], names[b]
                if (ra, rb) in similarity:
                    mat = np.asarray(similarity[(ra, rb)], dtype=np.float64)
                elif (rb, ra) in similarity:
                    mat = np.asarray(similarity[(rb, ra)], dtype=np.float64).T
                else:
                    raise ValueError(f"no similarity matrix for raters {ra!r} and {rb!r}")
            if mat.shape != (len(ia), len(ib)):
                raise ValueError(
                    f"similarity of raters {names[a]!r} and {names[b]!r} has shape {mat.shape}, "
                    f"expected {(len(ia), len(ib))}"
                )
            x, y = np.nonzero(mat >= tau)
            pis.append(ia[x])
            pjs.append(ib[y])
            sims.append(mat[x, y])
            if not np.all((mat >= 0.0) & (mat <= 1.0)):
                raise ValueError(f"similarity of raters {names[a]!r} and {names[b]!r} is outside [0, 1] or NaN")
    def cat(xs: list[np.ndarray], dt: type) -> np.ndarray:
        return np.concatenate(xs).astype(dt) if xs else np.zeros(0, dt)

    return solve_units(
        rcode, ccode, cat(pis, np.int64), cat(pjs, np.int64), cat(sims, np.float64),
        tau=tau, solver=solver, cost=cost, keys=keys,
    )
