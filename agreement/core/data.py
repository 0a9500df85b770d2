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

from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Mapping, Sequence, cast

import numpy as np

from agreement.core.kinds import column_kind, column_kinds, is_column
from agreement.core.validation import (
    COORDINATES,
    RepairReport,
    check_image_sizes,
    check_relative_boxes,
    columns_to_relative,
)

__all__ = ["AnnotationSet", "MultiRaterAnnotations", "encode_classes", "class_order", "class_codes"]

Polygon = list  # list of rings, each an (k, 2) float array of relative (x, y)

#: The positional order of the optional geometry columns of :class:`AnnotationSet` (after boxes, labels, ids).
_SET_POSITIONAL = ("polygons", "masks", "keypoints")

#: The positional order of :class:`MultiRaterAnnotations`' constructor, as it was before the columns became
#: one mapping (kept so that positional calls keep working).
_CORPUS_POSITIONAL = ("sample_ids", "raters", "assigned", "boxes", "labels", "label_ids", "sample_index",
                      "rater_index", "image_sizes", "polygons", "sample_names", "masks", "keypoints", "cuboids",
                      "points3d", "polylines3d", "segments", "num_points", "classes", "coordinates", "box_policy")


def _keyword_columns(owner: str, positional: Sequence[str], args: tuple, kwargs: dict) -> dict:
    """``args`` named by ``positional`` and merged with ``kwargs`` (a name given twice is an error)."""
    if len(args) > len(positional):
        raise TypeError(f"{owner}() takes at most {len(positional)} positional arguments ({len(args)} given)")
    given = dict(zip(positional, args, strict=False))
    twice = set(given) & set(kwargs)
    if twice:
        raise TypeError(f"{owner}() got multiple values for argument {sorted(twice)[0]!r}")
    return {**given, **kwargs}


def _split_columns(given: dict, geometry: Mapping[str, Any] | None) -> dict:
    """The geometry mapping: ``geometry`` updated by the declared columns among ``given`` (removed from it;
    ``None`` drops a column); any other name left in ``given`` is an error."""
    columns = dict(geometry or {})
    for name in [n for n in given if is_column(n)]:
        value = given.pop(name)
        if value is None:
            columns.pop(name, None)
        else:
            columns[name] = value
    for name in columns:
        column_kind(name)  # an undeclared column is refused, naming the declared ones
    return columns


def _column_getattr(obj: Any, name: str) -> Any:
    """A declared geometry column of ``obj`` (``None`` when it has none); AttributeError for other names."""
    if name.startswith("__") or not is_column(name):
        raise AttributeError(f"{type(obj).__name__!r} object has no attribute {name!r}")
    return obj.__dict__.get("geometry", {}).get(name)


@dataclass(frozen=True, init=False)
class AnnotationSet:
    """One rater's annotations on one sample (possibly empty).

    Attributes:
        boxes: ``(n, 4)`` float64, relative ``[x, y, w, h]`` (pixels for a
            corpus built with ``coordinates="pixels"``; a set is not checked
            until a corpus is built from it).
        labels: ``(n,)`` object array of class names.
        ids: ``(n,)`` object array of label ids (``None`` where unknown), used
            to write per-label results back.
        geometry: the optional geometry columns of the set, by name (declared
            in :mod:`agreement.core.kinds`), each with one entry per annotation;
            read as attributes (``aset.polygons``: ``None`` when absent) and
            given as keywords (``polygons=``, ``masks=``, ``keypoints=``, also
            positionally in that order, or any declared column):

            * ``polygons``: a length-``n`` list; entry ``i`` is ``None`` or a
              list of ``(k, 2)`` relative point arrays (rings) of annotation ``i``;
            * ``masks``: a length-``n`` list; entry ``i`` is ``None`` or a 2-D
              boolean instance mask spanning box ``i``;
            * ``keypoints``: an ``(n, K, 2)`` float64 array of relative
              ``(x, y)`` points, NaN where a point is not labelled.
    """

    boxes: np.ndarray
    labels: np.ndarray
    ids: np.ndarray
    geometry: Mapping[str, Any] = field(default_factory=dict)

    def __init__(self, boxes: Any, labels: Any, ids: Any, *columns: Any,
                 geometry: Mapping[str, Any] | None = None, **named: Any) -> None:
        given = _keyword_columns("AnnotationSet", _SET_POSITIONAL, columns, named)
        geo = _split_columns(given, geometry)
        if given:
            raise TypeError(f"AnnotationSet() got an unexpected keyword argument {sorted(given)[0]!r}")
        boxes = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
        n = len(boxes)
        object.__setattr__(self, "boxes", boxes)
        object.__setattr__(self, "labels", _object_array(labels, n, "labels"))
        object.__setattr__(self, "ids", _object_array(ids, n, "ids") if ids is not None
                           else np.full(n, None, dtype=object))
        object.__setattr__(self, "geometry", {k.name: k.check(geo[k.name], n, "set")
                                              for k in column_kinds() if k.per == "row" and k.name in geo})

    def __getattr__(self, name: str) -> Any:
        return _column_getattr(self, name)

    def __len__(self) -> int:
        return len(self.boxes)

    @classmethod
    def empty(cls) -> "AnnotationSet":
        """An explicit "no object" set."""
        return cls(np.zeros((0, 4)), np.zeros(0, dtype=object), np.zeros(0, dtype=object))


