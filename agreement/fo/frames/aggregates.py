"""The per-video values of a frame run (:mod:`agreement.fo.frames.runs`): aggregates of its per-frame score,
computed in memory from the values written to the frames, and a method's own per-video values, written on the
videos in one bulk pass (one update per video document).
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np

__all__ = ["double_double_sum", "video_aggregates", "write_video_fields"]


def double_double_sum(values: Sequence[float]) -> float:
    """The sum of ``values`` in their order, as MongoDB's ``$sum``/``$avg`` compute it (its
    ``DoubleDoubleSummation``): an unevaluated pair (sum, addend) updated with Dekker's Fast2Sum and
    Møller–Knuth's 2Sum, the sum's double returned (a plain running sum if it is NaN).

    Reference: S. Boldo, S. Graillat, J.-M. Muller, "On the robustness of the 2Sum and Fast2Sum algorithms",
    ACM TOMS 44(1), 2017. Nearly always the correctly rounded sum, not always (``math.fsum`` is): the
    per-video means stay the numbers earlier releases computed with ``$avg``.
    """
    total = addend = plain = 0.0
    for x in values:
        x = float(x)
        plain += x
        s = x + addend  # Fast2Sum(x, addend)
        addend, x = addend - (s - x), s
        s = total + x  # 2Sum(total, x)
        a = s - x
        x, total = (total - a) + (x - (s - a)), s
        addend += x
    return plain if total != total else total


def video_aggregates(video_ids: Sequence[Any], scores: Sequence[Any], score: Mapping) -> tuple[dict, dict]:
    """Per video, from the per-frame score of every frame of the run (as stored: ``None`` undefined): its
    mean, worst frame, share of frames worse than the threshold and number of frames scored.

    The mean is the sum of the video's scored frames (in their order, summed as MongoDB's ``$avg`` sums:
    :func:`double_double_sum`) over their number ``n``, so that it is the number a ``$group`` of the frames
    gives, bit for bit; the share ``low / n``. Undefined frame scores are not scored; a video without a
    scored frame gets ``None`` (and ``0`` frames).

    Args:
        video_ids: the video of each frame.
        scores: the frame's score, one per frame.
        score: :func:`agreement.fo.frames.runs.frame_score` (``higher_is_better``, ``threshold``).

    Returns:
        ``({suffix: {video id: value}}, {"n_videos": ..., "n_frames": ...})``, suffixes ``frames_mean``,
        ``frames_worst``, ``frames_low``, ``frames_n``.
    """
    higher, threshold = score["higher_is_better"], score["threshold"]
    videos, code = np.unique(np.asarray([str(v) for v in video_ids], dtype=object), return_inverse=True)
    code = code.reshape(-1)
    order = np.argsort(code, kind="stable")
    cuts = np.searchsorted(code[order], np.arange(len(videos) + 1)).tolist()
    column = np.asarray(list(scores), dtype=object)[order].tolist()
    out: dict[str, dict[str, Any]] = {s: {} for s in ("frames_mean", "frames_worst", "frames_low", "frames_n")}
    for k, video in enumerate(videos.tolist()):
        nums = [x for x in column[cuts[k]:cuts[k + 1]] if isinstance(x, (int, float)) and not isinstance(x, bool)]
        n = len(nums)
        low = sum(1 for x in nums if (x < threshold if higher else x > threshold)) if threshold is not None else 0
        out["frames_mean"][video] = double_double_sum(nums) / n if n else None
        out["frames_worst"][video] = (max(nums) if not higher else min(nums)) if n else None
        out["frames_low"][video] = low / n if n and threshold is not None else None
        out["frames_n"][video] = n
    return out, {"n_videos": len(videos), "n_frames": len(column)}


def write_video_fields(dataset, key: str, aggregates: Mapping[str, Mapping[str, Any]],
                       values: Mapping[str, Mapping[str, object]]) -> None:
    """Writes the per-video aggregates (:func:`video_aggregates`) as ``{key}_<suffix>`` (floats, ``frames_n``
    an int) and a method's own per-video values ``{suffix: {video id: value}}`` (NaN as ``None``; int
    fields when every value is an int, else float) in one bulk pass: one update per video, the fields
    declared first."""
    import fiftyone.core.fields as fof

    from agreement.fo.runs.locking import schema_lock
    from agreement.fo.storage.writing import write_columns

    columns: dict[str, dict[str, Any]] = {}
    kinds: dict[str, Any] = {}
    for suffix, by_video in aggregates.items():
        columns[f"{key}_{suffix}"] = dict(by_video)
        kinds[f"{key}_{suffix}"] = fof.IntField if suffix == "frames_n" else fof.FloatField
    for suffix, by_video in values.items():
        clean = {v: (None if isinstance(x, float) and not math.isfinite(x) else x) for v, x in by_video.items()}
        kinds[f"{key}_{suffix}"] = fof.IntField if all(isinstance(x, int) for x in clean.values() if x is not None) \
            and any(x is not None for x in clean.values()) else fof.FloatField
        columns[f"{key}_{suffix}"] = clean
    if any(name not in dataset.get_field_schema() for name in kinds):
        with schema_lock(dataset):  # one merge of the new declarations (one reload), not one per field
            schema = dataset.get_field_schema()
            new = {name: kind() for name, kind in kinds.items() if name not in schema}
            if new:
                dataset._merge_sample_field_schema(new)
    write_columns(dataset, {n: c for n, c in columns.items() if c})
