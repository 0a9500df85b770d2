"""Input validation for boxes: clear errors, or documented repairs that are reported.

Rules (relative ``[x, y, w, h]`` boxes, FiftyOne's convention):

* NaN or infinite coordinates: always an error.
* Negative width or height: always an error.
* A box that extends past the image border by more than ``tolerance``
  (``box_policy``, the same in every operator):

  - ``"clip"`` (default): clipped to ``[0, 1]``. A box lying entirely outside
    the image becomes the zero-area box on the border nearest to it, which
    still counts as that rater's annotation (so the rater's disagreement is
    kept: it matches nothing). Both repairs are counted per rater.
  - ``"drop"``: the box is removed from the computation (the label in the
    dataset is untouched and gets no per-label result); counted per rater.
    A rater whose only boxes on a sample are dropped keeps an empty set there
    (explicit absence).
  - ``"error"``: refused, naming the sample, the field, the rater and the box.
* Zero-area boxes (``w == 0`` or ``h == 0``) are valid; geometry defines their
  IoU and GIoU.
* Instance masks: FiftyOne stretches a mask over its box, so a mask whose
  shape differs from the box's pixel extent is resized to it (nearest
  neighbour) when placed; the bridge counts these as ``resized_masks``. A mask
  that is not two-dimensional is an error.

Every error names the sample, the field (or rater) and the annotation.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["AnnotationError", "RepairReport", "check_boxes", "validate_boxes", "BOX_POLICIES"]

BOX_POLICIES = ("clip", "drop", "error")


class AnnotationError(ValueError):
    """Bad input that cannot be repaired; the message names sample and field."""


REPAIR_KINDS = ("clipped_boxes", "outside_boxes", "dropped_boxes")


@dataclass
class RepairReport:
    """What was repaired, to be shown to the user with the results.

    Attributes:
        clipped_boxes: boxes partly past the border, clipped (``"clip"``).
        outside_boxes: boxes entirely outside the image, turned into a
            zero-area box on the border (``"clip"``).
        dropped_boxes: boxes past the border removed (``"drop"``).
        resized_masks: instance masks stretched to their box.
        per_rater: ``{rater: {kind: count}}`` for the box repairs.
        examples: a few located messages.
    """

    clipped_boxes: int = 0
    examples: list[str] = field(default_factory=list)
    max_examples: int = 5
    resized_masks: int = 0
    outside_boxes: int = 0
    dropped_boxes: int = 0
    per_rater: dict[str, dict[str, int]] = field(default_factory=dict)

    def add(self, message: str, count: int = 1) -> None:
        self.clipped_boxes += count
        self.example(message)

    def example(self, message: str) -> None:
        """Keeps ``message`` as an example (the first few only)."""
        if len(self.examples) < self.max_examples:
            self.examples.append(message)

    def count(self, kind: str, raters: np.ndarray | list | None) -> None:
        """Adds one repair of ``kind`` per entry of ``raters`` (``None``: unknown rater)."""
        if kind not in REPAIR_KINDS:
            raise ValueError(f"unknown repair kind {kind!r}")
        raters = [] if raters is None else list(raters)
        setattr(self, kind, getattr(self, kind) + len(raters))
        for r in raters:
            per = self.per_rater.setdefault(str(r), dict.fromkeys(REPAIR_KINDS, 0))
            per[kind] += 1

    def merge(self, other: "RepairReport") -> None:
        """Adds ``other``'s repairs to these (the shards of one run)."""
        for kind in (*REPAIR_KINDS, "resized_masks"):
            setattr(self, kind, getattr(self, kind) + getattr(other, kind))
        for r, per in other.per_rater.items():
            mine = self.per_rater.setdefault(r, dict.fromkeys(REPAIR_KINDS, 0))
            for kind, n in per.items():
                mine[kind] = mine.get(kind, 0) + n
        for message in other.examples:
            self.example(message)

    def counts(self) -> dict[str, int]:
        """The totals, flat (for a run's summary)."""
        return {"clipped_boxes": self.clipped_boxes, "outside_boxes": self.outside_boxes,
                "dropped_boxes": self.dropped_boxes, "resized_masks": self.resized_masks}

    def as_dict(self) -> dict:
        return {**self.counts(), "per_rater": {r: dict(c) for r, c in sorted(self.per_rater.items())},
                "examples": list(self.examples)}

    def __bool__(self) -> bool:
        return any(self.counts().values())


