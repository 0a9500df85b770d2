r"""IDF1 between two raters' tracks: identity precision, recall and F1 (Ristani et al. 2016).

Rater ``A`` is the ground truth, rater ``B`` the tracker. A box pair on one
frame *may match* when its IoU is at least ``threshold`` (default 0.5). For a
ground-truth track ``a`` and a tracker track ``b``, ``c_ab`` is the number of
frames on which their boxes may match. The identity matching is the
one-to-one matching of tracks that maximises ``IDTP = Σ_{(a, b)} c_ab``
(Hungarian algorithm; the maximum is unique even when the matching is not).
With ``n_A`` and ``n_B`` the raters' box counts:

.. math::

    \mathrm{IDFN} = n_A - \mathrm{IDTP},\quad \mathrm{IDFP} = n_B - \mathrm{IDTP},\quad
    \mathrm{IDF1} = \frac{2\,\mathrm{IDTP}}{n_A + n_B},\quad
    \mathrm{IDP} = \frac{\mathrm{IDTP}}{n_B},\quad \mathrm{IDR} = \frac{\mathrm{IDTP}}{n_A}

Ranges ``[0, 1]``, 1 when every box of each track is matched to the same
partner track. IDF1 is symmetric in the two raters. Undefined (NaN with a
reason): IDF1 when neither rater has a box, IDP without tracker boxes, IDR
without ground-truth boxes. Pooling videos adds ``IDTP``, ``n_A`` and ``n_B``
(tracks of different videos never match), as py-motmetrics' overall row does.

Equal to py-motmetrics' ``idf1``, ``idp``, ``idr`` (``id_global_assignment``)
on the same data.

Reference: E. Ristani, F. Solera, R. Zou, R. Cucchiara and C. Tomasi,
"Performance Measures and a Data Set for Multi-Target, Multi-Camera
Tracking", ECCV 2016 Workshops, 17-35.

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

__all__ = ["Idf1Result", "idf1", "idf1_of_pair", "pool_idf1"]


@dataclass(frozen=True)
class Idf1Result:
    """Identity counts of a tracker rater against a ground-truth rater (poolable by adding).

    Attributes:
        idtp: boxes matched under the identity matching.
        n_ground_truth, n_tracker: the raters' box counts.
    """

    idtp: int
    n_ground_truth: int
    n_tracker: int

    @property
    def idfn(self) -> int:
        """ID false negatives: ``n_ground_truth - idtp``."""
        return self.n_ground_truth - self.idtp

    @property
    def idfp(self) -> int:
        """ID false positives: ``n_tracker - idtp``."""
        return self.n_tracker - self.idtp

    @property
    def idf1(self) -> float:
        """``2 IDTP / (n_A + n_B)`` in ``[0, 1]``; NaN when neither rater has a box."""
        total = self.n_ground_truth + self.n_tracker
        return 2.0 * self.idtp / total if total else np.nan

    @property
    def idp(self) -> float:
        """``IDTP / n_B`` in ``[0, 1]``; NaN without tracker boxes."""
        return self.idtp / self.n_tracker if self.n_tracker else np.nan

    @property
    def idr(self) -> float:
        """``IDTP / n_A`` in ``[0, 1]``; NaN without ground-truth boxes."""
        return self.idtp / self.n_ground_truth if self.n_ground_truth else np.nan

    @property
    def reason(self) -> str:
        """Why IDF1 is undefined (neither rater has a box), or ``""``."""
        if not self.n_ground_truth and not self.n_tracker:
            return "neither rater has a box: IDF1 is undefined"
        return ""

    def __add__(self, other: "Idf1Result") -> "Idf1Result":
        return Idf1Result(self.idtp + other.idtp, self.n_ground_truth + other.n_ground_truth,
                          self.n_tracker + other.n_tracker)

    def as_dict(self) -> dict:
        """The scores and counts with ``reason``, as a plain dict."""
        return {"idf1": self.idf1, "idp": self.idp, "idr": self.idr, "idtp": self.idtp, "idfn": self.idfn,
                "idfp": self.idfp, "reason": self.reason}


def idf1_of_pair(p: RaterPair, *, threshold: float = 0.5) -> Idf1Result:
    """:func:`idf1` on a rater pair of an indexed video (ground truth ``g``, tracker ``h``): the same formula, range
    and reference (Ristani et al., ECCV Workshops 2016)."""
    threshold = check_tau(threshold, name="threshold")
    n_g, n_h = len(p.g_frame), len(p.h_frame)
    ok = p.iou >= threshold
    if not ok.any():
        return Idf1Result(0, n_g, n_h)
    a, b = p.g_track[p.i[ok]], p.h_track[p.j[ok]]
    ua, ia = np.unique(a, return_inverse=True)  # only tracks with a matchable frame
    ub, ib = np.unique(b, return_inverse=True)
    counts = np.bincount(ia * len(ub) + ib, minlength=len(ua) * len(ub)).reshape(len(ua), len(ub))
    rows, cols = linear_sum_assignment(counts, maximize=True)
    return Idf1Result(int(counts[rows, cols].sum()), n_g, n_h)


def idf1(ground_truth: Tracks, tracker: Tracks, *, threshold: float = 0.5) -> Idf1Result:
    r"""IDF1, IDP and IDR of one rater's tracks against another's.

    .. math::

        \mathrm{IDF1} = \frac{2\,\mathrm{IDTP}}{2\,\mathrm{IDTP} + \mathrm{IDFP} + \mathrm{IDFN}}
                      = \frac{2 \max_{M} \sum_{(a, b) \in M} c_{ab}}{n_A + n_B}

    with ``M`` a one-to-one matching of the two raters' tracks and ``c_ab`` the frames on which tracks ``a`` and
    ``b`` have boxes with ``IoU >= threshold``. Range ``[0, 1]``; symmetric in the two raters.

    Args:
        ground_truth: one rater's tracks in a video.
        tracker: another rater's tracks in the same video.
        threshold: the least IoU of a matching box pair, in ``(0, 1]``.

    Returns:
        :class:`Idf1Result`; ``idf1`` NaN (with ``reason``) when neither rater has a box.

    Reference:
        E. Ristani et al., "Performance Measures and a Data Set for Multi-Target, Multi-Camera Tracking",
        ECCV Workshops 2016; equal to py-motmetrics' ``idf1``.
    """
    return idf1_of_pair(VideoTracks(("gt", "tracker"), (ground_truth, tracker)).rater_pair(0, 1), threshold=threshold)


def pool_idf1(results: Sequence[Idf1Result]) -> Idf1Result:
    """IDF1 over several videos: ``IDTP``, ``n_A`` and ``n_B`` added, ``IDF1 = 2 ΣIDTP / (Σn_A + Σn_B)`` in ``[0, 1]``
    (tracks of different videos never match).

    Reference:
        Ristani et al., ECCV Workshops 2016; py-motmetrics' overall row.
    """
    total = Idf1Result(0, 0, 0)
    for r in results:
        total = total + r
    return total
