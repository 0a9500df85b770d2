"""Simulated video raters: a reference video labelling degraded the way video annotators err.

:func:`simulate_video_rater` turns one reference :class:`VideoLabels` into
one rater's version; :func:`simulate_video_raters` does it for a corpus and
``K`` raters. Five error processes, each with its own parameter in
:class:`VideoNoise` (all zero: the reference, reproduced exactly):

Box drift (``drift``, ``scale_drift``, ``smoothing``)
    Along each reference track a smooth random walk of four components
    ``(u_x, u_y, u_w, u_h)``: i.i.d. ``N(0, 1 / H)`` steps (``H =``
    :data:`DRIFT_HORIZON` = 100 frames) summed from the track's first frame,
    then smoothed by a Gaussian of ``smoothing`` frames. So ``u`` has standard
    deviation ``≈ sqrt(t / H)`` after ``t`` frames. The box becomes
    ``w' = w exp(scale_drift u_w)``, ``h' = h exp(scale_drift u_h)``, with its
    centre moved by ``(drift u_x w, drift u_y h)``: ``drift`` is the standard
    deviation of the centre offset after 100 frames, in box sizes, and
    ``scale_drift`` that of the log size. A drifted box is clipped to the
    frame (``clipped``; to the union of the frame and its reference box
    where that already crosses a border); one left with no area is dropped
    (``drifted_out``).

Identity switches (``switch_rate``)
    Each reference box (a track in a frame) starts a switch with probability
    ``switch_rate``: the track and a uniformly chosen other track present in
    that frame exchange their ids from that frame on (compounding with
    earlier switches). A box with no other track in its frame cannot switch
    (``switches_without_partner``). Expected switches: ``switch_rate`` times
    the number of boxes that share their frame.

Missed frames (``miss_rate``, ``miss_length``)
    Along each track (its boxes in frame order) a two-state Markov chain,
    started from its stationary distribution, hides runs of boxes: a missed
    run lasts ``Geometric(1 / miss_length)`` boxes, a visible run
    ``Geometric(p)`` with ``p = miss_rate / (miss_length (1 - miss_rate))``,
    so the expected fraction of boxes missed is exactly ``miss_rate``. When
    that would need ``p > 1`` (``miss_rate > miss_length / (miss_length +
    1)``), visible runs are single boxes and missed runs are lengthened
    instead (same fraction).

Spurious tracks (``spurious_rate``, ``spurious_length``)
    ``Poisson(spurious_rate N)`` invented tracks per video of ``N`` frames,
    each ``Geometric(1 / spurious_length)`` frames long (at most ``N``) from a
    uniform start, with a size log-uniform in ``[0.03, 0.2]``, a uniform
    start position and a constant velocity of ``N(0, 0.005)`` per frame and
    axis (reflected at the borders), a class drawn uniformly from the video's
    reference classes (``classes`` when given, ``"object"`` when there are
    none) and new ids above the reference's largest.

Segment jitter (``segment_jitter``)
    Both ends of each temporal segment move by ``round(N(0, segment_jitter^2))``
    frames; the ends are then ordered and clipped to ``[1, N]``.

Randomness: every (video, rater, process) has its own generator seeded by
``(seed, crc32(rater), crc32(video name), process)``, so a video's result
does not depend on the other videos or their order, and one process's draws
do not depend on the other processes' parameters. The draws of a process
do not depend on its own magnitude either (the steps of the walk, one
uniform per box for switches, one normal per segment end), so at a fixed
seed drift and jitter grow linearly with their parameter and the switches
at a rate are a subset of those at a higher rate.

This module does not import FiftyOne.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import cast

import numpy as np
from scipy.ndimage import gaussian_filter1d

from agreement.simulate.video.data import VideoLabels, check_video
from agreement.simulate.video.synthetic import fold

__all__ = [
    "COUNTS",
    "DRIFT_HORIZON",
    "VideoNoise",
    "VideoSimulation",
    "simulate_video_rater",
    "simulate_video_raters",
]

DRIFT_HORIZON = 100
"""Frames after which the drift walk's standard deviation is ``drift`` (``scale_drift``)."""

#: The counts each simulation reports, per rater.
COUNTS = ("boxes", "missed", "switches", "switches_without_partner", "spurious_tracks", "spurious_boxes",
          "clipped", "drifted_out", "segments")

_STREAMS = {"drift": 1, "switch": 2, "miss": 3, "spurious": 4, "segments": 5}


