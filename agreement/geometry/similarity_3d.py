"""The 3D similarities of :func:`agreement.geometry.similarity.similarity_matrix`, in scene units (no image
frame): ``"point3d"`` (Gaussian similarity of 3D points, falloff :data:`POINT3D_SCALE`),
``"polyline3d_f1"`` (boundary F1 within :data:`POLYLINE3D_TOLERANCE`), ``"segment_jaccard"``
(Jaccard index of point-index segments) and ``"cuboid_iou"`` (exact volumetric IoU); their
parameters (:class:`SimilarityOptions`, passed explicitly as ``options=``: no ambient state), and their
checks.

This module does not import FiftyOne.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from agreement.core.data import MultiRaterAnnotations

__all__ = ["POINT3D_SCALE", "POLYLINE3D_TOLERANCE", "SimilarityOptions", "resolved_options",
           "check_similarity_3d", "similarity_matrix_3d"]

#: default scale (scene units, e.g. metres) of the 3D point similarity exp(-d² / (2 scale²))
POINT3D_SCALE = 2.0
#: default tolerance (scene units) of the 3D polyline boundary F1
POLYLINE3D_TOLERANCE = 0.5

def _positive(name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return float(value)


@dataclass(frozen=True)
class SimilarityOptions:
    """The parameters of the 3D similarities, passed explicitly (``options=`` of
    :func:`agreement.geometry.similarity.similarity_matrix`).

    Attributes:
        point3d_scale: the falloff scale ``s`` of ``"point3d"``, ``exp(-d² / (2 s²))``, scene units, > 0.
        polyline3d_tolerance: the distance within which ``"polyline3d_f1"`` counts a point as matched, scene
            units, > 0.

    Raises:
        ValueError: a value that is not a finite number > 0.
    """

    point3d_scale: float = POINT3D_SCALE
    polyline3d_tolerance: float = POLYLINE3D_TOLERANCE

    def __post_init__(self) -> None:
        object.__setattr__(self, "point3d_scale", _positive("point3d_scale", self.point3d_scale))
        object.__setattr__(self, "polyline3d_tolerance", _positive("polyline3d_tolerance", self.polyline3d_tolerance))


def resolved_options(options: SimilarityOptions | None) -> SimilarityOptions:
    """``options``, or (``None``) the defaults (:data:`POINT3D_SCALE`, :data:`POLYLINE3D_TOLERANCE`).

    Args:
        options: the parameters a caller passed, or ``None``.

    Returns:
        The parameters to use.
    """
    return options if options is not None else SimilarityOptions()


def check_similarity_3d(name: str, data: MultiRaterAnnotations) -> None:
    """:func:`check_similarity` of the 3D similarities: the geometry is present, segment indices are
    within their cloud, cuboids are valid."""
    if name in ("point3d", "polyline3d_f1", "segment_jaccard"):
        needs = {"point3d": "points3d", "polyline3d_f1": "polylines3d", "segment_jaccard": "segments"}[name]
        if getattr(data, needs) is None:
            raise ValueError(f"similarity {name!r} needs {needs}, and the annotations have none")
        if name == "segment_jaccard":
            from agreement.geometry.cuboids import validate_segment_indices

            if data.num_points is None:
                raise ValueError("similarity 'segment_jaccard' needs the number of points of each sample's cloud")
            for i, seg in enumerate(data.segments):
                s_i = data.sample_index[i]
                validate_segment_indices(seg, int(data.num_points[s_i]),
                                         where=f"sample {data.sample_names[s_i]!r}, label {data.label_ids[i]!r}")
        return
    # cuboid_iou
    if data.cuboids is None:
        raise ValueError("similarity 'cuboid_iou' needs 3D cuboids (location, dimensions, rotation), "
                         "and the annotations have none")
    from agreement.geometry.cuboids import validate_cuboids

    validate_cuboids(data.cuboids, where="3D labels")


def similarity_matrix_3d(name: str, data: MultiRaterAnnotations, ra: np.ndarray, rb: np.ndarray,
                         *, options: SimilarityOptions | None = None) -> np.ndarray:
    """:func:`similarity_matrix` of the 3D similarities (``point3d``, ``polyline3d_f1``,
    ``segment_jaccard``, ``cuboid_iou``), in scene units (no image frame), with ``options``."""
    options = resolved_options(options)
    if name == "point3d":
        from agreement.geometry.cuboids import pairwise_point_similarity

        return pairwise_point_similarity(data.points3d[ra], data.points3d[rb],
                                         scale=options.point3d_scale)
    if name == "polyline3d_f1":
        from agreement.geometry.cuboids import pairwise_polyline_boundary_f1

        return pairwise_polyline_boundary_f1([data.polylines3d[i] for i in ra], [data.polylines3d[i] for i in rb],
                                             tolerance=options.polyline3d_tolerance)
    if name == "segment_jaccard":
        from agreement.geometry.cuboids import pairwise_segment_jaccard

        n_points = int(data.num_points[data.sample_index[np.r_[ra, rb]]].max())  # rows_b may span samples
        return pairwise_segment_jaccard([data.segments[i] for i in ra], [data.segments[i] for i in rb], n_points)
    # cuboid_iou
    from agreement.geometry.cuboids import pairwise_cuboid_iou

    if data.cuboids is None:
        raise ValueError("similarity 'cuboid_iou' needs 3D cuboids, and the annotations have none")
    iou: np.ndarray = np.clip(pairwise_cuboid_iou(data.cuboids[ra], data.cuboids[rb]), 0.0, 1.0)
    return iou
