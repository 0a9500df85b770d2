"""The 3D geometry of FiftyOne labels, declared once (:mod:`agreement.fo.kinds.base`): cuboids and points
(``Detections`` with ``location``, ``dimensions``, ``rotation``), point-cloud segments (``Detections`` with
``point_indices``) and 3D polylines (``Polylines`` with ``points3d``).

3D rows have no 2D box (NaN), so no 2D measure or box check applies to them.
A detection with a ``location`` and no ``dimensions`` at all is a 3D point.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

import fiftyone.core.labels as fol

from agreement.core.validation import AnnotationError
from agreement.fo.kinds.base import GeometryVariant, ReadOptions, declared_path, register_variant

__all__ = ["CUBOID_ATTRS", "read_three_d", "read_cuboids"]

#: The attributes of a 3D detection (FiftyOne's): centre, size and XYZ Euler rotation.
CUBOID_ATTRS = ("location", "dimensions", "rotation")


def read_three_d(extra: dict, where: Any, n: int) -> dict:
    """``{"cuboids": (N, 9)}`` or ``{"points3d": (N, 3)}`` from the location/dimensions/rotation columns,
    validated (labels with a ``location`` and no ``dimensions`` at all are 3D points).

    Raises:
        AnnotationError: a missing or malformed attribute, naming the label.
    """
    if n and all(d is None for d in extra["dimensions"]):
        pts = np.zeros((n, 3))
        for i, v in enumerate(extra["location"]):
            vals = np.asarray(v if v is not None else [np.nan] * 3, dtype=np.float64).reshape(-1)
            if vals.size != 3 or not np.isfinite(vals).all():
                raise AnnotationError(f"{where[i]}: a 3D point needs a finite 'location' of 3 numbers, got {v!r}")
            pts[i] = vals
        return {"points3d": pts}
    return {"cuboids": read_cuboids(extra, where, n)}


def read_cuboids(extra: dict, where: Any, n: int) -> np.ndarray:
    """``(N, 9)`` cuboids from the location/dimensions/rotation columns, validated.

    Raises:
        AnnotationError: a missing ``location`` or ``dimensions``, or not 3 numbers, naming the label.
    """
    from agreement.geometry.cuboids import validate_cuboids

    out = np.zeros((n, 9))
    for k, (name, width) in enumerate((("location", 3), ("dimensions", 3), ("rotation", 3))):
        for i, v in enumerate(extra[name]):
            if v is None:
                if name == "rotation":
                    continue  # no rotation: axis-aligned
                raise AnnotationError(f"{where[i]}: a 3D detection has no {name!r}")
            vals = np.asarray(v, dtype=np.float64).reshape(-1)
            if vals.size != width:
                raise AnnotationError(f"{where[i]}: {name!r} must have 3 numbers, got {list(vals)}")
            out[i, 3 * k: 3 * k + 3] = vals
    if n:
        validate_cuboids(out, [where[i] for i in range(n)])
    return out


def _is_3d(samples: Any, fields: Sequence[str], options: ReadOptions) -> bool:
    """Read as 3D when asked (``options.cuboids``), else when every field declares ``location``."""
    if options.cuboids is not None:
        return bool(options.cuboids)
    return all(declared_path(samples, f"{f}.detections.location") for f in fields)


def _segments(extra: dict, where: Any, n: int) -> dict:
    values = extra["point_indices"]
    if not any(v is not None for v in values):
        return {}
    return {"segments": [np.asarray(v if v is not None else [], dtype=np.int64).reshape(-1) for v in values]}


def _polylines3d(extra: dict, where: Any, n: int) -> dict:
    """The 3D polylines of the labels (none when no label has one); a label without points is an error."""
    if not any(p for p in extra["points3d"]):
        return {}
    lines = [[np.asarray(line, dtype=np.float64).reshape(-1, 3) for line in (p or [])] for p in extra["points3d"]]
    empty = [i for i, p in enumerate(lines) if not p or not any(len(line) for line in p)]
    if empty:
        raise AnnotationError(f"{where[empty[0]]}: a 3D polyline has no points")
    return {"polylines3d": lines}


def _cuboid_document(columns: dict, row: int) -> dict:
    c = columns["cuboids"][row]
    return {"bounding_box": [], "location": c[0:3].tolist(), "dimensions": c[3:6].tolist(),
            "rotation": c[6:9].tolist()}


register_variant(GeometryVariant(
    "cuboids", fol.Detections, CUBOID_ATTRS, applies=_is_3d, read=read_three_d,
    no_2d=lambda columns, boxes: bool(columns), document=_cuboid_document,
))
register_variant(GeometryVariant(
    "segments", fol.Detections, ("point_indices",),
    applies=lambda samples, fields, options: all(declared_path(samples, f"{f}.detections.point_indices")
                                                 for f in fields),
    read=_segments, no_2d=lambda columns, boxes: bool(columns) and not np.isfinite(boxes).all(),
))
register_variant(GeometryVariant(
    "polylines3d", fol.Polylines, ("points3d",),
    applies=lambda samples, fields, options: all(declared_path(samples, f"{f}.polylines.points3d")
                                                 for f in fields),
    read=_polylines3d, boxes=lambda columns, n: np.full((n, 4), np.nan), no_2d=lambda columns, boxes: bool(columns),
))
