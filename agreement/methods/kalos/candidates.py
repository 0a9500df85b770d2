"""Candidate pairs of KαLOS (:mod:`agreement.methods.kalos`): the similarity of every cross-rater pair of
annotations of a sample with similarity ``>= tau_min``, from the registry of
:func:`agreement.geometry.similarity.similarity_matrix`, with a vectorised paired path for boxes (bit-identical
to the matrix form).

This module does not import FiftyOne.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from agreement.core.data import MultiRaterAnnotations
from agreement.geometry.boxes import paired_iou
from agreement.geometry.correspondence import check_tau
from agreement.geometry.similarity import SimilarityOptions, similarity_matrix

SimilarityFn = Callable[[MultiRaterAnnotations, np.ndarray, np.ndarray], np.ndarray]


# --------------------------------------------------------------------------
# Similarity: the registry, with a vectorised paired path for boxes
# --------------------------------------------------------------------------


def _registry_similarity(name: str, data: MultiRaterAnnotations,
                         options: SimilarityOptions | None = None) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """``f(rows_a, rows_b)`` for a named similarity of :mod:`agreement.geometry.similarity`, with the 3D
    similarities' ``options``."""
    return lambda rows_a, rows_b: similarity_matrix(name, data, rows_a, rows_b, options=options)