def check_boxes(
    boxes: np.ndarray,
    where: np.ndarray | list[str],
    policy: str = "clip",
    tolerance: float = 1e-6,
    report: RepairReport | None = None,
    raters: np.ndarray | list | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Checks relative ``[x, y, w, h]`` boxes; repairs or drops those past the border.

    A box is *outside* when a coordinate strays past ``[0, 1]`` by more than
    ``tolerance``; *entirely outside* when the box and the image share no
    point. NaN/infinite coordinates and negative sizes are errors under every
    policy. ``"clip"`` replaces ``[x0, y0, x1, y1]`` by its clamp to
    ``[0, 1]`` (an entirely-outside box collapses to a zero-area box on the
    nearest border); ``"drop"`` marks the box as not kept; ``"error"`` raises.

    Args:
        boxes: ``(N, 4)`` boxes.
        where: ``N`` strings locating each box for messages, e.g.
            ``"sample 'a.jpg', field 'gt' (rater 'r1'), label 3"``.
        policy: ``"clip"``, ``"drop"`` or ``"error"`` (see the module).
        tolerance: how far past ``[0, 1]`` a coordinate may stray (float noise)
            before it counts as outside.
        report: collects the repairs, per rater.
        raters: ``N`` rater names, for the per-rater counts.

    Returns:
        ``(boxes, keep)``: ``(N, 4)`` float64 boxes (a copy when anything was
        clipped) and an ``(N,)`` bool mask of the boxes to keep (all ``True``
        except under ``"drop"``).

    Raises:
        AnnotationError: naming the first offending box.
        ValueError: for an unknown policy.
    """
    if policy not in BOX_POLICIES:
        raise ValueError(f"box_policy must be one of {BOX_POLICIES}, got {policy!r}")
    boxes = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
    keep = np.ones(len(boxes), dtype=bool)
    if not len(boxes):
        return boxes, keep
    finite = np.isfinite(boxes).all(axis=1)
    if not finite.all():
        i = int(np.flatnonzero(~finite)[0])
        raise AnnotationError(f"{where[i]}: box {boxes[i].tolist()} has NaN or infinite coordinates")
    negative = (boxes[:, 2] < 0) | (boxes[:, 3] < 0)
    if negative.any():
        i = int(np.flatnonzero(negative)[0])
        raise AnnotationError(f"{where[i]}: box {boxes[i].tolist()} has a negative width or height")
    x0, y0 = boxes[:, 0], boxes[:, 1]
    x1, y1 = x0 + boxes[:, 2], y0 + boxes[:, 3]
    lo, hi = -tolerance, 1 + tolerance
    disjoint = (x1 < lo) | (y1 < lo) | (x0 > hi) | (y0 > hi)
    outside = (x0 < lo) | (y0 < lo) | (x1 > hi) | (y1 > hi)
    if not outside.any():
        return boxes, keep
    bad = np.flatnonzero(outside)
    if policy == "error":
        i = int(bad[0])
        what = "lies entirely outside" if disjoint[i] else "extends outside"
        raise AnnotationError(
            f"{where[i]}: box {boxes[i].tolist()} {what} the image [0, 1] ({len(bad)} such box(es) in all); "
            "use box_policy='clip' to clip them to the image or box_policy='drop' to leave them out"
        )
    rater_of = np.asarray(raters, dtype=object) if raters is not None else np.full(len(boxes), None, dtype=object)
    if policy == "drop":
        keep[bad] = False
        if report is not None:
            report.count("dropped_boxes", rater_of[bad])
            for i in bad[: report.max_examples]:
                report.example(f"{where[i]}: box {boxes[i].tolist()} past the image border, dropped")
        return boxes, keep
    boxes = boxes.copy()
    cx0, cy0 = np.clip(x0, 0, 1), np.clip(y0, 0, 1)
    cx1, cy1 = np.clip(x1, 0, 1), np.clip(y1, 0, 1)
    boxes[:, 0], boxes[:, 1] = cx0, cy0
    boxes[:, 2], boxes[:, 3] = cx1 - cx0, cy1 - cy0
    if report is not None:
        partly = outside & ~disjoint
        report.count("clipped_boxes", rater_of[partly])
        report.count("outside_boxes", rater_of[disjoint])
        for i in bad[: report.max_examples]:
            how = "entirely outside the image: kept as a zero-area box on the border" if disjoint[i] else (
                "clipped to the image")
            report.example(f"{where[i]}: box {np.asarray(boxes[i]).tolist()} {how}")
    return boxes, keep


def validate_boxes(
    boxes: np.ndarray,
    where: np.ndarray | list[str],
    policy: str = "clip",
    tolerance: float = 1e-6,
    report: RepairReport | None = None,
) -> np.ndarray:
    """Checks relative ``[x, y, w, h]`` boxes and returns them, clipped if allowed.

    :func:`check_boxes` for policies that keep every box (``"clip"``,
    ``"error"``); use :func:`check_boxes` for ``"drop"``.

    Returns:
        ``(N, 4)`` float64 boxes, a copy when anything was clipped.

    Raises:
        AnnotationError: naming the first offending box.
    """
    if policy == "drop":
        raise ValueError("validate_boxes keeps every box; use check_boxes for box_policy='drop'")
    return check_boxes(boxes, where, policy=policy, tolerance=tolerance, report=report)[0]
