r"""All raters' tracks of one video in one index: detections by frame, same-frame box IoU, track-pair sums.

Every measure of this package starts from the same few arrays, computed once
per video by :class:`VideoTracks`:

* the *detections* of every rater, sorted by frame, then rater (in name
  order), then track (canonical order, :mod:`agreement.methods.tracks.data`);
  a *global track* number ``t`` runs over the raters' tracks in that order;
* the IoU of every two detections on the same frame that overlap
  (``IoU > 0``; :func:`agreement.geometry.boxes.paired_iou`), as pairs
  ``(i, j)`` with ``i < j``, ordered by frame, ``i``, ``j``;
* for every two tracks ``s < t`` that share a frame, the sum of the IoU of
  their boxes over the frames they share, ``S_st``, and the number of those
  frames, ``C_st``.

From these the **spatio-temporal IoU** of two tracks, with ``F(t)`` the frames
of track ``t`` and ``|F(t)| = n_t``:

.. math::

    \mathrm{STIoU}(s, t) = \frac{\sum_{f \in F(s) \cup F(t)} \mathrm{IoU}(b_s(f), b_t(f))}{|F(s) \cup F(t)|}
                         = \frac{S_{st}}{n_s + n_t - C_{st}}

(the IoU is 0 on a frame where one of the tracks has no box). Range
``[0, 1]``: 1 for two tracks with identical boxes on identical frames, 0 for
tracks that never overlap (on disjoint frames in particular). Symmetric.

Box IoU is computed for every same-frame pair of a video at once, by one
``paired_iou`` call (no Python work per frame or per pair of tracks); the sums
``S_st`` are accumulated per block of consecutive frames of about 256 boxes,
then over the blocks (a fixed order of additions, whatever the video's size).

This module does not import FiftyOne.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Mapping, cast

import numpy as np

from agreement.geometry.boxes import paired_iou
from agreement.methods.tracks.data import Tracks

__all__ = ["VideoTracks", "RaterPair", "spatio_temporal_iou"]

#: Boxes per block of frames whose IoU sums are accumulated together before the sum over blocks.
_BLOCK = 256


@dataclass(frozen=True, eq=False)
class RaterPair:
    """The detections of a reference rater ``g`` and another rater ``h`` in one video, and their overlaps.

    Detections are numbered within each rater (``0 .. n-1``) in frame order; tracks are each rater's tracks in
    canonical order.

    Attributes:
        g_frame, g_track: ``(n_g,)`` frame and track of each of ``g``'s detections (sorted by frame, track).
        h_frame, h_track: the same for ``h``.
        g_len, h_len: ``(T_g,)``, ``(T_h,)`` boxes per track.
        i, j, iou: the overlapping same-frame detection pairs (``g``'s ``i``, ``h``'s ``j``, ``IoU > 0``),
            sorted by ``i`` then ``j`` (so by frame).
    """

    g_frame: np.ndarray
    g_track: np.ndarray
    h_frame: np.ndarray
    h_track: np.ndarray
    g_len: np.ndarray
    h_len: np.ndarray
    i: np.ndarray
    j: np.ndarray
    iou: np.ndarray


def _same_frame_blocks(frame: np.ndarray) -> list[tuple[int, int]]:
    """``(start, stop)`` row ranges of whole frames, about ``_BLOCK`` rows each (a larger frame alone)."""
    n = len(frame)
    if n == 0:
        return []
    starts = np.flatnonzero(np.r_[True, frame[1:] != frame[:-1]])
    block = starts // _BLOCK
    cut = starts[np.r_[True, block[1:] != block[:-1]]]
    bounds = np.r_[cut, n]
    return list(zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True))


def _same_frame_pairs(frame: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every two rows ``i < j`` of the same frame (``frame`` sorted), ordered by ``i`` then ``j``."""
    n = len(frame)
    if n < 2:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    starts = np.flatnonzero(np.r_[True, frame[1:] != frame[:-1]])
    stop = np.repeat(np.r_[starts[1:], n], np.diff(np.r_[starts, n]))  # the end of each row's frame
    count = stop - np.arange(n) - 1  # partners after each row in its frame
    ii = np.repeat(np.arange(n, dtype=np.int64), count)
    first = np.cumsum(count) - count  # each row's first pair
    jj = ii + 1 + (np.arange(len(ii), dtype=np.int64) - np.repeat(first, count))
    return ii, jj


