"""Per-label conflicts between two raters, typed the way CVAT's quality report types them (no FiftyOne).

A conflict is one disagreement between two raters on one sample, with the
rater pair oriented as CVAT orients ground truth and annotation: ``rater_a``
is the reference (the rater that comes first in the run's rater order, or the
consensus), ``rater_b`` the rater compared with it.

==================  ==============================  =========================================
type                CVAT's name                     when
==================  ==============================  =========================================
``missing``         missing annotation              ``rater_a`` drew a label that ``rater_b``
                                                    has no counterpart for
``extra``           extra annotation                ``rater_b`` drew a label that ``rater_a``
                                                    has no counterpart for
``label differs``   mismatching label               the two labels are counterparts (same
                                                    object) with different classes
``low overlap``     low overlap                     counterparts of one class whose IoU is
                                                    below ``low_overlap_iou``, or, for an OT
                                                    run, a label whose nearest counterpart
                                                    was too far to be matched (``too far``)
==================  ==============================  =========================================

The rule (:func:`conflict_type`) reads only what a run stores per label: its
counterpart (an OT match or nearest counterpart, a KαLOS unit, a consensus
label's members), the run's reason for an unmatched label (``"no
counterpart"``, ``"counterpart taken"``, ``"label differs"``, ``"too far"``,
see :mod:`agreement.methods.ot.sample_scores`) and the two classes; the IoU of
two boxes is :func:`agreement.geometry.boxes.pairwise_iou`.

Reference: CVAT, "Quality control: annotation conflicts"
(https://docs.cvat.ai/docs/qa-analytics/auto-qa/).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import combinations
from typing import Iterable, Sequence

import numpy as np

from agreement.geometry.boxes import pairwise_iou

__all__ = ["CONFLICT_TYPES", "CVAT_NAMES", "LOW_OVERLAP_IOU", "Label", "Conflict", "conflict_type", "label_iou",
           "ot_conflicts", "group_conflicts"]

CONFLICT_TYPES = ("missing", "extra", "label differs", "low overlap")
#: CVAT's name of each conflict type.
CVAT_NAMES = {"missing": "missing annotation", "extra": "extra annotation", "label differs": "mismatching label",
              "low overlap": "low overlap"}
#: Counterparts of one class overlapping less than this (IoU) are a ``low overlap`` conflict.
LOW_OVERLAP_IOU = 0.5

_TWO_SIDED_REASONS = ("label differs", "too far")


@dataclass(frozen=True)
class Label:
    """One rater's label as a run stored it.

    Attributes:
        id: the label's id.
        rater: its rater.
        label: its class (``None`` for a label without one).
        box: ``[x, y, w, h]`` in relative coordinates, or ``None`` (no IoU then).
        reason: an OT run's reason for an unmatched label (``None``: matched or not an OT run).
        match: the id of the label it was matched to (OT), or ``None``.
        nearest: the id of its nearest counterpart when unmatched (OT), or ``None``.
    """

    id: str
    rater: str
    label: str | None
    box: tuple[float, float, float, float] | None = None
    reason: str | None = None
    match: str | None = None
    nearest: str | None = None


@dataclass(frozen=True)
class Conflict:
    """One typed disagreement: ``label_a`` of ``rater_a`` against ``label_b`` of ``rater_b`` (one of the two is
    ``None`` for ``missing`` / ``extra``); ``iou`` of the two boxes (``None`` when one side is missing or a label
    has no box); ``reason`` what the run stored (``""`` if nothing)."""

    type: str
    rater_a: str
    rater_b: str
    label_a: Label | None
    label_b: Label | None
    iou: float | None
    reason: str = ""


def conflict_type(class_a: str | None, class_b: str | None, *, present_a: bool = True, present_b: bool = True,
                  iou: float | None = None, reason: str | None = None,
                  low_overlap_iou: float = LOW_OVERLAP_IOU) -> str | None:
    """The CVAT type of the disagreement between ``rater_a``'s label and ``rater_b``'s counterpart.

    Rule, first that applies: only ``rater_a`` has a label: ``"missing"``; only ``rater_b``: ``"extra"``;
    the run found them too far apart to match (``reason == "too far"``): ``"low overlap"``; classes differ
    (or ``reason == "label differs"``): ``"label differs"``; ``iou < low_overlap_iou``: ``"low overlap"``;
    otherwise ``None`` (they agree).

    Raises:
        ValueError: neither side has a label, or ``low_overlap_iou`` outside [0, 1].
    """
    if not (0.0 <= low_overlap_iou <= 1.0):
        raise ValueError(f"low_overlap_iou must be in [0, 1], got {low_overlap_iou!r}")
    if not (present_a or present_b):
        raise ValueError("a conflict needs a label on at least one side: both rater_a and rater_b have none")
    if not present_b:
        return "missing"
    if not present_a:
        return "extra"
    if reason == "too far":
        return "low overlap"
    if class_a != class_b or reason == "label differs":
        return "label differs"
    if iou is not None and math.isfinite(iou) and iou < low_overlap_iou:
        return "low overlap"
    return None


def label_iou(a: Label | None, b: Label | None) -> float | None:
    """IoU of the boxes of two labels (:func:`agreement.geometry.boxes.pairwise_iou`), ``None`` when either has
    no box. Range [0, 1]."""
    if a is None or b is None or a.box is None or b.box is None:
        return None
    return float(pairwise_iou(np.asarray([a.box], float), np.asarray([b.box], float))[0, 0])


def _rank(order: Sequence[str]) -> dict[str, int]:
    return {r: i for i, r in enumerate(order)}


def _one_sided(label: Label, other: str, rank: dict[str, int], reason: str) -> Conflict:
    """``label`` with no counterpart from rater ``other``: ``missing`` if its rater is the reference of the pair
    (first in the rater order), else ``extra``."""
    if rank.get(label.rater, len(rank)) <= rank.get(other, len(rank)):
        return Conflict(type="missing", rater_a=label.rater, rater_b=other, label_a=label, label_b=None, iou=None,
                        reason=reason)
    return Conflict(type="extra", rater_a=other, rater_b=label.rater, label_a=None, label_b=label, iou=None,
                    reason=reason)


def _two_sided(x: Label, y: Label, rank: dict[str, int], reason: str | None, low_overlap_iou: float) -> Conflict | None:
    a, b = (x, y) if rank.get(x.rater, len(rank)) <= rank.get(y.rater, len(rank)) else (y, x)
    iou = label_iou(a, b)
    kind = conflict_type(a.label, b.label, iou=iou, reason=reason, low_overlap_iou=low_overlap_iou)
    return None if kind is None else Conflict(type=kind, rater_a=a.rater, rater_b=b.rater, label_a=a, label_b=b,
                                              iou=iou, reason=reason or "")


def ot_conflicts(labels: Sequence[Label], raters: Sequence[str], *, order: Sequence[str] | None = None,
                 low_overlap_iou: float = LOW_OVERLAP_IOU) -> list[Conflict]:
    """The conflicts of one sample of an OT run, from what the run stored per label.

    A matched label (``match`` set) and its match: :func:`conflict_type` of the two (``label differs``, or
    ``low overlap`` below ``low_overlap_iou``). An unmatched label (``reason`` set): ``"label differs"`` and
    ``"too far"`` against its nearest counterpart (``label differs``, ``low overlap``); ``"counterpart taken"``:
    ``missing`` / ``extra`` against the nearest counterpart's rater, as is an unmatched label whose nearest
    counterpart does not overlap it at all (box IoU 0: not the same object); ``"no counterpart"`` (or no nearest
    label): ``missing`` / ``extra`` against every other rater in ``raters`` (the sample's assigned raters).
    A pair of labels gives one conflict, whichever of them stored it (a label another label matched counts
    as matched). With more than two raters a label stores one counterpart (its cheapest match over its rater
    pairs), so a conflict with a third rater on a matched label is not seen.

    Args:
        labels: every label of the sample.
        raters: the raters assigned to the sample.
        order: the run's rater order, which orients each pair (default ``raters``).
        low_overlap_iou: see :func:`conflict_type`.
    """
    rank = _rank(order if order is not None else raters)
    by_id = {lab.id: lab for lab in labels}
    out: list[Conflict] = []
    seen: set[frozenset] = set()
    matched_by = {lab.match: lab.id for lab in labels if lab.match is not None}
    for lab in labels:
        partner = by_id.get(lab.match) if lab.match is not None else None
        if partner is None and lab.reason is None and lab.id in matched_by:  # its match stored the pair
            partner = by_id.get(matched_by[lab.id])
        reason = None if partner is not None else (lab.reason or "no counterpart")
        if partner is None and reason in _TWO_SIDED_REASONS:
            partner = by_id.get(lab.nearest) if lab.nearest is not None else None
        if partner is not None and reason in _TWO_SIDED_REASONS and label_iou(lab, partner) == 0.0:
            # no overlap at all: not the same object, whatever the run's reason
            out.append(_one_sided(lab, partner.rater, rank, f"nearest counterpart does not overlap (run: {reason})"))
            continue
        if partner is not None and (reason is None or reason in _TWO_SIDED_REASONS):
            pair = frozenset((lab.id, partner.id))
            if pair not in seen:
                seen.add(pair)
                c = _two_sided(lab, partner, rank, reason, low_overlap_iou)
                if c is not None:
                    out.append(c)
            continue
        nearest = by_id.get(lab.nearest) if lab.nearest is not None else None
        others = ([nearest.rater] if reason == "counterpart taken" and nearest is not None
                  else [r for r in raters if r != lab.rater])
        out.extend(_one_sided(lab, o, rank, reason or "no counterpart") for o in others)
    return out


def group_conflicts(groups: Iterable[Sequence[Label]], raters: Sequence[str], *, reference: str | None = None,
                    low_overlap_iou: float = LOW_OVERLAP_IOU) -> list[Conflict]:
    """The conflicts of one sample whose labels a run grouped into objects (KαLOS units; a consensus label and
    the rater labels fused into it).

    For every group and every rater pair (``reference`` against each rater when given, as CVAT compares an
    annotation with its ground truth; otherwise every pair of ``raters`` in their order): a label of
    ``rater_a`` with no label of ``rater_b`` in its group is ``missing``, the reverse ``extra``, and two labels
    of one group are typed by :func:`conflict_type`. With several labels of one rater in a group, they are
    paired in order and the rest are ``missing`` / ``extra``.

    Args:
        groups: the groups (each a list of labels of possibly several raters).
        raters: the raters assigned to the sample, in the run's order.
        reference: the rater every other is compared with (e.g. ``"consensus"``), or ``None``.
        low_overlap_iou: see :func:`conflict_type`.
    """
    raters = list(raters)
    if reference is not None:
        pairs = [(reference, r) for r in raters if r != reference]
    else:
        pairs = list(combinations(raters, 2))
    out: list[Conflict] = []
    for group in groups:
        for a, b in pairs:
            la = [x for x in group if x.rater == a]
            lb = [y for y in group if y.rater == b]
            if not (la or lb):
                continue
            for x, y in zip(la, lb, strict=False):  # pairs in order; the rest are missing or extra
                iou = label_iou(x, y)
                kind = conflict_type(x.label, y.label, iou=iou, low_overlap_iou=low_overlap_iou)
                if kind is not None:
                    out.append(Conflict(kind, a, b, x, y, iou))
            out.extend(Conflict(type="missing", rater_a=a, rater_b=b, label_a=x, label_b=None, iou=None,
                                reason="no counterpart") for x in la[len(lb):])
            out.extend(Conflict(type="extra", rater_a=a, rater_b=b, label_a=None, label_b=y, iou=None,
                                reason="no counterpart") for y in lb[len(la):])
    return out
