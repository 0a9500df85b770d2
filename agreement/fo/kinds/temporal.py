"""The temporal segments of videos, ``TemporalDetections``, declared once (:mod:`agreement.fo.kinds.base`):
their ``support`` ``[first, last]`` is read as a box in relative time by :func:`agreement.fo.storage.temporal.temporal_boxes`
(supports checked in frames)."""

from __future__ import annotations

import fiftyone.core.labels as fol

from agreement.fo.kinds.base import LabelType, register_label_type

__all__: list[str] = []

register_label_type(LabelType(fol.TemporalDetections, "detections", "support", temporal=True))
