r"""Krippendorff-style α over track units: track presence, track class and track localisation.

The units are the track units of every video (:mod:`agreement.methods.tracks.correspondence`, at
``STIoU >= tau``). Class α is Krippendorff's nominal α over them; presence and localisation are
chance-corrected against tracks of *different* videos passed through the same matching, as the
product's geometry agreement does for images (Braylan, Alonso & Lease 2022,
:mod:`agreement.methods.geometry_agreement`; the chance set pairs and their weights:
:mod:`agreement.methods.tracks.chance`).

**Presence** (did the raters track the same objects?). A *set pair* is two raters' tracks
``A`` and ``B`` in one video; ``|M|`` of them are matched and ``u = |A| + |B| - 2 |M|`` are not.
Within a video, ``|M|`` is the number of units holding a track of both raters (for two raters, the
Hungarian matches at ``tau``); for a chance set pair (``A`` in video ``i``, ``B`` of a video
``j != i`` of comparable length, in relative time) the Hungarian matches at ``tau``. Pooled:

.. math::

    U_o = \frac{\sum_{\text{within}} u}{\sum_{\text{within}} (|A| + |B|)},\qquad
    U_e = \frac{\sum_{\text{chance}} w\,u}{\sum_{\text{chance}} w\,(|A| + |B|)},\qquad
    \alpha_{presence} = 1 - \frac{U_o}{U_e}

(the detection α of :mod:`agreement.methods.geometry_agreement`). Every pair of raters assigned to a
video is a set pair; an empty set (a rater assigned who drew nothing) takes part, a rater not
assigned does not. Range at most 1: 1 when every rater tracks every object (``U_o = 0``), about 0
for raters tracking unrelated objects, below 0 when worse. Krippendorff's nominal α over present /
absent per unit is *not* used: units exist only where some rater drew a track, so no unit holds two
"absent" values and, with ``n`` pairable values of which ``u`` absent, that α is
``(1 - u) / (n - u) <= 0`` by construction (undefined for identical raters, about -0.5 at chance).

**Class** (nominal). The value of a rater in a unit is its track's class (the majority label of the
track's boxes, :mod:`agreement.methods.tracks.data`); raters without a track in the unit, or whose
track has no label, have no value. Only units with two or more classed tracks are pairable.
Krippendorff's α, pooled over the units of all videos.

**Localisation** (distance α). Two tracks differ by ``δ(s, t) = 1 - STIoU(s, t)`` in ``[0, 1]``.
Within a video, each pair of raters' tracks is matched by the Hungarian algorithm of maximum total
STIoU among the pairs that overlap at all (``STIoU > 0``); chance set pairs go through the same
matching. With ``W`` the within-video matched distances and ``B`` the chance ones (weights ``w``):

.. math::

    D_o = \operatorname{mean}(W),\qquad D_e = \frac{\sum_B w\,\delta}{\sum_B w},\qquad
    \alpha_{localisation} = 1 - \frac{D_o}{D_e}

The matching is *not* the units' ``STIoU >= tau``: pairs matched at ``tau`` have ``δ <= 1 - tau``
inside a video while unrelated tracks (of another video) almost never reach ``tau`` (0 of 384 pairs
of independent random tracks on 8 videos of 40 frames), so a chance distance through that matching is
unknown in most corpora, and pooling chance pairs unmatched (``δ ≈ 1``) would put α near 0.5 for
random raters. Through ``STIoU > 0`` chance pairs match wherever unrelated tracks overlap, and the
two distributions are comparable. Range at most 1: 1 when matched tracks coincide, about 0 at
chance, below 0 when worse.

Undefined values are NaN with a reason: presence when no set pair holds a track, when there is no
chance set pair (no length stratum holds two videos labelled by two different raters: a single
video in particular) or ``U_e = 0``; localisation when no within-video pair of tracks overlaps, when no chance
pair does, or ``D_e = 0``; class when fewer than two values are pairable or they do not vary.

Pooling. α is computed over all videos together, never as a mean of per-video α:
:class:`TrackReliability` holds one video's values (poolable), :func:`track_alpha` pools any number
of them; the α of a single video has no chance baseline (presence and localisation NaN).

Reference: K. Krippendorff, "Computing Krippendorff's Alpha-Reliability", University of
Pennsylvania, 2011; T. Braylan, O. Alonso and M. Lease, "Measuring Annotator Agreement Generally
across Complex Structured, Multi-object, and Free-text Annotation Tasks", WWW 2022.

This module does not import FiftyOne.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from agreement.core.krippendorff import AlphaResult, encode_values, nominal_alpha
from agreement.methods.tracks.chance import ANY_OVERLAP, ChanceSums, ChanceVideo, chance_sums
from agreement.methods.tracks.correspondence import TrackUnits, matches_above
from agreement.methods.tracks.video import VideoTracks

__all__ = ["TrackReliability", "TrackAlphas", "track_reliability", "track_alpha", "REASON_NO_CHANCE",
           "REASON_NO_TRACKS", "REASON_NO_OVERLAP", "REASON_NO_CHANCE_OVERLAP"]

REASON_NO_TRACKS = "no two raters share a video with a track in it: nothing to compare"
REASON_NO_CHANCE = ("no chance pair: no two videos of comparable length (one length stratum) are labelled by "
                    "two different raters (a single video, for one), so chance agreement is unknown")
REASON_ALL_CHANCE = ("every chance pair of track sets matches completely (U_e = 0): finding the same objects "
                     "cannot be told apart from chance")
REASON_NO_OVERLAP = "no two raters' tracks in one video overlap (STIoU > 0): nothing is localised in common"
REASON_NO_CHANCE_OVERLAP = ("no chance pair of tracks (rater a's in one video, rater b's in another video of "
                            "comparable length, in relative time) overlaps (STIoU > 0): the chance distance is "
                            "unknown")
REASON_FLAT = "no variation: the chance pairs of tracks coincide (D_e = 0)"


@dataclass(frozen=True, eq=False)
class TrackReliability:
    """One video's reliability data for the three α (poolable with :func:`track_alpha`).

    Attributes:
        video: the video's name (reported only).
        raters: the raters assigned to the video, in name order.
        present: ``(U, R)`` bool, rater ``r`` has a track in unit ``u``.
        classes: ``(U, R)`` object, the class of the rater's track in the unit (``None``: no track or no label).
        det_unmatched: ``Σ u`` over the video's set pairs (tracks not in a unit with the other rater's).
        det_size: ``Σ (|A| + |B|)`` over the video's set pairs.
        loc_n: within-video localisation matches (``STIoU > 0``).
        loc_observed: ``Σ δ`` over them.
        loc_units: the units with two or more tracks.
        chance: what the chance baseline needs of the video (:class:`agreement.methods.tracks.chance.ChanceVideo`).
        tau: the units' threshold (the chance presence matching uses it).
    """

    video: str | None
    raters: tuple[str, ...]
    present: np.ndarray
    classes: np.ndarray
    det_unmatched: float
    det_size: float
    loc_n: int
    loc_observed: float
    loc_units: int
    chance: ChanceVideo
    tau: float

    @property
    def n_units(self) -> int:
        """The number of track units U of the video."""
        return len(self.present)


@dataclass(frozen=True)
class TrackAlphas:
    """α of track presence, track class and track localisation (see the module).

    Attributes:
        presence: α of track presence, ``1 - U_o / U_e`` in ``(-inf, 1]``, an
            :class:`agreement.core.krippendorff.AlphaResult` (``alpha``, ``observed``, ``expected``,
            ``n_pairable``, ``n_units``, ``reason``) with ``observed = U_o``, ``expected = U_e`` and
            ``n_pairable`` the tracks of the within-video set pairs.
        classes: α of the track class (nominal), an :class:`agreement.core.krippendorff.AlphaResult`.
        localisation: α of track localisation, ``1 - D_o / D_e``, an
            :class:`agreement.core.krippendorff.AlphaResult` with ``observed = D_o``, ``expected = D_e`` and
            ``n_pairable`` the within-video matches.
        n_videos: the videos pooled.
        n_units: the track units pooled.
        chance_pairs: the chance set pairs measured.
    """

    presence: AlphaResult
    classes: AlphaResult
    localisation: AlphaResult
    n_videos: int
    n_units: int
    chance_pairs: int = 0

    def as_dict(self) -> dict[str, Any]:
        """Plain numbers (NaN kept), for JSON: the counts, and per α its ``alpha``, ``observed``, ``expected``,
        ``n_pairable``, ``n_units`` and ``reason``."""
        out: dict[str, Any] = {"n_videos": self.n_videos, "n_units": self.n_units, "chance_pairs": self.chance_pairs}
        for name in ("presence", "classes", "localisation"):
            a = getattr(self, name)
            out[name] = {"alpha": a.alpha, "observed": a.observed, "expected": a.expected,
                         "n_pairable": a.n_pairable, "n_units": a.n_units, "reason": a.reason}
        return out


def track_reliability(video: VideoTracks, units: TrackUnits, *, frame_count: float | None = None) -> TrackReliability:
    """One video's values for the three α from its indexed tracks and its track units.

    ``present``/``classes`` per unit and rater; presence ``Σ u`` and ``Σ (|A| + |B|)`` over the video's rater
    pairs (``u = |A| + |B| - 2 |M|``, ``|M|`` the units holding both raters' tracks); localisation
    ``Σ (1 - STIoU)`` over the Hungarian matches of every rater pair among overlapping tracks (see the module).

    Args:
        video: the indexed tracks.
        units: its track units.
        frame_count: the video's number of frames (``metadata.total_frame_count``), for the chance pairs'
            length strata and relative time; ``None``: its last annotated frame.
    """
    members, present = units.members, units.present
    classes = np.full(members.shape, None, dtype=object)
    classes[present] = video.track_label[members[present]]
    n_of = np.diff(video.track_start)
    R = len(video.raters)
    both = present.T.astype(np.int64) @ present.astype(np.int64)  # units holding both raters
    iu = np.triu_indices(R, 1)
    size = float((n_of[iu[0]] + n_of[iu[1]]).sum())
    unmatched = size - 2.0 * float(both[iu].sum())
    loc_n, loc_sum = 0, 0.0
    for a, b in zip(*iu, strict=True):
        block = video.stiou_block(int(a), int(b))
        rows, cols = matches_above(block, ANY_OVERLAP)
        loc_n += len(rows)
        loc_sum += float((1.0 - block[rows, cols]).sum())
    return TrackReliability(video=video.video, raters=video.raters, present=present, classes=classes,
                            det_unmatched=unmatched, det_size=size, loc_n=loc_n, loc_observed=loc_sum,
                            loc_units=int((present.sum(axis=1) >= 2).sum()), chance=ChanceVideo.of(video, frame_count),
                            tau=units.tau)


def _presence(parts: Sequence[TrackReliability], chance: ChanceSums, n_units: int) -> AlphaResult:
    size = float(sum(p.det_size for p in parts))
    if not size > 0:
        return AlphaResult(np.nan, np.nan, np.nan, size, n_units, REASON_NO_TRACKS)
    u_o = float(sum(p.det_unmatched for p in parts)) / size
    if not chance.size > 0:
        return AlphaResult(np.nan, u_o, np.nan, size, n_units, REASON_NO_CHANCE)
    u_e = chance.unmatched / chance.size
    if not u_e > 0:
        return AlphaResult(np.nan, u_o, u_e, size, n_units, REASON_ALL_CHANCE)
    return AlphaResult(1.0 - u_o / u_e, u_o, u_e, size, n_units, "")


def _localisation(parts: Sequence[TrackReliability], chance: ChanceSums, n_units: int) -> AlphaResult:
    n = float(sum(p.loc_n for p in parts))
    if not n > 0:
        return AlphaResult(np.nan, np.nan, np.nan, n, n_units, REASON_NO_OVERLAP)
    d_o = float(sum(p.loc_observed for p in parts)) / n
    if not chance.matched > 0:
        return AlphaResult(np.nan, d_o, np.nan, n, n_units,
                           REASON_NO_CHANCE if not chance.size > 0 else REASON_NO_CHANCE_OVERLAP)
    d_e = chance.distance / chance.matched
    if not d_e > 0:
        return AlphaResult(np.nan, d_o, d_e, n, n_units, REASON_FLAT)
    return AlphaResult(1.0 - d_o / d_e, d_o, d_e, n, n_units, "")


def track_alpha(reliabilities: Sequence[TrackReliability], *, max_chance_pairs: int | None = None) -> TrackAlphas:
    r"""α of track presence, class and localisation, pooled over every video (see the module).

    ``alpha_presence = 1 - U_o / U_e`` (shares of unmatched tracks within videos and in chance set pairs),
    ``alpha_localisation = 1 - D_o / D_e`` (mean ``1 - STIoU`` of matched tracks within videos and in chance
    set pairs), chance set pairs drawn between videos of comparable length in relative time
    (:mod:`agreement.methods.tracks.chance`); nominal Krippendorff's α of the tracks' classes over the units.
    Range: at most 1; 1 perfect agreement, about 0 chance, below 0 systematic disagreement.

    Args:
        reliabilities: one :class:`TrackReliability` per video (e.g. ``result.reliability`` of
            :func:`agreement.methods.tracks.agreement.track_agreement`); their order does not matter.
        max_chance_pairs: chance set pairs per length stratum, at most (default
            :data:`agreement.methods.tracks.chance.MAX_CHANCE_PAIRS`).

    Returns:
        :class:`TrackAlphas`; each α NaN with a reason where undefined (module docstring).

    Reference:
        Krippendorff, 2011; Braylan, Alonso & Lease, WWW 2022.
    """
    parts = list(reliabilities)
    raters = sorted({r for p in parts for r in p.raters}, key=str)
    col = {r: k for k, r in enumerate(raters)}
    U = sum(p.n_units for p in parts)
    classes = np.full((len(raters), U), None, dtype=object)
    start = 0
    for p in parts:
        rows = np.array([col[r] for r in p.raters], dtype=np.int64)
        stop = start + p.n_units
        if len(rows):
            classes[rows, start:stop] = p.classes.T
        start = stop
    codes, _ = encode_values(classes)
    taus = {p.tau for p in parts}
    if len(taus) > 1:
        raise ValueError(f"the videos' track units were built with different tau {sorted(taus)}: pool one tau")
    kw = {} if max_chance_pairs is None else {"max_pairs": int(max_chance_pairs)}
    chance = chance_sums([p.chance for p in parts], taus.pop(), **kw) if parts else ChanceSums()
    loc_units = int(sum(p.loc_units for p in parts))
    return TrackAlphas(_presence(parts, chance, U), nominal_alpha(codes), _localisation(parts, chance, loc_units),
                       len(parts), U, chance.set_pairs)
