"""Quorum vote over units, as CVAT's consensus merge does.

Per unit (the annotations a correspondence solver judged to be one object,
:mod:`agreement.methods.consensus.units`):

* **support** ``m_u / K_u``: the share of the raters assigned to the sample
  who drew the object; the unit becomes a consensus label when the support
  reaches ``quorum`` (CVAT: "minimum required share of sources having an
  annotation for it to be accepted"). The support is the label's
  ``confidence``;
* **class**: the plurality of the members' classes (ties: the first class in
  sorted order); its vote share is the class probability;
* **geometry**: the member closest to the unweighted mean shape (largest IoU
  with the mean box; for 3D cuboids, smallest distance to the mean
  location), kept as drawn, masks, polygons, keypoints and a declared column included.

No rater is weighted: every member counts once, which is what the EM of
:mod:`agreement.methods.consensus.em` improves on.

Reference: CVAT consensus merging (``quorum``, ``iou_threshold``;
https://docs.cvat.ai), after Datumaro's ``IntersectMerge``.

This module does not import FiftyOne.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from agreement.core.data import MultiRaterAnnotations
from agreement.methods.consensus.fusion import box_iou_paired
from agreement.methods.consensus.units import UnitTable, geometry_fusion

__all__ = ["MajorityFit", "unit_majority_vote"]


@dataclass(frozen=True)
class MajorityFit:
    """Per unit: ``support`` (share of assigned raters), plurality class and its share,
    the runner-up (``-1``, 0 if none) and the chosen member row ``chosen``."""

    support: np.ndarray
    top_class: np.ndarray
    top_probability: np.ndarray
    second_class: np.ndarray
    second_probability: np.ndarray
    chosen: np.ndarray


def _plurality(units: UnitTable, mc: np.ndarray, C: int) -> tuple[np.ndarray, ...]:
    """Plurality class and runner-up of every unit (ties: smaller class code first)."""
    U, mu, size = units.n_units, units.member_unit, units.size
    key, cnt = np.unique(mu * C + mc, return_counts=True)
    ku, kc = key // C, key % C
    order = np.lexsort((kc, -cnt, ku))  # per unit: most votes first, then smaller code
    ku, kc, cnt = ku[order], kc[order], cnt[order]
    first = np.searchsorted(ku, np.arange(U))
    top, top_p = kc[first], cnt[first] / size
    has2 = (first + 1 < len(ku)) & (np.r_[ku, -1][np.minimum(first + 1, len(ku))] == np.arange(U))
    nxt = np.minimum(first + 1, len(ku) - 1)
    second = np.where(has2, kc[nxt], -1)
    second_p = np.where(has2, cnt[nxt] / size, 0.0)
    return top, top_p, second, second_p


def _location_score(data: MultiRaterAnnotations, units: UnitTable) -> np.ndarray:
    """3D cuboids: minus the distance of each member's location to its unit's mean location (unit order)."""
    U, mu, order = units.n_units, units.member_unit, units.order
    assert data.cuboids is not None  # a cuboid corpus has them
    loc = data.cuboids[order, :3]
    mean = np.stack([np.bincount(mu, loc[:, k], U) for k in range(3)], axis=1) / units.size[:, None]
    score: np.ndarray = -np.linalg.norm(loc - mean[mu], axis=1)
    return score


def _box_score(data: MultiRaterAnnotations, units: UnitTable) -> np.ndarray:
    """The IoU of each member's box with its unit's mean box (unit order)."""
    U, mu = units.n_units, units.member_unit
    b = data.boxes[units.order]
    mean = np.stack([np.bincount(mu, b[:, k], U) for k in range(4)], axis=1) / units.size[:, None]
    return box_iou_paired(b, mean[mu])


#: Built-in fusion (:func:`agreement.methods.consensus.units.geometry_fusion`) -> how close each member is to its
#: unit's mean shape (larger: closer); the rest by the IoU of their boxes with the mean box.
_CLOSENESS: dict[str, Callable[[MultiRaterAnnotations, UnitTable], np.ndarray]] = {"cuboids": _location_score}


def _closest_to_mean(data: MultiRaterAnnotations, kind: str, units: UnitTable) -> np.ndarray:
    """The member row nearest the unit's unweighted mean shape (by the closeness of ``kind``'s fusion)."""
    score = _CLOSENESS.get(geometry_fusion(kind), _box_score)(data, units)
    # First best member of each unit: sort by (unit, -score, position).
    pick = np.lexsort((np.arange(len(units.order)), -score, units.member_unit))
    closest: np.ndarray = units.order[pick[units.starts[:-1]]]
    return closest


def unit_majority_vote(data: MultiRaterAnnotations, kind: str, units: UnitTable, codes: np.ndarray,
                       n_classes: int) -> MajorityFit:
    """Support, plurality class and closest-to-mean member of every unit (module docstring).

    Support ``m_u / K_u`` in ``[0, 1]`` (members over the raters assigned to the unit's sample), the plurality
    class of the members and its vote share in ``(0, 1]``, the runner-up and its share, and the member
    nearest the unweighted mean shape (CVAT's consensus merge).

    Args:
        data: the annotations.
        kind: the geometry; by its declared fusion (:func:`agreement.methods.consensus.units.geometry_fusion`):
            3D cuboids the member nearest the mean location, the others the largest IoU with the mean box.
        units: the units (:mod:`agreement.methods.consensus.units`).
        codes: ``(N,)`` class code of every annotation row.
        n_classes: the number of classes ``C`` (codes ``< C``).

    Returns:
        The :class:`MajorityFit` of every unit.
    """
    k_assigned = data.assigned.sum(axis=1)[units.unit_sample]
    support = units.size / np.maximum(k_assigned, 1)
    top, top_p, second, second_p = _plurality(units, codes[units.order], n_classes)
    return MajorityFit(support, top, top_p, second, second_p, _closest_to_mean(data, kind, units))
