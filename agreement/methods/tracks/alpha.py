r"""Krippendorff's α over track units: track presence, track class and track localisation.

The units of α are the track units of every video (:mod:`agreement.methods.tracks.correspondence`);
the values are the raters' tracks in them. Three reliabilities, all through the
project's one α formula (:func:`agreement.core.krippendorff.nominal_alpha` and
:func:`agreement.core.krippendorff.alpha_from_sums`):

**Presence** (nominal). In each unit, a rater assigned to the video has the
value *present* (a track in the unit) or *absent* (no track in it: explicit
absence); a rater not assigned to the video has no value (missing: implicit
absence, not a disagreement). Every unit with two or more assigned raters is
pairable. α is 1 when all assigned raters track every object, and falls with
objects tracked by some raters only.

**Class** (nominal). The value of a rater in a unit is its track's class (the
majority label of the track's boxes, :mod:`agreement.methods.tracks.data`);
raters without a track in the unit, or whose track has no label, have no
value. Only units with two or more classed tracks are pairable.

**Localisation** (distance-based α). The value of a rater in a unit is its
track; two tracks differ by the distance ``δ(s, t) = 1 - STIoU(s, t)`` in
``[0, 1]`` (0 for identical tracks, 1 for tracks that never overlap). With the
``n`` tracks of the units holding two or more tracks (the pairable values),
``m_u`` the tracks of unit ``u``, and Krippendorff's general form:

.. math::

    D_o = \frac{1}{n} \sum_u \frac{1}{m_u - 1} \sum_{s \ne t \in u} \delta(s, t),\qquad
    D_e = \frac{1}{n (n - 1)} \sum_{s \ne t} \delta(s, t),\qquad
    \alpha = 1 - \frac{D_o}{D_e}

where ``D_e`` runs over every ordered pair of distinct pairable tracks,
whatever their unit, rater and video; two tracks of different videos share no
frame, so ``δ = 1``. The chance baseline is thus the distance between tracks
of different objects: α is 1 when the tracks of every unit coincide, near 0
when a unit's tracks overlap no more than unrelated tracks. The sums are
passed to :func:`alpha_from_sums` as ``same = n - n D_o`` and
``squares = n^2 - n (n - 1) D_e`` (its ``D_o = (n - same) / n`` and
``D_e = (n^2 - squares) / (n (n - 1))``), so the nominal and the distance
α share one formula and one set of undefined cases.

Pooling. α is computed over the units of all videos together, never as a mean
of per-video α: :class:`TrackReliability` holds one video's values
(poolable), :func:`track_alpha` pools any number of them. Range: at most 1; 1
perfect agreement, 0 chance, below 0 systematic disagreement; NaN with a
reason when fewer than two pairable values exist or they do not vary.

Reference: K. Krippendorff, "Computing Krippendorff's Alpha-Reliability",
University of Pennsylvania, 2011 (the general ``δ`` form: K. Krippendorff,
"Content Analysis", 4th ed., 2018, ch. 12).

This module does not import FiftyOne.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from agreement.core.krippendorff import AlphaResult, alpha_from_sums, encode_values, nominal_alpha
from agreement.methods.tracks.correspondence import TrackUnits
from agreement.methods.tracks.video import VideoTracks

__all__ = ["TrackReliability", "TrackAlphas", "track_reliability", "track_alpha"]

REASON_FEW = "fewer than 2 pairable values (n = {n:g}): no unit has two or more values"
REASON_FLAT = "no variation: the pairable values do not differ (D_e = 0)"


@dataclass(frozen=True, eq=False)
class TrackReliability:
    """One video's reliability data for the three α (poolable with :func:`track_alpha`).

    Attributes:
        video: the video's name (reported only).
        raters: the raters assigned to the video, in name order.
        present: ``(U, R)`` bool, rater ``r`` has a track in unit ``u``.
        classes: ``(U, R)`` object, the class of the rater's track in the unit (``None``: no track or no label).
        loc_n: the pairable tracks (in units with two or more tracks).
        loc_observed: ``Σ_u Σ_{s≠t∈u} δ(s, t) / (m_u - 1)`` over those units.
        loc_pairs: ``Σ_{s≠t} δ(s, t)`` over the ordered pairs of pairable tracks of the video.
        loc_units: the units with two or more tracks.
    """

    video: str | None
    raters: tuple[str, ...]
    present: np.ndarray
    classes: np.ndarray
    loc_n: int
    loc_observed: float
    loc_pairs: float
    loc_units: int

    @property
    def n_units(self) -> int:
        return len(self.present)


@dataclass(frozen=True)
class TrackAlphas:
    """Krippendorff's α of track presence, track class and track localisation (see the module).

    Attributes:
        presence, classes, localisation: :class:`agreement.core.krippendorff.AlphaResult` each (``alpha``,
            ``observed``, ``expected``, ``n_pairable``, ``n_units``, ``reason``).
        n_videos, n_units: what was pooled.
    """

    presence: AlphaResult
    classes: AlphaResult
    localisation: AlphaResult
    n_videos: int
    n_units: int

    def as_dict(self) -> dict:
        out = {"n_videos": self.n_videos, "n_units": self.n_units}
        for name in ("presence", "classes", "localisation"):
            a = getattr(self, name)
            out[name] = {"alpha": a.alpha, "observed": a.observed, "expected": a.expected,
                         "n_pairable": a.n_pairable, "n_units": a.n_units, "reason": a.reason}
        return out


def track_reliability(video: VideoTracks, units: TrackUnits) -> TrackReliability:
    """One video's values for the three α from its indexed tracks and its track units.

    ``present``/``classes`` per unit and rater; for localisation, with ``δ = 1 - STIoU`` in ``[0, 1]``,
    ``loc_observed = Σ_u Σ_{s≠t∈u} δ(s, t) / (m_u - 1)`` and ``loc_pairs = Σ_{s≠t} δ(s, t)`` over the video's
    pairable tracks (Krippendorff 2011; see the module).
    """
    members, present = units.members, units.present
    classes = np.full(members.shape, None, dtype=object)
    classes[present] = video.track_label[members[present]]
    sizes = present.sum(axis=1)
    pairable = sizes >= 2
    s_all, t_all, st_all = video.track_pairs
    stiou = dict(zip(zip(s_all.tolist(), t_all.tolist()), st_all.tolist()))
    observed = 0.0
    for row, m in zip(members[pairable], sizes[pairable]):
        g = sorted(row[row >= 0].tolist())
        d = sum(1.0 - stiou.get((x, y), 0.0) for k, x in enumerate(g) for y in g[k + 1:])
        observed += 2.0 * d / (m - 1)
    in_pairable = np.zeros(video.n_tracks, dtype=bool)
    in_pairable[members[pairable][present[pairable]]] = True
    n = int(in_pairable.sum())
    both = in_pairable[s_all] & in_pairable[t_all] if len(s_all) else np.zeros(0, bool)
    pairs = n * (n - 1) - 2.0 * float(st_all[both].sum())
    return TrackReliability(video.video, video.raters, present, classes, n, observed, pairs, int(pairable.sum()))


def _localisation(parts: Sequence[TrackReliability]) -> AlphaResult:
    n_v = np.array([p.loc_n for p in parts], dtype=np.float64)
    n = float(n_v.sum())
    n_units = int(sum(p.loc_units for p in parts))
    if n < 2:
        return AlphaResult(np.nan, np.nan, np.nan, n, n_units, REASON_FEW.format(n=n))
    observed = float(sum(p.loc_observed for p in parts))
    pairs = float(sum(p.loc_pairs for p in parts)) + (n * n - float(np.dot(n_v, n_v)))  # other videos: δ = 1
    alpha, d_o, d_e = (float(x) for x in alpha_from_sums(n, n - observed, n * n - pairs))
    if np.isnan(alpha):
        return AlphaResult(np.nan, d_o, 0.0, n, n_units, REASON_FLAT)
    return AlphaResult(alpha, d_o, d_e, n, n_units, "")


def track_alpha(reliabilities: Sequence[TrackReliability]) -> TrackAlphas:
    r"""Krippendorff's α of track presence, class and localisation, pooled over the units of every video.

    ``alpha = 1 - D_o / D_e``: nominal for presence (present / absent, missing for raters not assigned to the
    video) and class (the tracks' majority labels); for localisation with ``δ = 1 - STIoU``,
    ``D_o = Σ_u Σ_{s≠t∈u} δ / (m_u - 1) / n`` and ``D_e = Σ_{s≠t} δ / (n (n - 1))`` over the pairable tracks
    of all videos (``δ = 1`` between videos). Range: at most 1; 1 perfect agreement, 0 chance.

    Args:
        reliabilities: one :class:`TrackReliability` per video (e.g. ``result.reliability`` of
            :func:`agreement.methods.tracks.agreement.track_agreement`).

    Returns:
        :class:`TrackAlphas`; each α NaN with a reason when fewer than two pairable values exist or when they
        show no variation.

    Reference:
        K. Krippendorff, "Computing Krippendorff's Alpha-Reliability", 2011.
    """
    parts = list(reliabilities)
    raters = sorted({r for p in parts for r in p.raters}, key=str)
    col = {r: k for k, r in enumerate(raters)}
    U = sum(p.n_units for p in parts)
    presence = np.full((len(raters), U), -1, dtype=np.int64)
    classes = np.full((len(raters), U), None, dtype=object)
    start = 0
    for p in parts:
        rows = np.array([col[r] for r in p.raters], dtype=np.int64)
        stop = start + p.n_units
        if len(rows):
            presence[rows, start:stop] = p.present.T.astype(np.int64)
            classes[rows, start:stop] = p.classes.T
        start = stop
    codes, _ = encode_values(classes)
    return TrackAlphas(nominal_alpha(presence), nominal_alpha(codes), _localisation(parts), len(parts), U)
