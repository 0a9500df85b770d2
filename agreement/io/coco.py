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

Pixels become FiftyOne's relative coordinates by the library's one conversion
(:func:`agreement.core.validation.pixels_to_relative`: divided by the image's
``width`` and ``height``). A box that then extends past the image (beyond
:data:`~agreement.core.validation.BOX_TOLERANCE`) is handled by ``box_policy``,
the operators' vocabulary: ``"clip"`` (default) clips it to the image,
``"drop"`` leaves it out, both counted per rater in
:attr:`MultiRaterCoco.repairs`; ``"error"`` refuses the file, naming the
annotation. The corpus never holds a box outside ``[0, 1]``.

Reading is strict: the whole file is type-checked before anything is built,
in named stages (:func:`parse_multi_rater_coco` lists them). Bad input raises
:class:`~agreement.core.validation.AnnotationError` whose message names the source
(file), the image (id and ``file_name`` where known) and the annotation (id,
or its index when the id itself is bad), says what is wrong and what was
expected. Nothing is converted silently: a number written as a string
(``"12"``) or a boolean where a number belongs is an error.
"""

from __future__ import annotations

import json
import math
import numbers
import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from agreement.core.data import AnnotationSet, MultiRaterAnnotations
from agreement.core.validation import AnnotationError, RepairReport, check_boxes, pixels_to_relative

__all__ = ["MultiRaterCoco", "read_multi_rater_coco", "parse_multi_rater_coco", "to_coco_dict", "write_multi_rater_coco"]

_TOP_LISTS = ("images", "annotations", "categories")
_ANN_KEYS = ("id", "image_id", "category_id", "bbox", "segmentation", "rater_id")
_MISSING = object()


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
        repairs: the boxes past the image border clipped or dropped under
            ``box_policy`` (per rater, with a few located examples).
    """

    annotations: MultiRaterAnnotations
    images: list[dict]
    categories: list[dict]
    annotation_extras: dict[Any, dict] = field(default_factory=dict)
    rater_ids: dict[str, Any] = field(default_factory=dict)
    info: dict = field(default_factory=dict)
    repairs: RepairReport = field(default_factory=RepairReport)


def read_multi_rater_coco(path: str | os.PathLike, *, box_policy: str = "clip") -> MultiRaterCoco:
    """Reads a multi-rater COCO JSON file (see :func:`parse_multi_rater_coco`, and it for ``box_policy``).

    Raises:
        AnnotationError: the file is not valid JSON, or fails a check of
            :func:`parse_multi_rater_coco`; the message starts with the path.
    """
    with open(path, encoding="utf-8") as f:
        try:
            data = json.load(f)
        except json.JSONDecodeError as e:
            raise AnnotationError(f"{path}: not a valid JSON file ({e})") from e
    return parse_multi_rater_coco(data, source=os.fspath(path), box_policy=box_policy)


def parse_multi_rater_coco(data: Any, *, source: str = "COCO data", box_policy: str = "clip") -> MultiRaterCoco:
    """Parses the KαLOS multi-rater COCO layout into relative coordinates.

    Boxes become ``bbox / [W, H, W, H]``; polygon points ``/ [W, H]``. A box
    past the image border (beyond ``1e-6`` of a side) is clipped
    (``box_policy="clip"``), dropped (``"drop"``, with its polygon; its
    category and extras stay in the file's lists) or refused (``"error"``),
    as :func:`agreement.core.validation.check_boxes` does; clips and drops are
    counted per rater in :attr:`MultiRaterCoco.repairs`.

    Everything is checked before anything is built, stage by stage:

    1. top level: a JSON object whose ``images``, ``annotations`` and
       ``categories`` are lists of objects;
    2. categories: ``id`` an integer, unique; ``name`` a non-empty string,
       unique (labels are the names);
    3. images: ``id`` an integer, unique; ``file_name`` a string when given;
       ``width``/``height`` positive finite numbers; ``rater_list`` a list;
    4. raters: every ``rater_list`` entry a non-empty string or an integer,
       listed once per image, and each rater typed the same (``"7"`` or
       ``7`` throughout, never both) everywhere in the file;
    5. annotations: ``image_id`` an integer naming a known image; ``id`` an
       integer, unique; ``rater_id`` present, typed as that rater elsewhere
       and in the image's ``rater_list``; ``category_id`` an integer naming a
       known category; ``bbox`` four finite numbers with ``w, h >= 0``;
       ``segmentation`` absent, empty, or a list of polygons, each a flat
       list of finite numbers of even length (RLE is refused).

    Numbers are JSON numbers: a boolean, or a number written as a string, is
    an error and is never converted. Ids are integers, as in COCO; rater ids
    may be strings or integers (the KαLOS tool writes both).

    Args:
        data: the decoded JSON document.
        source: how messages name the input (the file path when read from disk).
        box_policy: ``"clip"``, ``"drop"`` or ``"error"`` for boxes past the image border.

    Raises:
        AnnotationError: at the first failed check, naming the source, the
            image (id and ``file_name``) and the annotation (id, or index when
            the id is bad), what is wrong and what was expected.
        ValueError: an unknown ``box_policy``.
    """
    check_boxes(np.zeros((0, 4)), [], policy=box_policy)  # an unknown policy fails before the file is read
    images, annotations, categories = _check_top_level(data, source)
    cats = _index_categories(categories, source)
    img_pos = _index_images(images, source)
    raters = _collect_raters(images, source)
    per_cell, extras = _check_annotations(annotations, images, img_pos, cats, raters, source)
    repairs = RepairReport()
    corpus = _build_corpus(images, cats, per_cell=per_cell, raters=sorted(raters), source=source, box_policy=box_policy,
                           repairs=repairs)
    info = {k: v for k, v in data.items() if k not in _TOP_LISTS}
    rater_ids = {name: original for name, (original, _) in raters.items()}
    return MultiRaterCoco(annotations=corpus, images=list(images), categories=list(categories),
                          annotation_extras=extras, rater_ids=rater_ids, info=info, repairs=repairs)


