r"""CLEAR-MOT between two raters' tracks: identity switches, fragmentations, MOTA and MOTP.

Rater ``A`` is the reference (objects), rater ``B`` the hypothesis. A box pair
on one frame *may match* when its IoU is at least ``threshold`` (default 0.5);
its distance is ``d = 1 - IoU``. Frame by frame, in frame order (Bernardin &
Stiefelhagen 2008, as py-motmetrics' ``MOTAccumulator.update``):

1. *Carry forward.* An object ``o`` of the frame whose last matched hypothesis
   ``m(o)`` (on any earlier frame) is on the frame, not yet taken, and may
   match, is matched to it again (objects in canonical track order).
2. *Assign.* The remaining objects and hypotheses are matched by the Hungarian
   algorithm minimising the total distance over pairs that may match (pairs
   that may not match cost ``2 r c + 1``, ``r`` the smaller side and ``c`` one
   more than the largest distance, and are dropped from the result: motmetrics'
   ``lsa_solve_scipy``). A match ``(o, h)`` with ``m(o)`` set and ``m(o) != h``
   is an **identity switch** (mismatch); then ``m(o) = h``.
3. Unmatched objects are misses (FN), unmatched hypotheses false positives (FP).

A **fragmentation** of object ``o`` is a change from matched to unmatched
between two consecutive frames of ``o``'s own track, counted only between its
first and last matched frame (frames where ``o`` has no box are skipped, not
misses): the number of interruptions of its coverage (Li, Huang & Nevatia
2009; py-motmetrics' ``num_fragmentations``).

With ``n_A`` reference boxes:

.. math::

    \mathrm{MOTA} = 1 - \frac{FN + FP + IDSW}{n_A},\qquad
    \mathrm{MOTP} = \frac{1}{|M|} \sum_{(o, h) \in M} \mathrm{IoU}(o, h)

(MOTP here as the mean IoU of the matches, a similarity: py-motmetrics reports
the mean distance ``1 - MOTP``). MOTA is at most 1 and unbounded below (NaN
without reference boxes); MOTP in ``[threshold, 1]`` (NaN without a match).

Direction. Switches and fragmentations are not symmetric: a rater who splits
one object into two tracks causes a switch when it is the hypothesis and none
when it is the reference (there it causes a fragmentation of nothing, but a
false start). :func:`clear_mot` takes one direction; the rater-pair report of
:func:`agreement.methods.tracks.agreement.track_agreement` gives both, ``A → B``
and ``B → A``, and their sum as the symmetric count.

A frame whose matchable pairs are disjoint (no box may match two others) is
matched without the Hungarian algorithm: every matchable pair is matched,
whatever was carried forward. The counts equal py-motmetrics' on the same data
(detections of a frame in canonical track order).

References: K. Bernardin and R. Stiefelhagen, "Evaluating Multiple Object
Tracking Performance: The CLEAR MOT Metrics", EURASIP Journal on Image and
Video Processing 2008, 246309; Y. Li, C. Huang and R. Nevatia, "Learning to
Associate: HybridBoosted Multi-Target Tracker for Crowded Scene", CVPR 2009
(fragmentations); py-motmetrics (C. Heindl et al.).

This module does not import FiftyOne.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
from scipy.optimize import linear_sum_assignment

from agreement.methods.tracks.correspondence import check_tau
from agreement.methods.tracks.data import Tracks
from agreement.methods.tracks.video import RaterPair, VideoTracks

__all__ = ["ClearMotResult", "clear_mot", "clear_mot_of_pair", "pool_clear_mot"]


@dataclass(frozen=True)
class ClearMotResult:
    """CLEAR-MOT counts of a hypothesis rater against a reference rater (poolable by adding).

    Attributes:
        n_reference, n_hypothesis: the boxes of each rater.
        matches: matched box pairs (identity switches included).
        misses: reference boxes without a match (FN).
        false_positives: hypothesis boxes without a match (FP).
        id_switches: matches whose hypothesis track differs from the reference track's last matched one.
        fragmentations: interruptions of a reference track's coverage (see the module).
        iou_sum: the IoU summed over the matches.
    """

    n_reference: int
    n_hypothesis: int
    matches: int
    misses: int
    false_positives: int
    id_switches: int
    fragmentations: int
    iou_sum: float

    @property
    def mota(self) -> float:
        """``1 - (FN + FP + IDSW) / n_reference``, at most 1; NaN without reference boxes."""
        if self.n_reference == 0:
            return np.nan
        return 1.0 - (self.misses + self.false_positives + self.id_switches) / self.n_reference

    @property
    def motp(self) -> float:
        """The mean IoU of the matches, in ``[threshold, 1]``; NaN without a match."""
        return self.iou_sum / self.matches if self.matches else np.nan

    @property
    def reason(self) -> str:
        """Why ``mota`` or ``motp`` is NaN; ``""`` when both are defined."""
        if self.n_reference == 0:
            return "the reference rater has no box: MOTA is undefined"
        if self.matches == 0:
            return "no box pair matched: MOTP is undefined"
        return ""

    def __add__(self, other: "ClearMotResult") -> "ClearMotResult":
        return ClearMotResult(*(getattr(self, f) + getattr(other, f) for f in self.__dataclass_fields__))

    def as_dict(self) -> dict:
        """The counts with ``mota``, ``motp`` and ``reason``, as a plain dict."""
        out = {f: getattr(self, f) for f in self.__dataclass_fields__}
        out.update(mota=self.mota, motp=self.motp, reason=self.reason)
        return out


def _lsa_with_forbidden(dist: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Minimum-distance assignment over the finite entries (forbidden ones cost ``2 r c + 1``, then dropped)."""
    valid = np.isfinite(dist)
    if not valid.any():
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    if valid.all():
        cost = dist
    else:
        c = np.abs(dist[valid]).max() + 1
        cost = np.where(valid, dist, 2 * min(dist.shape) * c + 1)
    rows, cols = linear_sum_assignment(cost)
    keep = valid[rows, cols]
    return rows[keep], cols[keep]


