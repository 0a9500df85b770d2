"""The parameters of the correspondence problem (:mod:`agreement.geometry.correspondence`): the solvers, the
cost functions and the threshold τ with their checks; the pair cost (ψ_soft ``-s - 1`` for the same
class and ``-s`` otherwise, or plain ``-s``) and the canonical order of annotations that breaks ties.

Reference: T. Tschirschwitz and V. Rodehorst, "KαLOS finds Consensus".

This module does not import FiftyOne.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

#: Correspondence solvers, the default first.
SOLVERS: tuple[str, ...] = ("greedy", "hungarian", "agglomerative", "mgm")
#: Cost functions, the default first.
COSTS: tuple[str, ...] = ("soft", "plain")

C_MIN = {"soft": -2.0, "plain": -1.0}


# --------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------


def check_tau(tau: float) -> float:
    """``tau`` as a float in ``(0, 1]``; ``ValueError`` otherwise.

    The similarity threshold of KαLOS (Tschirschwitz & Rodehorst): a pair of
    annotations of different raters with similarity ``s >= tau`` is a
    candidate. ``tau = 0`` would make every pair a candidate (and zero-cost
    pairs indistinguishable from non-candidates); ``tau > 1`` none. NaN,
    booleans and strings are rejected.
    """
    if isinstance(tau, (bool, np.bool_)) or not isinstance(tau, (int, float, np.integer, np.floating)):
        raise ValueError(f"tau must be a number in (0, 1], got {tau!r}")
    t = float(tau)
    if not (0.0 < t <= 1.0):  # also rejects NaN
        raise ValueError(f"tau must be in (0, 1] (a similarity threshold), got {tau!r}")
    return t


def check_solver(solver: str) -> str:
    """``solver`` if it is one of :data:`SOLVERS`; ``ValueError`` naming the options otherwise.

    The solvers of KαLOS (Tschirschwitz & Rodehorst): ``"greedy"``,
    ``"hungarian"``, ``"agglomerative"``, ``"mgm"`` (see the module docstring).
    """
    if solver not in SOLVERS:
        raise ValueError(f"unknown solver {solver!r}; choose one of {', '.join(map(repr, SOLVERS))}")
    return solver


def check_cost(cost: str) -> str:
    """``cost`` if it is one of :data:`COSTS`; ``ValueError`` naming the options otherwise.

    ``"soft"`` is ψ_soft (``-s - 1`` same class, ``-s`` otherwise), ``"plain"``
    is ``-s`` (Tschirschwitz & Rodehorst; see :func:`pair_cost`).
    """
    if cost not in COSTS:
        raise ValueError(
            f"unknown cost {cost!r}; choose one of {', '.join(map(repr, COSTS))} "
            "('soft' is psi_soft: -s - 1 for the same class, -s otherwise; 'plain' is -s)"
        )
    return cost


# --------------------------------------------------------------------------
# Costs and canonical order
# --------------------------------------------------------------------------


def pair_cost(similarity: ArrayLike, same_class: ArrayLike, *, cost: str = "soft") -> np.ndarray:
    r"""The cost of candidate pairs.

    .. math::

        \psi_\mathrm{soft}(a, b) = \begin{cases} -s(a, b) - 1 & \text{same class} \\
                                              -s(a, b) & \text{otherwise} \end{cases}
        \qquad \psi_\mathrm{plain}(a, b) = -s(a, b)

    Args:
        similarity (array-like of shape (k,)): Similarities ``s`` in ``[0, 1]`` of the pairs.
        same_class (array-like of bool, shape (k,)): Whether the two annotations of each pair have the same
            class (ignored for ``"plain"``).
        cost ({"soft", "plain"}): The cost function.

    Returns:
        cost (ndarray of shape (k,), float64): In ``[-2, 0]`` for ``"soft"`` and ``[-1, 0]`` for ``"plain"``; lower is
            better. ``-s - 1`` is computed as ``(-s) - 1.0``, bit for bit as the
            reference does.

    References:
        T. Tschirschwitz and V. Rodehorst, "KαLOS finds Consensus" (ψ_soft is the
        reference's ``category_lenient`` cost, ψ_plain its ``negative_score``).
    """
    check_cost(cost)
    s = np.asarray(similarity, dtype=np.float64)
    neg = -s
    if cost == "plain":
        return neg
    return np.where(np.asarray(same_class, dtype=bool), neg - 1.0, neg)


def canonical_rank(
    group: ArrayLike, classes: ArrayLike, *, keys: ArrayLike | None = None, raters: ArrayLike | None = None
) -> np.ndarray:
    """A rank of every annotation that does not depend on the input order.

    Annotations are ordered by group (sample), then class code, then the
    columns of ``keys`` (e.g. the box ``x, y, w, h``) from first to last,
    then rater code, then input position (which only decides between exact
    duplicates, whose order does not change any unit's content).

    Args:
        group (array-like of int, shape (n,)): Sample of each annotation.
        classes (array-like of int, shape (n,)): Class code of each annotation.
        keys (array-like of shape (n,) or (n, k), optional): Further content keys (float), e.g. boxes.
        raters (array-like of int, shape (n,), optional): Rater code of each annotation.

    Returns:
        rank (ndarray of shape (n,), int64): A permutation of ``0 .. n - 1``; equal content (group, class, keys,
            rater) gets the same relative order whatever the input order, except
            among exact duplicates.

    Notes:
        Used by :func:`solve_units` to break exact ties of the greedy order
        (the reference, ``kalos``, breaks them by input order) and to order the
        annotations handed to the other solvers.
    """
    group = np.asarray(group).reshape(-1)
    n = len(group)
    cols: list[np.ndarray] = [np.arange(n)]
    if raters is not None:
        cols.append(np.asarray(raters).reshape(-1))
    if keys is not None:
        k = np.asarray(keys, dtype=np.float64)
        k = k.reshape(n, -1) if k.size or n else k.reshape(0, 1)
        cols.extend(k[:, c] for c in range(k.shape[1] - 1, -1, -1))
    cols.append(np.asarray(classes).reshape(-1))
    cols.append(group)
    order = np.lexsort(cols)
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n)
    return rank