# --- naming things in messages ------------------------------------------------------------------


def _is_int(v: Any) -> bool:
    """An integer JSON number (``True`` is not one)."""
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    """A JSON number (``True`` and ``"12"`` are not)."""
    return type(v) is float or type(v) is int or (isinstance(v, numbers.Real) and not isinstance(v, bool))


def _describe(v: Any) -> str:
    """``'12' (a string)``: a value and its JSON type, for messages."""
    if v is _MISSING:
        return "missing"
    kinds = ((bool, "a boolean"), (str, "a string"), (dict, "an object"), ((list, tuple), "a list"))
    kind = next((k for t, k in kinds if isinstance(v, t)), None)
    kind = kind or ("null" if v is None else "a number" if _is_number(v) else type(v).__name__)
    text = repr(v)
    return f"{text if len(text) <= 60 else text[:57] + '...'} ({kind})"


def _hint(*values: Any) -> str:
    """Why a string or a boolean given for a number was refused, when one was."""
    hint = "; a number written as a string is not converted" if any(isinstance(v, str) for v in values) else ""
    return hint + ("; a boolean is not a number" if any(isinstance(v, bool) for v in values) else "")


def _image_label(img: dict, i: int | None = None) -> str:
    """``image 1 (a.jpg)``; ``images[3]`` when the id is not usable."""
    iid = img.get("id")
    who = f"image {iid!r}" if _is_int(iid) or i is None else f"images[{i}]"
    name = img.get("file_name")
    return f"{who} ({name})" if isinstance(name, str) else f"{who} (no file_name)"


def _annotation_label(ann: dict, j: int, img: dict | None = None) -> str:
    """``annotation 10 on image 1 (a.jpg)``; ``annotations[3]`` when the id is not usable."""
    aid = ann.get("id")
    who = f"annotation {aid!r}" if _is_int(aid) else f"annotations[{j}]"
    return f"{who} on {_image_label(img)}" if img is not None else who


def _fail(source: str, where: str, problem: str) -> AnnotationError:
    return AnnotationError(f"{source}: {where} {problem}")


def _remember_unique(seen: dict, key: Any, where: str, what: str, source: str) -> None:
    """Records ``key`` at ``where``; a second occurrence names both."""
    if key in seen:
        raise _fail(source, where, f"repeats the {what} {key!r} of {seen[key]}: expected unique {what}s")
    seen[key] = where


# --- stage 1: top level -------------------------------------------------------------------------


def _check_top_level(data: Any, source: str) -> tuple[list[dict], list[dict], list[dict]]:
    """The document is an object whose three lists hold objects."""
    if not isinstance(data, dict):
        raise AnnotationError(
            f"{source}: the top level is {_describe(data)}: expected a JSON object with "
            "'images', 'annotations' and 'categories' lists"
        )
    for key in _TOP_LISTS:
        value = data.get(key, _MISSING)
        if not isinstance(value, list):
            raise AnnotationError(
                f"{source}: missing or invalid top-level list {key!r} ({_describe(value)}): expected a list of objects"
            )
        bad = next((k for k, v in enumerate(value) if not isinstance(v, dict)), None)
        if bad is not None:
            raise AnnotationError(f"{source}: {key}[{bad}] is {_describe(value[bad])}: expected an object")
    return data["images"], data["annotations"], data["categories"]


