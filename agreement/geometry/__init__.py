"""Geometry of annotations: pairwise similarities and distances.

Box geometry (:mod:`agreement.geometry.boxes`) works on FiftyOne's relative
``[x, y, w, h]`` boxes and returns ``(n, m)`` matrices; see that module for
the values defined for degenerate boxes.
"""

from agreement.geometry.boxes import (
    box_area,
    giou_to_similarity,
    pairwise_centroid_closeness,
    pairwise_centroid_distance,
    pairwise_giou,
    pairwise_iou,
    xywh_to_xyxy,
)

__all__ = [
    "box_area",
    "giou_to_similarity",
    "pairwise_centroid_closeness",
    "pairwise_centroid_distance",
    "pairwise_giou",
    "pairwise_iou",
    "xywh_to_xyxy",
]