@dataclass(frozen=True)
class VideoNoise:
    """The error processes of a simulated video rater (see the module docstring).

    Attributes:
        drift: standard deviation of the box centre's offset after 100 frames
            of a track, in box widths/heights; ``>= 0``.
        scale_drift: standard deviation of the log box width/height after
            100 frames; ``>= 0``.
        smoothing: Gaussian smoothing of the drift walk, in frames; ``>= 0``.
        switch_rate: probability that a box starts an identity switch; ``[0, 1]``.
        miss_rate: expected fraction of a track's boxes missed; ``[0, 1)``.
        miss_length: mean length of a run of missed boxes, frames; ``>= 1``.
        spurious_rate: expected invented tracks per frame of video; ``>= 0``.
        spurious_length: mean length of an invented track, frames; ``>= 1``.
        segment_jitter: standard deviation of a segment end's shift, frames; ``>= 0``.
    """

    drift: float = 0.0
    scale_drift: float = 0.0
    smoothing: float = 5.0
    switch_rate: float = 0.0
    miss_rate: float = 0.0
    miss_length: float = 10.0
    spurious_rate: float = 0.0
    spurious_length: float = 10.0
    segment_jitter: float = 0.0

    def __post_init__(self) -> None:
        for f in fields(self):
            v = getattr(self, f.name)
            if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) \
                    or not math.isfinite(float(v)) or v < 0:
                raise ValueError(f"VideoNoise.{f.name} must be a finite number >= 0, got {v!r}")
            object.__setattr__(self, f.name, float(v))
        if self.switch_rate > 1:
            raise ValueError(f"VideoNoise.switch_rate is a probability in [0, 1], got {self.switch_rate!r}")
        if self.miss_rate >= 1:
            raise ValueError(f"VideoNoise.miss_rate is a fraction in [0, 1), got {self.miss_rate!r}")
        for name in ("miss_length", "spurious_length"):
            if getattr(self, name) < 1:
                raise ValueError(f"VideoNoise.{name} is a mean length in frames, >= 1; got {getattr(self, name)!r}")

    @classmethod
    def scaled(cls, magnitude: float) -> VideoNoise:
        """A preset rater at ``magnitude`` λ >= 0 (0: the reference, 1: a plausible careless annotator).

        ``drift = 0.15 λ``, ``scale_drift = 0.1 λ``, ``switch_rate = 1 - 0.998^λ``
        (about one switch per 500 boxes at λ = 1), ``miss_rate = 1 - 0.95^λ``,
        ``spurious_rate = 0.01 λ`` (3 invented tracks in 300 frames),
        ``segment_jitter = 3 λ`` frames; ``smoothing``, ``miss_length`` and
        ``spurious_length`` at their defaults.
        """
        lam = float(magnitude)
        if not math.isfinite(lam) or lam < 0:
            raise ValueError(f"magnitude must be a finite number >= 0, got {magnitude!r}")
        return cls(drift=0.15 * lam, scale_drift=0.1 * lam, switch_rate=1.0 - 0.998 ** lam,
                   miss_rate=1.0 - 0.95 ** lam, spurious_rate=0.01 * lam, segment_jitter=3.0 * lam)


@dataclass(frozen=True, eq=False)
class VideoSimulation:
    """Simulated raters of a reference corpus.

    Attributes:
        raters: the rater names, in order.
        videos: ``{rater: [VideoLabels, ...]}``, in the reference's order.
        counts: ``{rater: {count: int}}`` summed over the videos (:data:`COUNTS`).
        noise: ``{rater: VideoNoise}``.
    """

    raters: tuple[str, ...]
    videos: dict[str, list[VideoLabels]]
    counts: dict[str, dict[str, int]]
    noise: dict[str, VideoNoise]


def _rng(seed: int, rater: str, video: str, stream: str) -> np.random.Generator:
    crc = lambda s: zlib.crc32(str(s).encode("utf-8"))
    return np.random.default_rng(np.random.SeedSequence([int(seed), crc(rater), crc(video), _STREAMS[stream]]))


def _drift(video: VideoLabels, track_idx: np.ndarray, k: int, noise: VideoNoise,
           rng: np.random.Generator) -> np.ndarray:
    """``(n, 4)`` walk values ``(u_x, u_y, u_w, u_h)`` of each box (module docstring)."""
    N = video.num_frames
    steps = rng.standard_normal((k, 4, N)) / math.sqrt(DRIFT_HORIZON)
    first = np.full(k, N + 1, dtype=np.int64)
    np.minimum.at(first, track_idx, video.frames)
    steps *= (np.arange(1, N + 1)[None, :] >= first[:, None])[:, None, :]
    walk = np.cumsum(steps, axis=2)
    if noise.smoothing > 0 and N > 1:
        walk = gaussian_filter1d(walk, noise.smoothing, axis=2, mode="nearest")
    return walk[track_idx, :, video.frames - 1]


