"""The multi-rater data model: who was asked to label what, and what they drew.

A corpus has S samples and R raters. For every (sample, rater) cell there is
either

* nothing: the rater was not assigned this sample (**implicit absence**,
  missing data, excluded from every agreement computation), or
* a possibly empty set of annotations: the rater looked and drew these. An
  empty set is **explicit absence**, an active "there is no object here".

The two are never confused: ``assigned[s, r]`` is ``False`` for implicit
absence, and ``True`` with zero annotations for explicit absence.

Annotations are stored columnar (one row per annotation, sorted by sample then
rater) so that pairwise work can be vectorised. Boxes are relative
``[x, y, w, h]`` in ``[0, 1]`` (FiftyOne's convention: top-left corner, width,
height, relative to the image). Polygons, when present, are lists of rings in
relative ``(x, y)`` coordinates. Instance masks, when present, are 2-D boolean
arrays spanning their annotation's box (FiftyOne's ``Detection.mask``).
Keypoints, when present, are ``(K, 2)`` relative ``(x, y)`` points per
annotation with NaN for a point that is not labelled.

Inputs (checked when the corpus is built; :mod:`agreement.core.validation`,
``docs/core-inputs.md``): boxes relative, inside ``[0, 1]`` up to ``1e-6``,
else refused naming the sample, rater and box (all-NaN rows have no 2D box);
pixel coordinates only through ``coordinates="pixels"`` with ``image_sizes``;
boxes past the border repaired only when asked (``box_policy="clip"`` or
``"drop"``, counted in ``repairs``); image sizes positive or NaN (unknown).

This module does not import FiftyOne.
"""

from __future__ import annotations

from dataclasses import InitVar, dataclass, field
from typing import Iterator, Mapping, Sequence

import numpy as np

from agreement.core.validation import (
    COORDINATES, RepairReport, check_image_sizes, check_relative_boxes, pixels_to_relative,
)

__all__ = ["AnnotationSet", "MultiRaterAnnotations", "encode_classes", "class_order", "class_codes"]

Polygon = list  # list of rings, each an (k, 2) float array of relative (x, y)


@dataclass(frozen=True)
class AnnotationSet:
    """One rater's annotations on one sample (possibly empty).

    Attributes:
        boxes: ``(n, 4)`` float64, relative ``[x, y, w, h]`` (pixels for a
            corpus built with ``coordinates="pixels"``; a set is not checked
            until a corpus is built from it).
        labels: ``(n,)`` object array of class names.
        ids: ``(n,)`` object array of label ids (``None`` where unknown), used
            to write per-label results back.
        polygons: ``None`` or a length-``n`` list; entry ``i`` is ``None`` or a
            list of ``(k, 2)`` relative point arrays (rings) of annotation ``i``.
        masks: ``None`` or a length-``n`` list; entry ``i`` is ``None`` or a 2-D
            boolean instance mask spanning box ``i``.
        keypoints: ``None`` or an ``(n, K, 2)`` float64 array of relative
            ``(x, y)`` points, NaN where a point is not labelled.
    """

    boxes: np.ndarray
    labels: np.ndarray
    ids: np.ndarray
    polygons: list | None = None
    masks: list | None = None
    keypoints: np.ndarray | None = None

    def __post_init__(self) -> None:
        boxes = np.asarray(self.boxes, dtype=np.float64).reshape(-1, 4)
        object.__setattr__(self, "boxes", boxes)
        n = len(boxes)
        labels = _object_array(self.labels, n, "labels")
        ids = _object_array(self.ids, n, "ids") if self.ids is not None else np.full(n, None, dtype=object)
        object.__setattr__(self, "labels", labels)
        object.__setattr__(self, "ids", ids)
        if self.polygons is not None and len(self.polygons) != n:
            raise ValueError(f"polygons has {len(self.polygons)} entries for {n} boxes")
        if self.masks is not None and len(self.masks) != n:
            raise ValueError(f"masks has {len(self.masks)} entries for {n} boxes")
        if self.keypoints is not None:
            object.__setattr__(self, "keypoints", _keypoint_array(self.keypoints, n))

    def __len__(self) -> int:
        return len(self.boxes)

    @classmethod
    def empty(cls) -> "AnnotationSet":
        """An explicit "no object" set."""
        return cls(np.zeros((0, 4)), np.zeros(0, dtype=object), np.zeros(0, dtype=object))


