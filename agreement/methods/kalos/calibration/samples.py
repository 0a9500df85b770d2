"""The two disagreement samples of the calibration (:mod:`agreement.methods.kalos.calibration`): observed ``D_o``
(every annotation's nearest-neighbour distance to each other assigned rater's set on its sample, 1
against an empty set) and expected ``D_e`` (the same against a randomly drawn rater's set on a
randomly drawn other sample). Each draw is a function of the seed, the reference sample's canonical rank
(by ``str`` of its id) and the rank of the reference set among its sample's sets ordered by their geometry
(:func:`plan_draws`), so that it
depends on neither the rater names nor the order of samples, raters or labels.

Reference: Tschirschwitz & Rodehorst, "KαLOS finds Consensus" (empirical disagreement
distributions).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from agreement.core.data import MultiRaterAnnotations
from agreement.core.strata import IMAGE_SIZE, chance_strata_of, stratum_ranks
from agreement.geometry.similarity import SIMILARITIES, check_similarity, similarity_matrix
from agreement.methods.geometry_agreement.ties import set_content_keys
from agreement.methods.ot.alpha_ot import canonical_sample_order
from agreement.methods.ot.strata import GOLDEN, mix64, uniform_draws

KNOWN_DISTANCES = SIMILARITIES


# --------------------------------------------------------------------------
# D_o and D_e
# --------------------------------------------------------------------------


def check_seed(seed: Any) -> int:
    """The seed of the expected draws as an ``int``.

    Args:
        seed: a non-negative integer (``bool`` refused).

    Returns:
        ``int(seed)``.

    Raises:
        ValueError: for anything else.
    """
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or int(seed) < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    return int(seed)


def check_distance(distance: Any) -> str:
    """A distance name of :data:`KNOWN_DISTANCES`, checked.

    Args:
        distance: the name (``1 -`` that similarity is the distance).

    Returns:
        ``distance`` itself.

    Raises:
        ValueError: for an unknown name.
    """
    if not isinstance(distance, str) or distance not in KNOWN_DISTANCES:
        raise ValueError(f"unknown distance {distance!r}; expected one of {KNOWN_DISTANCES}")
    return distance


@dataclass(frozen=True)
class DrawPlan:
    """Which sets are compared: observed (sample, rater a, rater b) triples and
    the expected draws (reference cell -> drawn cell), in canonical order."""

    observed: tuple[tuple[int, int, int], ...]
    ref_sample: np.ndarray
    ref_rater: np.ndarray
    draw_sample: np.ndarray
    draw_rater: np.ndarray
    n_eligible: int


def _observed_triples(data: MultiRaterAnnotations, order: np.ndarray) -> list[tuple[int, int, int]]:
    """The observed ``(sample, rater a, rater b)`` triples, ``a < b`` assigned to the sample and one of them
    with annotations, samples in ``order``."""
    assigned, counts = data.assigned, data.counts()
    observed = []
    for s in order:
        raters = np.flatnonzero(assigned[s])
        for i, a in enumerate(raters):
            for b in raters[i + 1:]:
                if counts[s, a] or counts[s, b]:
                    observed.append((int(s), int(a), int(b)))
    return observed


def _content_ranks(cell_s: np.ndarray, cell_r: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """The rank of each cell ``(cell_s, cell_r)`` among the cells of its sample ordered by their sets'
    content keys (rater index only between sets of equal content, whose distances are equal)."""
    order = np.lexsort((cell_r, keys[cell_s, cell_r], cell_s))
    first = np.searchsorted(cell_s[order], cell_s[order], side="left")
    rank = np.empty(len(order), np.intp)
    rank[order] = np.arange(len(order)) - first
    return rank


def plan_draws(data: MultiRaterAnnotations, seed: int, strata: np.ndarray | None = None) -> DrawPlan:
    """The observed triples and one expected draw per non-empty (sample, rater) set (module docstring).

    Each draw is a function of the seed, the reference sample's canonical rank (its place among the ids
    sorted by ``str``, whatever the corpus order) and the reference set's rank among the sets of its sample
    ordered by content (:func:`agreement.methods.geometry_agreement.ties.set_content_keys`),
    never of rater names or of the order of samples, raters or labels: the other sample is drawn uniformly
    among the eligible samples of the reference's stratum (canonical order, the reference itself skipped),
    the rater uniformly among those assigned to it, ranked by the content of their sets.

    Args:
        data: the corpus.
        seed: seed of the draws (:func:`check_seed`).
        strata: one chance stratum per sample (:func:`agreement.core.strata.chance_strata_of`), or ``None``
            for one stratum.

    Returns:
        The :class:`DrawPlan`.
    """
    S = data.num_samples
    order = canonical_sample_order(data.sample_ids)
    observed = _observed_triples(data, order)
    assigned = np.asarray(data.assigned, dtype=bool)
    eligible = order[assigned[order].any(axis=1)]  # samples with an assigned rater, canonical order
    empty = np.zeros(0, dtype=np.intp)
    ref_s, ref_r = np.nonzero(assigned & (data.counts() > 0))
    if len(eligible) < 2 or not len(ref_s):
        return DrawPlan(tuple(observed), empty, empty, empty, empty, len(eligible))
    keys = set_content_keys(data)
    slot = _content_ranks(ref_s, ref_r, keys)
    srank = np.empty(S, np.intp)
    srank[order] = np.arange(S)
    o = np.lexsort((slot, srank[ref_s]))  # canonical sample order, then content order
    ref_s, ref_r, slot = ref_s[o], ref_r[o], slot[o]
    k_of = stratum_ranks(strata, S)
    el = eligible[np.lexsort((np.arange(len(eligible)), k_of[eligible]))]  # by stratum, canonical within
    start = np.searchsorted(k_of[el], np.arange(int(k_of.max(initial=0)) + 2))
    E_k = np.diff(start)
    pos = np.full(S, -1, dtype=np.intp)
    pos[el] = np.arange(len(el))
    ok = E_k[k_of[ref_s]] >= 2  # a reference alone in its stratum gets no draw
    ref_s, ref_r, slot = ref_s[ok], ref_r[ok], slot[ok]
    base = mix64(np.array([seed & 0xFFFFFFFFFFFFFFFF], dtype=np.uint64) + GOLDEN)
    # one stream per reference set: its sample's canonical rank and its content rank on that sample
    sample_word = mix64(srank[ref_s].astype(np.uint64) * GOLDEN + GOLDEN)
    stream = mix64(base ^ sample_word) ^ mix64(slot.astype(np.uint64) + GOLDEN)
    u_sample, u_rater = uniform_draws(stream, np.zeros(len(ref_s))), uniform_draws(stream, np.ones(len(ref_s)))
    k = k_of[ref_s]
    j = np.minimum((u_sample * (E_k[k] - 1)).astype(np.intp), E_k[k] - 2)
    j += start[k] + j >= pos[ref_s]  # skip the reference sample itself: never the same sample
    draw_s = el[start[k] + j]
    a_s, a_r = np.nonzero(assigned)
    rank = np.full(assigned.shape, -1, dtype=np.intp)
    rank[a_s, a_r] = _content_ranks(a_s, a_r, keys)
    n_assigned = assigned[draw_s].sum(axis=1)
    jr = np.minimum((u_rater * n_assigned).astype(np.intp), n_assigned - 1)
    draw_r = np.argmax(rank[draw_s] == jr[:, None], axis=1).astype(np.intp)
    return DrawPlan(tuple(observed), ref_s.astype(np.intp), ref_r.astype(np.intp), draw_s, draw_r, len(eligible))


def _distance_matrix(
    name: str, data: MultiRaterAnnotations, rows_a: slice, rows_b: slice, sigmas: ArrayLike | None
) -> np.ndarray:
    """``1 - similarity`` of two row ranges (non-finite values are caught by
    :func:`_finish`, once, rather than per matrix)."""
    ra, rb = np.arange(rows_a.start, rows_a.stop), np.arange(rows_b.start, rows_b.stop)
    sim = np.asarray(similarity_matrix(name, data, ra, rb, sigmas=sigmas), dtype=np.float64)
    if sim.shape != (len(ra), len(rb)):
        raise ValueError(f"similarity {name!r} returned shape {sim.shape}, expected {(len(ra), len(rb))}")
    return np.subtract(1.0, sim)


def _finish(name: str, data: MultiRaterAnnotations, chunks: list, samples: list) -> np.ndarray:
    """Concatenates the chunks; raises naming the first sample with a non-finite
    distance; clips rounding to ``[0, 1]`` (similarities are in ``[0, 1]``)."""
    if not chunks:
        return np.zeros(0)
    out = np.concatenate(chunks)
    if not np.all(np.isfinite(out)):
        bad = next(s for c, s in zip(chunks, samples, strict=True) if not np.all(np.isfinite(c)))
        names = data.sample_ids if data.sample_names is None else data.sample_names
        raise ValueError(
            f"similarity {name!r} is not finite on sample {names[bad]!r}: check its annotations "
            "(agreement.core.validation repairs or rejects bad geometry)"
        )
    np.clip(out, 0.0, 1.0, out=out)
    return out


def observed_distances(
    data: MultiRaterAnnotations, distance: str, plan: DrawPlan, sigmas: ArrayLike | None = None
) -> np.ndarray:
    """``D_o``: every annotation's distance to its nearest annotation of each other rater of its sample.

    Args:
        data: the corpus.
        distance: a name of :data:`KNOWN_DISTANCES`.
        plan: the plan of :func:`plan_draws` (its observed triples).
        sigmas: per-keypoint σ for ``"oks"``.

    Returns:
        ``(n_o,)`` float64 in ``[0, 1]`` (see :func:`disagreement_samples`).
    """
    # Triples (s, a, b) come grouped by (s, a) with b increasing; rater b's rows
    # follow a's on the sample, so a's rows against the rows of every later
    # rater are one matrix (the upper triangle of rater pairs, each cross pair
    # computed once), split by column ranges.
    chunks, samples = [], []
    triples = plan.observed
    i = 0
    while i < len(triples):
        s, a, _ = triples[i]
        j = i
        while j < len(triples) and triples[j][0] == s and triples[j][1] == a:
            j += 1
        later = [t[2] for t in triples[i:j]]
        ra = data.rows(s, a)
        na = ra.stop - ra.start
        first, last = data.rows(s, later[0]), data.rows(s, later[-1])
        block = slice(first.start, last.stop)  # rows of raters later[0]..later[-1] on s
        d = _distance_matrix(distance, data, ra, block, sigmas) if na and block.stop > block.start else None
        for b in later:
            rb = data.rows(s, b)
            nb = rb.stop - rb.start
            if nb == 0:
                chunks.append(np.ones(na))  # b's explicit absence: a's annotations unmatched
            elif na == 0:
                chunks.append(np.ones(nb))
            else:
                assert d is not None  # both raters have rows here
                sub = d[:, rb.start - block.start:rb.stop - block.start]
                chunks.append(sub.min(axis=1))
                samples.append(s)
                chunks.append(sub.min(axis=0))
            samples.append(s)
        i = j
    return _finish(distance, data, chunks, samples)


def expected_distances(
    data: MultiRaterAnnotations, distance: str, plan: DrawPlan, sigmas: ArrayLike | None = None
) -> np.ndarray:
    """``D_e``: every annotation's distance to its nearest annotation of the set drawn for its set.

    Args:
        data: the corpus.
        distance: a name of :data:`KNOWN_DISTANCES`.
        plan: the plan of :func:`plan_draws` (its draws).
        sigmas: per-keypoint σ for ``"oks"``.

    Returns:
        ``(n_e,)`` float64 in ``[0, 1]`` (see :func:`disagreement_samples`).
    """
    chunks, samples = [], []
    for s, r, s2, r2 in zip(plan.ref_sample, plan.ref_rater, plan.draw_sample, plan.draw_rater, strict=True):
        ra, rb = data.rows(s, r), data.rows(s2, r2)
        if rb.stop == rb.start:
            chunks.append(np.ones(ra.stop - ra.start))
        else:
            chunks.append(_distance_matrix(distance, data, ra, rb, sigmas).min(axis=1))
        samples.append(s)
    return _finish(distance, data, chunks, samples)


def disagreement_samples(
    data: MultiRaterAnnotations, distance: str, seed: int = 0, *, sigmas: ArrayLike | None = None,
    strata: ArrayLike | str | None = IMAGE_SIZE,
) -> tuple[np.ndarray, np.ndarray]:
    r"""Observed and expected disagreement samples of one distance.

    .. math::

        D_o &= \bigl\{\min_{y \in B_i} d(x, y) \;:\; x \in A_i,\ a \ne b
               \text{ both assigned to } i\bigr\} \\
        D_e &= \bigl\{\min_{y \in B'_j} d(x, y) \;:\; x \in A_i,\
               (j, b') \text{ drawn},\ j \ne i\bigr\}

    with ``d = 1 - similarity``, and ``min`` over an empty set taken as 1
    (explicit absence: the other rater drew nothing). Raters not assigned to a
    sample (implicit absence) contribute nothing. For ``D_e``, every non-empty
    set ``A_i`` (sample ``i``, rater ``a``) gets one draw: a sample ``j != i``
    uniformly among the samples with at least one assigned rater, then a rater
    ``b'`` uniformly among those assigned to ``j`` (possibly ``a`` itself, as in
    the reference); ``B'_j`` may be empty (then 1). The draws are keyed by the
    samples' canonical ranks and the sets' geometry (:func:`plan_draws`), never by rater names or
    positions.

    Args:
        data (MultiRaterAnnotations): The corpus.
        distance (str): A similarity name of :func:`agreement.geometry.similarity.similarity_matrix`:
            ``"iou"``, ``"giou"`` (``(1 + GIoU) / 2``), ``"centroid"``,
            ``"polygon_iou"``, ``"polygon_giou"``, ``"mask_iou"``, ``"oks"``.
        seed (int, default=0): Seed of the ``D_e`` draws (counter-based splitmix64 streams, one per
            reference set; the draws do not depend on the distance).
        sigmas (array-like of shape (K,), optional): Per-keypoint σ for ``"oks"`` (default: the COCO person σ).
        strata ("image_size", array-like of shape (S,) or None, default "image_size"): Which sample ``j`` may be drawn
            for ``i``: ``"image_size"``, an image of comparable size (:func:`agreement.core.strata.chance_strata_of`;
            any other sample when every image is within a factor 1.25 of the others or the sizes are unknown); one
            integer per sample, a sample of the same stratum (e.g. clips of comparable length,
            :func:`agreement.geometry.temporal.length_strata`); a set alone in its stratum gets no draw. ``None``: any
            other sample.

    Returns:
        d_observed (ndarray of shape (n_o,), float64): In ``[0, 1]``; ``n_o = sum_i sum_{a != b} |A_i|`` over raters
            ``a, b`` both assigned to ``i``. Samples in canonical order (``str`` of the id), then rater pairs ``a < b``
            by name: ``a``'s annotations against ``b``, then ``b``'s against ``a``.
        d_expected (ndarray of shape (n_e,), float64): In ``[0, 1]``; one value per annotation (``n_e`` = all
            annotations) when at least two samples have an assigned rater, empty otherwise.

    Raises:
        ValueError: Unknown distance, a negative or non-integer seed, annotations lacking the geometry the distance
            needs (from :func:`agreement.geometry.similarity.check_similarity`, which names them), or a similarity that
            is not finite (the message names the sample).

    References:
        Tschirschwitz & Rodehorst, "KαLOS finds Consensus" (principled
        configuration, empirical disagreement distributions).
    """
    check_distance(distance)
    plan = plan_draws(data, check_seed(seed), chance_strata_of(data, strata=strata))
    check_similarity(distance, data, sigmas=sigmas)
    return observed_distances(data, distance, plan, sigmas), expected_distances(data, distance, plan, sigmas)