def _frame_matches(dist: np.ndarray, o: np.ndarray, h: np.ndarray, last: dict) -> tuple[np.ndarray, np.ndarray]:
    """Steps 1 and 2 on one frame: the matched (object row, hypothesis column) pairs."""
    dist = dist.copy()
    col_of = {hid: k for k, hid in enumerate(h.tolist())}  # a track has one box per frame
    prev = np.array([col_of.get(last.get(obj), -1) for obj in o.tolist()], dtype=np.int64)
    cand = np.flatnonzero(prev >= 0)
    cand = cand[np.isfinite(dist[cand, prev[cand]])]
    # objects in row order: the first one whose last hypothesis is this column takes it
    _, first = np.unique(prev[cand], return_index=True)
    rows = cand[np.sort(first)]
    cols = prev[rows]
    dist[rows, :] = np.nan
    dist[:, cols] = np.nan
    r2, c2 = _lsa_with_forbidden(dist)
    return np.r_[rows, r2], np.r_[cols, c2]


def _matched_pairs(p: RaterPair, threshold: float) -> tuple[np.ndarray, np.ndarray]:
    """Every frame's matched detection pairs ``(i, j)`` (steps 1 and 2), in frame order."""
    ok = p.iou >= threshold
    vi, vj, vd = p.i[ok], p.j[ok], 1.0 - p.iou[ok]
    if not len(vi):
        return vi, vj
    vf = p.g_frame[vi]
    busy = (np.bincount(vi, minlength=len(p.g_frame))[vi] > 1) | (np.bincount(vj, minlength=len(p.h_frame))[vj] > 1)
    hard = np.unique(vf[busy])
    easy = ~np.isin(vf, hard)
    ei, ej = vi[easy], vj[easy]
    e_frame = vf[easy]
    last: dict = {}
    out_i, out_j = [], []
    pos = 0
    g_track, h_track = p.g_track, p.h_track
    for f in hard.tolist():
        stop = int(np.searchsorted(e_frame, f))
        last.update(zip(g_track[ei[pos:stop]].tolist(), h_track[ej[pos:stop]].tolist(), strict=True))
        out_i.append(ei[pos:stop])
        out_j.append(ej[pos:stop])
        pos = stop
        g0, g1 = np.searchsorted(p.g_frame, [f, f + 1])
        h0, h1 = np.searchsorted(p.h_frame, [f, f + 1])
        q0, q1 = np.searchsorted(vf, [f, f + 1])
        dist = np.full((g1 - g0, h1 - h0), np.nan)
        dist[vi[q0:q1] - g0, vj[q0:q1] - h0] = vd[q0:q1]
        rows, cols = _frame_matches(dist, g_track[g0:g1], h_track[h0:h1], last)
        last.update(zip(g_track[rows + g0].tolist(), h_track[cols + h0].tolist(), strict=True))
        out_i.append(rows + g0)
        out_j.append(cols + h0)
    out_i.append(ei[pos:])
    out_j.append(ej[pos:])
    i, j = np.concatenate(out_i), np.concatenate(out_j)
    order = np.lexsort((j, i))
    return i[order], j[order]


