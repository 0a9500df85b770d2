r"""The chance baseline of track presence and localisation α: tracks of one video against tracks of another.

A *chance set pair* is rater ``a``'s tracks in video ``i`` against another rater ``b``'s tracks in a
video ``j != i`` of comparable length, as the geometry agreement does for images (Braylan, Alonso &
Lease 2022; :mod:`agreement.methods.geometry_agreement`) and the temporal baseline for segments
(docs/temporal-agreement.md). Any two different raters make a chance pair, not only raters who share
a video: in a crowd where each worker labels one clip, no rater pair meets twice.

* **comparable length**: ``i`` and ``j`` in the same stratum of
  :func:`agreement.geometry.temporal.length_strata` over the videos' frame counts (a video whose
  count is unknown counts its last annotated frame);
* **relative time**: frame ``g`` of ``b``'s ``N_j``-frame video is placed at relative time
  ``g / N_j``, on the annotated frame of video ``i`` nearest to ``(g / N_j) N_i`` (the frames some
  rater boxed in ``i``: sparse key frames stay comparable); where two of one track's boxes land on
  one frame the earlier is kept. Boxes are relative ``[x, y, w, h]`` already;
* **the same correspondence**: the STIoU of every track of ``a`` with every moved track of ``b``
  (:class:`agreement.methods.tracks.video.VideoTracks`), then the Hungarian matching at
  ``STIoU >= tau`` (presence) and at ``STIoU > 0`` (localisation), as within a video.

Each length stratum ``k`` holding ``w_k`` within-video set pairs (two raters of one video) gets
``K_k`` chance set pairs, each entering the sums with weight ``w_k / K_k``: a stratum counts as much
as its within-video comparisons. A stratum with at most ``max_pairs`` chance set pairs is measured
whole; a larger one by ``max_pairs`` pairs drawn uniformly with replacement (seeded; the videos are
ordered by key, so the draw does not depend on their order).

This module does not import FiftyOne.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Sequence, cast

import numpy as np

from agreement.geometry.temporal import length_strata
from agreement.methods.tracks.correspondence import matches_above
from agreement.methods.tracks.data import Tracks
from agreement.methods.tracks.video import VideoTracks

__all__ = ["ChanceVideo", "ChanceSums", "chance_sums", "ANY_OVERLAP", "MAX_CHANCE_PAIRS"]

#: The localisation matching's threshold: every pair of overlapping tracks is eligible (``STIoU > 0``).
ANY_OVERLAP = float(np.finfo(np.float64).tiny)
#: Chance set pairs measured per length stratum, at most.
MAX_CHANCE_PAIRS = 1000


@dataclass(frozen=True, eq=False)
class ChanceVideo:
    """What the chance baseline needs of one video.

    Attributes:
        key: its name, or a digest of its boxes when unnamed (orders the videos and seeds the pair choice).
        raters: the raters assigned to it, in name order.
        tracks: each rater's :class:`Tracks`.
        frame_count: its number of frames (``metadata.total_frame_count``), NaN when unknown.
        grid: ``(F,)`` the sorted frames some rater boxed.
    """

    key: str
    raters: tuple[str, ...]
    tracks: tuple[Tracks, ...]
    frame_count: float
    grid: np.ndarray

    @classmethod
    def of(cls, video: VideoTracks, frame_count: float | None) -> "ChanceVideo":
        """The chance view of one indexed video; ``frame_count`` None or not ``>= 1``: the last boxed frame."""
        grid = np.unique(video.det_frame)
        if video.video is not None:
            key = str(video.video)
        else:
            h = hashlib.blake2b(digest_size=8)
            for r, t in zip(video.raters, video.tracks, strict=True):
                h.update(r.encode())
                h.update(np.ascontiguousarray(np.sort(t.frames)).tobytes())
                h.update(np.ascontiguousarray(np.sort(t.boxes, axis=0)).tobytes())
            key = h.hexdigest()
        n = np.nan if frame_count is None else float(frame_count)
        if not (np.isfinite(n) and n >= 1):
            n = float(grid[-1]) if len(grid) and grid[-1] >= 1 else np.nan
        return cls(key, video.raters, video.tracks, n, grid)


@dataclass(frozen=True)
class ChanceSums:
    """Weighted sums over the chance set pairs (see the module).

    Attributes:
        unmatched: ``Σ w (|A| + |B| - 2 |M_tau|)``, the tracks left unmatched at ``STIoU >= tau``.
        size: ``Σ w (|A| + |B|)``.
        distance: ``Σ w Σ_{(s, t) ∈ M_0} (1 - STIoU(s, t))`` over the localisation matches (``STIoU > 0``).
        matched: ``Σ w |M_0|``.
        set_pairs: chance set pairs measured (unweighted).
        cells: length strata with at least one chance set pair.
    """

    unmatched: float = 0.0
    size: float = 0.0
    distance: float = 0.0
    matched: float = 0.0
    set_pairs: int = 0
    cells: int = 0


def _moved(b: Tracks, n_from: float, n_to: float, grid: np.ndarray) -> Tracks:
    """``b``'s tracks placed in relative time on ``grid`` (the annotated frames of an ``n_to``-frame video)."""
    t = b.frames.astype(np.float64) / n_from * n_to
    pos = np.clip(np.searchsorted(grid, t), 1, len(grid) - 1) if len(grid) > 1 else np.zeros(len(t), np.int64)
    if len(grid) > 1:
        pos = np.where(np.abs(grid[pos - 1] - t) <= np.abs(grid[pos] - t), pos - 1, pos)
    frames = grid[pos]
    order = np.lexsort((b.frames, frames, b.track_ids))
    f, tr = frames[order], b.track_ids[order]
    first = np.r_[True, (f[1:] != f[:-1]) | (tr[1:] != tr[:-1])] if len(f) else np.zeros(0, bool)
    keep = order[first]
    labels = None if b.labels is None else cast(np.ndarray, b.labels)[keep]
    return Tracks(frames[keep], b.boxes[keep], b.track_ids[keep], labels, rater=b.rater, video=b.video)


