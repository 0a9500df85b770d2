"""Controlled perturbations of a reference annotation set (the OT paper's Section 4.1).

Prokhorov & Kalinin validate agreement scores by degrading one annotation set
in a controlled way and checking that each score falls as the noise level
``γ`` rises. Three perturbations, each applied per sample to a reference set
of ``n`` boxes:

``"drop"``  (box dropping)
    ``k = floor(γ n + u)`` boxes are removed, ``u ~ U[0, 1)`` drawn once per
    sample (stochastic rounding), chosen uniformly without replacement. So
    ``E[k] = γ n`` exactly and ``|k - γ n| < 1``: ``γ`` is the fraction of
    boxes removed per sample. ``γ ∈ [0, 1]``.

``"shift"`` (centre shifting)
    Every box centre moves by ``(γ w cos θ, γ h sin θ)``, ``θ ~ U[0, 2π)`` per
    box, so the displacement measured in box sizes,
    ``sqrt((Δx / w)^2 + (Δy / h)^2)``, is exactly ``γ``. Width and height are
    kept; then the centre is clamped to the image and the box is clipped to
    ``[0, 1]`` (a box shifted across the border loses the part outside, as a
    rater could not draw it). ``γ ∈ [0, ∞)``; at ``γ >= 1`` a box no longer
    overlaps its original position (``γ = 1`` along an axis).

``"swap"``  (label swapping)
    ``k = floor(γ n / 2 + u)`` disjoint pairs of boxes (at most
    ``floor(n / 2)``) are drawn uniformly at random and the two labels of each
    pair are exchanged, so a fraction ``2 k / n ≈ γ`` of the boxes takes part.
    Boxes are unchanged. A pair of boxes with the same label is swapped too
    (it changes nothing visible), as in the paper. ``γ ∈ [0, 1]``.

Coupling across noise levels. The random draws of a sample do not depend on
``γ``: one permutation of the boxes, one ``u`` and one angle ``θ`` per box. So
with the same ``seed`` and stream, the boxes dropped at ``γ`` are also dropped
at every ``γ' > γ``, a shift at ``γ'`` is the shift at ``γ`` stretched by
``γ' / γ``, and the swapped pairs at ``γ`` are a prefix of those at ``γ'``.
Per-sample scores are then monotone in ``γ`` up to the score's own behaviour,
which is what the paper's per-sample Kendall τb measures.

Randomness: each sample draws from its own generator seeded by
``(seed, crc32(stream), crc32(str(sample_id)))``, so the result does not
depend on the order of samples, and the sample's draws do not depend on the
other samples. Implicit absence (the reference rater not assigned a sample) is
kept; explicit absence (an empty set) stays empty.

Perturbed boxes keep the ``label_ids`` of the reference boxes they come from,
so each can be traced back to its source. The perturbations act on boxes and
labels only: polygons, masks and keypoints of the reference are not carried
over to the simulated rater.

Reference: A. Prokhorov and D. Kalinin, "Quantifying Annotation Agreement in
Object Detection with Optimal Transport", Section 4.1 (controlled
perturbations: shifting, dropping, label swapping).

This module does not import FiftyOne.
"""

from __future__ import annotations

import math
import zlib
from typing import Sequence

import numpy as np

from agreement.core.data import AnnotationSet, MultiRaterAnnotations

__all__ = [
    "PERTURBATIONS",
    "perturb_set",
    "perturb",
    "perturbation_series",
]

PERTURBATIONS = ("drop", "shift", "swap")
"""The perturbation kinds of the OT paper's Section 4.1."""


# --------------------------------------------------------------------------
# Shared helpers (also used by agreement.simulate.noise.empirical)
# --------------------------------------------------------------------------


def check_seed(seed: int) -> int:
    """Checks a seed.

    Args:
        seed: a non-negative integer (a bool is refused).

    Returns:
        The seed as an ``int``.

    Raises:
        ValueError: when the seed is not a non-negative integer.
    """
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    return int(seed)