# --- stage 2: categories ------------------------------------------------------------------------


def _index_categories(categories: list[dict], source: str) -> dict[int, dict]:
    """Integer, unique ids; non-empty, unique names. Returns ``{id: category}``."""
    ids: dict[Any, str] = {}
    names: dict[str, str] = {}
    for k, cat in enumerate(categories):
        cid, name = cat.get("id", _MISSING), cat.get("name", _MISSING)
        where = f"category {cid!r} (categories[{k}])" if _is_int(cid) else f"categories[{k}]"
        if not _is_int(cid):
            raise _fail(source, where, f"has an invalid 'id' ({_describe(cid)}): expected an integer{_hint(cid)}")
        if not isinstance(name, str) or not name:
            raise _fail(source, where, f"has an invalid 'name' ({_describe(name)}): expected a non-empty string")
        _remember_unique(ids, cid, where, "category id", source)
        _remember_unique(names, name, where, "category name", source)
    return {c["id"]: c for c in categories}


# --- stage 3: images ----------------------------------------------------------------------------


def _index_images(images: list[dict], source: str) -> dict[int, int]:
    """Integer, unique ids; sizes; a ``rater_list`` list. Returns ``{image id: position}``."""
    seen: dict[Any, str] = {}
    for i, img in enumerate(images):
        iid = img.get("id", _MISSING)
        if not _is_int(iid):
            raise _fail(source, _image_label(img, i),
                        f"has an invalid 'id' ({_describe(iid)}): expected an integer{_hint(iid)}")
        where = f"{_image_label(img)} (images[{i}])"
        if "file_name" in img and not isinstance(img["file_name"], str):
            raise _fail(source, where, f"has an invalid 'file_name' ({_describe(img['file_name'])}): expected a string")
        _remember_unique(seen, iid, where, "image id", source)
        _check_image_size(img, source)
        _check_rater_list_type(img, source)
    return {img["id"]: i for i, img in enumerate(images)}


def _check_image_size(img: dict, source: str) -> None:
    for k in ("width", "height"):
        v = img.get(k, _MISSING)
        if not _is_number(v) or not math.isfinite(v) or v <= 0:
            raise _fail(
                source, _image_label(img),
                f"has no valid {k!r} ({_describe(v)}): expected a positive finite number of pixels{_hint(v)}",
            )


def _check_rater_list_type(img: dict, source: str) -> None:
    raters = img.get("rater_list", _MISSING)
    if raters is _MISSING or raters is None:
        raise _fail(
            source, _image_label(img),
            "has no 'rater_list' (the raters assigned to it), "
            "which this layout needs to tell explicit from implicit absence: expected a list of rater ids",
        )
    if not isinstance(raters, list):
        raise _fail(source, _image_label(img),
                    f"has an invalid 'rater_list' ({_describe(raters)}): expected a list of rater ids")


# --- stage 4: raters ----------------------------------------------------------------------------


def _collect_raters(images: list[dict], source: str) -> dict[str, tuple[Any, str]]:
    """Every rater by name (``str(id)``): its original id and where it was first listed."""
    raters: dict[str, tuple[Any, str]] = {}
    for img in images:
        listed: set[str] = set()
        where = _image_label(img)
        for r in img["rater_list"]:
            name = _rater_name(r, f"{where} lists a rater whose id", raters, source)
            if name in listed:
                raise _fail(source, where,
                            f"lists rater {r!r} twice in its rater_list: expected each assigned rater once")
            listed.add(name)
            raters.setdefault(name, (r, f"the rater_list of {where}"))
    return raters


def _rater_name(r: Any, where: str, raters: dict[str, tuple[Any, str]], source: str) -> str:
    """``str(r)``, after checking ``r`` is a string or an integer typed like its other references."""
    if not (isinstance(r, str) and r) and not _is_int(r):
        raise _fail(source, where, f"is {_describe(r)}: expected a non-empty string or an integer")
    name = str(r)
    first = raters.get(name)
    if first is not None and isinstance(first[0], str) != isinstance(r, str):
        raise _fail(
            source, where,
            f"is {_describe(r)}, but the same rater is {_describe(first[0])} in {first[1]}: "
            "expected one type (string or integer) for a rater id throughout the file",
        )
    return name


# --- stage 5: annotations -----------------------------------------------------------------------