def _keypoint_array(values, n: int) -> np.ndarray:
    """``values`` as an ``(n, K, 2)`` float64 array (``K = 0`` allowed when ``n = 0``)."""
    kps = np.asarray(values, dtype=np.float64)
    if n == 0 and kps.size == 0:
        return kps.reshape(0, kps.shape[1] if kps.ndim == 3 else 0, 2)
    if kps.ndim != 3 or kps.shape[0] != n or kps.shape[2] != 2:
        raise ValueError(f"keypoints must have shape ({n}, K, 2); got {kps.shape}")
    return kps


def _object_array(values: Sequence | np.ndarray, n: int, name: str) -> np.ndarray:
    arr = np.empty(n, dtype=object)
    values = list(values)
    if len(values) != n:
        raise ValueError(f"{name} has {len(values)} entries for {n} boxes")
    arr[:] = values
    return arr


@dataclass(frozen=True)
class MultiRaterAnnotations:
    """All raters' annotations on a corpus of samples, columnar.

    Attributes:
        sample_ids: ``(S,)`` object array of sample identifiers.
        raters: the R rater names, sorted.
        assigned: ``(S, R)`` bool; ``False`` is implicit absence.
        boxes: ``(N, 4)`` float64 relative ``[x, y, w, h]`` of every annotation.
        labels: ``(N,)`` object class names.
        label_ids: ``(N,)`` object label ids (``None`` where unknown).
        sample_index: ``(N,)`` int index into ``sample_ids``.
        rater_index: ``(N,)`` int index into ``raters``.
        image_sizes: ``(S, 2)`` float ``(width, height)`` in pixels, NaN where
            unknown.
        polygons: ``None`` or a length-N list (see :class:`AnnotationSet`).
        sample_names: optional ``(S,)`` human-readable names (file names) used
            in error messages; defaults to ``sample_ids``.
        masks: ``None`` or a length-N list of ``None`` or 2-D boolean instance
            masks spanning their boxes (see :class:`AnnotationSet`).
        keypoints: ``None`` or ``(N, K, 2)`` float64 relative points, NaN where
            not labelled.
        cuboids: ``None`` or ``(N, 9)`` float64 3D boxes ``[x, y, z, dx, dy,
            dz, rx, ry, rz]`` (FiftyOne's ``location``, ``dimensions`` and XYZ
            Euler ``rotation``, scene units). 3D rows have no 2D box: their
            ``boxes`` are NaN, so 2D measures refuse them.
        points3d: ``None`` or ``(N, 3)`` 3D point annotations (scene units).
        polylines3d: ``None`` or a length-N list of lists of ``(k, 3)`` 3D
            polylines (one annotation may hold several lines).
        segments: ``None`` or a length-N list of int arrays: the point-cloud
            indices an annotation covers; ``num_points`` gives, per sample,
            the size of its point cloud (for range checks and Jaccard).
        classes: ``None`` or the class vocabulary of the whole corpus this one
            is a part of (a shard of a streamed run), sorted as
            :func:`encode_classes` sorts: class codes are then the same in
            every part, whichever classes a part happens to hold.
        coordinates: init-only, ``"relative"`` (default) or ``"pixels"``. With
            ``"pixels"``, ``boxes``, ``polygons`` and ``keypoints`` are in pixels
            and are divided by their sample's ``image_sizes`` ``(width, height)``
            when the corpus is built (a sample with annotations and no positive
            size is refused); the corpus then holds relative coordinates.
        box_policy: init-only, what becomes of a box past the image border:
            ``"error"`` (default: refused), ``"clip"`` (clipped to the image)
            or ``"drop"`` (the row is left out; the rater stays assigned), as
            the operators' ``box_policy``
            (:func:`agreement.core.validation.check_boxes`).
        repairs: the boxes clipped or dropped by ``box_policy`` when this corpus
            was built, per rater (a
            :class:`~agreement.core.validation.RepairReport`; empty otherwise).

    Boxes are checked once, vectorised, when the corpus is built
    (:func:`agreement.core.validation.check_relative_boxes`): a box outside
    ``[0, 1]`` beyond ``1e-6``, with a negative size or a NaN coordinate (a
    row without a 2D box has all four NaN) is refused with a message naming
    the sample, the rater, the box and the problem; a non-positive or
    infinite image size too. Boxes past the border are repaired only when
    asked (``box_policy``). Pixel boxes are passed with
    ``coordinates="pixels"``, the one way the library converts them:

    >>> pixel = MultiRaterAnnotations.from_sets(
    ...     ["a.jpg"], ["r1", "r2"],
    ...     [{"r1": AnnotationSet([[64, 48, 320, 240]], ["car"], [None]),
    ...       "r2": AnnotationSet([[70, 50, 310, 236]], ["car"], [None])}],
    ...     image_sizes=[[640, 480]], coordinates="pixels")
    >>> pixel.boxes[0].tolist()
    [0.1, 0.1, 0.5, 0.5]
    >>> MultiRaterAnnotations.from_sets(
    ...     ["a.jpg"], ["r1"], [{"r1": AnnotationSet([[64, 48, 320, 240]], ["car"], [None])}],
    ...     image_sizes=[[640, 480]])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    agreement.core.validation.AnnotationError: sample 'a.jpg', rater 'r1', box 0 (row 0, label 'car'): ...

    Rows are sorted by ``(sample_index, rater_index)`` (stable: the input order
    of a rater's annotations on a sample is kept), and ``offsets`` gives, for
    cell ``c = s * R + r``, the rows ``offsets[c]:offsets[c + 1]``.
    """

    sample_ids: np.ndarray
    raters: tuple[str, ...]
    assigned: np.ndarray
    boxes: np.ndarray
    labels: np.ndarray
    label_ids: np.ndarray
    sample_index: np.ndarray
    rater_index: np.ndarray
    image_sizes: np.ndarray | None = None
    polygons: list | None = None
    sample_names: np.ndarray | None = None
    masks: list | None = None
    keypoints: np.ndarray | None = None
    cuboids: np.ndarray | None = None
    points3d: np.ndarray | None = None
    polylines3d: list | None = None
    segments: list | None = None
    num_points: np.ndarray | None = None
    classes: tuple | None = None
    coordinates: InitVar[str] = "relative"
    box_policy: InitVar[str] = "error"
    offsets: np.ndarray = field(init=False, repr=False)
    repairs: RepairReport = field(init=False, repr=False, compare=False)

    def __post_init__(self, coordinates: str = "relative", box_policy: str = "error") -> None:
        if coordinates not in COORDINATES:
            raise ValueError(f"coordinates must be one of {COORDINATES}, got {coordinates!r}")
        sample_ids = np.asarray(self.sample_ids, dtype=object).reshape(-1)
        S, R = len(sample_ids), len(self.raters)
        assigned = np.asarray(self.assigned, dtype=bool).reshape(S, R)
        boxes = np.asarray(self.boxes, dtype=np.float64).reshape(-1, 4)
        N = len(boxes)
        s_idx = np.asarray(self.sample_index, dtype=np.intp).reshape(-1)
        r_idx = np.asarray(self.rater_index, dtype=np.intp).reshape(-1)
        labels = np.asarray(self.labels, dtype=object).reshape(-1)
        ids = np.asarray(self.label_ids, dtype=object).reshape(-1)
        if not (len(s_idx) == len(r_idx) == len(labels) == len(ids) == N):
            raise ValueError("boxes, labels, label_ids, sample_index and rater_index must have equal lengths")
        if self.polygons is not None and len(self.polygons) != N:
            raise ValueError("polygons must have one entry per annotation")
        if self.masks is not None and len(self.masks) != N:
            raise ValueError("masks must have one entry per annotation")
        if self.keypoints is not None:
            object.__setattr__(self, "keypoints", _keypoint_array(self.keypoints, N))
        if self.cuboids is not None:
            cub = np.asarray(self.cuboids, dtype=np.float64)
            if cub.shape != (N, 9):
                raise ValueError(f"cuboids must have shape ({N}, 9); got {cub.shape}")
            object.__setattr__(self, "cuboids", cub)
        if self.points3d is not None:
            pts = np.asarray(self.points3d, dtype=np.float64)
            if pts.shape != (N, 3):
                raise ValueError(f"points3d must have shape ({N}, 3); got {pts.shape}")
            object.__setattr__(self, "points3d", pts)
        for name in ("polylines3d", "segments"):
            value = getattr(self, name)
            if value is not None and len(value) != N:
                raise ValueError(f"{name} must have one entry per annotation")
        if self.classes is not None:
            object.__setattr__(self, "classes", tuple(self.classes))
        if self.num_points is not None:
            object.__setattr__(self, "num_points", np.asarray(self.num_points, dtype=np.int64).reshape(S))
        if len(set(self.raters)) != R:
            raise ValueError(f"rater names must be unique: {list(self.raters)}")
        if N and (s_idx.min() < 0 or s_idx.max() >= S or r_idx.min() < 0 or r_idx.max() >= R):
            raise ValueError("sample_index or rater_index out of range")
        if N and not assigned[s_idx, r_idx].all():
            bad = int(np.flatnonzero(~assigned[s_idx, r_idx])[0])
            raise ValueError(
                f"annotation {bad} belongs to rater {self.raters[r_idx[bad]]!r} on sample "
                f"{sample_ids[s_idx[bad]]!r}, who is not assigned to it"
            )
        names = sample_ids if self.sample_names is None else np.asarray(self.sample_names, dtype=object).reshape(S)
        sizes = np.full((S, 2), np.nan) if self.image_sizes is None else (
            np.asarray(self.image_sizes, dtype=np.float64).reshape(S, 2))
        boxes, keep = self._relative_boxes(boxes, s_idx, r_idx, labels, sizes, names, coordinates, box_policy)
        if not keep.all():  # box_policy="drop"
            boxes, labels, ids, s_idx, r_idx = self._keep_rows(keep, boxes, labels, ids, s_idx, r_idx)
            N = len(boxes)
        cell = s_idx * R + r_idx
        order = np.argsort(cell, kind="stable")
        if N and np.any(order != np.arange(N)):
            boxes, labels, ids, s_idx, r_idx, cell = (
                boxes[order], labels[order], ids[order], s_idx[order], r_idx[order], cell[order]
            )
            polygons = [self.polygons[i] for i in order] if self.polygons is not None else None
            object.__setattr__(self, "polygons", polygons)
            if self.masks is not None:
                object.__setattr__(self, "masks", [self.masks[i] for i in order])
            if self.keypoints is not None:
                object.__setattr__(self, "keypoints", self.keypoints[order])
            for name in ("cuboids", "points3d"):
                if getattr(self, name) is not None:
                    object.__setattr__(self, name, getattr(self, name)[order])
            for name in ("polylines3d", "segments"):
                if getattr(self, name) is not None:
                    object.__setattr__(self, name, [getattr(self, name)[i] for i in order])
        for name, value in (
            ("sample_ids", sample_ids), ("raters", tuple(self.raters)), ("assigned", assigned),
            ("boxes", boxes), ("labels", labels), ("label_ids", ids), ("sample_index", s_idx),
            ("rater_index", r_idx), ("image_sizes", sizes), ("sample_names", names),
        ):
            object.__setattr__(self, name, value)
        object.__setattr__(self, "offsets", np.searchsorted(cell, np.arange(S * R + 1)))

    def _relative_boxes(self, boxes, s_idx, r_idx, labels, sizes, names, coordinates: str, box_policy: str):
        """``(boxes, keep)``: the boxes checked relative (pixel boxes, polygons and keypoints divided by the
        image sizes first), those past the border under ``box_policy``; the repairs in ``self.repairs``."""
        object.__setattr__(self, "repairs", RepairReport())
        check_image_sizes(sizes, names)
        if coordinates == "pixels":
            boxes, polygons, keypoints = pixels_to_relative(boxes, s_idx, sizes, names, self.polygons, self.keypoints)
            object.__setattr__(self, "polygons", polygons)
            object.__setattr__(self, "keypoints", keypoints)
        return check_relative_boxes(boxes, s_idx, r_idx, names, self.raters, labels, policy=box_policy,
                                    report=self.repairs)

    def _keep_rows(self, keep: np.ndarray, *columns: np.ndarray) -> tuple[np.ndarray, ...]:
        """``columns`` and the optional per-row columns restricted to the rows ``keep``."""
        idx = np.flatnonzero(keep)
        for name in ("polygons", "masks", "keypoints", "cuboids", "points3d", "polylines3d", "segments"):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, value[idx] if isinstance(value, np.ndarray) else [value[i] for i in idx])
        return tuple(c[idx] for c in columns)

    # ------------------------------------------------------------------ sizes
    @property
    def num_samples(self) -> int:
        return len(self.sample_ids)

    @property
    def num_raters(self) -> int:
        return len(self.raters)

    def __len__(self) -> int:
        return len(self.boxes)

    def counts(self) -> np.ndarray:
        """``(S, R)`` number of annotations per cell (0 where not assigned)."""
        return np.diff(self.offsets).reshape(self.num_samples, self.num_raters)

    # ---------------------------------------------------------------- access
    def rows(self, s: int, r: int) -> slice:
        """Row slice of rater ``r``'s annotations on sample ``s``."""
        c = s * self.num_raters + r
        return slice(int(self.offsets[c]), int(self.offsets[c + 1]))

    def get(self, s: int, r: int | str) -> AnnotationSet | None:
        """Rater ``r``'s set on sample ``s``; ``None`` is implicit absence."""
        if isinstance(r, str):
            r = self.raters.index(r)
        if not self.assigned[s, r]:
            return None
        sl = self.rows(s, r)
        polys = self.polygons[sl] if self.polygons is not None else None
        masks = self.masks[sl] if self.masks is not None else None
        kps = self.keypoints[sl] if self.keypoints is not None else None
        return AnnotationSet(self.boxes[sl], self.labels[sl], self.label_ids[sl], polys, masks, kps)

    def sets(self, s: int) -> dict[str, AnnotationSet]:
        """The sets of the raters assigned to sample ``s``, by rater name."""
        return {self.raters[r]: self.get(s, r) for r in np.flatnonzero(self.assigned[s])}

    def iter_rater_pairs(self, s: int) -> Iterator[tuple[int, int]]:
        """Pairs ``(a, b)``, ``a < b``, of raters both assigned to sample ``s``."""
        assigned = np.flatnonzero(self.assigned[s])
        for i, a in enumerate(assigned):
            for b in assigned[i + 1:]:
                yield int(a), int(b)

    # ---------------------------------------------------------- construction
    @classmethod
    def from_sets(
        cls,
        sample_ids: Sequence,
        raters: Sequence[str],
        sets: Sequence[Mapping[str, AnnotationSet | None]],
        image_sizes: np.ndarray | None = None,
        sample_names: Sequence | None = None,
        coordinates: str = "relative",
        box_policy: str = "error",
    ) -> "MultiRaterAnnotations":
        """Builds a corpus from one ``{rater: AnnotationSet or None}`` per sample.

        A rater missing from a sample's mapping, or mapped to ``None``, is not
        assigned to it (implicit absence); an empty set is explicit absence.
        ``coordinates="pixels"``: the sets' boxes, polygons and keypoints are
        in pixels of ``image_sizes``; ``box_policy``: boxes past the border
        (see :class:`MultiRaterAnnotations` for both).
        """
        raters = tuple(sorted(raters))
        rindex = {r: i for i, r in enumerate(raters)}
        S = len(sample_ids)
        if len(sets) != S:
            raise ValueError(f"got {len(sets)} rater mappings for {S} samples")
        assigned = np.zeros((S, len(raters)), dtype=bool)
        boxes, labels, ids, s_idx, r_idx, polys, masks, kps = [], [], [], [], [], [], [], []
        any_polys = any(v is not None and v.polygons is not None for m in sets for v in m.values())
        any_masks = any(v is not None and v.masks is not None for m in sets for v in m.values())
        num_kps = {
            v.keypoints.shape[1]
            for m in sets for v in m.values()
            if v is not None and v.keypoints is not None and len(v)
        }
        if len(num_kps) > 1:
            raise ValueError(f"keypoint annotations have different numbers of points: {sorted(num_kps)}")
        any_kps = any(v is not None and v.keypoints is not None for m in sets for v in m.values())
        K = num_kps.pop() if num_kps else 0
        for s, mapping in enumerate(sets):
            for rater, aset in mapping.items():
                if rater not in rindex:
                    raise ValueError(f"sample {sample_ids[s]!r}: unknown rater {rater!r}")
                if aset is None:
                    continue
                r = rindex[rater]
                assigned[s, r] = True
                n = len(aset)
                boxes.append(aset.boxes)
                labels.extend(aset.labels)
                ids.extend(aset.ids)
                s_idx.extend([s] * n)
                r_idx.extend([r] * n)
                if any_polys:
                    polys.extend(aset.polygons if aset.polygons is not None else [None] * n)
                if any_masks:
                    masks.extend(aset.masks if aset.masks is not None else [None] * n)
                if any_kps and n:
                    kps.append(aset.keypoints if aset.keypoints is not None else np.full((n, K, 2), np.nan))
        return cls(
            sample_ids=np.asarray(list(sample_ids), dtype=object),
            raters=raters,
            assigned=assigned,
            boxes=np.concatenate(boxes) if boxes else np.zeros((0, 4)),
            labels=np.asarray(labels, dtype=object),
            label_ids=np.asarray(ids, dtype=object),
            sample_index=np.asarray(s_idx, dtype=np.intp),
            rater_index=np.asarray(r_idx, dtype=np.intp),
            image_sizes=image_sizes,
            polygons=polys if any_polys else None,
            sample_names=sample_names,
            masks=masks if any_masks else None,
            keypoints=(np.concatenate(kps) if kps else np.zeros((0, K, 2))) if any_kps else None,
            coordinates=coordinates,
            box_policy=box_policy,
        )

    @classmethod
    def concat(cls, parts: Sequence["MultiRaterAnnotations"]) -> "MultiRaterAnnotations":
        """The corpus of ``parts`` (disjoint samples, the same raters), samples in part order.

        Each part keeps its rows in order; ``sample_index`` is shifted by the
        samples before it. Optional columns are kept when every part has them.

        Raises:
            ValueError: no parts, or parts with different raters or class vocabularies.
        """
        parts = list(parts)
        if not parts:
            raise ValueError("concat needs at least one part")
        first = parts[0]
        for p in parts[1:]:
            if p.raters != first.raters or p.classes != first.classes:
                raise ValueError("parts of one corpus must have the same raters and class vocabulary")
        if len(parts) == 1:
            return first
        shift = np.cumsum([0] + [p.num_samples for p in parts[:-1]])

        def rows(name):
            values = [getattr(p, name) for p in parts]
            if any(v is None for v in values):
                return None
            if isinstance(values[0], list):
                return [x for v in values for x in v]
            if name == "keypoints":  # parts may hold skeletons of different lengths: pad with unlabelled points
                K = max(v.shape[1] for v in values)
                values = [np.pad(v, ((0, 0), (0, K - v.shape[1]), (0, 0)), constant_values=np.nan) for v in values]
            return np.concatenate(values)

        return MultiRaterAnnotations(
            sample_ids=np.concatenate([p.sample_ids for p in parts]),
            raters=first.raters,
            assigned=np.concatenate([p.assigned for p in parts]),
            boxes=np.concatenate([p.boxes for p in parts]),
            labels=np.concatenate([p.labels for p in parts]),
            label_ids=np.concatenate([p.label_ids for p in parts]),
            sample_index=np.concatenate([p.sample_index + k for p, k in zip(parts, shift)]),
            rater_index=np.concatenate([p.rater_index for p in parts]),
            image_sizes=np.concatenate([p.image_sizes for p in parts]),
            polygons=rows("polygons"),
            sample_names=np.concatenate([p.sample_names for p in parts]),
            masks=rows("masks"),
            keypoints=rows("keypoints"),
            cuboids=rows("cuboids"),
            points3d=rows("points3d"),
            polylines3d=rows("polylines3d"),
            segments=rows("segments"),
            num_points=rows("num_points"),
            classes=first.classes,
        )

    def select_samples(self, keep: np.ndarray) -> "MultiRaterAnnotations":
        """The corpus restricted to samples ``keep`` (bool mask or indices), in that order."""
        keep = np.asarray(keep)
        idx = np.flatnonzero(keep) if keep.dtype == bool else keep.astype(np.intp)
        new_pos = np.full(self.num_samples, -1, dtype=np.intp)
        new_pos[idx] = np.arange(len(idx))
        rows = np.flatnonzero(new_pos[self.sample_index] >= 0)
        return MultiRaterAnnotations(
            sample_ids=self.sample_ids[idx],
            raters=self.raters,
            assigned=self.assigned[idx],
            boxes=self.boxes[rows],
            labels=self.labels[rows],
            label_ids=self.label_ids[rows],
            sample_index=new_pos[self.sample_index[rows]],
            rater_index=self.rater_index[rows],
            image_sizes=self.image_sizes[idx],
            polygons=[self.polygons[i] for i in rows] if self.polygons is not None else None,
            sample_names=self.sample_names[idx],
            masks=[self.masks[i] for i in rows] if self.masks is not None else None,
            keypoints=self.keypoints[rows] if self.keypoints is not None else None,
            cuboids=self.cuboids[rows] if self.cuboids is not None else None,
            points3d=self.points3d[rows] if self.points3d is not None else None,
            polylines3d=[self.polylines3d[i] for i in rows] if self.polylines3d is not None else None,
            segments=[self.segments[i] for i in rows] if self.segments is not None else None,
            num_points=self.num_points[idx] if self.num_points is not None else None,
            classes=self.classes,
        )

    def summary(self) -> dict:
        """Counts a person can read: samples, raters, annotations per rater,
        assignments, and explicit-absence cells per rater."""
        counts = self.counts()
        per_rater = {}
        for r, name in enumerate(self.raters):
            a = self.assigned[:, r]
            per_rater[name] = {
                "assigned_samples": int(a.sum()),
                "annotations": int(counts[a, r].sum()),
                "explicit_absence_samples": int((a & (counts[:, r] == 0)).sum()),
            }
        return {
            "samples": self.num_samples,
            "raters": len(self.raters),
            "annotations": len(self),
            "per_rater": per_rater,
        }


