r"""Consensus tracks: one track per track unit, from the boxes its raters agree on.

For a track unit ``u`` (:mod:`agreement.methods.tracks.correspondence`) with
``m_u`` raters and rater weights ``w_r`` (default 1), on every frame ``f``
where ``k_f`` of the unit's raters have a box:

* the frame is kept when ``k_f >= quorum · m_u`` (default ``quorum = 0.5``:
  at least half of the unit's raters) and the unit has at least
  ``min_raters`` raters (default 1; 2 drops objects a single rater tracked);
* the consensus box is the weighted mean of the raters' boxes,
  ``b_f = Σ_r w_r b_rf / Σ_r w_r`` (coordinates ``[x, y, w, h]``);
* the consensus class is the weighted majority of the boxes' labels
  (``None`` labels do not vote; ties to the label first in ``str`` order;
  ``None`` when no box has a label);
* the confidence is the weight of the raters whose box carries that class
  (every box with a box when no box has a label) over the weight of all raters
  assigned to the video: ``c_f = Σ_{r agrees} w_r / Σ_{r assigned} w_r`` in
  ``(0, 1]``. A rater assigned to the video who did not track the object counts
  against it. With a single rater assigned to the video the confidence is
  undefined (NaN, :data:`LONE_RATER_REASON`): nobody could agree or disagree,
  and a share of 1 would be a silent perfect score. The consensus boxes are
  still that rater's boxes.

:func:`mean_confidence` pools the videos: the mean confidence of the boxes
whose confidence is defined, or ``None`` with the reason when none is (one
rater; raters who never share a video, :data:`NEVER_MEET_REASON`; no box).

The consensus tracks of a video are a :class:`Tracks` whose track ids are the
unit numbers, with the confidence and the number of raters of each box.

This module does not import FiftyOne.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence, cast

import numpy as np

from agreement.methods.tracks.correspondence import TrackUnits, units_of_video
from agreement.methods.tracks.data import Tracks, label_codes
from agreement.methods.tracks.video import VideoTracks

__all__ = ["ConsensusTracks", "consensus_tracks", "consensus_of_video", "mean_confidence", "LONE_RATER_REASON",
           "NEVER_MEET_REASON"]

#: Why a consensus box's confidence is NaN.
LONE_RATER_REASON = ("a single rater is assigned to the video: nobody could agree or disagree, so the "
                     "consensus track is that rater's track and its confidence is undefined")
#: Why the pooled confidence is None when every video has one rater.
NEVER_MEET_REASON = ("no video has two raters assigned: the raters never meet, so nothing is agreed or "
                     "disagreed; each consensus track is one rater's track")


@dataclass(frozen=True, eq=False)
class ConsensusTracks:
    """The consensus tracks of one video.

    Attributes:
        tracks: :class:`Tracks` with one track per kept unit (track id = unit number), rater ``"consensus"``.
        confidence: ``(n,)`` per box, the weighted share of the assigned raters agreeing with its class; NaN
            when a single rater is assigned to the video (``reason``).
        n_raters: ``(n,)`` per box, the raters with a box on that frame in the unit.
        unit_raters: ``(n,)`` per box, the raters in its unit.
        raters: the raters assigned to the video, in name order.
        reason: why the confidences are NaN (empty when they are defined).
    """

    tracks: Tracks
    confidence: np.ndarray
    n_raters: np.ndarray
    unit_raters: np.ndarray
    raters: tuple[str, ...] = ()
    reason: str = ""


def _weights(raters: tuple[str, ...], weights: Mapping[str, float] | None) -> np.ndarray:
    if weights is None:
        return np.ones(len(raters))
    missing = [r for r in raters if r not in weights]
    if missing:
        raise ValueError(f"weights has no weight for rater(s) {missing}")
    w = np.array([float(weights[r]) for r in raters], dtype=np.float64)
    if not np.all(np.isfinite(w) & (w > 0)):
        bad = [r for r, v in zip(raters, w, strict=True) if not (np.isfinite(v) and v > 0)]
        raise ValueError(f"rater weights must be positive and finite; not so for {bad}")
    return w


def consensus_of_video(video: VideoTracks, units: TrackUnits, *, quorum: float = 0.5, min_raters: int = 1,
                       weights: Mapping[str, float] | None = None) -> ConsensusTracks:
    """:func:`consensus_tracks` on an indexed video and its units (the same formulas, ranges and reference)."""
    if not 0.0 < float(quorum) <= 1.0:
        raise ValueError(f"quorum must be in (0, 1], got {quorum!r}")
    if int(min_raters) < 1:
        raise ValueError(f"min_raters must be at least 1, got {min_raters!r}")
    w = _weights(video.raters, weights)
    track_unit = np.full(video.n_tracks, -1, dtype=np.int64)
    track_unit[units.members[units.present]] = np.nonzero(units.present)[0]
    size = units.n_raters
    frame, rater, boxes = video.det_frame, video.det_rater, video.det_box
    unit = track_unit[video.det_track]
    order = np.lexsort((rater, frame, unit))
    unit, frame, rater, boxes, labels = unit[order], frame[order], rater[order], boxes[order], video.det_label[order]
    new = np.r_[True, (unit[1:] != unit[:-1]) | (frame[1:] != frame[:-1])] if len(unit) else np.zeros(0, bool)
    group = np.cumsum(new) - 1
    G = int(group[-1]) + 1 if len(group) else 0
    g_unit, g_frame = unit[new], frame[new]
    k = np.bincount(group, minlength=G)
    wd = w[rater]
    wsum = np.bincount(group, weights=wd, minlength=G)
    mean = np.zeros((G, 4))
    for c in range(4):
        mean[:, c] = np.bincount(group, weights=wd * boxes[:, c], minlength=G)
    mean /= np.maximum(wsum, np.finfo(float).tiny)[:, None]
    codes, names = label_codes(labels)
    K = len(names)
    if K:
        has = codes >= 0
        votes = np.bincount(group[has] * K + codes[has], weights=wd[has], minlength=G * K).reshape(G, K)
        best = votes.argmax(axis=1)
        labelled = votes.max(axis=1) > 0
        # numpy's stubs read a ``None`` third argument as the one-argument form of np.where
        g_label = cast(np.ndarray, np.where(labelled, np.array(names, dtype=object)[best], None))
        agree_w = np.where(labelled, votes[np.arange(G), best], wsum)
    else:
        g_label = np.full(G, None, dtype=object)
        agree_w = wsum
    m_u = size[g_unit] if G else np.zeros(0, np.int64)
    keep = (k >= float(quorum) * m_u - 1e-9) & (m_u >= int(min_raters))
    out = Tracks(g_frame[keep], mean[keep], g_unit[keep], g_label[keep], "consensus", video.video)
    lone = len(w) < 2
    conf = np.full(int(keep.sum()), np.nan) if lone else (agree_w / w.sum())[keep]
    return ConsensusTracks(out, conf, k[keep], m_u[keep], tuple(video.raters), LONE_RATER_REASON if lone else "")


def mean_confidence(consensi: Sequence[ConsensusTracks]) -> tuple[float | None, str]:
    """The mean confidence of the consensus boxes of many videos, ``(value, "")`` or ``(None, reason)``.

    ``mean(c_f)`` over the boxes whose confidence is defined (videos with two or more assigned raters), in
    ``(0, 1]``; ``None`` with the reason when no box has one: every video has one rater (a single rater
    overall, or raters who never share a video), or there is no consensus box.
    """
    parts = list(consensi)
    conf = np.concatenate([c.confidence for c in parts] + [np.zeros(0)])
    ok = np.isfinite(conf)
    if ok.any():
        return float(conf[ok].mean()), ""
    if parts and all(len(c.raters) < 2 for c in parts):
        everyone = {r for c in parts for r in c.raters}
        return None, (NEVER_MEET_REASON if len(everyone) > 1 else LONE_RATER_REASON)
    return None, "no consensus box: no track unit reaches the quorum"


def consensus_tracks(tracks_by_rater: Mapping[str, Tracks], *, units: TrackUnits | None = None,
                     quorum: float = 0.5, min_raters: int = 1, weights: Mapping[str, float] | None = None,
                     tau: float = 0.5, video: str | None = None) -> ConsensusTracks:
    r"""Consensus tracks of one video: per track unit and frame, the weighted mean box and the majority class.

    .. math::

        b_f = \frac{\sum_{r} w_r b_{rf}}{\sum_{r} w_r},\qquad
        c_f = \frac{\sum_{r:\ \ell_{rf} = \hat\ell_f} w_r}{\sum_{r \text{ assigned}} w_r}

    over the unit's raters with a box on frame ``f``, on the frames where at least ``quorum · m_u`` of the
    unit's ``m_u`` raters have one; ``\hat\ell_f`` is the weighted majority label. Confidence range ``(0, 1]``:
    1 when every assigned rater boxed the object on that frame with the same class.

    Args:
        tracks_by_rater: ``{rater: Tracks}`` of one video (every rater assigned to it).
        units: its track units (default: :func:`agreement.methods.tracks.correspondence.track_units` with ``tau``).
        quorum: the least share of a unit's raters with a box for a frame to be kept, in ``(0, 1]``.
        min_raters: units with fewer raters give no consensus track.
        weights: ``{rater: weight > 0}`` (default all 1), e.g. rater competences.
        tau: the STIoU threshold of the units when ``units`` is not given.
        video: the video's name, for messages.

    Returns:
        :class:`ConsensusTracks`.

    Reference:
        Majority voting and weighted box averaging as in label fusion for object detection, e.g. R. Solovyev,
        W. Wang and T. Gabruseva, "Weighted boxes fusion", Image and Vision Computing 107, 2021.
    """
    vt = VideoTracks.build(tracks_by_rater, video)
    if units is None:
        units = units_of_video(vt, tau)
    elif units.raters != vt.raters:
        raise ValueError(f"the units are of raters {units.raters}, the tracks of {vt.raters}")
    return consensus_of_video(vt, units, quorum=quorum, min_raters=min_raters, weights=weights)
