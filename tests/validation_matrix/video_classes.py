"""Part 'video_classes' of the validation matrix: classes (nominal, ordinal, interval, ratio), tag sets
and class consensus (:mod:`validation_matrix.vc_classes`); temporal segments and frame labels under OT,
KαLOS and geometry agreement (:mod:`validation_matrix.vc_temporal`); semantic masks and their STAPLE
consensus (:mod:`validation_matrix.vc_masks`); tracks and track consensus (:mod:`validation_matrix.vc_tracks`).
All through the pure library, on the simulators' raters; the criteria are :mod:`validation_matrix.vc_common`'s.
"""

from __future__ import annotations

from typing import Callable

from validation_matrix import Cell, vc_classes, vc_masks, vc_temporal, vc_tracks

#: The part's pieces in the page's order, each computable on its own (``tests/test_validation_matrix.py`` hands
#: them to different pytest-xdist workers); looked up when called, so that a test may replace one.
PIECES: dict[str, Callable[[], list[Cell]]] = {
    "classes": lambda: vc_classes.cells(),
    "segments": lambda: vc_temporal.segment_cells(),
    "frames": lambda: vc_temporal.frame_cells(),
    "semantic masks": lambda: vc_masks.cells(),
    "tracks": lambda: vc_tracks.cells(),
}


def cells() -> list[Cell]:
    """Every cell of this part."""
    return [c for piece in PIECES.values() for c in piece()]