def check_level(value: float, name: str, upper: float | None = None) -> float:
    """Checks a noise level: a finite number in ``[0, upper]`` (``[0, inf)`` without ``upper``).

    Args:
        value: the level.
        name: its name in the error message.
        upper: the largest value allowed, or None for no bound.

    Returns:
        The level as a ``float``.

    Raises:
        ValueError: when the level is not finite, negative or above ``upper``.
    """
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}") from None
    if not math.isfinite(v) or v < 0.0:
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    if upper is not None and v > upper:
        raise ValueError(f"{name} must be in [0, {upper:g}], got {value!r}")
    return v


def crc32_text(text: str) -> int:
    """The CRC-32 of a text's UTF-8 bytes (``zlib.crc32``), a stable seed component.

    Args:
        text: the text (converted with ``str``).

    Returns:
        The checksum, in ``[0, 2**32)``.
    """
    return zlib.crc32(str(text).encode("utf-8"))


def cell_rng(seed: int, stream: str, sample_id, *extra: int) -> np.random.Generator:
    """The generator of one (stream, sample) cell: ``(seed, crc32(stream), crc32(sample))``.

    Args:
        seed: the run's seed.
        stream: the stream's name (a rater's name, for example).
        sample_id: the sample's id.
        *extra: further integers appended to the seed sequence.

    Returns:
        A generator seeded with ``SeedSequence([seed, crc32(stream), crc32(sample_id), *extra])``.
    """
    seq = np.random.SeedSequence([int(seed), crc32_text(stream), crc32_text(str(sample_id)), *extra])
    return np.random.default_rng(seq)


def reference_rater_index(reference: MultiRaterAnnotations, rater: str | None) -> int:
    """Index of the reference rater, with clear errors for bad input.

    Args:
        reference: the reference corpus.
        rater: the reference rater's name, or None when the corpus has one rater.

    Returns:
        The rater's index in ``reference.raters``.

    Raises:
        TypeError: when ``reference`` is not a MultiRaterAnnotations.
        ValueError: when the rater is unknown or ambiguous, assigned nowhere, empty or holds invalid boxes.
    """
    if not isinstance(reference, MultiRaterAnnotations):
        raise TypeError(f"reference must be a MultiRaterAnnotations, got {type(reference).__name__}")
    if rater is None:
        if reference.num_raters != 1:
            raise ValueError(
                f"the reference has {reference.num_raters} raters {list(reference.raters)}; "
                "pass rater=... to choose the reference"
            )
        r = 0
    else:
        if rater not in reference.raters:
            raise ValueError(f"reference rater {rater!r} not found; raters are {list(reference.raters)}")
        r = reference.raters.index(rater)
    name = reference.raters[r]
    assigned = reference.assigned[:, r]
    if not assigned.any():
        raise ValueError(f"reference rater {name!r} is assigned to no sample: nothing to perturb")
    rows = reference.rater_index == r
    if not rows.any():
        raise ValueError(
            f"the reference (rater {name!r}) is empty everywhere: no annotation on any of its "
            f"{int(assigned.sum())} samples, so there is nothing to perturb"
        )
    boxes = reference.boxes[rows]
    bad = ~np.isfinite(boxes).all(axis=1) | (boxes[:, 2] < 0) | (boxes[:, 3] < 0)
    if bad.any():
        i = np.flatnonzero(rows)[np.flatnonzero(bad)[0]]
        s = reference.sample_index[i]
        raise ValueError(
            f"sample {reference.sample_names[s]!r}, rater {name!r}: box {reference.boxes[i].tolist()} "
            "has NaN/infinite coordinates or a negative size"
        )
    return r


