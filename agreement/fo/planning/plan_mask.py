r"""The ``planning`` hook of semantic mask agreement runs: pixel α with fewer raters per sample.

A mask agreement run's pixel α is nominal Krippendorff's α of every pixel as a unit, pooled over samples
from their summed coincidence matrices (:mod:`agreement.methods.semantic.stats`): on a sample whose ``m``
raters drew a mask, every pixel has ``m`` values and ``o_ck = sum_u (n_uc n_uk - [c = k] n_uc) / (m - 1)``, which
is the sum over ordered pairs of distinct raters ``(i, j)`` of the pixels where ``i`` says ``c`` and ``j`` says
``k``, over ``m - 1``. So the *pair coincidences* ``P_ij`` of a sample are sufficient statistics: for any
set ``K`` of its raters,

.. math:: o_K = \frac{1}{|K| - 1} \sum_{i \ne j \in K} P_{ij}

:func:`mask_planning` reads the run's masks once (with the run's rater layout, classes, ``n_pixels`` and seed:
the same pixels, weighted ``N / n_pixels``, as the run) and keeps per sample the symmetric pair coincidences
``P_ij + P_ji`` of every rater pair (``(pairs, C, C)``); :class:`PixelPairCoincidences`, the statistic
``"alpha"``, sums ``o_K`` over the samples of a draw of ``k`` raters per sample and computes α. With every
rater it is the run's pixel α exactly (up to float summation order): no approximation, the masks are not
read again per draw. Memory: ``samples × R (R - 1) / 2 × C²`` floats.

Range: at most 1; 0 at chance; NaN when the kept pixels do not vary.
Reference: K. Krippendorff, "Computing Krippendorff's Alpha-Reliability", 2011.
"""

from __future__ import annotations

import math

import numpy as np

from agreement.core.krippendorff import alpha_from_coincidence
from agreement.fo.planning.plan_input import PlanningInput, check_run_size, refuse_gold_and_frames, run_layout, run_view
from agreement.fo.runs import store as runs
from agreement.fo.storage.assignment import plan_corpus
from agreement.fo.storage.reading import read_annotations
from agreement.methods.semantic.pixels import sample_seed

__all__ = ["PixelPairCoincidences", "pair_coincidences", "mask_planning"]


class PixelPairCoincidences:
    """Pooled pixel α of the kept raters of each sample from per-sample pair coincidences (module docstring).

    Attributes:
        pair_coincidence: ``(samples, pairs, C, C)`` symmetric ``P_ij + P_ji`` of each rater pair ``i < j``.
        first, second: the raters (columns) of each pair.
        min_k: 2; needs_items: ``True`` (the draw's rows are samples).
    """

    min_k = 2
    needs_items = True
    __name__ = "alpha_pixel_pairs"

    def __init__(self, pair_coincidence: np.ndarray, first: np.ndarray, second: np.ndarray) -> None:
        self.pair_coincidence, self.first, self.second = pair_coincidence, first, second
        S, P, C, _ = pair_coincidence.shape
        self._flat = pair_coincidence.reshape(S * P, C * C)
        self._C = C

    def coincidence(self, values: np.ndarray, items: np.ndarray | None = None) -> np.ndarray:
        """``sum`` over the rows of ``o_K`` (``K`` the raters rated in the row), ``(C, C)``."""
        rows = np.arange(values.shape[0]) if items is None else np.asarray(items, dtype=np.int64)
        kept = ~np.isnan(np.asarray(values, dtype=np.float64))
        m = kept.sum(axis=1)
        weight = (kept[:, self.first] & kept[:, self.second]) / np.maximum(m - 1, 1)[:, None]
        W = np.zeros((self.pair_coincidence.shape[0], self.first.size))
        np.add.at(W, rows, weight)  # a resampled draw repeats a sample
        out: np.ndarray = (W.reshape(-1) @ self._flat).reshape(self._C, self._C)
        return out

    def __call__(self, values: np.ndarray, items: np.ndarray | None = None) -> float:
        """Nominal pixel α of the kept raters of samples ``items`` (rows of ``values``)."""
        o = self.coincidence(values, items)
        return float(alpha_from_coincidence(o).alpha) if o.sum() >= 2 else math.nan


def pair_coincidences(codes: np.ndarray, n_classes: int, *, weight: float = 1.0) -> np.ndarray:
    """The symmetric pair coincidences ``P_ij + P_ji`` of one sample's raters, for each pair ``i < j``.

    ``P_ij[c, k]`` is ``weight`` times the number of pixels where rater ``i`` says class ``c`` and rater
    ``j`` class ``k``; a pair with a rater without a mask is 0.

    Args:
        codes: ``(raters, pixels)`` class indices in ``[0, n_classes)``, a row of ``-1`` for a rater without a mask.
        n_classes: ``C``.
        weight: each pixel's weight (``N / n_pixels`` for sampled pixels).

    Returns:
        ``(R (R - 1) / 2, C, C)`` in the order of ``numpy.triu_indices(R, 1)``.
    """
    R, C = codes.shape[0], int(n_classes)
    first, second = np.triu_indices(R, 1)
    present = np.min(codes, axis=1) >= 0
    out = np.zeros((first.size, C, C))
    for p, (i, j) in enumerate(zip(first.tolist(), second.tolist(), strict=True)):
        if present[i] and present[j]:
            P = np.bincount(codes[i] * C + codes[j], minlength=C * C).reshape(C, C) * weight
            out[p] = P + P.T
    return out