def _apply_drift(boxes: np.ndarray, u: np.ndarray, noise: VideoNoise) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Drifted boxes, the rows still in the frame and the rows clipped.

    A drifted box is clipped to the frame, widened to its reference box where
    that itself crosses a border (so that with ``drift = scale_drift = 0`` the
    boxes are returned bit for bit, even those a rounding error puts past a
    border)."""
    x, y, w, h = boxes.T
    w2, h2 = w * np.exp(noise.scale_drift * u[:, 2]), h * np.exp(noise.scale_drift * u[:, 3])
    x2 = x + noise.drift * u[:, 0] * w + (w - w2) / 2.0
    y2 = y + noise.drift * u[:, 1] * h + (h - h2) / 2.0
    out = np.stack([x2, y2, w2, h2], axis=1)
    lo_x, lo_y = np.minimum(0.0, x), np.minimum(0.0, y)
    hi_x, hi_y = np.maximum(1.0, x + w), np.maximum(1.0, y + h)
    leaves = (x2 < lo_x) | (y2 < lo_y) | (x2 + w2 > hi_x) | (y2 + h2 > hi_y)
    if leaves.any():
        x0, y0 = np.clip(x2, lo_x, hi_x), np.clip(y2, lo_y, hi_y)
        x1, y1 = np.clip(x2 + w2, lo_x, hi_x), np.clip(y2 + h2, lo_y, hi_y)
        clipped = np.stack([x0, y0, x1 - x0, y1 - y0], axis=1)
        out = np.where(leaves[:, None], clipped, out)
    in_frame = (out[:, 2] > 0) & (out[:, 3] > 0)
    return out, in_frame, leaves & in_frame


def _switched_ids(video: VideoLabels, track_idx: np.ndarray, uniq: np.ndarray, rate: float,
                  rng: np.random.Generator) -> tuple[np.ndarray, int, int]:
    """The rater's track id of every box after identity switches, the switches made and those without partner."""
    n, k = len(video), len(uniq)
    start, pick = rng.random(n), rng.random(n)
    events = np.flatnonzero(start < rate)  # rows sorted by (frame, track): events in frame order
    if len(events) == 0:
        return video.tracks.copy(), 0, 0
    bounds = video.frame_bounds()
    current = np.arange(k)
    snapshots: list[np.ndarray] = []
    at: list[int] = []
    lonely = 0
    for row in events:
        t = video.frames[row]
        present = track_idx[bounds[t - 1]:bounds[t]]
        others = present[present != track_idx[row]]
        if len(others) == 0:
            lonely += 1
            continue
        a, b = track_idx[row], others[int(pick[row] * len(others))]
        current = current.copy()
        current[a], current[b] = current[b], current[a]
        if at and at[-1] == t:
            snapshots[-1] = current
        else:
            snapshots.append(current)
            at.append(t)
    if not snapshots:
        return video.tracks.copy(), 0, lonely
    table = np.vstack([np.arange(k)[None, :], np.asarray(snapshots)])
    which = np.searchsorted(np.asarray(at), video.frames, side="right")  # 0: before the first switch
    return uniq[table[which, track_idx]], len(events) - lonely, lonely


def _missed(track_idx: np.ndarray, k: int, noise: VideoNoise, rng: np.random.Generator) -> np.ndarray:
    """Boolean mask of the boxes missed: a stationary two-state chain along each track's boxes."""
    n = len(track_idx)
    missed = np.zeros(n, dtype=bool)
    if noise.miss_rate <= 0 or n == 0:
        return missed
    rate, q = noise.miss_rate, 1.0 / noise.miss_length
    p = rate * q / (1.0 - rate)
    if p > 1.0:  # visible runs cannot be shorter than one box: lengthen the missed runs instead
        p, q = 1.0, (1.0 - rate) / rate
    if p <= 0.0 or q <= 0.0:  # a rate so close to 0 or 1 that the run probability underflows
        missed[:] = q <= 0.0
        return missed
    order = np.argsort(track_idx, kind="stable")  # each track's boxes, in frame order
    counts = np.bincount(track_idx, minlength=k)
    offsets = np.concatenate([[0], np.cumsum(counts)])
    for j in np.flatnonzero(counts):
        L = int(counts[j])
        state0 = rng.random() < rate  # stationary start
        states = (np.arange(L) % 2 == 0) == state0  # alternating, starting with state0 (True: missed)
        lengths = np.minimum(np.where(states, rng.geometric(q, L), rng.geometric(p, L)), L)  # longer runs: cut
        missed[order[offsets[j]:offsets[j + 1]]] = np.repeat(states, lengths)[:L]
    return missed