def _check_annotations(
    annotations: list[dict],
    images: list[dict],
    img_pos: dict[int, int],
    cats: dict[int, dict],
    raters: dict[str, tuple[Any, str]],
    source: str,
) -> tuple[dict[tuple[int, str], list[dict]], dict[int, dict]]:
    """Checks every annotation; returns them grouped by ``(image position, rater)``
    and the extra keys of each by annotation id."""
    seen: dict[Any, str] = {}
    per_cell: dict[tuple[int, str], list[dict]] = {}
    extras: dict[int, dict] = {}
    for j, ann in enumerate(annotations):
        s = _annotation_image(ann, j, img_pos, source)
        img = images[s]
        where = _annotation_label(ann, j, img)
        aid = ann.get("id", _MISSING)
        if not _is_int(aid):
            raise _fail(source, where, f"has an invalid 'id' ({_describe(aid)}): expected an integer{_hint(aid)}")
        _remember_unique(seen, aid, f"{where} (annotations[{j}])", "annotation id", source)
        rater = _annotation_rater(ann, img, where, raters, source)
        _annotation_category(ann, where, cats, source)
        _check_bbox(ann.get("bbox", _MISSING), f"{where} by rater {rater!r}", source)
        _check_segmentation(ann.get("segmentation"), where, source)
        extras[aid] = {k: v for k, v in ann.items() if k not in _ANN_KEYS}
        per_cell.setdefault((s, rater), []).append(ann)
    return per_cell, extras


def _annotation_image(ann: dict, j: int, img_pos: dict[int, int], source: str) -> int:
    """The position of the annotation's image: ``image_id`` an integer naming a known image."""
    image_id = ann.get("image_id", _MISSING)
    where = _annotation_label(ann, j)
    if not _is_int(image_id):
        raise _fail(source, where,
                    f"has an invalid 'image_id' ({_describe(image_id)}): expected an integer image id{_hint(image_id)}")
    if image_id not in img_pos:
        raise _fail(source, where, f"refers to unknown image id {image_id!r}: expected the id of an entry of 'images'")
    return img_pos[image_id]


def _annotation_rater(ann: dict, img: dict, where: str, raters: dict[str, tuple[Any, str]], source: str) -> str:
    """The rater's name: ``rater_id`` present, typed consistently, in the image's ``rater_list``."""
    r = ann.get("rater_id")
    if r is None:
        raise _fail(source, where, "has no 'rater_id': expected the id of one of the image's rater_list")
    name = _rater_name(r, f"{where} has a 'rater_id' that", raters, source)
    if name not in {str(x) for x in img["rater_list"]}:
        raise _fail(
            source, where,
            f"is by rater {r!r}, who is not in its rater_list {img['rater_list']}: "
            "expected a rater assigned to the image",
        )
    return name


def _annotation_category(ann: dict, where: str, cats: dict[int, dict], source: str) -> None:
    cid = ann.get("category_id", _MISSING)
    if not _is_int(cid):
        raise _fail(source, where, f"has an invalid 'category_id' ({_describe(cid)}): expected an integer{_hint(cid)}")
    if cid not in cats:
        raise _fail(source, where, f"has unknown category_id {cid!r}: expected the id of an entry of 'categories'")


def _check_bbox(bbox: Any, where: str, source: str) -> None:
    """Four finite JSON numbers ``[x, y, w, h]`` (pixels) with ``w, h >= 0``."""
    if not isinstance(bbox, (list, tuple)) or len(bbox) != 4 or not all(_is_number(v) for v in bbox):
        hint = _hint(*bbox) if isinstance(bbox, (list, tuple)) else ""
        raise _fail(source, where,
                    f"has no valid 'bbox' ({_describe(bbox)}): expected [x, y, w, h], four numbers in pixels{hint}")
    if not all(math.isfinite(v) for v in bbox) or bbox[2] < 0 or bbox[3] < 0:
        raise _fail(
            source, where,
            f"has an invalid bbox {list(bbox)} (NaN, infinite or negative size): expected finite numbers with w, h >= 0",
        )


def _check_segmentation(seg: Any, where: str, source: str) -> None:
    """Absent, empty, or a list of polygons: flat lists of finite numbers of even length."""
    if seg is None or seg == []:
        return
    if isinstance(seg, dict):
        raise _fail(source, where, "has an RLE segmentation; only polygon segmentations are supported")
    if not isinstance(seg, list):
        raise _fail(source, where, f"has an invalid 'segmentation' ({_describe(seg)}): expected a list of polygons")
    for k, ring in enumerate(seg):
        if not isinstance(ring, list) or not all(_is_number(v) for v in ring):
            hint = _hint(*ring) if isinstance(ring, list) else ""
            problem = f"is {_describe(ring)}: expected a flat list of numbers [x1, y1, x2, y2, ...] in pixels{hint}"
        elif len(ring) % 2:
            problem = f"has an odd number of coordinates ({len(ring)}): expected x, y pairs"
        elif not all(math.isfinite(v) for v in ring):
            problem = "has a NaN or infinite coordinate: expected finite numbers"
        else:
            continue
        raise _fail(source, where, f"has a malformed polygon: segmentation[{k}] {problem}")


