"""The chance strata of a view: which samples the chance baselines may pair.

One function for every label kind, :func:`chance_strata`: the view's scales read in bulk and
stratified by :func:`agreement.core.strata.corpus_strata` (the pure library's rule):

* temporal segments (``TemporalDetections`` on videos): clips by frame count
  (``metadata.total_frame_count``: relative time compares clips of comparable length);
* labels on images: images by size (``metadata.width`` / ``metadata.height``, the geometric mean
  of the sides: relative coordinates compare images of comparable size);
* anything else (frame labels of videos, 3D scenes): ``None``, one stratum.

Unknown scales join the largest stratum; a view of one stratum gives ``None`` (exactly the
baselines without strata). OT (:mod:`agreement.fo.methods.ot_agreement`), geometry agreement
(:mod:`agreement.fo.methods.geometry_agreement`) and calibration
(:mod:`agreement.fo.methods.calibration`) call it, so that a run and the pure library on the same
corpus (``strata="image_size"``) give the same numbers.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from agreement.core.strata import corpus_strata
from agreement.fo.storage.temporal import FRAME_COUNT_PATH, is_temporal

__all__ = ["chance_strata", "IMAGE_SIZE_PATHS"]

#: The sample paths of an image's size (FiftyOne's ``ImageMetadata``).
IMAGE_SIZE_PATHS = ("metadata.width", "metadata.height")


def _column(values, n: int) -> np.ndarray:
    return np.array([np.nan if v is None else float(v) for v in values], dtype=np.float64).reshape(n)


def chance_strata(samples, sample_ids: Sequence[str], label_fields: Sequence[str]) -> np.ndarray | None:
    """The chance strata of ``sample_ids`` (samples of ``samples``, in that order): clips by frame count
    when the label fields hold temporal segments, images by size on an image dataset, ``None`` otherwise
    or when every known scale is in one stratum (module docstring).

    Args:
        samples: the dataset or view.
        sample_ids: the ids of the samples measured, in the order of the run.
        label_fields: the label fields read (a temporal one makes the strata temporal).

    Returns:
        ``(S,)`` int64 strata (:func:`agreement.core.strata.corpus_strata`) or ``None``.
    """
    schema = samples.get_field_schema()
    temporal = any(is_temporal(getattr(schema.get(f), "document_type", None)) for f in label_fields)
    media = getattr(samples, "media_type", None)
    if temporal and media == "video":
        paths = [FRAME_COUNT_PATH]
    elif not temporal and media == "image":
        paths = list(IMAGE_SIZE_PATHS)
    else:
        return None
    ids, *cols = samples.values(["id", *paths])
    row = {str(i): k for k, i in enumerate(ids)}
    at = np.array([row.get(str(s), -1) for s in sample_ids], dtype=np.intp).reshape(-1)
    known = at >= 0
    scales = np.full((len(at), len(paths)), np.nan)
    if known.any():
        scales[known] = np.stack([_column(c, len(ids)) for c in cols], axis=1)[at[known]]
    if temporal:
        return corpus_strata(frame_counts=scales[:, 0])
    return corpus_strata(image_sizes=scales)
