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

What a corpus holds (:class:`~agreement.core.data.MultiRaterAnnotations`,
declared here, checked in one vectorised pass when it is built):

* Boxes are relative ``[x, y, w, h]`` in ``[0, 1]``. A box whose corner
  strays past ``[0, 1]`` by more than :data:`BOX_TOLERANCE` (``1e-6``,
  rounding in a conversion from pixels), with a negative size, or with a NaN
  or infinite coordinate is refused (:func:`check_relative_boxes`), naming
  the sample, the rater, the annotation, the box and the problem. A row with
  all four coordinates NaN has no 2D box (3D and image-level labels) and is
  not checked.
* Pixel coordinates are taken in one way only: ``coordinates="pixels"``
  (:data:`COORDINATES`) on the corpus, with ``image_sizes``; boxes, polygon
  points and keypoints are divided by their sample's ``(width, height)``
  (:func:`pixels_to_relative`) before the check above.
* Relative boxes that stray past the border (a crowd's box dragged past the
  edge) are refused by default; ``box_policy="clip"`` or ``"drop"`` on the
  corpus repairs them as every operator does (:func:`check_boxes`), counted
  per rater in the corpus's ``repairs`` (a :class:`RepairReport`).
* Image sizes are ``(width, height)`` in pixels, NaN where unknown; a
  non-positive or infinite size is refused (:func:`check_image_sizes`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Protocol, Sequence, cast

import numpy as np

__all__ = ["AnnotationError", "RepairReport", "check_boxes", "validate_boxes", "BOX_POLICIES", "BOX_TOLERANCE",
           "COORDINATES", "check_relative_boxes", "check_image_sizes", "pixels_to_relative",
           "columns_to_relative"]

BOX_POLICIES = ("clip", "drop", "error")

#: How far past ``[0, 1]`` a relative coordinate may stray before it counts as outside the image: rounding
#: noise of a conversion from pixels (``1e-6`` of a side is a thousandth of a pixel on a 1000-pixel image).
BOX_TOLERANCE = 1e-6

#: The coordinate units a corpus accepts: ``"relative"`` (FiftyOne's, the default) or ``"pixels"`` (divided by
#: the sample's image size when the corpus is built).
COORDINATES = ("relative", "pixels")


class AnnotationError(ValueError):
    """Bad input that cannot be repaired; the message names sample and field."""


class BoxNames(Protocol):
    """The ``where`` of :func:`check_boxes`: ``where[i]`` names box ``i`` (a lazy one builds only those asked)."""

    def __getitem__(self, i: int, /) -> str: ...


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
        """Counts ``count`` clipped boxes and keeps ``message`` as an example.

        Args:
            message: what was clipped, for the examples.
            count: the number of boxes clipped.
        """
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
        """The totals, the per-rater counts and the examples, as a JSON-ready dict.

        Returns:
            The counts of :meth:`counts` with ``per_rater`` and ``examples``.
        """
        return {**self.counts(), "per_rater": {r: dict(c) for r, c in sorted(self.per_rater.items())},
                "examples": list(self.examples)}

    def __bool__(self) -> bool:
        return any(self.counts().values())


def check_boxes(
    boxes: np.ndarray,
    where: np.ndarray | list[str] | BoxNames,
    *,
    policy: str = "clip",
    tolerance: float = BOX_TOLERANCE,
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
            ``"sample 'a.jpg', field 'gt' (rater 'r1'), label 3"``, or any object whose ``where[i]`` gives them.
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
    *,
    policy: str = "clip",
    tolerance: float = BOX_TOLERANCE,
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


def _box_name(i: int, sample_index: np.ndarray, rater_index: np.ndarray, sample_names: Sequence[Any],
              raters: Sequence[Any], labels: Sequence[Any] | np.ndarray | None) -> str:
    """``sample 'a.jpg', rater 'r1', box 2 (row 7, label 'car')``: row ``i`` of the input, for messages."""
    s, r = int(sample_index[i]), int(rater_index[i])
    k = int(np.count_nonzero((sample_index[:i] == s) & (rater_index[:i] == r)))
    label = f", label {_plain(labels[i])!r}" if labels is not None else ""
    return f"sample {_plain(sample_names[s])!r}, rater {_plain(raters[r])!r}, box {k} (row {i}{label})"


def _plain(value: Any) -> Any:
    """A NumPy scalar as its Python value (``'car'``, not ``np.str_('car')``, in messages)."""
    return value.item() if isinstance(value, np.generic) else value


class _RowNames:
    """``where[k]`` of :func:`check_boxes` for the rows ``rows``, built only for the boxes it names."""

    def __init__(self, rows: np.ndarray, sample_index: np.ndarray, rater_index: np.ndarray,
                 sample_names: Sequence[Any], raters: Sequence[Any], labels: Sequence[Any] | np.ndarray | None) -> None:
        self.rows, self.args = rows, (sample_index, rater_index, sample_names, raters, labels)

    def __getitem__(self, k: int) -> str:
        return _box_name(int(self.rows[k]), *self.args)


def check_relative_boxes(
    boxes: np.ndarray,
    sample_index: np.ndarray,
    rater_index: np.ndarray,
    sample_names: Sequence,
    raters: Sequence[str],
    *,
    labels: Sequence | np.ndarray | None = None,
    policy: str = "error",
    tolerance: float = BOX_TOLERANCE,
    report: RepairReport | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Checks that a corpus's boxes are relative ``[x, y, w, h]`` inside the image; refuses or repairs the others.

    A box passes when ``x, y >= -tolerance``, ``w, h >= 0`` and ``x + w, y + h <= 1 + tolerance``; a row with
    all four coordinates NaN has no 2D box and passes. One vectorised pass over the ``N`` rows (messages are
    built only for the boxes they name). A box with a NaN or infinite coordinate or a negative size is refused
    under every policy; a box past the border is refused (``policy="error"``), clipped (``"clip"``) or left out
    (``"drop"``) as :func:`check_boxes` does, the repairs counted per rater in ``report``.

    Args:
        boxes: ``(N, 4)`` boxes.
        sample_index: ``(N,)`` the sample of each row.
        rater_index: ``(N,)`` the rater of each row.
        sample_names: the samples' names, for messages.
        raters: the raters' names, for messages and the per-rater counts.
        labels: ``(N,)`` class names, for messages (optional).
        policy: ``"error"`` (the corpus's default), ``"clip"`` or ``"drop"`` (:data:`BOX_POLICIES`).
        tolerance: how far past ``[0, 1]`` a coordinate may stray (:data:`BOX_TOLERANCE`).
        report: collects the repairs.

    Returns:
        ``(boxes, keep)``: the boxes (a copy when any was clipped) and an ``(N,)`` bool mask of the rows to
        keep (all ``True`` except under ``"drop"``).

    Raises:
        AnnotationError: naming the first offending box (its rater, sample, row and label), the problem, how
            many boxes have one, and how to proceed (``coordinates="pixels"`` for pixel boxes, a
            ``box_policy`` for relative boxes past the border).
        ValueError: an unknown policy.
    """
    if policy not in BOX_POLICIES:
        raise ValueError(f"box_policy must be one of {BOX_POLICIES}, got {policy!r}")
    boxes = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
    keep = np.ones(len(boxes), dtype=bool)
    if not len(boxes):
        return boxes, keep
    x, y, w, h = boxes.T
    lo, hi = -tolerance, 1.0 + tolerance
    with np.errstate(invalid="ignore"):
        ok = (x >= lo) & (y >= lo) & (w >= 0) & (h >= 0) & (x + w <= hi) & (y + h <= hi)
    if ok.all():
        return boxes, keep
    bad = np.flatnonzero(~ok & ~np.isnan(boxes).all(axis=1))
    if not len(bad):
        return boxes, keep
    names = (np.asarray(sample_index), np.asarray(rater_index), sample_names, raters, labels)
    with np.errstate(invalid="ignore"):
        broken = bad[~(np.isfinite(boxes[bad]).all(axis=1) & (boxes[bad, 2] >= 0) & (boxes[bad, 3] >= 0))]
    if len(broken) or policy == "error":
        _refuse(boxes, broken if len(broken) else bad, names, tolerance)
    rater_names = np.asarray(raters, dtype=object)[np.asarray(rater_index)[bad]]
    fixed, kept = check_boxes(boxes[bad], _RowNames(bad, *names), policy=policy, tolerance=tolerance,
                              report=report, raters=rater_names)
    boxes = boxes.copy()
    boxes[bad] = fixed
    keep[bad] = kept
    return boxes, keep


def _refuse(boxes: np.ndarray, bad: np.ndarray, names: tuple, tolerance: float) -> None:
    """Raises the :class:`AnnotationError` of :func:`check_relative_boxes` for the rows ``bad``."""
    i = int(bad[0])
    box = boxes[i]
    where = _box_name(i, *names)
    if not np.isfinite(box).all():
        problem, how = "has a NaN or infinite coordinate", "a row without a 2D box has all four coordinates NaN"
    elif box[2] < 0 or box[3] < 0:
        problem, how = "has a negative size (width or height)", "expected w, h >= 0"
    else:
        past = np.abs(boxes[bad][np.isfinite(boxes[bad])])
        pixels = past.size and past.max() > 2.0
        problem = f"lies outside the image [0, 1] by more than {tolerance:g}"
        how = ("it looks like pixel coordinates: " if pixels else "for pixel coordinates, ") + (
            "build the corpus with coordinates='pixels' and image_sizes (width, height per sample), which divides "
            "them by the image size"
        ) + ("" if pixels else "; for relative boxes past the border, build it with box_policy='clip' (clipped to "
             "the image) or box_policy='drop' (left out), repairs counted in the corpus's repairs")
    raise AnnotationError(
        f"{where}: box {box.tolist()} {problem}; {len(bad)} box(es) in all are refused. Boxes are relative "
        f"[x, y, w, h] in [0, 1] (FiftyOne's convention); {how}"
    )


def check_image_sizes(image_sizes: np.ndarray, sample_names: Sequence) -> None:
    """Refuses an image size that is not a positive, finite number of pixels (NaN, unknown, is allowed).

    Args:
        image_sizes: ``(S, 2)`` ``(width, height)`` in pixels, NaN where unknown.
        sample_names: the samples' names, for messages.

    Raises:
        AnnotationError: naming the first sample with a zero, negative or infinite width or height.
    """
    sizes = np.asarray(image_sizes, dtype=np.float64).reshape(-1, 2)
    with np.errstate(invalid="ignore"):
        bad = (~np.isnan(sizes) & ~((sizes > 0) & np.isfinite(sizes))).any(axis=1)
    if bad.any():
        s = int(np.flatnonzero(bad)[0])
        raise AnnotationError(
            f"sample {_plain(sample_names[s])!r}: image size (width, height) {sizes[s].tolist()} is not a positive, finite "
            f"number of pixels ({int(bad.sum())} such sample(s) in all): expected pixels, or NaN where unknown"
        )


def pixels_to_relative(
    boxes: np.ndarray,
    sample_index: np.ndarray,
    image_sizes: np.ndarray | None,
    sample_names: Sequence,
    *,
    polygons: list | None = None,
    keypoints: np.ndarray | None = None,
) -> tuple[np.ndarray, list | None, np.ndarray | None]:
    """Pixel coordinates divided by their sample's image size: ``[x / W, y / H, w / W, h / H]``.

    :func:`columns_to_relative` of the boxes, polygons and keypoints (either may be ``None``).

    Returns:
        ``(boxes, polygons, keypoints)``, relative.

    Raises:
        AnnotationError: as :func:`columns_to_relative`.
    """
    columns = {name: v for name, v in (("polygons", polygons), ("keypoints", keypoints)) if v is not None}
    boxes, columns = columns_to_relative(boxes, sample_index, image_sizes, sample_names, columns=columns)
    polygons_out = cast("list | None", columns.get("polygons"))  # the polygon kind's to_relative returns a list
    keypoints_out = cast("np.ndarray | None", columns.get("keypoints"))  # the keypoint kind's, an array
    return boxes, polygons_out, keypoints_out


def columns_to_relative(
    boxes: np.ndarray,
    sample_index: np.ndarray,
    image_sizes: np.ndarray | None,
    sample_names: Sequence,
    *,
    columns: Mapping[str, Any],
) -> tuple[np.ndarray, dict[str, Any]]:
    """Pixel coordinates divided by their sample's image size: ``[x / W, y / H, w / W, h / H]``.

    Boxes, and every geometry column whose declaration converts from pixels
    (:attr:`agreement.core.kinds.ColumnKind.to_relative`: polygon rings, keypoints ``(N, K, 2)`` with NaN
    where not labelled), of row ``i`` are divided by ``image_sizes[sample_index[i]] = (W, H)``. Rows with no
    geometry (all-NaN box, and no geometry in a column: :attr:`~agreement.core.kinds.ColumnKind.has_geometry`)
    are kept as they are. The inputs are not modified.

    Args:
        boxes: ``(N, 4)`` pixel boxes (all NaN where a row has no 2D box).
        sample_index: ``(N,)`` the sample of each row.
        image_sizes: ``(S, 2)`` ``(width, height)`` in pixels (NaN, or ``None``, where unknown).
        sample_names: the ``S`` samples' names, for messages.
        columns: the geometry columns by name (declared in :mod:`agreement.core.kinds`); those without image
            coordinates are returned as they are.

    Returns:
        ``(boxes, columns)``: relative boxes and the columns converted.

    Raises:
        AnnotationError: naming the first sample that has geometry and no positive, finite image size (NaN,
            missing, zero or negative).
    """
    from agreement.core.kinds import column_kind

    boxes = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
    sample_index = np.asarray(sample_index, dtype=np.intp)
    S = len(sample_names)
    sizes = np.full((S, 2), np.nan) if image_sizes is None else np.asarray(image_sizes, dtype=np.float64).reshape(S, 2)
    geometry = ~np.isnan(boxes).all(axis=1)
    kinds = {name: column_kind(name) for name in columns}
    for name, kind in kinds.items():
        if kind.has_geometry is not None:
            geometry |= kind.has_geometry(columns[name])
    need = np.zeros(S, dtype=bool)
    need[sample_index[geometry]] = True
    with np.errstate(invalid="ignore"):
        known = np.asarray(((sizes > 0) & np.isfinite(sizes)).all(axis=1))
    missing = need & ~known
    if missing.any():
        s = int(np.flatnonzero(missing)[0])
        raise AnnotationError(
            f"sample {_plain(sample_names[s])!r}: coordinates='pixels' needs the image size (width, height) in pixels of "
            f"every sample with annotations; got {sizes[s].tolist()} ({int(missing.sum())} such sample(s) in all)"
        )
    wh = np.where(known[:, None], sizes, 1.0)[sample_index]
    boxes = boxes / np.tile(wh, 2)
    return boxes, {name: kind.to_relative(columns[name], wh) if kind.to_relative is not None else columns[name]
                   for name, kind in kinds.items()}
