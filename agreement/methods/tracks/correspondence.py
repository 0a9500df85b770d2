r"""Which tracks of different raters follow the same object: pairwise matching and track units.

Two raters. The tracks of raters ``a`` and ``b`` in a video are matched by the
Hungarian algorithm (``scipy.optimize.linear_sum_assignment``) maximising the
total spatio-temporal IoU (:func:`agreement.methods.tracks.video.spatio_temporal_iou`)
over the pairs with ``STIoU >= tau``: a maximum-weight one-to-one matching in
which every matched pair overlaps by at least ``tau`` (default 0.5).

More raters: *track units*. A track unit is a set of tracks, at most one per
rater, taken to follow one object. They are built by greedy agglomeration
(complete linkage at ``tau``) over the pairwise Hungarian matches:

1. every track starts as its own unit;
2. the matched pairs of every rater pair are visited by decreasing STIoU
   (ties: by the pair's tracks in the canonical order: raters by name, each
   rater's tracks by content, :mod:`agreement.methods.tracks.data`);
3. the units of a visited pair are merged when (a) no rater has a track in
   both and (b) every two tracks of the merged unit have ``STIoU >= tau``;
   otherwise the pair is skipped.

So a unit holds at most one track per rater, every two of its tracks overlap
by at least ``tau``, and two tracks end in one unit only through a chain of
Hungarian matches. The result does not depend on the order of the raters in
the mapping, nor on the tracks' ids or order (only on their content; exact
ties between interchangeable tracks of one rater aside). Units are numbered by
their first frame, then by their first track in canonical order. With two
raters the units are exactly the Hungarian matches plus one singleton unit per
unmatched track.

This module does not import FiftyOne.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import numpy as np
from scipy.optimize import linear_sum_assignment

from agreement.methods.tracks.data import Tracks
from agreement.methods.tracks.video import VideoTracks

__all__ = ["TrackMatching", "match_tracks", "TrackUnits", "track_units", "check_tau"]


def check_tau(tau: float, *, name: str = "tau") -> float:
    """``tau`` as a float in ``(0, 1]`` (``ValueError`` otherwise)."""
    t = float(tau)
    if not 0.0 < t <= 1.0:
        raise ValueError(f"{name} must be in (0, 1], got {tau!r}")
    return t


@dataclass(frozen=True, eq=False)
class TrackMatching:
    """A one-to-one matching of rater ``a``'s tracks with rater ``b``'s.

    Attributes:
        ids_a, ids_b: ``(M,)`` the matched track ids, pair ``k`` is ``(ids_a[k], ids_b[k])``, by ``ids_a``.
        stiou: ``(M,)`` their spatio-temporal IoU, each ``>= tau``.
        unmatched_a, unmatched_b: the track ids left without a partner, increasing.
    """

    ids_a: np.ndarray
    ids_b: np.ndarray
    stiou: np.ndarray
    unmatched_a: np.ndarray
    unmatched_b: np.ndarray


def matches_above(block: np.ndarray, tau: float) -> tuple[np.ndarray, np.ndarray]:
    r"""Rows and columns of the maximum-weight one-to-one matching of ``block`` restricted to entries ``>= tau``.

    Maximises :math:`\sum_{(i, j) \in M} w_{ij}` with :math:`w_{ij} = b_{ij} [b_{ij} \ge \tau]` (Hungarian
    algorithm, ``scipy.optimize.linear_sum_assignment``), then drops the pairs of weight 0.

    Args:
        block: ``(n, m)`` similarities (STIoU), in ``[0, 1]``.
        tau: the least similarity of a matched pair.

    Returns:
        ``(rows, cols)``, int arrays of equal length: the matched pairs, every ``block[rows, cols] >= tau`` and
        ``> 0``.

    Reference:
        H. W. Kuhn, "The Hungarian method for the assignment problem", Naval Research Logistics Quarterly
        2, 83-97, 1955.
    """
    if block.size == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    weight = np.where(block >= tau, block, 0.0)
    rows, cols = linear_sum_assignment(weight, maximize=True)
    keep = weight[rows, cols] > 0
    return rows[keep], cols[keep]


def match_tracks(a: Tracks, b: Tracks, *, tau: float = 0.5) -> TrackMatching:
    r"""Matches two raters' tracks one-to-one by spatio-temporal IoU.

    Maximises :math:`\sum_{(s, t) \in M} \mathrm{STIoU}(s, t)` over one-to-one matchings ``M`` whose pairs all
    have :math:`\mathrm{STIoU}(s, t) \ge \tau` (Hungarian algorithm, Kuhn 1955, as
    ``scipy.optimize.linear_sum_assignment``). Ties between matchings of equal total follow the canonical
    track order (module :mod:`agreement.methods.tracks.data`), not the ids.

    Args:
        a: one rater's tracks in one video.
        b: another rater's tracks in the same video.
        tau: the least STIoU of a matched pair, in ``(0, 1]``.

    Returns:
        :class:`TrackMatching`; every matched STIoU in ``[tau, 1]``.

    Reference:
        H. W. Kuhn, "The Hungarian method for the assignment problem", Naval Research Logistics Quarterly
        2, 83-97, 1955.
    """
    tau = check_tau(tau)
    video = VideoTracks(("a", "b"), (a, b))
    block = video.stiou_block(0, 1)
    rows, cols = matches_above(block, tau)
    ids_a, ids_b = a.index.ids, b.index.ids
    order = np.argsort(ids_a[rows], kind="stable")
    rows, cols = rows[order], cols[order]
    return TrackMatching(ids_a[rows], ids_b[cols], block[rows, cols],
                         np.sort(np.setdiff1d(ids_a, ids_a[rows])), np.sort(np.setdiff1d(ids_b, ids_b[cols])))


@dataclass(frozen=True, eq=False)
class TrackUnits:
    """The track units of one video (see the module for the rule).

    Attributes:
        raters: the raters assigned to the video, in name order.
        members: ``(U, R)`` int64, the global track (numbering of :class:`VideoTracks`) of each rater in each
            unit, ``-1`` where the rater has no track in the unit.
        track_ids: ``(U, R)`` int64, the rater's track id in the unit (meaningful where ``present``).
        present: ``(U, R)`` bool, the rater has a track in the unit.
        min_stiou: ``(U,)`` the least STIoU between two tracks of the unit (NaN for a unit of one track).
        tau: the threshold the units were built with.
    """

    raters: tuple[str, ...]
    members: np.ndarray
    track_ids: np.ndarray
    present: np.ndarray
    min_stiou: np.ndarray
    tau: float

    def __len__(self) -> int:
        return len(self.members)

    def unit(self, k: int) -> dict[str, int]:
        """Unit ``k`` as ``{rater: track id}``."""
        return {r: int(self.track_ids[k, c]) for c, r in enumerate(self.raters) if self.present[k, c]}

    def as_dicts(self) -> list[dict[str, int]]:
        """Every unit as ``{rater: track id}``, in unit order."""
        return [self.unit(k) for k in range(len(self))]

    @property
    def n_raters(self) -> np.ndarray:
        """``(U,)`` the number of raters with a track in each unit."""
        counts: np.ndarray = self.present.sum(axis=1)
        return counts


def _pair_edges(video: VideoTracks, tau: float) -> list[tuple[float, int, int]]:
    """The Hungarian matches of every rater pair as ``(STIoU, s, t)``, global tracks ``s < t``."""
    edges: list[tuple[float, int, int]] = []
    R = len(video.raters)
    for a in range(R):
        for b in range(a + 1, R):
            block = video.stiou_block(a, b)
            rows, cols = matches_above(block, tau)
            s = rows + video.track_start[a]
            t = cols + video.track_start[b]
            edges.extend(zip(block[rows, cols].tolist(), s.tolist(), t.tolist(), strict=True))
    edges.sort(key=lambda e: (-e[0], e[1], e[2]))
    return edges


def _agglomerate(video: VideoTracks, tau: float) -> list[list[int]]:
    """Greedy complete-linkage merging of the Hungarian matches; the units as lists of global tracks."""
    s_all, t_all, st_all = video.track_pairs
    stiou = dict(zip(zip(s_all.tolist(), t_all.tolist(), strict=True), st_all.tolist(), strict=True))
    rater = video.track_rater.tolist()
    unit_of = list(range(video.n_tracks))
    units: dict[int, list[int]] = {k: [k] for k in range(video.n_tracks)}
    for _, s, t in _pair_edges(video, tau):
        us, ut = unit_of[s], unit_of[t]
        if us == ut:
            continue
        A, B = units[us], units[ut]
        if {rater[x] for x in A} & {rater[y] for y in B}:
            continue
        if any(stiou.get((min(x, y), max(x, y)), 0.0) < tau for x in A for y in B):
            continue
        keep, drop = (us, ut) if us < ut else (ut, us)
        units[keep] = sorted(A + B)
        for x in units[drop]:
            unit_of[x] = keep
        del units[drop]
    return list(units.values())


def units_of_video(video: VideoTracks, tau: float = 0.5) -> TrackUnits:
    """:func:`track_units` on an indexed video (the same rule, ranges and references)."""
    tau = check_tau(tau)
    groups = _agglomerate(video, tau)
    first = np.concatenate([t.index.first for t in video.tracks] + [np.zeros(0, np.int64)])
    groups.sort(key=lambda g: (int(first[g].min()), g[0]))
    R, U = len(video.raters), len(groups)
    members = np.full((U, R), -1, dtype=np.int64)
    for k, g in enumerate(groups):
        members[k, video.track_rater[g]] = g
    present = members >= 0
    track_ids = np.where(present, video.track_id[np.maximum(members, 0)] if video.n_tracks else 0, 0)
    s_all, t_all, st_all = video.track_pairs
    stiou = dict(zip(zip(s_all.tolist(), t_all.tolist(), strict=True), st_all.tolist(), strict=True))
    min_st = np.array([min((stiou.get((x, y), 0.0) for i, x in enumerate(g) for y in g[i + 1:]), default=np.nan)
                       for g in groups], dtype=np.float64)
    return TrackUnits(video.raters, members, track_ids.astype(np.int64), present, min_st, tau)


def track_units(tracks_by_rater: Mapping[str, Tracks], *, tau: float = 0.5, video: str | None = None) -> TrackUnits:
    r"""Clusters the raters' tracks of one video into track units (at most one track per rater).

    Greedy complete-linkage agglomeration over the pairwise Hungarian STIoU matches (see the module): pairs
    visited by decreasing :math:`\mathrm{STIoU}`, two units merged when they share no rater and every two
    tracks of the union have :math:`\mathrm{STIoU} \ge \tau`. Every track is in exactly one unit.

    Args:
        tracks_by_rater: ``{rater: Tracks}``, every rater assigned to the video (one without boxes too).
        tau: the least STIoU of two tracks in one unit, in ``(0, 1]``.
        video: the video's name, for messages.

    Returns:
        :class:`TrackUnits`, ``min_stiou`` in ``[tau, 1]`` (NaN for single tracks).

    Reference:
        Hungarian matching: H. W. Kuhn, Naval Research Logistics Quarterly 2, 1955; agglomerative clustering with
        complete linkage: e.g. Hastie, Tibshirani and Friedman, "The Elements of Statistical Learning", 14.3.12.
    """
    return units_of_video(VideoTracks.build(tracks_by_rater, video), tau)