def clip_to_image(boxes: np.ndarray) -> np.ndarray:
    """Clamps each box centre to ``[0, 1]^2``, then clips the box to the image.

    The clamped centre lies in the image, so the clipped box is never empty
    (its width and height stay ``>= 0``; positive when they were).

    Args:
        boxes: ``(n, 4)`` relative ``[x, y, w, h]`` boxes.

    Returns:
        The ``(n, 4)`` float64 clipped boxes.
    """
    boxes = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
    w, h = boxes[:, 2], boxes[:, 3]
    cx = np.clip(boxes[:, 0] + w / 2, 0.0, 1.0)
    cy = np.clip(boxes[:, 1] + h / 2, 0.0, 1.0)
    x0, x1 = np.clip(cx - w / 2, 0.0, 1.0), np.clip(cx + w / 2, 0.0, 1.0)
    y0, y1 = np.clip(cy - h / 2, 0.0, 1.0), np.clip(cy + h / 2, 0.0, 1.0)
    return np.stack([x0, y0, x1 - x0, y1 - y0], axis=1)


def assemble_raters(
    reference: MultiRaterAnnotations,
    r: int,
    names: Sequence[str],
    cells: dict[tuple[int, int], tuple[np.ndarray, np.ndarray, np.ndarray]],
) -> MultiRaterAnnotations:
    """Builds a corpus of the raters ``names`` (sorted) from per-cell columns.

    ``cells[(s, k)] = (boxes, labels, label_ids)`` for rater ``names[k]`` on
    sample ``s``; every sample the reference rater ``r`` is assigned gets an
    entry (possibly empty), the others are implicit absence. Rows are emitted
    already sorted by (sample, rater) so that their order is the order given.

    Args:
        reference: the reference corpus (its samples and assignment).
        r: the reference rater's index.
        names: the new raters' names.
        cells: the per-cell columns, keyed by (sample, index in ``names``).

    Returns:
        The corpus of the raters ``names``.
    """
    order = sorted(range(len(names)), key=lambda k: names[k])
    raters = tuple(names[k] for k in order)
    S, K = reference.num_samples, len(names)
    assigned = np.zeros((S, K), dtype=bool)
    assigned[:, :] = reference.assigned[:, r][:, None]
    boxes, labels, ids, s_idx, r_idx = [], [], [], [], []
    for s in np.flatnonzero(reference.assigned[:, r]):
        for new_k, k in enumerate(order):
            b, lab, lid = cells[(int(s), k)]
            n = len(b)
            if n:
                boxes.append(b)
                labels.append(lab)
                ids.append(lid)
                s_idx.append(np.full(n, s, np.intp))
                r_idx.append(np.full(n, new_k, np.intp))
    cat = (lambda xs, dt, shape: np.concatenate(xs).astype(dt) if xs else np.zeros(shape, dt))
    return MultiRaterAnnotations(
        sample_ids=reference.sample_ids.copy(),
        raters=raters,
        assigned=assigned,
        boxes=cat(boxes, np.float64, (0, 4)),
        labels=cat(labels, object, (0,)),
        label_ids=cat(ids, object, (0,)),
        sample_index=cat(s_idx, np.intp, (0,)),
        rater_index=cat(r_idx, np.intp, (0,)),
        image_sizes=reference.image_sizes.copy(),
        sample_names=reference.sample_names.copy(),
    )


# --------------------------------------------------------------------------
# Perturbations
# --------------------------------------------------------------------------


def _check_kind(kind: str) -> str:
    if kind not in PERTURBATIONS:
        raise ValueError(f"kind must be one of {PERTURBATIONS}, got {kind!r}")
    return kind


def _check_gamma(kind: str, gamma: float) -> float:
    return check_level(gamma, "gamma", upper=None if kind == "shift" else 1.0)


