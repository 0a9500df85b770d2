"""Test helper: Label Studio JSON exports generated in the documented layout, independently of the parser.

Label Studio's JSON export is a list of tasks; each task has ``id``, ``data``
(``{"image": "/data/upload/<project>/<file>"}``), ``annotations`` (one per
annotator: ``id``, ``completed_by``, ``was_cancelled``, ``result``,
``ground_truth``, ``lead_time``, ``created_at``...) and ``predictions``.
Every region of ``result`` has ``id``, ``type``, ``from_name``, ``to_name``,
``original_width``, ``original_height``, ``image_rotation`` and ``value``
with coordinates in percent of the image: ``rectanglelabels`` (``x``, ``y``,
``width``, ``height``, ``rotation``), ``polygonlabels`` (``points``),
``keypointlabels`` (``x``, ``y``, ``width``).
"""

from __future__ import annotations

import itertools

import numpy as np

_ids = itertools.count(1)


def _region(kind: str, value: dict, label: str, W: int, H: int) -> dict:
    return {
        "id": f"r{next(_ids)}",
        "type": f"{kind}labels",
        "from_name": "label",
        "to_name": "image",
        "origin": "manual",
        "original_width": W,
        "original_height": H,
        "image_rotation": 0,
        "value": {**value, f"{kind}labels": [label]},
    }


def rectangle(box, label: str, W: int, H: int, rotation: float = 0.0) -> dict:
    x, y, w, h = (float(v) * 100 for v in box)
    return _region("rectangle", {"x": x, "y": y, "width": w, "height": h, "rotation": rotation}, label, W, H)


def polygon(ring, label: str, W: int, H: int) -> dict:
    return _region("polygon", {"points": (np.asarray(ring) * 100).tolist(), "closed": True}, label, W, H)


def keypoint(xy, label: str, W: int, H: int) -> dict:
    return _region("keypoint", {"x": float(xy[0]) * 100, "y": float(xy[1]) * 100, "width": 0.5}, label, W, H)


def task(task_id: int, file_name: str, annotations: list[dict]) -> dict:
    return {
        "id": task_id,
        "data": {"image": f"/data/upload/7/{file_name}"},
        "annotations": annotations,
        "predictions": [],
        "meta": {},
        "created_at": "2024-05-01T10:00:00.000000Z",
        "updated_at": "2024-05-01T10:00:00.000000Z",
        "inner_id": task_id,
        "total_annotations": len(annotations),
        "cancelled_annotations": sum(1 for a in annotations if a.get("was_cancelled")),
        "project": 7,
    }


def annotation(completed_by, result: list[dict], cancelled: bool = False) -> dict:
    return {
        "id": next(_ids),
        "completed_by": completed_by,
        "result": result,
        "was_cancelled": cancelled,
        "ground_truth": False,
        "created_at": "2024-05-01T10:00:00.000000Z",
        "updated_at": "2024-05-01T10:00:00.000000Z",
        "lead_time": 12.5,
        "result_count": len(result),
    }


def from_corpus(corpus, rater_ids: dict, extras: bool = True) -> list[dict]:
    """One task per sample; one annotation per assigned rater (``completed_by`` from
    ``rater_ids``); a rectangle per box, a polygon where the row has one. With ``extras``,
    every annotation also has an image-level ``choices`` result (not a region: skipped)."""
    tasks = []
    for s in range(corpus.num_samples):
        W, H = (int(v) for v in corpus.image_sizes[s])
        anns = []
        for r in np.flatnonzero(corpus.assigned[s]):
            rows = range(*corpus.rows(s, int(r)).indices(len(corpus)))
            result = []
            for i in rows:
                poly = corpus.polygons[i] if corpus.polygons is not None else None
                if poly:
                    result.append(polygon(poly[0], str(corpus.labels[i]), W, H))
                else:
                    result.append(rectangle(corpus.boxes[i], str(corpus.labels[i]), W, H))
            if extras:
                result.append({"id": f"c{next(_ids)}", "type": "choices", "from_name": "quality", "to_name": "image",
                               "value": {"choices": ["good"]}})
            anns.append(annotation(rater_ids[corpus.raters[r]], result))
        tasks.append(task(1000 + s, str(corpus.sample_names[s]), anns))
    return tasks
