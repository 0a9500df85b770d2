"""Input validation for boxes: clear errors, or documented repairs that are reported.

Rules (relative ``[x, y, w, h]`` boxes, FiftyOne's convention):

* NaN or infinite coordinates: always an error.
* Negative width or height: always an error.
* A box that extends past the image border by more than ``tolerance``:
  with ``policy="clip"`` (the default) it is clipped to ``[0, 1]`` and the
  repair is counted and reported; with ``policy="error"`` it is an error.
  A box lying entirely outside the image is an error under both policies
  (clipping would leave nothing of it).
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

__all__ = ["AnnotationError", "RepairReport", "validate_boxes"]

BOX_POLICIES = ("clip", "error")


class AnnotationError(ValueError):
    """Bad input that cannot be repaired; the message names sample and field."""


@dataclass
class RepairReport:
    """What was repaired, to be shown to the user with the results."""

    clipped_boxes: int = 0
    examples: list[str] = field(default_factory=list)
    max_examples: int = 5
    resized_masks: int = 0

    def add(self, message: str, count: int = 1) -> None:
        self.clipped_boxes += count
        if len(self.examples) < self.max_examples:
            self.examples.append(message)

    def as_dict(self) -> dict:
        return {"clipped_boxes": self.clipped_boxes, "resized_masks": self.resized_masks,
                "examples": list(self.examples)}

    def __bool__(self) -> bool:
        return self.clipped_boxes > 0 or self.resized_masks > 0


def validate_boxes(
    boxes: np.ndarray,
    where: np.ndarray | list[str],
    policy: str = "clip",
    tolerance: float = 1e-6,
    report: RepairReport | None = None,
) -> np.ndarray:
    """Checks relative ``[x, y, w, h]`` boxes and returns them, clipped if allowed.

    Args:
        boxes: ``(N, 4)`` boxes.
        where: ``N`` strings locating each box for messages, e.g.
            ``"sample 'a.jpg', field 'gt' (rater 'r1'), label 3"``.
        policy: ``"clip"`` (repair boxes past the border, report them) or
            ``"error"``.
        tolerance: how far past ``[0, 1]`` a coordinate may stray (float noise)
            before it counts as outside.
        report: collects repairs under ``policy="clip"``.

    Returns:
        ``(N, 4)`` float64 boxes, a copy when anything was clipped.

    Raises:
        AnnotationError: naming the first offending box.
    """
    if policy not in BOX_POLICIES:
        raise ValueError(f"policy must be one of {BOX_POLICIES}, got {policy!r}")
    boxes = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
    if not len(boxes):
        return boxes
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
    if disjoint.any():
        i = int(np.flatnonzero(disjoint)[0])
        raise AnnotationError(f"{where[i]}: box {boxes[i].tolist()} lies entirely outside the image")
    if outside.any():
        if policy == "error":
            i = int(np.flatnonzero(outside)[0])
            raise AnnotationError(
                f"{where[i]}: box {boxes[i].tolist()} extends outside the image [0, 1] "
                "(use box_policy='clip' to clip it)"
            )
        boxes = boxes.copy()
        cx0, cy0 = np.clip(x0, 0, 1), np.clip(y0, 0, 1)
        cx1, cy1 = np.clip(x1, 0, 1), np.clip(y1, 0, 1)
        boxes[:, 0], boxes[:, 1] = cx0, cy0
        boxes[:, 2], boxes[:, 3] = cx1 - cx0, cy1 - cy0
        if report is not None:
            for i in np.flatnonzero(outside)[: report.max_examples]:
                report.add(f"{where[i]}: clipped to the image", 0)
            report.clipped_boxes += int(outside.sum())
    return boxes