def _set_pair(a: Tracks, b: Tracks, tau: float) -> tuple[int, int, float, int]:
    """``(|A| + |B|, |M_tau|, Σ_{M_0} (1 - STIoU), |M_0|)`` of one set pair in one frame grid."""
    na, nb = a.n_tracks, b.n_tracks
    if na == 0 or nb == 0:
        return na + nb, 0, 0.0, 0
    block = VideoTracks(("a", "b"), (a, b)).stiou_block(0, 1)
    rows, _ = matches_above(block, tau)
    lr, lc = matches_above(block, ANY_OVERLAP)
    return na + nb, len(rows), float((1.0 - block[lr, lc]).sum()), len(lr)


def _cells_of(vids: Sequence[ChanceVideo], stratum: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, list]:
    """The (video, rater) cells of stratum ``k``: video positions, rater codes, rater names (sorted)."""
    names = sorted({r for x in np.flatnonzero(stratum == k).tolist() for r in vids[x].raters})
    code = {r: c for c, r in enumerate(names)}
    vv = [(x, code[r]) for x in np.flatnonzero(stratum == k).tolist() for r in vids[x].raters]
    arr = np.array(vv, dtype=np.int64).reshape(-1, 2)
    return arr[:, 0], arr[:, 1], names


def _chance_pairs(video: np.ndarray, rater: np.ndarray, max_pairs: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Ordered cell pairs ``(x, y)`` of different videos and different raters: all of them, or ``max_pairs``
    drawn uniformly (with replacement) when there are more."""
    n = len(video)
    total = n * n
    if total <= 4 * max_pairs:
        X, Y = np.divmod(np.arange(total, dtype=np.int64), n)
        ok = (video[X] != video[Y]) & (rater[X] != rater[Y])
        X, Y = X[ok], Y[ok]
        if len(X) <= max_pairs:
            return X, Y
        pick = np.sort(np.random.default_rng(seed).choice(len(X), max_pairs, replace=True))
        return X[pick], Y[pick]
    rng = np.random.default_rng(seed)
    X, Y = np.zeros(0, np.int64), np.zeros(0, np.int64)
    while len(X) < max_pairs:
        x, y = rng.integers(0, n, 4 * max_pairs), rng.integers(0, n, 4 * max_pairs)
        ok = (video[x] != video[y]) & (rater[x] != rater[y])
        X, Y = np.r_[X, x[ok]], np.r_[Y, y[ok]]
    return X[:max_pairs], Y[:max_pairs]


def chance_sums(videos: Sequence[ChanceVideo], tau: float, *, max_pairs: int = MAX_CHANCE_PAIRS,
                seed: int = 0) -> ChanceSums:
    r"""The weighted chance sums of presence and localisation α (see the module for the design).

    For each length stratum ``k`` holding ``w_k`` within-video set pairs (two raters of one video): the
    chance set pairs (rater ``a`` in video ``i``, rater ``b != a`` moved from video ``j != i``, both videos
    of stratum ``k``), each weighted ``w_k / K_k``; per set pair ``|A| + |B|``, the matches at
    ``STIoU >= tau`` and at ``STIoU > 0``.

    Args:
        videos: one :class:`ChanceVideo` per video (any order: they are ordered by key).
        tau: the presence matching threshold, in ``(0, 1]``.
        max_pairs: chance set pairs per stratum, at most (drawn uniformly beyond that).
        seed: seed of the draws.

    Returns:
        :class:`ChanceSums` (all zero when no stratum holds two videos with different raters).

    Reference:
        Braylan, Alonso & Lease, "Measuring annotator agreement generally across complex structured,
        multi-object, and free-text annotation tasks", WWW 2022.
    """
    vids = sorted(videos, key=lambda v: (v.key, v.raters))
    if len(vids) < 2:
        return ChanceSums()
    lengths = np.array([v.frame_count for v in vids], dtype=np.float64)
    stratum = length_strata(np.where(np.isfinite(lengths) & (lengths >= 1), lengths, np.nan))
    out: dict[str, Any] = dict(unmatched=0.0, size=0.0, distance=0.0, matched=0.0, set_pairs=0, cells=0)
    for k in np.unique(stratum).tolist():
        w = sum(len(vids[x].raters) * (len(vids[x].raters) - 1) // 2 for x in np.flatnonzero(stratum == k))
        video, rater, names = _cells_of(vids, stratum, k)
        if w == 0 or not len(video):
            continue
        X, Y = _chance_pairs(video, rater, max_pairs, seed + k)
        if not len(X):
            continue
        weight = w / len(X)
        for x, y in zip(X.tolist(), Y.tolist(), strict=True):
            vi, vj = vids[video[x]], vids[video[y]]
            A = vi.tracks[vi.raters.index(names[rater[x]])]
            B = vj.tracks[vj.raters.index(names[rater[y]])]
            if A.n_tracks and B.n_tracks:
                B = _moved(B, vj.frame_count, vi.frame_count, vi.grid)
            size, m_tau, dist, m0 = _set_pair(A, B, tau)
            out["unmatched"] += weight * (size - 2 * m_tau)
            out["size"] += weight * size
            out["distance"] += weight * dist
            out["matched"] += weight * m0
        out["set_pairs"] += len(X)
        out["cells"] += 1
    return ChanceSums(**out)
