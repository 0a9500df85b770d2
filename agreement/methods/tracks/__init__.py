"""Multi-rater agreement on video tracks (issue 40): correspondence, α, CLEAR-MOT, HOTA, IDF1, consensus.

One video at a time: :func:`track_agreement` takes ``{rater: Tracks}`` and returns the track units, the
video's reliability data (poolable) and α, and per rater pair HOTA, IDF1, identity switches and
fragmentations; :func:`pool_track_agreement` merges the videos of a corpus (α over all units together).
The single measures are also available on two raters' tracks: :func:`spatio_temporal_iou`,
:func:`match_tracks`, :func:`hota`, :func:`idf1`, :func:`clear_mot`, and :func:`track_units`,
:func:`track_alpha` and :func:`consensus_tracks` on several.

This package does not import FiftyOne.
"""

from agreement.methods.tracks.agreement import (
    CorpusTrackAgreement,
    RaterPairTracks,
    TrackAgreementResult,
    pool_track_agreement,
    track_agreement,
)
from agreement.methods.tracks.alpha import TrackAlphas, TrackReliability, track_alpha, track_reliability
from agreement.methods.tracks.clear_mot import ClearMotResult, clear_mot, pool_clear_mot
from agreement.methods.tracks.consensus import ConsensusTracks, consensus_tracks, mean_confidence
from agreement.methods.tracks.correspondence import TrackMatching, TrackUnits, match_tracks, track_units
from agreement.methods.tracks.data import Tracks
from agreement.methods.tracks.hota import HOTA_ALPHAS, HotaResult, hota, pool_hota
from agreement.methods.tracks.idf1 import Idf1Result, idf1, pool_idf1
from agreement.methods.tracks.video import VideoTracks, spatio_temporal_iou

__all__ = [
    "Tracks",
    "VideoTracks",
    "spatio_temporal_iou",
    "TrackMatching",
    "match_tracks",
    "TrackUnits",
    "track_units",
    "TrackReliability",
    "TrackAlphas",
    "track_reliability",
    "track_alpha",
    "HOTA_ALPHAS",
    "HotaResult",
    "hota",
    "pool_hota",
    "Idf1Result",
    "idf1",
    "pool_idf1",
    "ClearMotResult",
    "clear_mot",
    "pool_clear_mot",
    "ConsensusTracks",
    "consensus_tracks",
    "mean_confidence",
    "RaterPairTracks",
    "TrackAgreementResult",
    "track_agreement",
    "CorpusTrackAgreement",
    "pool_track_agreement",
]
