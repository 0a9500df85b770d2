"""Reports of agreement runs without FiftyOne: per-label conflicts typed as CVAT types them
(:mod:`agreement.reporting.conflicts`)."""

from agreement.reporting.conflicts import (
                                           CONFLICT_TYPES,
                                           CVAT_NAMES,
                                           LOW_OVERLAP_IOU,
                                           Conflict,
                                           Label,
                                           conflict_type,
                                           group_conflicts,
                                           label_iou,
                                           ot_conflicts,
)

__all__ = ["CONFLICT_TYPES", "CVAT_NAMES", "LOW_OVERLAP_IOU", "Conflict", "Label", "conflict_type", "group_conflicts",
           "label_iou", "ot_conflicts"]
