r"""One rater's tracks in one video, columnar: frame numbers, boxes, track ids and labels.

A *track* is the set of boxes one rater gave one object across the frames of a
video: FiftyOne's ``Detection.index`` on the frames' detections. A rater has at
most one box per track and frame; boxes are relative ``[x, y, w, h]``
(top-left corner, width, height, as FiftyOne stores them).

:class:`Tracks` holds the boxes of one rater in one video as parallel arrays
(one row per box) and validates them once, naming the video, rater, frame and
track of the first problem it finds:

* ``frames`` are whole numbers ``>= 0`` (FiftyOne numbers frames from 1);
* ``boxes`` are finite with non-negative width and height (boxes reaching past
  the image are accepted: IoU is defined for them);
* a track id appears at most once per frame.

Derived per track (:attr:`Tracks.index`, computed once): the number of boxes
``n_t``, the first and last frame, and the *track class*, the majority label of
its boxes (``None`` labels ignored; a tie goes to the label first in
``str`` order; ``None`` when no box has a label).

Canonical track order. The measures here break ties (Hungarian matching,
clustering) by the order of the tracks. So that renumbering the tracks cannot
change a result, tracks are ordered by their *content*, not by their ids: by
first frame, last frame, number of boxes, the first box's ``x, y, w, h``, the
track class, the sums of their box coordinates (plain and weighted by the frame
number), and only then by id: two tracks of one rater that agree on all of
these are in practice identical, hence interchangeable.

This module does not import FiftyOne.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Iterable, Sequence, cast

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["Tracks", "TrackIndex", "majority_labels"]


def _where(video: str | None = None, rater: str | None = None, frame: int | None = None,
          track: int | None = None) -> str:
    """A place for error messages: ``"video 'v', rater 'r', frame 3, track 7"`` with the parts that are known."""
    parts = []
    if video is not None:
        parts.append(f"video {video!r}")
    if rater is not None:
        parts.append(f"rater {rater!r}")
    if frame is not None:
        parts.append(f"frame {frame}")
    if track is not None:
        parts.append(f"track {track}")
    return ", ".join(parts) if parts else "tracks"


def _whole(values: ArrayLike, name: str, n: int | None, place: str) -> np.ndarray:
    arr = np.asarray(values)
    if arr.ndim != 1 or (n is not None and len(arr) != n):
        raise ValueError(f"{place}: {name} must be a 1-d array with one entry per box "
                         f"({n} boxes), got shape {arr.shape}")
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64)
    if arr.dtype == bool or not np.issubdtype(arr.dtype, np.number):
        raise ValueError(f"{place}: {name} must be whole numbers, got dtype {arr.dtype}")
    if np.issubdtype(arr.dtype, np.floating):
        bad = ~np.isfinite(arr) | (arr != np.round(arr))
        if bad.any():
            raise ValueError(f"{place}: {name} must be whole numbers, got {arr[np.flatnonzero(bad)[0]]!r}")
    return arr.astype(np.int64)


@dataclass(frozen=True, eq=False)
class TrackIndex:
    """Per-track summaries of one :class:`Tracks`, tracks in canonical order (see the module).

    Attributes:
        ids: ``(T,)`` the track ids in canonical order.
        of_box: ``(n,)`` each box's track as a position in ``ids``.
        length: ``(T,)`` the number of boxes (frames) of each track.
        first, last: ``(T,)`` the first and last frame of each track.
        label: ``(T,)`` object array, each track's class (majority label) or ``None``.
    """

    ids: np.ndarray
    of_box: np.ndarray
    length: np.ndarray
    first: np.ndarray
    last: np.ndarray
    label: np.ndarray

    def __len__(self) -> int:
        return len(self.ids)


def label_codes(labels: np.ndarray) -> tuple[np.ndarray, list]:
    """Codes of the labels in ``str`` order, ``-1`` for ``None``.

    Args:
        labels: ``(n,)`` labels (any objects; ``None`` for no label), compared as ``str``.

    Returns:
        ``(codes, names)``: ``codes`` ``(n,)`` int64 in ``[-1, K - 1]``, ``names`` the ``K`` distinct labels as
        ``str`` in sorted order (``names[codes[i]] == str(labels[i])``).
    """
    present = np.array([v is not None for v in labels], dtype=bool)
    names = sorted({str(v) for v in labels[present]})
    code = {v: i for i, v in enumerate(names)}
    return np.array([code[str(v)] if p else -1 for v, p in zip(labels, present, strict=True)], dtype=np.int64), names


def majority_labels(track: np.ndarray, labels: np.ndarray, n_tracks: int) -> np.ndarray:
    """The majority label of each track: ``argmax_c #{boxes of t with label c}``; ties to the label first in
    ``str`` order; ``None`` labels ignored; ``None`` for a track without a labelled box. Returns ``(T,)`` objects."""
    codes, names = label_codes(labels)
    out = np.full(n_tracks, None, dtype=object)
    K = len(names)
    keep = codes >= 0
    if K == 0 or not keep.any():
        return out
    counts = np.bincount(track[keep] * K + codes[keep], minlength=n_tracks * K).reshape(n_tracks, K)
    best = counts.argmax(axis=1)
    has = counts.max(axis=1) > 0
    out[has] = np.array(names, dtype=object)[best[has]]
    return out


@dataclass(frozen=True, eq=False)
class Tracks:
    """The boxes one rater gave in one video, one row per box (see the module for the rules).

    Attributes:
        frames: ``(n,)`` int64 frame numbers (``>= 0``).
        boxes: ``(n, 4)`` float64 relative ``[x, y, w, h]``.
        track_ids: ``(n,)`` int64 track id of each box (FiftyOne's ``Detection.index``).
        labels: ``(n,)`` object array of class names (``None`` for no class); default all ``None``.
        rater, video: names used in error messages only (optional).

    Raises:
        ValueError: naming the video, rater, frame and track: arrays of different lengths, frame numbers
            that are not whole numbers ``>= 0``, NaN or infinite coordinates, a negative width or height,
            a track id given twice on one frame.
    """

    frames: np.ndarray
    boxes: np.ndarray
    track_ids: np.ndarray
    labels: np.ndarray | Sequence | None = None
    rater: str | None = None
    video: str | None = None

    def __post_init__(self) -> None:
        place = _where(self.video, self.rater)
        boxes = np.asarray(self.boxes, dtype=np.float64)
        if boxes.ndim == 1 and boxes.size == 0:
            boxes = boxes.reshape(0, 4)
        if boxes.ndim != 2 or boxes.shape[1] != 4:
            raise ValueError(f"{place}: boxes must be an (n, 4) array of [x, y, w, h], got shape {boxes.shape}")
        n = len(boxes)
        frames = _whole(self.frames, "frames", n, place)
        ids = _whole(self.track_ids, "track_ids", n, place)
        labels = np.full(n, None, dtype=object) if self.labels is None else np.asarray(self.labels, dtype=object)
        if labels.shape != (n,):
            raise ValueError(f"{place}: labels must have one entry per box ({n}), got shape {labels.shape}")
        for name, value in (("frames", frames), ("boxes", boxes), ("track_ids", ids), ("labels", labels)):
            object.__setattr__(self, name, value)
        self._check()

    def _check(self) -> None:
        frames, boxes, ids = self.frames, self.boxes, self.track_ids
        if len(frames) and frames.min() < 0:
            i = int(np.argmin(frames))
            raise ValueError(f"{_where(self.video, self.rater, int(frames[i]), int(ids[i]))}: "
                             "frame numbers must be >= 0")
        finite = np.isfinite(boxes).all(axis=1)
        if not finite.all():
            i = int(np.flatnonzero(~finite)[0])
            raise ValueError(f"{_where(self.video, self.rater, int(frames[i]), int(ids[i]))}: "
                             f"box {boxes[i].tolist()} has NaN or infinite coordinates")
        negative = (boxes[:, 2] < 0) | (boxes[:, 3] < 0)
        if negative.any():
            i = int(np.flatnonzero(negative)[0])
            raise ValueError(f"{_where(self.video, self.rater, int(frames[i]), int(ids[i]))}: "
                             f"box {boxes[i].tolist()} has a negative width or height")
        if len(frames) > 1:
            order = np.lexsort((frames, ids))
            f, t = frames[order], ids[order]
            dup = (f[1:] == f[:-1]) & (t[1:] == t[:-1])
            if dup.any():
                k = int(np.flatnonzero(dup)[0])
                raise ValueError(f"{_where(self.video, self.rater, int(f[k]), int(t[k]))}: "
                                 "the track id is given to two boxes on the same frame "
                                 f"({int(dup.sum())} such repeat(s)); a track has at most one box per frame")

    # ------------------------------------------------------------------ constructors
    @classmethod
    def empty(cls, rater: str | None = None, video: str | None = None) -> "Tracks":
        """No box: a rater assigned to the video who drew nothing."""
        return cls(np.zeros(0, np.int64), np.zeros((0, 4)), np.zeros(0, np.int64), None, rater, video)

    @classmethod
    def from_records(cls, records: Iterable[tuple], rater: str | None = None,
                     video: str | None = None) -> "Tracks":
        """From ``(frame, track_id, label, [x, y, w, h])`` tuples (``label`` may be ``None``)."""
        rows = list(records)
        if not rows:
            return cls.empty(rater, video)
        frames, ids, labels, boxes = zip(*rows, strict=False)
        return cls(np.asarray(frames), np.asarray(boxes, dtype=np.float64).reshape(-1, 4),
                   np.asarray(ids), np.asarray(labels, dtype=object), rater, video)

    def with_names(self, rater: str | None = None, video: str | None = None) -> "Tracks":
        """The same boxes with other names for messages."""
        return Tracks(self.frames, self.boxes, self.track_ids, self.labels, rater, video)

    # ------------------------------------------------------------------ summaries
    def __len__(self) -> int:
        return len(self.frames)

    @property
    def n_tracks(self) -> int:
        """The number of distinct track ids."""
        return len(self.index)

    @cached_property
    def index(self) -> TrackIndex:
        """Per-track summaries, tracks in canonical order (computed once)."""
        raw_ids, raw_of = np.unique(self.track_ids, return_inverse=True)
        T = len(raw_ids)
        length = np.bincount(raw_of, minlength=T)
        first = np.full(T, np.iinfo(np.int64).max, dtype=np.int64)
        np.minimum.at(first, raw_of, self.frames)
        last = np.full(T, np.iinfo(np.int64).min, dtype=np.int64)
        np.maximum.at(last, raw_of, self.frames)
        label = majority_labels(raw_of, cast(np.ndarray, self.labels), T)  # an array after __post_init__
        # the box on each track's first frame
        at_first = np.flatnonzero(self.frames == first[raw_of])
        first_box = np.zeros((T, 4))
        first_box[raw_of[at_first]] = self.boxes[at_first]
        label_key = np.array([str(v) if v is not None else "" for v in label], dtype=object)
        label_rank = np.unique(label_key, return_inverse=True)[1] if T else np.zeros(0, np.int64)
        # content digests: sums of the coordinates, plain and frame-weighted, in (track, frame) order
        by = np.lexsort((self.frames, raw_of))
        weights = np.concatenate([self.boxes[by], self.boxes[by] * self.frames[by, None]], axis=1)
        digest = [np.bincount(raw_of[by], weights=weights[:, c], minlength=T) for c in range(8)]
        order = np.lexsort((raw_ids, *digest[::-1], label_rank, first_box[:, 3], first_box[:, 2],
                            first_box[:, 1], first_box[:, 0], length, last, first))
        rank = np.empty(T, dtype=np.int64)
        rank[order] = np.arange(T)
        return TrackIndex(raw_ids[order], rank[raw_of], length[order], first[order], last[order], label[order])