# --- building the corpus (after every check passed) ---------------------------------------------


def _build_corpus(
    images: list[dict], cats: dict[int, dict], per_cell: dict[tuple[int, str], list[dict]], raters: list[str],
    source: str = "COCO data", box_policy: str = "clip", repairs: RepairReport | None = None,
) -> MultiRaterAnnotations:
    """Relative boxes and polygons per (image, assigned rater), boxes past the border under ``box_policy``."""
    cells = [(s, str(r), per_cell.get((s, str(r)), [])) for s, img in enumerate(images) for r in img["rater_list"]]
    anns = [a for _, _, cell in cells for a in cell]
    s_idx = np.fromiter((s for s, _, cell in cells for _ in cell), dtype=np.intp, count=len(anns))
    rater_of = np.array([r for _, r, cell in cells for _ in cell], dtype=object)
    sizes = np.array([[img["width"], img["height"]] for img in images], dtype=np.float64).reshape(-1, 2)
    names = [img.get("file_name", str(img["id"])) for img in images]
    pixel_boxes = np.array([a["bbox"] for a in anns], dtype=np.float64).reshape(-1, 4)
    pixel_polys = [_rings(a.get("segmentation")) for a in anns]
    boxes, polys, _ = pixels_to_relative(pixel_boxes, s_idx, sizes, names, polygons=pixel_polys)
    assert polys is not None  # polygons given (pixel_polys): polygons back
    where = _BoxWhere(source, images, anns, s_idx, rater_of)
    boxes, keep = check_boxes(boxes, where, policy=box_policy, report=repairs, raters=rater_of)
    sets, row = [], 0
    for s, img in enumerate(images):
        mapping: dict[str, AnnotationSet] = {}
        sets.append(mapping)
        for r in img["rater_list"]:
            n = len(per_cell.get((s, str(r)), []))
            rows = [i for i in range(row, row + n) if keep[i]]
            row += n
            mapping[str(r)] = AnnotationSet(
                boxes[rows], [cats[anns[i]["category_id"]]["name"] for i in rows], [anns[i]["id"] for i in rows],
                [polys[i] for i in rows],
            )
    return MultiRaterAnnotations.from_sets(
        [img["id"] for img in images], raters, sets, image_sizes=sizes, sample_names=names,
    )


class _BoxWhere:
    """``where[i]`` of :func:`~agreement.core.validation.check_boxes`, built only for the boxes it names."""

    def __init__(self, source: str, images: list[dict], anns: list[dict], s_idx: np.ndarray, rater_of: np.ndarray):
        self.source, self.images, self.anns, self.s_idx, self.rater_of = source, images, anns, s_idx, rater_of

    def __getitem__(self, i: int) -> str:
        img = self.images[self.s_idx[i]]
        return f"{self.source}: {_annotation_label(self.anns[i], i, img)} by rater {self.rater_of[i]!r}"


def _rings(seg: list | None) -> list[np.ndarray] | None:
    """Pixel ``(n, 2)`` rings of a checked segmentation, ``None`` without one."""
    if not seg:
        return None
    return [np.asarray(ring, dtype=np.float64).reshape(-1, 2) for ring in seg]


def to_coco_dict(coco: MultiRaterCoco) -> dict:
    """The inverse of :func:`parse_multi_rater_coco`: pixel boxes and polygons,
    ``rater_list`` from the assignment, original ids, category ids and extras."""
    ann = coco.annotations
    cat_id = {c["name"]: c["id"] for c in coco.categories}
    sizes, sample_names = ann.image_sizes, ann.sample_names
    assert sizes is not None and sample_names is not None  # filled by MultiRaterAnnotations.__post_init__
    images = []
    img_by_id = {img["id"]: img for img in coco.images}
    for s, sid in enumerate(ann.sample_ids):
        img = dict(img_by_id.get(sid, {"id": sid, "file_name": str(sample_names[s])}))
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
            raise AnnotationError(f"label {ann.labels[i]!r} on sample {sample_names[s]!r} has no COCO category")
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