def paired_row_iou(data: MultiRaterAnnotations, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """IoU of the box pairs ``(i[k], j[k])``: :func:`agreement.geometry.boxes.paired_iou` of their boxes
    (bit-identical to ``pairwise_iou``).

    Args:
        data: the annotations.
        i: ``(k,)`` int annotation rows.
        j: ``(k,)`` int annotation rows.

    Returns:
        ``(k,)`` float64 IoU in ``[0, 1]``.
    """
    return paired_iou(data.boxes[i], data.boxes[j])


_PAIRED = {"iou": paired_row_iou}

# Pairs per chunk of the vectorised path (bounds memory: ~100 bytes a pair).
_PAIR_CHUNK = 1 << 15


@dataclass(frozen=True)
class CandidatePairs:
    """Cross-rater annotation pairs of every sample with similarity >= tau_min."""

    i: np.ndarray
    j: np.ndarray
    s: np.ndarray
    tau_min: float


def similarity_name(similarity: str | SimilarityFn) -> str:
    """The name a result records for ``similarity``.

    Args:
        similarity: a registry name, or a similarity function.

    Returns:
        The name itself, or the function's ``__name__`` (its ``repr`` when it has none).
    """
    if isinstance(similarity, str):
        return similarity
    return getattr(similarity, "__name__", repr(similarity))


def candidate_pairs(
    data: MultiRaterAnnotations, similarity: str | SimilarityFn = "iou", tau: float = 0.5, *,
    options: SimilarityOptions | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every pair of annotations of different raters on one sample with similarity ``>= tau``.

    The candidate pairs of KαLOS (Tschirschwitz & Rodehorst):
    ``{(a, b) : sample(a) = sample(b), rater(a) < rater(b), s(a, b) >= tau}``
    with ``s`` in ``[0, 1]``. Box IoU is computed for all cross-rater pairs of
    the corpus in vectorised chunks; other similarities per sample and rater
    pair through :func:`agreement.geometry.similarity.similarity_matrix`.

    Args:
        data: the annotations.
        similarity: a name of :func:`agreement.geometry.similarity.similarity_matrix` (``"iou"``,
            ``"giou"``, ``"centroid"``, ``"polygon_iou"``, ...) or a function
            ``f(data, rows_a, rows_b) -> (len(rows_a), len(rows_b))`` array of
            similarities in ``[0, 1]``.
        tau: the correspondence threshold, in ``(0, 1]``.
        options: the 3D similarities' parameters (:class:`agreement.geometry.similarity.SimilarityOptions`;
            ``None``: the defaults).

    Returns:
        ``(i, j, s)``: ``i``, ``j`` int64 ``(k,)`` rows of the pairs, ``rater_index[i] < rater_index[j]``,
        same sample; ``s`` float64 ``(k,)`` their similarities, in ``[tau, 1]``.
    """
    c = find_candidates(data, similarity, check_tau(tau), options=options)
    return c.i, c.j, c.s


def find_candidates(data: MultiRaterAnnotations, similarity: str | SimilarityFn, tau_min: float, *,
                    options: SimilarityOptions | None = None) -> CandidatePairs:
    """The candidate pairs of :func:`candidate_pairs` at the checked threshold ``tau_min``, as a
    :class:`CandidatePairs` (box IoU by the vectorised paired path, other similarities sample by sample).

    Args:
        data: the annotations.
        similarity: a name of :func:`agreement.geometry.similarity.similarity_matrix` or a function
            ``f(data, rows_a, rows_b)`` of similarities in ``[0, 1]``.
        tau_min: the threshold, in ``(0, 1]`` (already checked).
        options: the 3D similarities' parameters (``None``: the defaults).

    Returns:
        The pairs ``(i, j)`` of different raters on one sample with similarity ``s >= tau_min``.

    Raises:
        ValueError: ``similarity`` neither a name nor a callable; a callable's result of the wrong shape, NaN
            or outside ``[0, 1]``; a box that is not finite.
    """
    if isinstance(similarity, str) and similarity in _PAIRED:
        return _paired_candidates(data, _PAIRED[similarity], tau_min)
    if isinstance(similarity, str):
        f = _registry_similarity(similarity, data, options)
    elif callable(similarity):
        f = lambda a, b: similarity(data, a, b)  # noqa: E731
    else:
        raise ValueError(f"similarity must be a name or a callable, got {similarity!r}")
    name = similarity_name(similarity)
    names = data.sample_names
    assert names is not None  # MultiRaterAnnotations fills it (the ids by default)
    R = data.num_raters
    counts = data.counts()
    offsets = data.offsets
    out_i, out_j, out_s = [], [], []
    for s in np.flatnonzero((counts > 0).sum(axis=1) >= 2).tolist():
        drew = np.flatnonzero(counts[s] > 0).tolist()
        for x, a in enumerate(drew):
            ra = np.arange(offsets[s * R + a], offsets[s * R + a + 1])
            for b in drew[x + 1:]:
                rb = np.arange(offsets[s * R + b], offsets[s * R + b + 1])
                m = np.asarray(f(ra, rb), dtype=np.float64)
                if m.shape != (len(ra), len(rb)):
                    raise ValueError(
                        f"similarity {name!r} returned shape {m.shape} for sample {names[s]!r}, "
                        f"raters {data.raters[a]!r} and {data.raters[b]!r}; expected {(len(ra), len(rb))}"
                    )
                if not np.all((m >= -1e-9) & (m <= 1.0 + 1e-9)):
                    raise ValueError(
                        f"similarity {name!r} is NaN or outside [0, 1] on sample {names[s]!r}, "
                        f"raters {data.raters[a]!r} and {data.raters[b]!r}: check their annotations "
                        "(agreement.core.validation repairs or rejects bad geometry)"
                    )
                x_, y_ = np.nonzero(m >= tau_min)
                out_i.append(ra[x_])
                out_j.append(rb[y_])
                out_s.append(np.clip(m[x_, y_], 0.0, 1.0))
    return CandidatePairs(_cat(out_i, np.int64), _cat(out_j, np.int64), _cat(out_s, np.float64), tau_min)


def _cat(xs: list[np.ndarray], dtype: type[np.generic]) -> np.ndarray:
    """The chunks ``xs`` end to end as ``dtype`` (empty: a length-0 array of it)."""
    return np.concatenate(xs).astype(dtype, copy=False) if xs else np.zeros(0, dtype)


def _paired_candidates(data: MultiRaterAnnotations, paired: SimilarityFn, tau_min: float) -> CandidatePairs:
    """All cross-rater pairs of all samples, generated and scored in vectorised chunks."""
    N, R = len(data), data.num_raters
    if N == 0:
        return CandidatePairs(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0), tau_min)
    if not np.all(np.isfinite(data.boxes)):
        bad = int(np.flatnonzero(~np.isfinite(data.boxes).all(axis=1))[0])
        names = data.sample_names
        assert names is not None  # MultiRaterAnnotations fills it (the ids by default)
        raise ValueError(
            f"box of annotation {bad} on sample {names[data.sample_index[bad]]!r} "
            f"(rater {data.raters[data.rater_index[bad]]!r}) is not finite"
        )
    cell = data.sample_index * R + data.rater_index
    first = data.offsets[cell + 1]  # first row of a later rater on the same sample
    end = data.offsets[(data.sample_index + 1) * R]  # end of the sample
    cnt = (end - first).astype(np.int64)
    cum = np.cumsum(cnt)
    out_i, out_j, out_s = [], [], []
    start = 0
    while start < N:
        stop = int(np.searchsorted(cum, (cum[start - 1] if start else 0) + _PAIR_CHUNK, side="right"))
        stop = max(stop, start + 1)
        c = cnt[start:stop]
        total = int(c.sum())
        if total:
            rows = np.arange(start, stop, dtype=np.int64)
            i = np.repeat(rows, c)
            base = np.cumsum(c) - c
            j = np.arange(total, dtype=np.int64) + np.repeat(first[start:stop] - base, c)
            s = paired(data, i, j)
            keep = s >= tau_min
            out_i.append(i[keep])
            out_j.append(j[keep])
            out_s.append(s[keep])
        start = stop
    return CandidatePairs(_cat(out_i, np.int64), _cat(out_j, np.int64), _cat(out_s, np.float64), tau_min)
