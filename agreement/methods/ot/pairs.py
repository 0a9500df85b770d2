"""OT cost of one set pair (:mod:`agreement.methods.ot`): the parameters, the pair cost matrix
``c_ij = lam (1 - GIoU_ij) / 2 + (1 - lam) [label_i != label_j]``, and the exact minimal matching
of two labelled box sets (or of any cost matrix) under either normalisation.

This module does not import FiftyOne.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
from scipy.optimize import linear_sum_assignment

from agreement.geometry.boxes import pairwise_giou

NORMALIZATIONS = ("paper", "oc_cost")


def check_ot_params(lam: float, beta: float, *, normalization: str = "paper") -> None:
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


def check_ot_boxes(boxes: Any, name: str) -> np.ndarray:
    """The boxes of one rater as an ``(n, 4)`` float64 array of relative ``[x, y, w, h]``.

    Args:
        boxes: array-like of boxes (empty: no box).
        name: what the error messages call them (e.g. ``"boxes_a"``).

    Returns:
        The ``(n, 4)`` array (``(0, 4)`` when empty).

    Raises:
        ValueError: for another shape, a NaN or infinite coordinate, or a negative width or height.
    """
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


def _labels(labels: Sequence[Any] | np.ndarray | None, n: int, name: str) -> np.ndarray:
    arr = np.empty(n, dtype=object)
    vals = list(labels) if labels is not None else [None] * n
    if len(vals) != n:
        raise ValueError(f"{name} has {len(vals)} entries for {n} boxes")
    arr[:] = vals
    return arr


def _mismatch(labels_a: np.ndarray, labels_b: np.ndarray) -> np.ndarray:
    """``(n, m)`` bool, ``label_a[i] != label_b[j]`` (codes or hashable objects)."""
    if labels_a.dtype != object and labels_b.dtype != object:
        differ: np.ndarray = labels_a[:, None] != labels_b[None, :]
        return differ
    index: dict[Any, int] = {}
    ca = np.fromiter((index.setdefault(v, len(index)) for v in labels_a), np.int64, len(labels_a))
    cb = np.fromiter((index.setdefault(v, len(index)) for v in labels_b), np.int64, len(labels_b))
    differ_codes: np.ndarray = ca[:, None] != cb[None, :]
    return differ_codes


def pair_cost_matrix(
    boxes_a: np.ndarray,
    labels_a: Sequence | np.ndarray | None,
    boxes_b: np.ndarray,
    labels_b: Sequence | np.ndarray | None,
    *,
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
    a = check_ot_boxes(boxes_a, "boxes_a")
    b = check_ot_boxes(boxes_b, "boxes_b")
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


def ot_from_cost_matrix(c: np.ndarray, *, beta: float = 0.5, normalization: str = "paper") -> OTMatching:
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
    check_ot_params(0.5, beta, normalization=normalization)
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


def ot_cost_from_matrix(c: np.ndarray, *, beta: float = 0.5, normalization: str = "paper") -> float:
    """The normalised OT cost of :func:`ot_from_cost_matrix` only (no matching arrays)."""
    check_ot_params(0.5, beta, normalization=normalization)
    return _solve(_check_cost_matrix(c), float(beta), normalization)[1]


def _check_cost_matrix(cost: Any) -> np.ndarray:
    c = np.asarray(cost, dtype=np.float64)
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
    *,
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
        boxes_a: ``(n, 4)`` relative ``[x, y, w, h]`` boxes of rater A.
        labels_a: class labels (hashable), one per box of ``boxes_a``.
        boxes_b: ``(m, 4)`` relative ``[x, y, w, h]`` boxes of rater B.
        labels_b: class labels (hashable), one per box of ``boxes_b``.
        lam: localisation weight in ``[0, 1]`` (default 0.5).
        beta: dummy cost in ``(0, 1]`` (default 0.5).
        normalization: ``"paper"`` or ``"oc_cost"``.

    Returns:
        :class:`OTMatching` (which box matched which, what each box paid).

    Reference: Prokhorov & Kalinin, "Quantifying Annotation Agreement in Object
    Detection with Optimal Transport"; Otani et al., CVPR 2022 (OC-cost).
    """
    check_ot_params(lam, beta, normalization=normalization)
    c = pair_cost_matrix(boxes_a, labels_a, boxes_b, labels_b, lam=lam)
    return ot_from_cost_matrix(c, beta=beta, normalization=normalization)


def ot_score(
    boxes_a: np.ndarray,
    labels_a: Sequence | np.ndarray | None,
    boxes_b: np.ndarray,
    labels_b: Sequence | np.ndarray | None,
    *,
    lam: float = 0.5,
    beta: float = 0.5,
    normalization: str = "paper",
) -> float:
    """OT score ``1 - cost`` of :func:`ot_match`: in ``[1 - beta, 1]`` (``"paper"``),
    1 for identical sets and for two empty sets."""
    check_ot_params(lam, beta, normalization=normalization)
    c = pair_cost_matrix(boxes_a, labels_a, boxes_b, labels_b, lam=lam)
    return 1.0 - _solve(c, float(beta), normalization)[1]
