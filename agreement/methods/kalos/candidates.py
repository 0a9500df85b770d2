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

from agreement.geometry.correspondence import check_tau
from agreement.core.data import MultiRaterAnnotations
from agreement.geometry.similarity import similarity_matrix


SimilarityFn = Callable[[MultiRaterAnnotations, np.ndarray, np.ndarray], np.ndarray]


# --------------------------------------------------------------------------
# Similarity: the registry, with a vectorised paired path for boxes
# --------------------------------------------------------------------------


def _registry_similarity(name: str, data: MultiRaterAnnotations) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """``f(rows_a, rows_b)`` for a named similarity of :mod:`agreement.geometry.similarity`."""
    return lambda rows_a, rows_b: similarity_matrix(name, data, rows_a, rows_b)


def _box_corners(boxes: np.ndarray) -> tuple[np.ndarray, ...]:
    """``x1, y1, x2, y2, area`` as :class:`agreement.geometry.boxes` computes them."""
    x1, y1 = np.ascontiguousarray(boxes[:, 0]), np.ascontiguousarray(boxes[:, 1])
    x2 = boxes[:, 2] + x1
    y2 = boxes[:, 3] + y1
    return x1, y1, x2, y2, (x2 - x1) * (y2 - y1)


def _paired_iou(data: MultiRaterAnnotations, i: np.ndarray, j: np.ndarray, corners) -> np.ndarray:
    """IoU of the box pairs ``(i[k], j[k])``; the paired form of ``pairwise_iou`` (bit-identical)."""
    x1, y1, x2, y2, area = corners
    inter = np.minimum(x2[i], x2[j])
    inter -= np.maximum(x1[i], x1[j])
    np.maximum(inter, 0.0, out=inter)
    h = np.minimum(y2[i], y2[j])
    h -= np.maximum(y1[i], y1[j])
    np.maximum(h, 0.0, out=h)
    inter *= h
    union = area[i] + area[j]
    union -= inter
    zero = union == 0.0  # both areas zero
    if np.any(zero):
        union[zero] = 1.0
        same = np.all(data.boxes[i[zero]] == data.boxes[j[zero]], axis=1)
        inter[zero] = 0.0
    np.divide(inter, union, out=inter)
    if np.any(zero):
        inter[np.flatnonzero(zero)[same]] = 1.0
    return inter


_PAIRED = {"iou": _paired_iou}

# Pairs per chunk of the vectorised path (bounds memory: ~100 bytes a pair).
_PAIR_CHUNK = 1 << 15


@dataclass(frozen=True)
class _Candidates:
    """Cross-rater annotation pairs of every sample with similarity >= tau_min."""

    i: np.ndarray
    j: np.ndarray
    s: np.ndarray
    tau_min: float


def _similarity_name(similarity: str | SimilarityFn) -> str:
    if isinstance(similarity, str):
        return similarity
    return getattr(similarity, "__name__", repr(similarity))


def candidate_pairs(
    data: MultiRaterAnnotations, similarity: str | SimilarityFn = "iou", tau: float = 0.5
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every pair of annotations of different raters on one sample with similarity ``>= tau``.

    The candidate pairs of KαLOS (Tschirschwitz & Rodehorst):
    ``{(a, b) : sample(a) = sample(b), rater(a) < rater(b), s(a, b) >= tau}``
    with ``s`` in ``[0, 1]``. Box IoU is computed for all cross-rater pairs of
    the corpus in vectorised chunks; other similarities per sample and rater
    pair through :func:`agreement.geometry.similarity.similarity_matrix`.

    Parameters
    ----------
    data : MultiRaterAnnotations
    similarity : str or callable
        A name of :func:`agreement.geometry.similarity.similarity_matrix` (``"iou"``,
        ``"giou"``, ``"centroid"``, ``"polygon_iou"``, ...) or a function
        ``f(data, rows_a, rows_b) -> (len(rows_a), len(rows_b))`` array of
        similarities in ``[0, 1]``.
    tau : float in (0, 1]

    Returns
    -------
    i, j : ndarray of int64, shape (k,)
        Rows of the pairs, ``rater_index[i] < rater_index[j]``, same sample.
    s : ndarray of float64, shape (k,)
        Their similarities, in ``[tau, 1]``.
    """
    c = _candidates(data, similarity, check_tau(tau))
    return c.i, c.j, c.s


def _candidates(data: MultiRaterAnnotations, similarity: str | SimilarityFn, tau_min: float) -> _Candidates:
    if isinstance(similarity, str) and similarity in _PAIRED:
        return _paired_candidates(data, _PAIRED[similarity], tau_min)
    if isinstance(similarity, str):
        f = _registry_similarity(similarity, data)
    elif callable(similarity):
        f = lambda a, b: similarity(data, a, b)  # noqa: E731
    else:
        raise ValueError(f"similarity must be a name or a callable, got {similarity!r}")
    name = _similarity_name(similarity)
    S, R = data.num_samples, data.num_raters
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
                        f"similarity {name!r} returned shape {m.shape} for sample {data.sample_names[s]!r}, "
                        f"raters {data.raters[a]!r} and {data.raters[b]!r}; expected {(len(ra), len(rb))}"
                    )
                if not np.all((m >= -1e-9) & (m <= 1.0 + 1e-9)):
                    raise ValueError(
                        f"similarity {name!r} is NaN or outside [0, 1] on sample {data.sample_names[s]!r}, "
                        f"raters {data.raters[a]!r} and {data.raters[b]!r}: check their annotations "
                        "(agreement.core.validation repairs or rejects bad geometry)"
                    )
                x_, y_ = np.nonzero(m >= tau_min)
                out_i.append(ra[x_])
                out_j.append(rb[y_])
                out_s.append(np.clip(m[x_, y_], 0.0, 1.0))
    cat = lambda xs, dt: np.concatenate(xs).astype(dt, copy=False) if xs else np.zeros(0, dt)  # noqa: E731
    return _Candidates(cat(out_i, np.int64), cat(out_j, np.int64), cat(out_s, np.float64), tau_min)


def _paired_candidates(data: MultiRaterAnnotations, paired, tau_min: float) -> _Candidates:
    """All cross-rater pairs of all samples, generated and scored in vectorised chunks."""
    N, R = len(data), data.num_raters
    if N == 0:
        return _Candidates(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0), tau_min)
    if not np.all(np.isfinite(data.boxes)):
        bad = int(np.flatnonzero(~np.isfinite(data.boxes).all(axis=1))[0])
        raise ValueError(
            f"box of annotation {bad} on sample {data.sample_names[data.sample_index[bad]]!r} "
            f"(rater {data.raters[data.rater_index[bad]]!r}) is not finite"
        )
    cell = data.sample_index * R + data.rater_index
    first = data.offsets[cell + 1]  # first row of a later rater on the same sample
    end = data.offsets[(data.sample_index + 1) * R]  # end of the sample
    cnt = (end - first).astype(np.int64)
    cum = np.cumsum(cnt)
    corners = _box_corners(data.boxes)
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
            s = paired(data, i, j, corners)
            keep = s >= tau_min
            out_i.append(i[keep])
            out_j.append(j[keep])
            out_s.append(s[keep])
        start = stop
    cat = lambda xs, dt: np.concatenate(xs).astype(dt, copy=False) if xs else np.zeros(0, dt)  # noqa: E731
    return _Candidates(cat(out_i, np.int64), cat(out_j, np.int64), cat(out_s, np.float64), tau_min)
