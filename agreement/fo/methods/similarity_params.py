"""Parameters that several methods declare alike: the scene-unit parameters of the 3D similarities.

Not a method (no ``DECLARATION``): the declarations of KαLOS and geometry
agreement take these, shown in the form when their similarity (or distance)
parameter names the 3D similarity that uses them.
"""

from __future__ import annotations

from agreement.fo.runs.declaration import Param
from agreement.geometry.similarity_3d import POINT3D_SCALE, POLYLINE3D_TOLERANCE

__all__ = ["scene_unit_params"]


def scene_unit_params(choice: str) -> tuple[Param, Param]:
    """``point3d_scale`` and ``polyline3d_tolerance`` (scene units, > 0), shown when parameter ``choice`` is
    ``"point3d"`` or ``"polyline3d_f1"`` respectively."""
    return (
        Param("point3d_scale", float, POINT3D_SCALE, "3D point falloff scale (scene units)",
              "Similarity exp(−d²/(2·scale²)) of 'point3d': at d = scale it is 0.61", low=0.0, low_open=True,
              show_if=lambda p: p.get(choice) == "point3d"),
        Param("polyline3d_tolerance", float, POLYLINE3D_TOLERANCE, "3D polyline tolerance (scene units)",
              "A point of one line counts as matched within this distance of the other ('polyline3d_f1')",
              low=0.0, low_open=True, show_if=lambda p: p.get(choice) == "polyline3d_f1"),
    )
