"""The priority of one more label per item, as every relabel rule returns it, and the ranking it implies.

A rule (:mod:`agreement.methods.planning.relabel` for classes, :mod:`agreement.methods.planning.relabel_boxes`
for instance labels) scores every item by the expected value of one more rater's label; this module holds the
result type and the one ranking all rules share: highest priority first, then fewer ratings first (coverage
before quality), then the item's position (deterministic).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


def simple_priority(rule: str, n_ratings: np.ndarray, agreement: np.ndarray | None, *, seed: int = 0,
                    unit: str = "item") -> tuple[np.ndarray, str]:
    """The priority of one of the simple rules every relabel rule is compared with, and its note.

    * ``"fewest_raters"``: ``1 / (1 + n)``, fewest ratings first;
    * ``"random"``: uniform random numbers (``seed``);
    * ``"lowest_agreement"``: ``max(a) − a`` over the items whose agreement ``a`` is known, and ``max(a) −
      min(a) + 1`` (first of all) for those with fewer than two ratings (NaN agreement).

    Args:
        rule: ``"fewest_raters"``, ``"random"`` or ``"lowest_agreement"``.
        n_ratings: ``(S,)`` ratings per item.
        agreement: ``(S,)`` per-item agreement, NaN below two ratings (``"lowest_agreement"`` only).
        seed: the seed of ``"random"``.
        unit: what an item is called in the note (``"item"``, ``"sample"``).

    Returns:
        ``(priority, note)``: ``(S,)`` finite priorities ``>= 0`` and one sentence.

    Raises:
        ValueError: ``"lowest_agreement"`` without an agreement of the items' shape, or an infinite one.
    """
    n = np.asarray(n_ratings)
    if rule == "fewest_raters":
        return 1.0 / (1.0 + n), "priority = 1 / (1 + ratings): fewest ratings first"
    if rule == "random":
        return np.random.default_rng(seed).random(n.size), f"priority: uniform random numbers (seed {seed})"
    if agreement is None:
        raise ValueError(f"rule 'lowest_agreement' needs agreement: the per-{unit} agreement (NaN for fewer than "
                         "two ratings)")
    a = np.asarray(agreement, dtype=np.float64)
    if a.shape != n.shape:
        raise ValueError(f"agreement must have one value per {unit} ({n.size}), got shape {a.shape}")
    if np.isinf(a).any():
        raise ValueError(f"agreement must be finite or NaN; {unit} {int(np.flatnonzero(np.isinf(a))[0])} is infinite")
    known = np.isfinite(a)
    if not known.any():
        return np.ones(n.size), f"no {unit} has two ratings: every agreement unknown, all tie"
    hi, lo = a[known].max(), a[known].min()
    return (np.where(known, hi - np.nan_to_num(a), hi - lo + 1.0),
            f"priority = max agreement − agreement; {int((~known).sum())} {unit}(s) with fewer than two ratings first")


def rank_items(priority: np.ndarray, n_ratings: np.ndarray) -> np.ndarray:
    """Item indices by descending ``priority``, ties broken by fewer ``n_ratings`` then by position.

    Args:
        priority: ``(S,)`` finite priorities.
        n_ratings: ``(S,)`` ratings each item has.

    Returns:
        ``(S,)`` int64 permutation of ``0 .. S - 1``.

    Raises:
        ValueError: shapes differ or a priority is not finite.
    """
    p = np.asarray(priority, dtype=np.float64)
    n = np.asarray(n_ratings, dtype=np.int64)
    if p.shape != n.shape or p.ndim != 1:
        raise ValueError(f"priority {p.shape} and n_ratings {n.shape} must be the same 1-D shape")
    if not np.isfinite(p).all():
        raise ValueError("every priority must be finite (a rule returns 0, never NaN, for an item it cannot help)")
    return np.lexsort((np.arange(p.size), n, -p)).astype(np.int64)


@dataclass(frozen=True)
class RelabelPriority:
    """The expected value of one more label for every item.

    Attributes:
        rule: the rule's name (e.g. ``"expected_error_reduction"``).
        priority: ``(S,)`` the expected value of one more label (the rule's units, documented by the rule), ``>= 0``.
        error_now: ``(S,)`` the rule's expected number of wrong consensus decisions on the item now, ``>= 0``
            (classes: the probability that the item's one consensus class is wrong, in ``[0, 1]``; instance
            labels: an expected count of spurious, missed and misclassified objects, which can exceed 1).
        error_after: ``(S,)`` the expected value of that number after one more label, ``>= 0``.
        n_ratings: ``(S,)`` ratings each item has now.
        order: ``(S,)`` item indices, highest priority first (:func:`rank_items`).
        notes: what the rule assumed (the typical rater it used, repairs), one sentence each.
    """

    rule: str
    priority: np.ndarray
    error_now: np.ndarray
    error_after: np.ndarray
    n_ratings: np.ndarray
    order: np.ndarray
    notes: tuple[str, ...] = field(default=())

    def top(self, n: int) -> np.ndarray:
        """The ``n`` items to label next (indices, highest priority first); ``n`` larger than the items: refused."""
        if n < 0 or n > self.order.size:
            raise ValueError(f"a budget of {n} items is outside 0 .. {self.order.size} (the items there are)")
        return self.order[:n]