def class_order(classes) -> tuple:
    """Class names sorted by type name, then ``str`` (as :func:`agreement.core.krippendorff.encode_values` sorts)."""
    return tuple(sorted(set(classes), key=lambda v: (type(v).__name__, str(v))))


def encode_classes(data: "MultiRaterAnnotations") -> tuple[np.ndarray, tuple]:
    """Class code of every annotation row and the sorted class names.

    Classes are sorted by type name, then ``str`` (as
    :func:`agreement.core.krippendorff.encode_values` sorts), so codes do not depend
    on the order of samples, raters or annotations; a corpus that carries the
    vocabulary of a larger corpus (``data.classes``, a shard) is coded by it.

    Raises:
        ValueError: naming the first annotation without a class.
    """
    labels = data.labels.tolist()
    present = set(labels)
    if None in present:
        bad = labels.index(None)
        raise ValueError(
            f"annotation {bad} on sample {data.sample_names[data.sample_index[bad]]!r} "
            f"(rater {data.raters[data.rater_index[bad]]!r}) has no class label"
        )
    classes = class_order(present)
    if data.classes is not None:
        unknown = present.difference(data.classes)
        if unknown:
            raise ValueError(f"classes {class_order(unknown)} are not in the corpus vocabulary {data.classes}")
        classes = tuple(data.classes)
    index = {c: k for k, c in enumerate(classes)}
    codes = np.fromiter(map(index.__getitem__, labels), dtype=np.int64, count=len(labels))
    return codes, classes


def class_codes(data: "MultiRaterAnnotations") -> tuple[np.ndarray, tuple]:
    """Class codes of the rows for the agreement measures: by the corpus vocabulary when ``data`` is a
    shard of a larger corpus (``data.classes``, :func:`encode_classes`), else as
    :func:`agreement.core.krippendorff.encode_values` codes the labels (the same order)."""
    if data.classes is not None:
        return encode_classes(data)
    from agreement.core.krippendorff import encode_values

    return encode_values(data.labels, missing=())
