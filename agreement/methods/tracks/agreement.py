r"""Track agreement of one video, and of a corpus of videos: the entry points of the package.

:func:`track_agreement` takes the raters' tracks of one video
(``{rater: Tracks}``, every rater assigned to the video, also one without
boxes) and returns

* the track units (:mod:`agreement.methods.tracks.correspondence`);
* the video's reliability data for α (:mod:`agreement.methods.tracks.alpha`)
  and α of this video alone;
* per rater pair ``(a, b)``, ``a`` before ``b`` in name order: HOTA with ``a``
  as ground truth and ``b`` as tracker (:mod:`agreement.methods.tracks.hota`),
  IDF1 (:mod:`agreement.methods.tracks.idf1`), CLEAR-MOT in both directions
  (``a`` the reference, then ``b``; :mod:`agreement.methods.tracks.clear_mot`)
  and the symmetric ID-switch and fragmentation counts (their sums);
* optionally the consensus tracks (:mod:`agreement.methods.tracks.consensus`).

:func:`pool_track_agreement` merges the results of many videos: α over the
units of all videos together, and per rater pair HOTA, IDF1 and CLEAR-MOT of
the added counts (over the videos both raters were assigned to).

This module does not import FiftyOne.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

from agreement.methods.tracks.alpha import TrackAlphas, TrackReliability, track_alpha, track_reliability
from agreement.methods.tracks.clear_mot import ClearMotResult, clear_mot_of_pair, pool_clear_mot
from agreement.methods.tracks.consensus import ConsensusTracks, consensus_of_video
from agreement.methods.tracks.correspondence import TrackUnits, check_tau, units_of_video
from agreement.methods.tracks.data import Tracks
from agreement.methods.tracks.hota import HotaResult, check_loca_unmatched, hota_of_pair, pool_hota
from agreement.methods.tracks.idf1 import Idf1Result, idf1_of_pair, pool_idf1
from agreement.methods.tracks.video import VideoTracks

__all__ = ["RaterPairTracks", "TrackAgreementResult", "track_agreement", "CorpusTrackAgreement",
           "pool_track_agreement"]


@dataclass(frozen=True, eq=False)
class RaterPairTracks:
    """Tracking agreement of two raters (``rater_a`` before ``rater_b`` in name order).

    Attributes:
        rater_a, rater_b: the raters.
        hota: HOTA with ``rater_a`` as ground truth and ``rater_b`` as tracker.
        idf1: IDF1 (symmetric).
        clear_ab: CLEAR-MOT with ``rater_a`` as reference and ``rater_b`` as hypothesis.
        clear_ba: CLEAR-MOT the other way round.
        n_videos: the videos both raters were assigned to.
    """

    rater_a: str
    rater_b: str
    hota: HotaResult
    idf1: Idf1Result
    clear_ab: ClearMotResult
    clear_ba: ClearMotResult
    n_videos: int = 1

    @property
    def id_switches(self) -> int:
        """The symmetric identity-switch count: ``IDSW(a → b) + IDSW(b → a)``."""
        return self.clear_ab.id_switches + self.clear_ba.id_switches

    @property
    def fragmentations(self) -> int:
        """The symmetric fragmentation count: ``Frag(a → b) + Frag(b → a)``."""
        return self.clear_ab.fragmentations + self.clear_ba.fragmentations

    def as_dict(self) -> dict:
        """Flat plain values (one row of a rater-pair table)."""
        return {"rater_a": self.rater_a, "rater_b": self.rater_b, "n_videos": self.n_videos,
                "n_shared_samples": self.n_videos,  # a video is the run's sample (the pair heatmap's support)
                **{k: v for k, v in self.hota.as_dict().items() if k in ("hota", "det_a", "ass_a", "loc_a")},
                "hota_reason": self.hota.reason, "idf1": self.idf1.idf1, "idp": self.idf1.idp, "idr": self.idf1.idr,
                "id_switches": self.id_switches, "fragmentations": self.fragmentations,
                "id_switches_ab": self.clear_ab.id_switches, "id_switches_ba": self.clear_ba.id_switches,
                "fragmentations_ab": self.clear_ab.fragmentations, "fragmentations_ba": self.clear_ba.fragmentations,
                "mota_ab": self.clear_ab.mota, "mota_ba": self.clear_ba.mota, "motp": self.clear_ab.motp}


@dataclass(frozen=True, eq=False)
class TrackAgreementResult:
    """Track agreement of one video (see the module).

    Attributes:
        video: the video's name (or ``None``).
        raters: the raters assigned to it, in name order.
        units: its :class:`TrackUnits`.
        reliability: its values for α, to pool with :func:`agreement.methods.tracks.alpha.track_alpha` or
            :func:`pool_track_agreement`.
        alpha: α of this video alone.
        pairs: one :class:`RaterPairTracks` per pair of raters.
        consensus: the consensus tracks, when asked for.
    """

    video: str | None
    raters: tuple[str, ...]
    units: TrackUnits
    reliability: TrackReliability
    alpha: TrackAlphas
    pairs: tuple[RaterPairTracks, ...]
    consensus: ConsensusTracks | None = None

    def pair(self, a: str, b: str) -> RaterPairTracks:
        """The rater pair ``{a, b}`` (either order; ``KeyError`` if not both assigned)."""
        return _find_pair(self.pairs, a, b)


def _find_pair(pairs: Sequence[RaterPairTracks], a: str, b: str) -> RaterPairTracks:
    for p in pairs:
        if {p.rater_a, p.rater_b} == {a, b}:
            return p
    raise KeyError(f"no rater pair ({a!r}, {b!r})")


def track_agreement(tracks_by_rater: Mapping[str, Tracks], *, video: str | None = None, tau: float = 0.5,
                    iou_threshold: float = 0.5, consensus: bool = False, quorum: float = 0.5,
                    min_raters: int = 1, weights: Mapping[str, float] | None = None,
                    loca_unmatched: str = "skip", frame_count: float | None = None) -> TrackAgreementResult:
    r"""Multi-rater agreement on the tracks of one video: units, α, HOTA, IDF1, CLEAR-MOT, consensus.

    Track units by STIoU ``>= tau``; α of presence, class and localisation (``δ = 1 - STIoU``); per rater pair
    HOTA (α-sweep 0.05..0.95 over box IoU), IDF1 and CLEAR-MOT (box pairs with ``IoU >= iou_threshold`` may
    match). Formulas, ranges and undefined cases in the modules of :mod:`agreement.methods.tracks`.

    Args:
        tracks_by_rater: ``{rater: Tracks}``, every rater assigned to the video (use ``Tracks.empty()`` for one
            who drew nothing: explicit absence). Raters left out are not assigned (implicit absence).
        video: the video's name, for messages and the result.
        tau: the least STIoU of two tracks in one unit, in ``(0, 1]``.
        iou_threshold: the least box IoU of a match for IDF1 and CLEAR-MOT, in ``(0, 1]``.
        consensus: also build the consensus tracks (with ``quorum``, ``min_raters``, ``weights``).
        quorum: a consensus frame needs boxes from at least ``quorum`` of the unit's raters, in ``(0, 1]``
            (:mod:`agreement.methods.tracks.consensus`).
        min_raters: the least number of raters of a unit with a consensus track, ``>= 1``.
        weights: ``{rater: weight}``, positive and finite, for the consensus (None: every weight 1).
        loca_unmatched: how HOTA's LocA counts a threshold without a match: ``"skip"`` (default: left out of
            the mean) or ``"one"`` (TrackEval's convention; :mod:`agreement.methods.tracks.hota`).
        frame_count: the video's number of frames (``metadata.total_frame_count``): the chance pairs of α
            compare videos of comparable length in relative time (:mod:`agreement.methods.tracks.chance`);
            ``None``: the last annotated frame stands for it.

    Returns:
        :class:`TrackAgreementResult`.

    Raises:
        ValueError: a value that is not a :class:`Tracks`, a threshold outside ``(0, 1]``, an unknown
            ``loca_unmatched``.

    Reference:
        Krippendorff 2011 (α); Luiten et al., IJCV 2021 (HOTA); Ristani et al., ECCV-W 2016 (IDF1);
        Bernardin & Stiefelhagen, EURASIP JIVP 2008 (CLEAR-MOT).
    """
    check_tau(tau)
    check_tau(iou_threshold, name="iou_threshold")
    check_loca_unmatched(loca_unmatched)
    vt = VideoTracks.build(tracks_by_rater, video)
    units = units_of_video(vt, tau)
    reliability = track_reliability(vt, units, frame_count=frame_count)
    pairs = []
    R = len(vt.raters)
    for a in range(R):
        for b in range(a + 1, R):
            ab, ba = vt.rater_pair(a, b), vt.rater_pair(b, a)
            pairs.append(RaterPairTracks(vt.raters[a], vt.raters[b], hota_of_pair(ab, loca_unmatched=loca_unmatched),
                                         idf1_of_pair(ab, threshold=iou_threshold),
                                         clear_mot_of_pair(ab, threshold=iou_threshold),
                                         clear_mot_of_pair(ba, threshold=iou_threshold)))
    cons = consensus_of_video(vt, units, quorum=quorum, min_raters=min_raters, weights=weights) if consensus else None
    return TrackAgreementResult(video=video, raters=vt.raters, units=units, reliability=reliability,
                                alpha=track_alpha([reliability]), pairs=tuple(pairs), consensus=cons)


@dataclass(frozen=True, eq=False)
class CorpusTrackAgreement:
    """Track agreement pooled over videos.

    Attributes:
        alpha: α over the units of every video.
        pairs: per rater pair, HOTA, IDF1 and CLEAR-MOT of the counts added over the videos both were assigned to.
        n_videos: the videos pooled.
    """

    alpha: TrackAlphas
    pairs: tuple[RaterPairTracks, ...]
    n_videos: int

    def pair(self, a: str, b: str) -> RaterPairTracks:
        """The pooled :class:`RaterPairTracks` of raters ``a`` and ``b`` (either order)."""
        return _find_pair(self.pairs, a, b)

    def pair_records(self) -> list[dict]:
        """One flat dict per rater pair (for a table)."""
        return [p.as_dict() for p in self.pairs]


def pool_track_agreement(results: Sequence[TrackAgreementResult]) -> CorpusTrackAgreement:
    """Pools per-video results: α over all units (:func:`agreement.methods.tracks.alpha.track_alpha`), and per rater
    pair the HOTA counts (TrackEval's ``combine_sequences``), IDF1 counts and CLEAR-MOT counts added.

    The order of ``results`` does not matter (up to float rounding in the sums).
    """
    results = list(results)
    by_pair: dict[tuple[str, str], list[RaterPairTracks]] = {}
    for r in results:
        for p in r.pairs:
            by_pair.setdefault((p.rater_a, p.rater_b), []).append(p)
    pairs = tuple(
        RaterPairTracks(rater_a=a, rater_b=b, hota=pool_hota([p.hota for p in ps]),
                        idf1=pool_idf1([p.idf1 for p in ps]), clear_ab=pool_clear_mot([p.clear_ab for p in ps]),
                        clear_ba=pool_clear_mot([p.clear_ba for p in ps]), n_videos=len(ps))
        for (a, b), ps in sorted(by_pair.items()))
    return CorpusTrackAgreement(track_alpha([r.reliability for r in results]), pairs, len(results))