def _perturb_arrays(
    boxes: np.ndarray, labels: np.ndarray, kind: str, gamma: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Perturbed ``(boxes, labels, source)`` of one set; ``source`` indexes the input rows.

    The draws are made in the same order whatever ``gamma`` (see the module
    docstring on coupling).
    """
    n = len(boxes)
    perm = rng.permutation(n)
    u = rng.random()
    theta = rng.uniform(0.0, 2.0 * np.pi, size=n)
    if kind == "drop":
        k = min(n, int(math.floor(gamma * n + u)))
        keep = np.sort(perm[k:])
        return boxes[keep].copy(), labels[keep].copy(), keep
    if kind == "shift":
        if gamma == 0.0:
            return boxes.copy(), labels.copy(), np.arange(n)
        out = boxes.copy()
        out[:, 0] += gamma * boxes[:, 2] * np.cos(theta)
        out[:, 1] += gamma * boxes[:, 3] * np.sin(theta)
        return clip_to_image(out), labels.copy(), np.arange(n)
    # swap
    k = min(n // 2, int(math.floor(gamma * n / 2.0 + u)))
    out_labels = labels.copy()
    first, second = perm[0:2 * k:2], perm[1:2 * k:2]
    out_labels[first], out_labels[second] = labels[second], labels[first]
    return boxes.copy(), out_labels, np.arange(n)


def perturb_set(
    annotations: AnnotationSet, kind: str, gamma: float, rng: np.random.Generator
) -> tuple[AnnotationSet, np.ndarray]:
    """Applies one controlled perturbation to one annotation set.

    ``"drop"`` removes ``floor(γ n + u)`` boxes (``u ~ U[0, 1)``), ``"shift"``
    moves every centre by ``γ`` box sizes in a uniform random direction
    (``Δx = γ w cos θ``, ``Δy = γ h sin θ``) and clips to the image,
    ``"swap"`` exchanges the labels within ``floor(γ n / 2 + u)`` random
    disjoint pairs (see the module docstring).

    Args:
        annotations: the reference set of ``n`` boxes.
        kind: ``"drop"``, ``"shift"`` or ``"swap"``.
        gamma: noise level ``γ``; ``[0, 1]`` for drop and swap, ``[0, ∞)``
            for shift.
        rng: the generator to draw from.

    Returns:
        ``(perturbed, source)``: the perturbed set (label ids of the source
        boxes kept) and ``source``, the index in ``annotations`` of each
        perturbed box.

    Reference: Prokhorov & Kalinin, OT agreement paper, Section 4.1.
    """
    kind = _check_kind(kind)
    gamma = _check_gamma(kind, gamma)
    if not isinstance(annotations, AnnotationSet):
        raise TypeError(f"annotations must be an AnnotationSet, got {type(annotations).__name__}")
    boxes, labels, src = _perturb_arrays(annotations.boxes, annotations.labels, kind, gamma, rng)
    return AnnotationSet(boxes, labels, annotations.ids[src]), src


def perturb(
    reference: MultiRaterAnnotations,
    kind: str,
    gamma: float,
    *,
    seed: int = 0,
    rater: str | None = None,
    name: str | None = None,
    stream: str | None = None,
) -> MultiRaterAnnotations:
    """One simulated rater: the reference rater's sets under a controlled perturbation.

    For every sample the reference rater is assigned to, its set of ``n``
    boxes is perturbed by :func:`perturb_set` (drop: ``floor(γ n + u)`` boxes
    removed; shift: centres moved by ``γ`` box sizes; swap: labels exchanged
    within ``floor(γ n / 2 + u)`` random pairs). Samples the reference rater
    was not assigned stay implicit absence; empty sets stay empty.

    Args:
        reference: the corpus holding the reference rater.
        kind: ``"drop"``, ``"shift"`` or ``"swap"``.
        gamma: noise level ``γ``: ``[0, 1]`` for drop and swap (the fraction
            of boxes dropped / taking part in a swap), ``[0, ∞)`` for shift
            (displacement in box sizes).
        seed: non-negative integer seed.
        rater: the reference rater's name; may be omitted when ``reference``
            has a single rater.
        name: the simulated rater's name (default ``f"{kind}_{γ:g}"``).
        stream: the name the random stream is derived from (default
            ``kind``). Equal seeds and streams give coupled perturbations
            across ``γ`` (module docstring).

    Returns:
        A :class:`~agreement.core.data.MultiRaterAnnotations` with the one rater
        ``name``; ``label_ids`` are the reference boxes' ids.

    Raises:
        ValueError: ``γ`` negative, non-finite or (drop, swap) above 1; an
            unknown kind or rater; a reference that is empty everywhere.

    Reference: Prokhorov & Kalinin, "Quantifying Annotation Agreement in
    Object Detection with Optimal Transport", Section 4.1.
    """
    return perturbation_series(
        reference, kind, [gamma], seed=seed, rater=rater, names=None if name is None else [name],
        stream=stream,
    )


def perturbation_series(
    reference: MultiRaterAnnotations,
    kind: str,
    gammas: Sequence[float],
    *,
    seed: int = 0,
    rater: str | None = None,
    num_raters: int = 1,
    include_reference: bool = False,
    names: Sequence[str] | None = None,
    stream: str | None = None,
) -> MultiRaterAnnotations:
    """Several simulated raters: ``num_raters`` per noise level ``γ`` in ``gammas``.

    Rater ``j`` (``0 <= j < num_raters``) at level ``γ`` is
    :func:`perturb` of the reference with stream ``f"{stream}#{j}"`` (or
    ``stream`` when ``num_raters == 1``), so the raters of one level are
    independent and rater ``j`` is coupled across levels (module docstring).

    Args:
        reference: the corpus holding the reference rater.
        kind: ``"drop"``, ``"shift"`` or ``"swap"``.
        gammas: distinct noise levels (see :func:`perturb` for their range).
        seed: non-negative integer seed.
        rater: the reference rater (optional when there is only one).
        num_raters: ``K >= 1`` raters per level.
        include_reference: also include the reference rater itself,
            unchanged, under its own name.
        names: rater names, one per (level, replicate) in level-major order;
            default ``f"{kind}_{γ:g}"``, with ``f"_{j + 1}"`` appended when
            ``num_raters > 1``.
        stream: base name of the random streams (default ``kind``).

    Returns:
        A :class:`~agreement.core.data.MultiRaterAnnotations` (raters sorted by
        name, as always).

    Reference: Prokhorov & Kalinin, OT agreement paper, Section 4.1.
    """
    kind = _check_kind(kind)
    seed = check_seed(seed)
    gammas = [_check_gamma(kind, g) for g in np.atleast_1d(np.asarray(gammas, dtype=object)).tolist()]
    if not gammas:
        raise ValueError("gammas is empty: give at least one noise level")
    if len(set(gammas)) != len(gammas):
        raise ValueError(f"gammas must be distinct, got {gammas}")
    if isinstance(num_raters, bool) or not isinstance(num_raters, (int, np.integer)) or num_raters < 1:
        raise ValueError(f"num_raters must be an integer K >= 1, got {num_raters!r}")
    r = reference_rater_index(reference, rater)
    base = kind if stream is None else str(stream)
    streams = [base if num_raters == 1 else f"{base}#{j}" for j in range(num_raters)]
    jobs = [(g, j) for g in gammas for j in range(num_raters)]
    if names is None:
        names = [f"{kind}_{g:g}" + (f"_{j + 1}" if num_raters > 1 else "") for g, j in jobs]
    names = [str(x) for x in names]
    if len(names) != len(jobs):
        raise ValueError(f"names has {len(names)} entries for {len(jobs)} simulated raters")
    if include_reference:
        names.append(reference.raters[r])
    if len(set(names)) != len(names):
        raise ValueError(f"rater names must be unique, got {names}")
    cells = {}
    for s in np.flatnonzero(reference.assigned[:, r]):
        sl = reference.rows(int(s), r)
        boxes, labels, ids = reference.boxes[sl], reference.labels[sl], reference.label_ids[sl]
        for k, (g, j) in enumerate(jobs):
            rng = cell_rng(seed, streams[j], reference.sample_ids[s])
            b, lab, src = _perturb_arrays(boxes, labels, kind, g, rng)
            cells[(int(s), k)] = (b, lab, ids[src])
        if include_reference:
            cells[(int(s), len(jobs))] = (boxes.copy(), labels.copy(), ids.copy())
    return assemble_raters(reference, r, names, cells)