#: Samples read at once (the run's own shard cap: full-image masks of several raters are large).
CHUNK = 200


def _sample_masks(data, s: int) -> list[np.ndarray | None]:
    R = data.num_raters
    return [data.masks[data.offsets[s * R + r]] if data.offsets[s * R + r + 1] > data.offsets[s * R + r] else None
            for r in range(R)]


def _class_values(read, data) -> np.ndarray:
    """The run's classes: ``mask_targets`` and background 0, else every value found (as the run aligns them)."""
    targets = read.layout.get("mask_targets")
    if targets:
        return np.array(sorted({0} | {int(k) for k in targets}), dtype=np.int64)
    found = [np.unique(m) for m in data.masks if m is not None]
    return np.unique(np.concatenate(found)).astype(np.int64) if found else np.zeros(1, np.int64)


def _chunk(read, params: dict, key: str) -> tuple[np.ndarray, list[str], list[np.ndarray], list[np.ndarray]]:
    """``(class values, sample ids, rated rows, pair coincidences)`` of the samples of one read with two or
    more masks, on the run's pixels, in the read's class values."""
    data = read.annotations
    R, values = data.num_raters, _class_values(read, data)
    C, n_pixels, seed = values.size, int(params.get("n_pixels") or 0) or None, int(params.get("seed") or 0)
    ids, rated, blocks = [], [], []
    for s in range(data.num_samples):
        masks = _sample_masks(data, s)
        present = np.array([m is not None for m in masks])
        if present.sum() < 2:
            continue
        flat = [np.asarray(m).reshape(-1) for m in masks if m is not None]
        N = flat[0].size
        weight = 1.0
        if n_pixels is not None and N > n_pixels:
            pick = sample_seed(seed, str(data.sample_names[s])).choice(N, size=n_pixels, replace=False)
            flat, weight = [f[pick] for f in flat], N / n_pixels
        codes = np.full((R, flat[0].size), -1, dtype=np.int64)
        stacked = np.stack(flat).astype(np.int64)
        codes[present] = np.minimum(np.searchsorted(values, stacked), C - 1)
        if not (values[codes[present]] == stacked).all():
            raise runs.RunError(f"run {key!r}: sample {data.sample_ids[s]!r} has mask values outside the run's "
                                f"classes {values.tolist()} (masks changed since the run?): rerun it before plan_raters")
        ids.append(str(data.sample_ids[s]))
        rated.append(np.where(present, 1.0, np.nan))
        blocks.append(pair_coincidences(codes, C, weight=weight))
    return values, ids, rated, blocks


def _pair_coincidences(view, info: dict,
                       params: dict) -> tuple[list[str], np.ndarray, PixelPairCoincidences, list[str]]:
    """Per sample with two or more masks: its pair coincidences on the run's pixels (module docstring), read
    :data:`CHUNK` samples at a time with one corpus plan (the same raters in every read), the classes aligned."""
    key, layout = info["key"], run_layout(info)
    plan = plan_corpus(view, **layout)
    all_ids = [str(i) for i in view.values("id")]
    parts = [_chunk(read_annotations(view.select(all_ids[lo: lo + CHUNK], ordered=True), **layout, plan=plan),
                    params, key) for lo in range(0, len(all_ids), CHUNK)]
    ids = [i for part in parts for i in part[1]]
    if not ids:
        raise runs.RunError(f"run {key!r}: no sample has masks of two raters")
    union = np.unique(np.concatenate([part[0] for part in parts]))
    R = len(plan.raters)
    first, second = np.triu_indices(R, 1)
    out = np.zeros((len(ids), first.size, union.size, union.size))
    row = 0
    for values, _, _, blocks in parts:
        if blocks:
            at = np.searchsorted(union, values)
            out[row: row + len(blocks)][:, :, at[:, None], at[None, :]] = np.stack(blocks)
            row += len(blocks)
    rated = np.stack([r for part in parts for r in part[2]])
    stat = PixelPairCoincidences(out, first.astype(np.int64), second.astype(np.int64))
    return ids, rated, stat, [str(r) for r in plan.raters]


def mask_planning(samples, info: dict, options: dict) -> PlanningInput:
    """The ``planning`` hook of semantic mask agreement runs (module docstring).

    Args:
        samples: any collection of the run's dataset.
        info: the run's info.
        options: ``gold_field`` (refused: pixel α has no consensus to score), ``seed`` (unused).

    Returns:
        :class:`agreement.fo.planning.plan_input.PlanningInput` with ``"alpha"``.

    Raises:
        agreement.fo.runs.store.RunError: a run on video frames, or whose samples changed since it ran.
        ValueError: a gold field.
    """
    params = dict(info.get("params") or {})
    refuse_gold_and_frames(info, options, kind="mask agreement", offers="pixel α only")
    view = run_view(samples, info)
    check_run_size(info, len(view))
    ids, values, stat, raters = _pair_coincidences(view, info, params)
    sampled = f"{params['n_pixels']} sampled pixels per sample (the run's)" if params.get("n_pixels") else "every pixel"
    note = (f"pixel α (nominal, pooled over samples) of k raters per sample, on {sampled}; exact: from each sample's "
            "coincidence matrices of rater pairs")
    return PlanningInput(values=values, statistics={"alpha": stat}, projections={"alpha": "spearman_brown"},
                         sample_ids=ids, raters=raters, notes={"alpha": note})