def _object_array(values: Sequence | np.ndarray, n: int, name: str) -> np.ndarray:
    arr = np.empty(n, dtype=object)
    values = list(values)
    if len(values) != n:
        raise ValueError(f"{name} has {len(values)} entries for {n} boxes")
    arr[:] = values
    return arr


@dataclass(frozen=True, init=False)
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
        sample_names: optional ``(S,)`` human-readable names (file names) used
            in error messages; defaults to ``sample_ids``.
        geometry: the optional geometry columns, by name, each declared once in
            :mod:`agreement.core.kinds` (which checks, reorders, subsets, joins
            and converts it from pixels). Read as attributes (``data.keypoints``:
            ``None`` when the corpus has none) and given as keywords (or, for
            the built-in ones, positionally in the order below):

            * ``polygons``, ``masks``, ``keypoints``: as in :class:`AnnotationSet`,
              one entry per annotation;
            * ``cuboids``: ``(N, 9)`` float64 3D boxes ``[x, y, z, dx, dy, dz,
              rx, ry, rz]`` (FiftyOne's ``location``, ``dimensions`` and XYZ
              Euler ``rotation``, scene units). 3D rows have no 2D box: their
              ``boxes`` are NaN, so 2D measures refuse them;
            * ``points3d``: ``(N, 3)`` 3D point annotations (scene units);
            * ``polylines3d``: a length-N list of lists of ``(k, 3)`` 3D
              polylines (one annotation may hold several lines);
            * ``segments``: a length-N list of int arrays: the point-cloud
              indices an annotation covers; ``num_points`` gives, per sample,
              the size of its point cloud (for range checks and Jaccard).
        classes: ``None`` or the class vocabulary of the whole corpus this one
            is a part of (a shard of a streamed run), sorted as
            :func:`encode_classes` sorts: class codes are then the same in
            every part, whichever classes a part happens to hold.
        coordinates: init-only, ``"relative"`` (default) or ``"pixels"``. With
            ``"pixels"``, ``boxes`` and the columns with image coordinates
            (``polygons``, ``keypoints``) are in pixels and are divided by their
            sample's ``image_sizes`` ``(width, height)`` when the corpus is built
            (a sample with annotations and no positive size is refused); the
            corpus then holds relative coordinates.
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
    image_sizes: np.ndarray  # (with sample_names) optional in the constructor; always arrays once it is built
    sample_names: np.ndarray
    geometry: Mapping[str, Any] = field(default_factory=dict)
    classes: tuple | None = None
    offsets: np.ndarray = field(init=False, repr=False)
    repairs: RepairReport = field(init=False, repr=False, compare=False)

    def __init__(self, *args: Any, geometry: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        given = _keyword_columns("MultiRaterAnnotations", _CORPUS_POSITIONAL, args, kwargs)
        geo = _split_columns(given, geometry)
        coordinates, box_policy = given.pop("coordinates", "relative"), given.pop("box_policy", "error")
        required = ("sample_ids", "raters", "assigned", "boxes", "labels", "label_ids", "sample_index", "rater_index")
        lacking = [n for n in required if n not in given]
        if lacking:
            raise TypeError(f"MultiRaterAnnotations() missing required argument {lacking[0]!r}")
        for name in ("image_sizes", "sample_names", "classes"):
            given.setdefault(name, None)
        unknown = set(given) - set(required) - {"image_sizes", "sample_names", "classes"}
        if unknown:
            raise TypeError(f"MultiRaterAnnotations() got an unexpected keyword argument {sorted(unknown)[0]!r}")
        for name, value in given.items():
            object.__setattr__(self, name, value)
        object.__setattr__(self, "geometry", geo)
        self._build(coordinates, box_policy)

    def __getattr__(self, name: str) -> Any:
        return _column_getattr(self, name)

    def _build(self, coordinates: str, box_policy: str) -> None:
        """Checks and sorts the columns (the constructor's work; see the class docstring)."""
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
        self._set_geometry({k.name: k.check(self.geometry[k.name], N if k.per == "row" else S, "corpus")
                            for k in column_kinds() if k.name in self.geometry})
        if self.classes is not None:
            object.__setattr__(self, "classes", tuple(self.classes))
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
        boxes, keep = self._relative_boxes(boxes, s_idx, r_idx, labels, sizes, names, coordinates=coordinates,
                                           box_policy=box_policy)
        if not keep.all():  # box_policy="drop"
            boxes, labels, ids, s_idx, r_idx = self._keep_rows(keep, boxes, labels, ids, s_idx, r_idx)
            N = len(boxes)
        cell = s_idx * R + r_idx
        order = np.argsort(cell, kind="stable")
        if N and np.any(order != np.arange(N)):
            boxes, labels, ids, s_idx, r_idx, cell = (
                boxes[order], labels[order], ids[order], s_idx[order], r_idx[order], cell[order]
            )
            self._take_rows(order)
        for name, value in (
            ("sample_ids", sample_ids), ("raters", tuple(self.raters)), ("assigned", assigned),
            ("boxes", boxes), ("labels", labels), ("label_ids", ids), ("sample_index", s_idx),
            ("rater_index", r_idx), ("image_sizes", sizes), ("sample_names", names),
        ):
            object.__setattr__(self, name, value)
        object.__setattr__(self, "offsets", np.searchsorted(cell, np.arange(S * R + 1)))

    def _set_geometry(self, columns: Mapping[str, Any]) -> None:  # the frozen corpus' columns, while it is built
        object.__setattr__(self, "geometry", dict(columns))
    def _row_columns(self) -> list:
        """The declarations of the per-annotation columns this corpus holds, in declaration order."""
        return [k for k in column_kinds() if k.per == "row" and k.name in self.geometry]

    def _take_rows(self, index: np.ndarray) -> None:
        """The per-annotation columns restricted to (or reordered by) the rows ``index``."""
        self._set_geometry({**self.geometry, **{k.name: k.take(self.geometry[k.name], index)
                                                for k in self._row_columns()}})

    def _relative_boxes(self, boxes: np.ndarray, s_idx: np.ndarray, r_idx: np.ndarray, labels: np.ndarray,
                        sizes: np.ndarray, names: Any, coordinates: str, box_policy: str) -> tuple[Any, ...]:
        """``(boxes, keep)``: the boxes checked relative (pixel boxes and the columns with image coordinates
        divided by the image sizes first), those past the border under ``box_policy``; the repairs in
        ``self.repairs``."""
        object.__setattr__(self, "repairs", RepairReport())
        check_image_sizes(sizes, names)
        if coordinates == "pixels":
            boxes, columns = columns_to_relative(boxes, s_idx, sizes, names, columns=self.geometry)
            self._set_geometry(columns)
        return check_relative_boxes(boxes, s_idx, r_idx, names, self.raters, labels=labels, policy=box_policy,
                                    report=self.repairs)

    def _keep_rows(self, keep: np.ndarray, *columns: np.ndarray) -> tuple[np.ndarray, ...]:
        """``columns`` and the geometry columns restricted to the rows ``keep``."""
        self._take_rows(idx := np.flatnonzero(keep))
        return tuple(c[idx] for c in columns)

    # ------------------------------------------------------------------ sizes
    @property
    def num_samples(self) -> int:
        """The number of samples ``S`` (the length of ``sample_ids``)."""
        return len(self.sample_ids)

    @property
    def num_raters(self) -> int:
        """The number of raters ``R`` (the length of ``raters``)."""
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
        """Rater ``r``'s set on sample ``s`` (with its rows of every geometry column); ``None``: not assigned."""
        if isinstance(r, str):
            r = self.raters.index(r)
        if not self.assigned[s, r]:
            return None
        sl = self.rows(s, r)
        return AnnotationSet(self.boxes[sl], self.labels[sl], self.label_ids[sl],
                             geometry={k.name: k.take(self.geometry[k.name], sl) for k in self._row_columns()})

    def sets(self, s: int) -> dict[str, AnnotationSet]:
        """The sets of the raters assigned to sample ``s``, by rater name."""
        # get() returns a set (not None) for every rater assigned to the sample
        return {self.raters[r]: cast(AnnotationSet, self.get(s, r)) for r in np.flatnonzero(self.assigned[s]).tolist()}

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

        A rater missing from a sample's mapping, or mapped to ``None``, is not assigned to it (implicit absence); an
        empty set is explicit absence. A geometry column that some sets have gets, in the others, the entries its
        declaration gives for absent geometry (``None``, or unlabelled keypoints). ``coordinates="pixels"``: the
        sets' boxes and the columns with image coordinates are in pixels of ``image_sizes``; ``box_policy``: boxes
        past the border (see :class:`MultiRaterAnnotations` for both).

        Raises:
            ValueError: a sample with an unknown rater, a count of mappings other than of samples, or sets
                whose geometry cannot be joined (keypoint skeletons of different lengths).
        """
        raters = tuple(sorted(raters))
        rindex = {r: i for i, r in enumerate(raters)}
        S = len(sample_ids)
        if len(sets) != S:
            raise ValueError(f"got {len(sets)} rater mappings for {S} samples")
        assigned = np.zeros((S, len(raters)), dtype=bool)
        boxes, s_idx, r_idx, kept = [], [], [], []
        labels: list[Any] = []
        ids: list[Any] = []
        present = {name for m in sets for v in m.values() if v is not None for name in v.geometry}
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
                kept.append(aset)
        geometry = {k.name: k.join_sets([(len(a), a.geometry.get(k.name)) for a in kept if len(a)])
                    for k in column_kinds() if k.name in present}
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
            sample_names=sample_names,
            geometry=geometry,
            coordinates=coordinates,
            box_policy=box_policy,
        )

    @classmethod
    def concat(cls, parts: Sequence["MultiRaterAnnotations"]) -> "MultiRaterAnnotations":
        """The corpus of ``parts`` (disjoint samples, the same raters), samples in part order.

        Each part keeps its rows in order; ``sample_index`` is shifted by the
        samples before it. Geometry columns are kept when every part has them
        (joined as their declarations join them: keypoint skeletons of
        different lengths are padded with unlabelled points).

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
        geometry = {k.name: k.join([p.geometry[k.name] for p in parts])
                    for k in column_kinds() if all(k.name in p.geometry for p in parts)}
        return MultiRaterAnnotations(
            sample_ids=np.concatenate([p.sample_ids for p in parts]),
            raters=first.raters,
            assigned=np.concatenate([p.assigned for p in parts]),
            boxes=np.concatenate([p.boxes for p in parts]),
            labels=np.concatenate([p.labels for p in parts]),
            label_ids=np.concatenate([p.label_ids for p in parts]),
            sample_index=np.concatenate([p.sample_index + k for p, k in zip(parts, shift, strict=False)]),
            rater_index=np.concatenate([p.rater_index for p in parts]),
            image_sizes=np.concatenate([p.image_sizes for p in parts]),
            sample_names=np.concatenate([p.sample_names for p in parts]),
            geometry=geometry,
            classes=first.classes,
        )

    def select_samples(self, keep: np.ndarray) -> "MultiRaterAnnotations":
        """The corpus restricted to samples ``keep`` (bool mask or indices), in that order."""
        keep = np.asarray(keep)
        idx = np.flatnonzero(keep) if keep.dtype == bool else keep.astype(np.intp)
        new_pos = np.full(self.num_samples, -1, dtype=np.intp)
        new_pos[idx] = np.arange(len(idx))
        rows = np.flatnonzero(new_pos[self.sample_index] >= 0)
        geometry = {k.name: k.take(self.geometry[k.name], rows if k.per == "row" else idx)
                    for k in column_kinds() if k.name in self.geometry}
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
            sample_names=self.sample_names[idx],
            geometry=geometry,
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


def class_order(classes: Iterable[Any]) -> tuple:
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


def class_codes(data: "MultiRaterAnnotations") -> tuple[np.ndarray, Sequence[Any]]:
    """Class codes of the rows for the agreement measures: by the corpus vocabulary when ``data`` is a
    shard of a larger corpus (``data.classes``, :func:`encode_classes`), else as
    :func:`agreement.core.krippendorff.encode_values` codes the labels (the same order)."""
    if data.classes is not None:
        return encode_classes(data)
    from agreement.core.krippendorff import encode_values

    return encode_values(data.labels, missing=())
