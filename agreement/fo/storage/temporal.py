"""Temporal segments of videos (``TemporalDetections``) read as boxes in relative time, and written back.

The design is :mod:`agreement.geometry.temporal`'s: the segment ``[first, last]`` of a
video of ``N = metadata.total_frame_count`` frames is the box ``[(first - 1) / N, 0,
(last - first + 1) / N, 1]``, so that every method measures temporal IoU / GIoU and
compares segments of different clips by relative time (docs/temporal-agreement.md).
Here, the FiftyOne side of it:

* :func:`check_temporal_media`: temporal labels live on video datasets;
* :func:`frame_count_column`: the frame counts read with the labels;
* :func:`temporal_boxes`: the supports read, checked (frame counts known, ``first <=
  last``, within ``[1, N]`` under ``box_policy``) and turned into boxes;
* :func:`support_documents`: consensus boxes back to supports, for ``TemporalDetection``
  documents;
* :func:`strata_of_counts`: the chance strata of the clips by length
  (:func:`agreement.geometry.temporal.length_strata`): the chance baselines pair only clips of
  comparable length (the runs get them, with the image strata, from
  :func:`agreement.fo.runs.chance_strata.chance_strata`).

Image sizes of a temporal corpus are unknown (NaN): every measure then works in relative
coordinates, which is the relative time of the design.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from agreement.core.validation import AnnotationError, RepairReport
from agreement.fo.kinds import label_type, label_types
from agreement.geometry.temporal import boxes_to_supports, check_supports, length_strata, supports_to_boxes

__all__ = ["TEMPORAL_TYPES", "FRAME_COUNT_PATH", "is_temporal", "check_temporal_media", "frame_count_column",
           "temporal_boxes", "support_documents", "strata_of_counts"]

#: The temporal label list types read (segments of a video's frames).
TEMPORAL_TYPES = tuple(t for t in label_types() if label_type(t).temporal)

#: The sample path of a video's number of frames (FiftyOne's ``VideoMetadata``).
FRAME_COUNT_PATH = "metadata.total_frame_count"

_HOW_TO_COUNT = ("compute it with dataset.compute_metadata() (reads each video file), or set it with "
                 "sample.metadata = fo.VideoMetadata(total_frame_count=..., frame_rate=...)")


def is_temporal(ltype: type | str | None) -> bool:
    """Whether ``ltype`` (a label class or its name) is a temporal segment list."""
    return any(ltype is t or ltype == t.__name__ for t in label_types() if label_type(t).temporal)


def check_temporal_media(samples, fields: Sequence[str], ltype: type) -> None:
    """Temporal segments are measured in a video's frames: refuses them on a dataset of other media.

    Raises:
        AnnotationError: naming the fields, the dataset and its media type.
    """
    media = getattr(samples, "media_type", None)
    if is_temporal(ltype) and media != "video":
        raise AnnotationError(
            f"field(s) {list(fields)} hold {ltype.__name__} (segments [first, last] of a video's frames), but "
            f"dataset {samples._dataset.name!r} holds {media or 'no'} media, not videos: temporal segments are "
            "measured against each video's frame count; put them on a video dataset"
        )


def frame_count_column(values: list, image_sizes: bool, ltype: type) -> np.ndarray | None:
    """The frame count of every sample read (NaN where unknown) from the base columns of a read
    (``id``, ``filepath``, [``metadata.width``, ``metadata.height``], :data:`FRAME_COUNT_PATH`); ``None``
    for a label type that is not temporal."""
    if not is_temporal(ltype):
        return None
    col = values[4 if image_sizes else 2]
    return np.array([np.nan if v is None else float(v) for v in col], dtype=np.float64)


def _check_frame_counts(counts: np.ndarray, s_idx: np.ndarray, where, field_of_row: np.ndarray) -> None:
    """Every sample with a segment has a known frame count, or an error naming the first and how to fix it."""
    n = counts[s_idx]
    missing = ~np.isfinite(n) | (n < 1)
    if not missing.any():
        return
    i = int(np.flatnonzero(missing)[0])
    samples = np.unique(s_idx[missing])
    what = "no frame count" if not np.isfinite(n[i]) else f"a frame count of {n[i]:g}"
    raise AnnotationError(
        f"{where[i]}: the video has {what} ({FRAME_COUNT_PATH}), which its temporal segments need: a segment "
        f"is compared with others by its place in the video ([first, last] over the frame count); "
        f"{len(samples)} sample(s) with segments in field(s) {sorted(set(field_of_row[missing].tolist()))} lack "
        f"it. {_HOW_TO_COUNT[0].upper()}{_HOW_TO_COUNT[1:]}"
    )


def temporal_boxes(flat_supports: list, frame_counts: np.ndarray | None, s_idx: np.ndarray, where, labels: np.ndarray,
                   field_of_row: np.ndarray, policy: str, repairs: RepairReport, raters) -> tuple[np.ndarray, np.ndarray]:
    """The segments read as boxes in relative time, and which are kept.

    Args:
        flat_supports: per label its ``support`` as read (``None`` where missing).
        frame_counts: per sample its frame count (:func:`frame_count_column`); needed when there are labels.
        s_idx: per label its sample.
        where: ``where[i]`` locates label ``i`` (sample, field, rater).
        labels: per label its class, named in messages.
        field_of_row: per label its field.
        policy: the ``box_policy`` for supports outside ``[1, N]``
            (:func:`agreement.geometry.temporal.check_supports`).
        repairs: collects the repairs, per rater.
        raters: per label its rater (counts).

    Returns:
        ``(boxes, keep)``: ``(n, 4)`` relative boxes and the ``(n,)`` mask of the segments kept.

    Raises:
        AnnotationError: an unknown frame count, a missing or reversed support, or (``policy="error"``)
        a support outside the video's frames, naming the sample, field, rater and label.
    """
    s_idx = np.asarray(s_idx, dtype=np.intp)
    if not len(s_idx):
        return np.zeros((0, 4)), np.ones(0, dtype=bool)
    if frame_counts is None:  # (indexing None raised this TypeError before)
        raise TypeError("temporal segments need the samples' frame counts (frame_count_column)")
    _check_frame_counts(frame_counts, s_idx, where, np.asarray(field_of_row, dtype=object))
    supports = np.array([[np.nan, np.nan] if v is None or len(v) != 2 else
                         [np.nan if x is None else x for x in v] for v in flat_supports], dtype=np.float64)
    counts = frame_counts[s_idx]
    supports, keep = check_supports(supports, counts, lambda i: f"{where[i]}, label {labels[i]!r}", policy=policy,
                                    report=repairs, raters=raters)
    # a dropped segment keeps its row until the corpus is built: its box, in the clip, is never counted again
    inside = np.clip(supports, 1.0, counts[:, None])
    return supports_to_boxes(inside, counts), keep


def support_documents(boxes: np.ndarray, frame_counts: np.ndarray) -> list[dict]:
    """``{"support": [first, last]}`` of each box in its video of ``frame_counts`` frames (rounded to frames,
    clipped to ``[1, N]``: :func:`agreement.geometry.temporal.boxes_to_supports`), the geometry of a
    ``TemporalDetection`` document."""
    return [{"support": s} for s in boxes_to_supports(boxes, frame_counts).tolist()]


def strata_of_counts(frame_counts: np.ndarray) -> np.ndarray:
    """The chance strata of clips of ``frame_counts`` frames (:func:`agreement.geometry.temporal.length_strata`;
    an unknown or non-positive count, refused later for a clip with segments, counts as unknown)."""
    n = np.asarray(frame_counts, dtype=np.float64).reshape(-1)
    return length_strata(np.where(np.isfinite(n) & (n >= 1), n, np.nan))