def _spurious(video: VideoLabels, noise: VideoNoise, classes: Sequence[str],
              rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    """Invented tracks: ``(frames, tracks, labels, boxes, number of tracks)``."""
    N = video.num_frames
    m = int(rng.poisson(noise.spurious_rate * N)) if noise.spurious_rate > 0 else 0
    if m == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, object), np.zeros((0, 4)), 0
    length = np.minimum(rng.geometric(1.0 / noise.spurious_length, m), N)
    first = 1 + np.floor(rng.random(m) * (N - length + 1)).astype(np.int64)
    size = np.exp(rng.uniform(np.log(0.03), np.log(0.2), m))
    aspect = np.exp(rng.uniform(-0.4, 0.4, m))
    wh = np.stack([size * np.sqrt(aspect), size / np.sqrt(aspect)], axis=1)
    p0 = rng.random((m, 2)) * (1.0 - wh)
    v = rng.normal(0.0, 0.005, (m, 2))
    label = np.asarray([classes[i] for i in rng.integers(len(classes), size=m)], dtype=object)
    track = np.repeat(np.arange(m), length)
    step = np.arange(len(track)) - np.repeat(np.cumsum(length) - length, length)
    xy = fold(p0[track] + step[:, None] * v[track], 1.0 - wh[track])
    base = int(video.tracks.max()) if len(video) else 0
    return first[track] + step, base + 1 + track, label[track], np.concatenate([xy, wh[track]], axis=1), m


def _jitter(video: VideoLabels, jitter: float, rng: np.random.Generator) -> np.ndarray:
    """The segments with both ends moved by ``round(N(0, jitter^2))``, ordered and clipped to ``[1, N]``."""
    segments = cast(np.ndarray, video.segments)  # an array after __post_init__
    z = rng.standard_normal(segments.shape)
    moved = segments + np.rint(jitter * z).astype(np.int64)
    return np.clip(np.sort(moved, axis=1), 1, video.num_frames)


def simulate_video_rater(
    video: VideoLabels,
    noise: VideoNoise,
    *,
    seed: int = 0,
    rater: str = "r1",
    classes: Sequence[str] | None = None,
) -> tuple[VideoLabels, dict[str, int]]:
    """One simulated rater's labelling of one reference video.

    Args:
        video: the reference (validated with :func:`check_video`).
        noise: the error processes (:class:`VideoNoise`; all zero reproduces
            ``video`` exactly).
        seed: non-negative integer seed.
        rater: the rater's name (part of the seed: raters differ).
        classes: the classes of spurious tracks (default: the video's
            reference classes, else ``"object"``).

    Returns:
        ``(labels, counts)``: the rater's :class:`VideoLabels` (rows sorted by
        frame then track; ``sources`` the reference row of each box, ``-1``
        for spurious ones; ``segment_sources`` the reference segment) and the
        counts of :data:`COUNTS`.
    """
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    if not isinstance(noise, VideoNoise):
        raise TypeError(f"noise must be a VideoNoise, got {type(noise).__name__}")
    check_video(video)
    uniq, track_idx = np.unique(video.tracks, return_inverse=True)
    k = len(uniq)
    u = _drift(video, track_idx, k, noise, _rng(seed, rater, video.name, "drift"))
    boxes, in_frame, clipped = _apply_drift(video.boxes, u, noise)
    tracks, switches, lonely = _switched_ids(video, track_idx, uniq, noise.switch_rate,
                                             _rng(seed, rater, video.name, "switch"))
    missed = _missed(track_idx, k, noise, _rng(seed, rater, video.name, "miss"))
    keep = in_frame & ~missed
    pool = list(classes) if classes else sorted({str(c) for c in video.labels}) or ["object"]
    sf, st, sl, sb, m = _spurious(video, noise, pool, _rng(seed, rater, video.name, "spurious"))
    rows = np.flatnonzero(keep)
    out = replace(
        video,
        frames=np.concatenate([video.frames[rows], sf]), tracks=np.concatenate([tracks[rows], st]),
        labels=np.concatenate([video.labels[rows], sl]), boxes=np.concatenate([boxes[rows], sb]),
        sources=np.concatenate([rows, np.full(len(sf), -1)]),
        segments=_jitter(video, noise.segment_jitter, _rng(seed, rater, video.name, "segments")),
        segment_sources=np.arange(len(cast(np.ndarray, video.segments))),
    ).sorted()
    counts = {"boxes": len(out), "missed": int(missed.sum()), "switches": switches,
              "switches_without_partner": lonely, "spurious_tracks": m, "spurious_boxes": len(sf),
              "clipped": int((clipped & keep).sum()), "drifted_out": int((~in_frame & ~missed).sum()),
              "segments": len(cast(np.ndarray, out.segments))}
    return out, counts


