"""The multi-rater COCO layout of the KαLOS reference tool, read and written without FiftyOne.

Layout (Tschirschwitz & Rodehorst's KαLOS tool):

* every image has ``id``, ``file_name``, ``width``, ``height`` and ``rater_list``
  (the raters assigned to it);
* every annotation has ``id``, ``image_id``, ``category_id``, ``rater_id``,
  ``bbox`` as ``[x, y, w, h]`` in pixels and optionally ``segmentation`` as a
  list of polygons (flat ``[x1, y1, x2, y2, ...]`` lists, pixels);
* ``categories`` map ids to names.

A rater in an image's ``rater_list`` with no annotation there is **explicit
absence** (an empty set); a rater not in the list is **implicit absence**.

Bad input raises :class:`~agreement.validation.AnnotationError` naming the
image (or annotation) and the problem: an annotation whose ``image_id`` is
unknown, a missing ``rater_id``, a rater not in the image's ``rater_list``, an
unknown ``category_id``, an image without ``width``/``height`` or without
``rater_list``, and malformed boxes (NaN, negative size).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from agreement.data import AnnotationSet, MultiRaterAnnotations
from agreement.validation import AnnotationError

__all__ = ["MultiRaterCoco", "read_multi_rater_coco", "parse_multi_rater_coco", "to_coco_dict", "write_multi_rater_coco"]


@dataclass
class MultiRaterCoco:
    """A parsed multi-rater COCO file.

    Attributes:
        annotations: the corpus in relative coordinates; ``sample_ids`` are the
            COCO image ids, ``label_ids`` the COCO annotation ids, ``polygons``
            relative rings (``None`` entries for annotations without one).
        images: the COCO image dicts (all keys kept), in file order.
        categories: the COCO category dicts (all keys kept).
        annotation_extras: per annotation id, the other keys (``area``,
            ``iscrowd``, ...), kept for a faithful export.
        rater_ids: the original rater ids (str or int) by rater name.
        info: the file's other top-level keys (``info``, ``licenses``).
    """

    annotations: MultiRaterAnnotations
    images: list[dict]
    categories: list[dict]
    annotation_extras: dict[Any, dict] = field(default_factory=dict)
    rater_ids: dict[str, Any] = field(default_factory=dict)
    info: dict = field(default_factory=dict)


def read_multi_rater_coco(path: str | os.PathLike) -> MultiRaterCoco:
    """Reads a multi-rater COCO JSON file (see :func:`parse_multi_rater_coco`)."""
    with open(path, encoding="utf-8") as f:
        try:
            data = json.load(f)
        except json.JSONDecodeError as e:
            raise AnnotationError(f"{path}: not a valid JSON file ({e})") from e
    return parse_multi_rater_coco(data, source=os.fspath(path))


def _image_label(img: dict) -> str:
    return f"image {img.get('id')!r} ({img.get('file_name', '?')})"


def parse_multi_rater_coco(data: dict, source: str = "COCO data") -> MultiRaterCoco:
    """Parses the KαLOS multi-rater COCO layout into relative coordinates.

    Boxes become ``bbox / [W, H, W, H]``; polygon points ``/ [W, H]``.

    Raises:
        AnnotationError: naming the image or annotation for every bad input.
    """
    for key in ("images", "annotations", "categories"):
        if not isinstance(data.get(key), list):
            raise AnnotationError(f"{source}: missing or invalid top-level list {key!r}")
    images = data["images"]
    cats = {c["id"]: c for c in data["categories"]}
    img_pos: dict[Any, int] = {}
    for i, img in enumerate(images):
        if "id" not in img:
            raise AnnotationError(f"{source}: image #{i} has no 'id'")
        if img["id"] in img_pos:
            raise AnnotationError(f"{source}: {_image_label(img)} appears twice")
        for k in ("width", "height"):
            v = img.get(k)
            if not isinstance(v, (int, float)) or not np.isfinite(v) or v <= 0:
                raise AnnotationError(f"{source}: {_image_label(img)} has no valid {k!r} ({v!r})")
        if not isinstance(img.get("rater_list"), list):
            raise AnnotationError(
                f"{source}: {_image_label(img)} has no 'rater_list' (the raters assigned to it), "
                "which this layout needs to tell explicit from implicit absence"
            )
        img_pos[img["id"]] = i
    rater_ids: dict[str, Any] = {}
    for img in images:
        for r in img["rater_list"]:
            rater_ids.setdefault(str(r), r)
    extras: dict[Any, dict] = {}
    per_cell: dict[tuple[int, str], list[dict]] = {}
    for j, ann in enumerate(data["annotations"]):
        aid = ann.get("id", f"#{j}")
        if ann.get("image_id") not in img_pos:
            raise AnnotationError(f"{source}: annotation {aid!r} refers to unknown image id {ann.get('image_id')!r}")
        img = images[img_pos[ann["image_id"]]]
        if "rater_id" not in ann or ann["rater_id"] is None:
            raise AnnotationError(f"{source}: annotation {aid!r} on {_image_label(img)} has no 'rater_id'")
        rater = str(ann["rater_id"])
        if rater not in {str(r) for r in img["rater_list"]}:
            raise AnnotationError(
                f"{source}: annotation {aid!r} on {_image_label(img)} is by rater {ann['rater_id']!r}, "
                f"who is not in its rater_list {img['rater_list']}"
            )
        if ann.get("category_id") not in cats:
            raise AnnotationError(
                f"{source}: annotation {aid!r} on {_image_label(img)} has unknown category_id {ann.get('category_id')!r}"
            )
        bbox = ann.get("bbox")
        if not isinstance(bbox, (list, tuple)) or len(bbox) != 4:
            raise AnnotationError(f"{source}: annotation {aid!r} on {_image_label(img)} has no valid 'bbox' ({bbox!r})")
        b = np.asarray(bbox, dtype=np.float64)
        if not np.isfinite(b).all() or b[2] < 0 or b[3] < 0:
            raise AnnotationError(
                f"{source}: annotation {aid!r} on {_image_label(img)} by rater {rater!r} has an invalid bbox "
                f"{list(bbox)} (NaN, infinite or negative size)"
            )
        extras[aid] = {k: v for k, v in ann.items() if k not in ("id", "image_id", "category_id", "bbox", "segmentation", "rater_id")}
        per_cell.setdefault((img_pos[ann["image_id"]], rater), []).append(ann)

    sets = []
    for s, img in enumerate(images):
        W, H = float(img["width"]), float(img["height"])
        scale = np.array([W, H, W, H])
        mapping: dict[str, AnnotationSet] = {}
        for r in img["rater_list"]:
            anns = per_cell.get((s, str(r)), [])
            boxes = np.array([a["bbox"] for a in anns], dtype=np.float64).reshape(-1, 4) / scale
            polys = [_polygons(a.get("segmentation"), W, H, a, img, source) for a in anns]
            mapping[str(r)] = AnnotationSet(
                boxes,
                [cats[a["category_id"]]["name"] for a in anns],
                [a.get("id") for a in anns],
                polys,
            )
        sets.append(mapping)
    corpus = MultiRaterAnnotations.from_sets(
        [img["id"] for img in images],
        sorted(rater_ids),
        sets,
        image_sizes=np.array([[img["width"], img["height"]] for img in images], dtype=np.float64).reshape(-1, 2),
        sample_names=[img.get("file_name", str(img["id"])) for img in images],
    )
    info = {k: v for k, v in data.items() if k not in ("images", "annotations", "categories")}
    return MultiRaterCoco(corpus, list(images), list(data["categories"]), extras, rater_ids, info)


def _polygons(seg, W: float, H: float, ann: dict, img: dict, source: str) -> list | None:
    if seg is None or seg == []:
        return None
    if isinstance(seg, dict):
        raise AnnotationError(
            f"{source}: annotation {ann.get('id')!r} on {_image_label(img)} has an RLE segmentation; "
            "only polygon segmentations are supported"
        )
    rings = []
    for ring in seg:
        pts = np.asarray(ring, dtype=np.float64)
        if pts.size % 2 or not np.isfinite(pts).all():
            raise AnnotationError(
                f"{source}: annotation {ann.get('id')!r} on {_image_label(img)} has a malformed polygon"
            )
        rings.append(pts.reshape(-1, 2) / [W, H])
    return rings


def to_coco_dict(coco: MultiRaterCoco) -> dict:
    """The inverse of :func:`parse_multi_rater_coco`: pixel boxes and polygons,
    ``rater_list`` from the assignment, original ids, category ids and extras."""
    ann = coco.annotations
    cat_id = {c["name"]: c["id"] for c in coco.categories}
    sizes = ann.image_sizes
    images = []
    img_by_id = {img["id"]: img for img in coco.images}
    for s, sid in enumerate(ann.sample_ids):
        img = dict(img_by_id.get(sid, {"id": sid, "file_name": str(ann.sample_names[s])}))
        img["width"], img["height"] = _num(sizes[s, 0]), _num(sizes[s, 1])
        img["rater_list"] = [coco.rater_ids.get(ann.raters[r], ann.raters[r]) for r in np.flatnonzero(ann.assigned[s])]
        images.append(img)
    annotations = []
    next_id = 1 + max([i for i in ann.label_ids if isinstance(i, int)] or [0])
    for i in range(len(ann)):
        s = ann.sample_index[i]
        W, H = sizes[s]
        aid = ann.label_ids[i]
        if aid is None:
            aid, next_id = next_id, next_id + 1
        if ann.labels[i] not in cat_id:
            raise AnnotationError(f"label {ann.labels[i]!r} on sample {ann.sample_names[s]!r} has no COCO category")
        out = {
            "id": aid,
            "image_id": ann.sample_ids[s],
            "category_id": cat_id[ann.labels[i]],
            "bbox": (ann.boxes[i] * [W, H, W, H]).tolist(),
            "rater_id": coco.rater_ids.get(ann.raters[ann.rater_index[i]], ann.raters[ann.rater_index[i]]),
        }
        polys = ann.polygons[i] if ann.polygons is not None else None
        if polys is not None:
            out["segmentation"] = [(np.asarray(r) * [W, H]).reshape(-1).tolist() for r in polys]
        out.update(coco.annotation_extras.get(ann.label_ids[i], {}))
        annotations.append(out)
    return {**coco.info, "images": images, "annotations": annotations, "categories": list(coco.categories)}


def _num(v: float):
    return int(v) if float(v).is_integer() else float(v)


def write_multi_rater_coco(coco: MultiRaterCoco, path: str | os.PathLike) -> None:
    """Writes :func:`to_coco_dict` as JSON."""
    with open(path, "w", encoding="utf-8") as f:
        json.dump(to_coco_dict(coco), f)
