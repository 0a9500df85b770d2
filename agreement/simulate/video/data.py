"""One video's labelling as columnar arrays: boxes per frame with track ids, and temporal segments.

A :class:`VideoLabels` holds what one rater (or the reference) drew on one
video of ``num_frames`` frames:

* frame labels, one row per box: the frame number (1-based, FiftyOne's
  convention: frames ``1 .. num_frames``), the track id (FiftyOne's
  ``Detection.index``, CVAT's ``<track id>``), the class label and the box in
  relative ``[x, y, w, h]`` (top-left corner, width, height, in ``[0, 1]``);
* temporal segments (FiftyOne's ``TemporalDetection``): ``[first, last]``
  frame numbers, inclusive, with a label.

Rows are kept sorted by ``(frame, track)`` so that a frame's boxes are one
contiguous slice. A track has at most one box per frame.

``sources`` / ``segment_sources`` trace a simulated rater's rows back to the
reference: the row index of the reference box (or segment) each row was made
from, ``-1`` for something the rater invented (a spurious track). A reference
has ``sources = arange(n)``.

This module does not import FiftyOne.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import cast

import numpy as np

__all__ = ["VideoLabels", "check_video"]


def _objects(values, n: int, what: str) -> np.ndarray:
    if isinstance(values, np.ndarray) and values.dtype == object and values.shape == (n,):
        return values
    out = np.empty(n, dtype=object)
    values = list(values) if values is not None else [None] * n
    if len(values) != n:
        raise ValueError(f"{what} has {len(values)} entries for {n} rows")
    out[:] = values
    return out


def _ints(values, n: int | None, what: str) -> np.ndarray:
    if isinstance(values, np.ndarray) and values.dtype.kind in "iu":
        if n is not None and values.size != n:
            raise ValueError(f"{what} has {values.size} entries for {n} rows")
        return values.astype(np.int64, copy=False).reshape(-1)
    arr = np.asarray(values if values is not None else [], dtype=np.float64).reshape(-1)
    if n is not None and len(arr) != n:
        raise ValueError(f"{what} has {len(arr)} entries for {n} rows")
    if not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr)):
        raise ValueError(f"{what} must be integers")
    return arr.astype(np.int64)


@dataclass(frozen=True, eq=False)
class VideoLabels:
    """One video's boxes (with track ids) and temporal segments, as columnar arrays.

    Attributes:
        name: the video's file name (e.g. ``"video_0001.mp4"``); videos are
            matched across raters by it.
        num_frames: ``N >= 1``, the number of frames; frame numbers are
            ``1 .. N``.
        frames: ``(n,)`` int64 frame number of each box.
        tracks: ``(n,)`` int64 track id of each box.
        labels: ``(n,)`` object array of class names.
        boxes: ``(n, 4)`` float64 relative ``[x, y, w, h]``.
        segments: ``(m, 2)`` int64 ``[first, last]`` frame numbers.
        segment_labels: ``(m,)`` object array of the segments' classes.
        frame_rate: frames per second.
        width: frame width in pixels.
        height: frame height in pixels.
        sources: ``(n,)`` int64 reference row of each box (``-1``: invented),
            or ``None`` when not traced.
        segment_sources: ``(m,)`` int64 reference segment of each segment, or
            ``None``.
    """

    name: str
    num_frames: int
    frames: np.ndarray
    tracks: np.ndarray
    labels: np.ndarray
    boxes: np.ndarray
    segments: np.ndarray | None = None
    segment_labels: np.ndarray | None = None
    frame_rate: float = 30.0
    width: int = 640
    height: int = 480
    sources: np.ndarray | None = None
    segment_sources: np.ndarray | None = None

    def __post_init__(self) -> None:
        boxes = np.asarray(self.boxes, dtype=np.float64).reshape(-1, 4)
        n = len(boxes)
        set_ = lambda k, v: object.__setattr__(self, k, v)
        set_("boxes", boxes)
        set_("frames", _ints(self.frames, n, "frames"))
        set_("tracks", _ints(self.tracks, n, "tracks"))
        set_("labels", _objects(self.labels, n, "labels"))
        segs = _ints(self.segments, None, "segments").reshape(-1, 2)
        set_("segments", segs)
        set_("segment_labels", _objects(self.segment_labels if self.segment_labels is not None else
                                        ([] if len(segs) == 0 else None), len(segs), "segment_labels"))
        if self.sources is not None:
            set_("sources", _ints(self.sources, n, "sources"))
        if self.segment_sources is not None:
            set_("segment_sources", _ints(self.segment_sources, len(segs), "segment_sources"))
        set_("num_frames", int(self.num_frames))
        set_("width", int(self.width))
        set_("height", int(self.height))
        set_("frame_rate", float(self.frame_rate))

    def __len__(self) -> int:
        return len(self.boxes)

    @property
    def num_tracks(self) -> int:
        """The number of distinct track ids."""
        return len(np.unique(self.tracks))

    def frame_bounds(self) -> np.ndarray:
        """``(N + 1,)`` offsets: the boxes of frame ``t`` are rows ``bounds[t - 1]:bounds[t]``.

        Needs rows sorted by frame (as :meth:`sorted` and every function of
        this package return them).
        """
        return np.searchsorted(self.frames, np.arange(1, self.num_frames + 2), side="left")

    def sorted(self) -> VideoLabels:
        """The same labels with rows sorted by ``(frame, track)`` (stable)."""
        order = np.lexsort((self.tracks, self.frames))
        if np.array_equal(order, np.arange(len(order))):
            return self
        return self.take(order)

    def take(self, rows: np.ndarray) -> VideoLabels:
        """A copy keeping the box rows ``rows`` (indices or a boolean mask), in that order."""
        rows = np.asarray(rows)
        return replace(
            self, frames=self.frames[rows], tracks=self.tracks[rows], labels=self.labels[rows],
            boxes=self.boxes[rows], sources=None if self.sources is None else self.sources[rows],
        )


def check_video(video: VideoLabels) -> None:
    """Validates one video's labels; the error names the video, the frame and the track.

    Checks: ``num_frames >= 1``; frame numbers in ``[1, num_frames]``; finite
    boxes with ``w, h >= 0``; one box per ``(frame, track)``; rows sorted by
    ``(frame, track)``; segments with ``1 <= first <= last <= num_frames``;
    a positive frame rate and frame size.

    Raises:
        ValueError: the first problem found.
    """
    where = f"video {video.name!r}"
    if video.num_frames < 1:
        raise ValueError(f"{where}: num_frames must be >= 1, got {video.num_frames}")
    if not (video.frame_rate > 0 and np.isfinite(video.frame_rate)) or video.width < 1 or video.height < 1:
        raise ValueError(f"{where}: frame rate and size must be positive, got {video.frame_rate} fps, "
                         f"{video.width} x {video.height}")
    bad = (video.frames < 1) | (video.frames > video.num_frames)
    bad |= ~np.isfinite(video.boxes).all(axis=1) | (video.boxes[:, 2] < 0) | (video.boxes[:, 3] < 0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"{where}, frame {int(video.frames[i])}, track {int(video.tracks[i])}: box "
                         f"{video.boxes[i].tolist()} is not a finite [x, y, w, h] with w, h >= 0 on a frame in "
                         f"[1, {video.num_frames}]")
    if len(video) > 1:
        df, dt = np.diff(video.frames), np.diff(video.tracks)
        unsorted = (df < 0) | ((df == 0) & (dt < 0))
        dup = (df == 0) & (dt == 0)
        if unsorted.any():
            i = int(np.flatnonzero(unsorted)[0]) + 1
            raise ValueError(f"{where}: rows are not sorted by (frame, track) at row {i}; use VideoLabels.sorted()")
        if dup.any():
            i = int(np.flatnonzero(dup)[0]) + 1
            raise ValueError(f"{where}, frame {int(video.frames[i])}: track {int(video.tracks[i])} has two boxes")
    s = cast(np.ndarray, video.segments)  # arrays after __post_init__
    bad_seg = (s[:, 0] < 1) | (s[:, 1] > video.num_frames) | (s[:, 0] > s[:, 1])
    if bad_seg.any():
        i = int(np.flatnonzero(bad_seg)[0])
        raise ValueError(f"{where}: segment {i} {s[i].tolist()} ({cast(np.ndarray, video.segment_labels)[i]!r}) is not "
                         f"[first, last] with 1 <= first <= last <= {video.num_frames}")
