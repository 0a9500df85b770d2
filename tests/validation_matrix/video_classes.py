"""Part 'video_classes' of the validation matrix: classes (nominal, ordinal, interval, ratio), tag sets
and class consensus (:mod:`validation_matrix.vc_classes`); temporal segments and frame labels under OT,
KαLOS and geometry agreement (:mod:`validation_matrix.vc_temporal`); semantic masks and their STAPLE
consensus (:mod:`validation_matrix.vc_masks`); tracks and track consensus (:mod:`validation_matrix.vc_tracks`).
All through the pure library, on the simulators' raters; the criteria are :mod:`validation_matrix.vc_common`'s.
"""

from __future__ import annotations

from validation_matrix import Cell, vc_classes, vc_masks, vc_temporal, vc_tracks


def cells() -> list[Cell]:
    """Every cell of this part."""
    return (vc_classes.cells() + vc_temporal.segment_cells() + vc_temporal.frame_cells() + vc_masks.cells()
            + vc_tracks.cells())