@dataclass(frozen=True, eq=False)
class VideoTracks:
    """The raters' tracks of one video, indexed once (see the module).

    Attributes:
        raters: the raters assigned to the video, in name order (a rater with no box is assigned).
        tracks: each rater's :class:`Tracks`.
        video: the video's name, for messages (optional).
    """

    raters: tuple[str, ...]
    tracks: tuple[Tracks, ...]
    video: str | None = None

    @classmethod
    def build(cls, tracks_by_rater: Mapping[str, Tracks], video: str | None = None) -> "VideoTracks":
        """Indexes ``{rater: Tracks}`` (raters sorted by name; the mapping's order does not matter).

        Raises:
            ValueError: a value that is not a :class:`Tracks`.
        """
        names = sorted(tracks_by_rater, key=str)
        for r in names:
            if not isinstance(tracks_by_rater[r], Tracks):
                raise ValueError(f"video {video!r}: the tracks of rater {r!r} must be a Tracks, "
                                 f"got {type(tracks_by_rater[r]).__name__}")
        return cls(tuple(str(r) for r in names), tuple(tracks_by_rater[r] for r in names), video)

    # ------------------------------------------------------------------ tracks
    @cached_property
    def track_start(self) -> np.ndarray:
        """``(R + 1,)`` rater ``r``'s tracks are the global tracks ``track_start[r] .. track_start[r + 1] - 1``."""
        start: np.ndarray = np.r_[0, np.cumsum([t.n_tracks for t in self.tracks])].astype(np.int64)
        return start

    @property
    def n_tracks(self) -> int:
        """The number of tracks of all raters."""
        return int(self.track_start[-1])

    @cached_property
    def track_rater(self) -> np.ndarray:
        """``(T,)`` the rater of each global track."""
        return np.repeat(np.arange(len(self.raters)), np.diff(self.track_start))

    @cached_property
    def track_len(self) -> np.ndarray:
        """``(T,)`` the number of boxes (frames) of each global track."""
        return np.concatenate([t.index.length for t in self.tracks] + [np.zeros(0, np.int64)])

    @cached_property
    def track_label(self) -> np.ndarray:
        """``(T,)`` each global track's class (majority label) or ``None``."""
        return np.concatenate([t.index.label for t in self.tracks] + [np.zeros(0, dtype=object)])

    @cached_property
    def track_id(self) -> np.ndarray:
        """``(T,)`` each global track's id (unique within its rater only)."""
        return np.concatenate([t.index.ids for t in self.tracks] + [np.zeros(0, np.int64)])

    def track_of(self, rater: int, track_id: int) -> int:
        """The global track of a rater's track id (``KeyError`` if the rater has no such track)."""
        ids = self.tracks[rater].index.ids
        hit = np.flatnonzero(ids == track_id)
        if not len(hit):
            raise KeyError(f"rater {self.raters[rater]!r} has no track {track_id}")
        return int(self.track_start[rater] + hit[0])

    # ------------------------------------------------------------------ detections
    @cached_property
    def _detections(self) -> tuple[np.ndarray, ...]:
        frame = np.concatenate([t.frames for t in self.tracks] + [np.zeros(0, np.int64)])
        rater = np.repeat(np.arange(len(self.raters)), [len(t) for t in self.tracks]).astype(np.int64)
        track = np.concatenate([t.index.of_box + s for t, s in zip(self.tracks, self.track_start[:-1], strict=True)]
                               + [np.zeros(0, np.int64)])
        boxes = np.concatenate([t.boxes for t in self.tracks] + [np.zeros((0, 4))])
        labels = np.concatenate([cast(np.ndarray, t.labels) for t in self.tracks] + [np.zeros(0, dtype=object)])
        order = np.lexsort((track, frame))  # the global track order already follows the rater order
        return frame[order], rater[order], track[order], boxes[order], labels[order]

    @property
    def det_frame(self) -> np.ndarray:
        """``(D,)`` frame of every detection (box), detections sorted by frame then global track."""
        return self._detections[0]

    @property
    def det_rater(self) -> np.ndarray:
        """``(D,)`` rater index of every detection."""
        return self._detections[1]

    @property
    def det_track(self) -> np.ndarray:
        """``(D,)`` global track index of every detection."""
        return self._detections[2]

    @property
    def det_box(self) -> np.ndarray:
        """``(D, 4)`` box of every detection."""
        return self._detections[3]

    @property
    def det_label(self) -> np.ndarray:
        """``(D,)`` label of every detection (object array, ``None`` allowed)."""
        return self._detections[4]

    # ------------------------------------------------------------------ overlaps
    @cached_property
    def _overlaps(self) -> tuple[np.ndarray, ...]:
        """Same-frame detection pairs with IoU > 0, and per track pair the IoU sum and the shared frames.

        Every same-frame pair ``i < j`` is listed at once (ordered by ``i``, then ``j``) and its IoU computed
        by one :func:`agreement.geometry.boxes.paired_iou` (bit for bit ``pairwise_iou``'s); the IoU sums of a
        track pair are summed per block of frames (:func:`_same_frame_blocks`), then over the blocks in order."""
        frame, track, boxes = self.det_frame, self.det_track, self.det_box
        T = max(self.n_tracks, 1)
        empty_i, empty_f = np.zeros(0, np.int64), np.zeros(0)
        ii, jj = _same_frame_pairs(frame)
        if not len(ii):
            return empty_i, empty_i, empty_f, empty_i, empty_i, empty_f, empty_i
        iou = paired_iou(boxes[ii], boxes[jj])
        bounds = np.asarray([b for b, _ in _same_frame_blocks(frame)], dtype=np.int64)
        block = np.searchsorted(bounds, ii, side="right") - 1
        key = track[ii] * T + track[jj]
        # per (block, track pair) in pair order, then per track pair over the blocks in block order: the sums
        # of a per-block bincount followed by one over the blocks' partial sums
        bk, inv = np.unique(block * (T * T) + key, return_inverse=True)
        part_sum = np.bincount(inv, weights=iou, minlength=len(bk))
        part_count = np.bincount(inv, minlength=len(bk))
        uk, inv = np.unique(bk % (T * T), return_inverse=True)
        s = np.bincount(inv, weights=part_sum, minlength=len(uk))
        c = np.bincount(inv, weights=part_count, minlength=len(uk)).astype(np.int64)
        hit = iou > 0
        return (ii[hit], jj[hit], iou[hit], uk // T, uk % T, s, c)

    @property
    def pair_i(self) -> np.ndarray:
        """``(P,)`` first detection of each overlapping same-frame pair (``pair_i < pair_j``)."""
        return self._overlaps[0]

    @property
    def pair_j(self) -> np.ndarray:
        """``(P,)`` second detection of each overlapping same-frame pair."""
        return self._overlaps[1]

    @property
    def pair_iou(self) -> np.ndarray:
        """``(P,)`` box IoU of each overlapping same-frame pair, in ``(0, 1]``."""
        return self._overlaps[2]

    @cached_property
    def track_pairs(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(s, t, stiou)``: every two global tracks ``s < t`` with ``STIoU > 0`` and their STIoU."""
        s, t, total, common = self._overlaps[3:]
        union = self.track_len[s] + self.track_len[t] - common
        st = total / union
        keep = st > 0
        return s[keep], t[keep], st[keep]

    def stiou_block(self, a: int, b: int) -> np.ndarray:
        """``(T_a, T_b)`` STIoU of rater ``a``'s tracks (rows) against rater ``b``'s (canonical orders)."""
        sa, sb = self.track_start[a], self.track_start[b]
        out = np.zeros((self.track_start[a + 1] - sa, self.track_start[b + 1] - sb))
        s, t, st = self.track_pairs
        rs, rt = self.track_rater[s], self.track_rater[t]
        fwd = (rs == a) & (rt == b)
        out[s[fwd] - sa, t[fwd] - sb] = st[fwd]
        if a != b:
            back = (rs == b) & (rt == a)
            out[t[back] - sa, s[back] - sb] = st[back]
        return out

    def rater_pair(self, g: int, h: int) -> RaterPair:
        """Rater ``g``'s and rater ``h``'s detections and their overlapping same-frame pairs (``g != h``)."""
        if g == h:
            raise ValueError("a rater pair needs two different raters")
        rater = self.det_rater
        gd, hd = np.flatnonzero(rater == g), np.flatnonzero(rater == h)
        g_pos = np.full(len(rater), -1, dtype=np.int64)
        g_pos[gd] = np.arange(len(gd))
        h_pos = np.full(len(rater), -1, dtype=np.int64)
        h_pos[hd] = np.arange(len(hd))
        pi, pj, iou = self.pair_i, self.pair_j, self.pair_iou
        ri, rj = rater[pi], rater[pj]
        fwd = (ri == g) & (rj == h)
        back = (ri == h) & (rj == g)
        i = np.concatenate([g_pos[pi[fwd]], g_pos[pj[back]]])
        j = np.concatenate([h_pos[pj[fwd]], h_pos[pi[back]]])
        v = np.concatenate([iou[fwd], iou[back]])
        order = np.lexsort((j, i))
        gs, hs = self.track_start[g], self.track_start[h]
        return RaterPair(g_frame=self.det_frame[gd], g_track=self.det_track[gd] - gs, h_frame=self.det_frame[hd],
                         h_track=self.det_track[hd] - hs, g_len=self.track_len[gs:self.track_start[g + 1]],
                         h_len=self.track_len[hs:self.track_start[h + 1]], i=i[order], j=j[order], iou=v[order])


def spatio_temporal_iou(a: Tracks, b: Tracks) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Spatio-temporal IoU of every track of ``a`` with every track of ``b``.

    .. math::

        \mathrm{STIoU}(s, t) = \frac{1}{|F(s) \cup F(t)|} \sum_{f \in F(s) \cup F(t)} \mathrm{IoU}(b_s(f), b_t(f))

    with ``F(t)`` the frames of track ``t`` and the IoU 0 on a frame where only one of the two has a box.

    Args:
        a: one rater's tracks.
        b: another rater's tracks in the same video.

    Returns:
        ``(stiou, ids_a, ids_b)``: ``stiou[k, l]`` is the STIoU of ``a``'s track ``ids_a[k]`` and ``b``'s track
        ``ids_b[l]``, ids in increasing order; in ``[0, 1]``, 1 for identical tracks, 0 for tracks that never
        overlap. ``stiou(a, b) == stiou(b, a).T``.

    Equivalently the temporal IoU of the two frame sets times the mean box IoU over their common frames.

    Reference:
        The spatio-temporal tube overlap of action localisation: G. Gkioxari and J. Malik, "Finding Action
        Tubes", CVPR 2015; P. Weinzaepfel, Z. Harchaoui and C. Schmid, "Learning to Track for Spatio-Temporal
        Action Localization", ICCV 2015.
    """
    video = VideoTracks(("a", "b"), (a, b))
    block = video.stiou_block(0, 1)
    ra, rb = np.argsort(a.index.ids), np.argsort(b.index.ids)
    return block[np.ix_(ra, rb)], a.index.ids[ra], b.index.ids[rb]