def _fragmentations(p: RaterPair, matched: np.ndarray) -> int:
    """Matched-to-unmatched changes along each reference track, before its last matched frame."""
    if not matched.any():
        return 0
    order = np.lexsort((p.g_frame, p.g_track))
    t, m = p.g_track[order], matched[order]
    pos = np.arange(len(t))
    last_matched = np.full(len(p.g_len), -1, dtype=np.int64)
    np.maximum.at(last_matched, t[m], pos[m])
    breaks = (t[1:] == t[:-1]) & m[:-1] & ~m[1:] & (pos[1:] < last_matched[t[1:]])
    return int(breaks.sum())


def clear_mot_of_pair(p: RaterPair, *, threshold: float = 0.5) -> ClearMotResult:
    """:func:`clear_mot` on a rater pair of an indexed video (reference ``g``, hypothesis ``h``): the same
    definitions, ranges and references (Bernardin & Stiefelhagen 2008; Li, Huang & Nevatia 2009)."""
    threshold = check_tau(threshold, name="threshold")
    n_g, n_h = len(p.g_frame), len(p.h_frame)
    i, j = _matched_pairs(p, threshold)
    matched = np.zeros(n_g, dtype=bool)
    matched[i] = True
    switches = 0
    if len(i):
        order = np.lexsort((p.g_frame[i], p.g_track[i]))
        o, h = p.g_track[i][order], p.h_track[j][order]
        switches = int(((o[1:] == o[:-1]) & (h[1:] != h[:-1])).sum())
    iou = _pair_iou(p, i, j)
    return ClearMotResult(n_reference=n_g, n_hypothesis=n_h, matches=len(i), misses=n_g - len(i),
                          false_positives=n_h - len(i), id_switches=switches,
                          fragmentations=_fragmentations(p, matched), iou_sum=float(iou.sum()))


def _pair_iou(p: RaterPair, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """The IoU of the detection pairs ``(i, j)`` (all among the overlapping pairs ``p.i, p.j``)."""
    if not len(i):
        return np.zeros(0)
    Nh = max(len(p.h_frame), 1)
    key = p.i * Nh + p.j  # sorted (p is sorted by i then j)
    iou: np.ndarray = p.iou[np.searchsorted(key, i * Nh + j)]
    return iou


def clear_mot(reference: Tracks, hypothesis: Tracks, *, threshold: float = 0.5) -> ClearMotResult:
    r"""CLEAR-MOT of ``hypothesis``'s tracks against ``reference``'s: ID switches, fragmentations, MOTA, MOTP.

    .. math::

        \mathrm{MOTA} = 1 - \frac{\sum_f (FN_f + FP_f + IDSW_f)}{\sum_f n_f},\qquad
        \mathrm{MOTP} = \frac{\sum_{f} \sum_{(o, h) \in M_f} \mathrm{IoU}(o, h)}{\sum_f |M_f|}

    with the frame matchings ``M_f`` of Bernardin & Stiefelhagen (carry forward, then Hungarian over pairs with
    ``IoU >= threshold``), ID switches and fragmentations as in the module. Ranges: counts ``>= 0``; MOTA at
    most 1 (NaN without reference boxes); MOTP in ``[threshold, 1]`` (NaN without a match).

    Args:
        reference: the reference rater's tracks (ground truth, objects).
        hypothesis: the other rater's tracks (hypotheses).
        threshold: the least IoU of a matchable box pair, in ``(0, 1]``.

    Returns:
        :class:`ClearMotResult`.

    Reference:
        K. Bernardin and R. Stiefelhagen, EURASIP J. Image and Video Processing 2008; equal to py-motmetrics'
        ``num_switches``, ``num_fragmentations`` and ``mota``.
    """
    return clear_mot_of_pair(VideoTracks(("ref", "hyp"), (reference, hypothesis)).rater_pair(0, 1), threshold=threshold)


def pool_clear_mot(results: Sequence[ClearMotResult]) -> ClearMotResult:
    """CLEAR-MOT over several videos: every count added, ``MOTA = 1 - Σ(FN + FP + IDSW) / Σn_A`` (at most 1) and
    ``MOTP = ΣIoU / Σ|M|`` (in ``[threshold, 1]``) of the sums.

    Reference:
        Bernardin & Stiefelhagen, EURASIP J. Image and Video Processing 2008; py-motmetrics' overall row.
    """
    total = ClearMotResult(n_reference=0, n_hypothesis=0, matches=0, misses=0, false_positives=0, id_switches=0,
                           fragmentations=0, iou_sum=0.0)
    for r in results:
        total = total + r
    return total