def simulate_video_raters(
    reference: Sequence[VideoLabels],
    noise: VideoNoise | Sequence[VideoNoise] | Mapping[str, VideoNoise],
    *,
    num_raters: int | None = None,
    seed: int = 0,
    names: Sequence[str] | None = None,
    classes: Sequence[str] | None = None,
) -> VideoSimulation:
    """``num_raters`` simulated raters of every reference video (fully crossed: each rater labels each video).

    Args:
        reference: the reference videos (names unique).
        noise: one :class:`VideoNoise` for every rater, one per rater (a
            sequence in rater order), or ``{rater: VideoNoise}``.
        num_raters: ``K >= 1`` raters sharing one ``noise`` (default 3); with
            a sequence or mapping of noises, their number (another value is
            an error).
        seed: non-negative integer seed.
        names: rater names (default ``r1 .. rK``).
        classes: the classes of spurious tracks (default: the classes of the
            whole reference, else ``"object"``).

    Returns:
        A :class:`VideoSimulation`.
    """
    raters, per = _rater_noise(noise, num_raters, names)
    seen: dict[str, int] = {}
    for i, v in enumerate(reference):
        if not isinstance(v, VideoLabels):
            raise TypeError(f"reference[{i}] must be a VideoLabels, got {type(v).__name__}")
        if v.name in seen:
            raise ValueError(f"reference videos #{seen[v.name]} and #{i} have the same name {v.name!r}")
        seen[v.name] = i
    pool = list(classes) if classes else sorted({str(c) for v in reference for c in v.labels}) or ["object"]
    videos, counts = {}, {}
    for r in raters:
        out, total = [], dict.fromkeys(COUNTS, 0)
        for v in reference:
            sim, c = simulate_video_rater(v, per[r], seed=seed, rater=r, classes=pool)
            out.append(sim)
            for name, value in c.items():
                total[name] += value
        videos[r], counts[r] = out, total
    return VideoSimulation(raters=tuple(raters), videos=videos, counts=counts, noise=per)


def _rater_noise(noise, num_raters: int | None, names: Sequence[str] | None) -> tuple[list[str], dict[str, VideoNoise]]:
    """Rater names and each rater's :class:`VideoNoise`, with clear errors."""
    if num_raters is not None and (isinstance(num_raters, bool) or not isinstance(num_raters, (int, np.integer))
                                   or num_raters < 1):
        raise ValueError(f"num_raters must be an integer >= 1, got {num_raters!r}")
    if isinstance(noise, Mapping):
        raters = [str(r) for r in noise]
        if names is not None and list(names) != raters:
            raise ValueError(f"names {list(names)} differ from the raters of the noise mapping {raters}")
        per = dict(zip(raters, noise.values(), strict=True))
    else:
        listed = [noise] if isinstance(noise, VideoNoise) else list(noise)
        if isinstance(noise, VideoNoise):
            listed = listed * int(3 if num_raters is None else num_raters)
        raters = [str(r) for r in names] if names is not None else [f"r{j + 1}" for j in range(len(listed))]
        if len(raters) != len(listed):
            raise ValueError(f"{len(raters)} names for {len(listed)} raters")
        per = dict(zip(raters, listed, strict=True))
    if num_raters is not None and num_raters != len(raters):
        raise ValueError(f"num_raters={num_raters} but {len(raters)} VideoNoise were given")
    if not raters or len(set(raters)) != len(raters) or not all(raters):
        raise ValueError(f"rater names must be non-empty and distinct, got {raters}")
    for r, n in per.items():
        if not isinstance(n, VideoNoise):
            raise TypeError(f"noise of rater {r!r} must be a VideoNoise, got {type(n).__name__}")
    return raters, per
