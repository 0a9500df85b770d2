"""Label Studio's JSON export, read as multi-rater annotations without FiftyOne.

The layout (Label Studio's "JSON" export): a list of tasks, each

* ``id``, ``data`` (the task's data; the image is ``data["image"]`` by
  default: a path or URL whose file name names the image),
* ``annotations``: one per annotator who submitted the task, with
  ``completed_by`` (the rater: a user id, or a user object with ``email``/``id``),
  ``was_cancelled`` (a skipped task: that annotator is not counted) and
  ``result``, a list of regions. A region has ``id``, ``type``,
  ``original_width``/``original_height`` (pixels) and ``value``:

  - ``rectanglelabels`` (or ``rectangle`` + a ``labels`` result of the same
    ``id``): ``x``, ``y``, ``width``, ``height`` in percent of the image,
    ``rotation`` in degrees clockwise about the top-left corner;
  - ``polygonlabels`` (or ``polygon``): ``points`` ``[[x, y], ...]`` in percent;
  - ``keypointlabels`` (or ``keypoint``): ``x``, ``y`` in percent.

Percent becomes FiftyOne's relative coordinates by dividing by 100. An
annotation with an empty ``result`` is **explicit absence** (the annotator
looked and drew nothing); an annotator with no annotation on a task is
**implicit absence**.

Image-level ``choices`` results (a result of type ``choices`` with its own
``id``) are read per annotation as ``{control: [choices]}``: one class per
annotator and task for a single-choice control, a set of tags for a
multiple-choice one, checked against the project's label config when it is
given (:mod:`agreement.io.labelstudio_choices`, which documents absence).

What is not a supported region is counted, per annotator and reason, never
silently dropped: other types (``brushlabels``, ``taxonomy``,
``ellipselabels``, ``relation``, ...), regions with no or several labels,
polygons with fewer than three points, cancelled annotations. Rotated
rectangles are an error unless ``rotated="bbox"`` (their axis-aligned
bounding box, computed in pixels, counted as repaired) or ``"skip"``.
Malformed input (a coordinate that is not a finite number, a negative size,
an annotation without ``completed_by`` (unless ``rater_from="updated_by_fallback"``
takes its ``updated_by``, counted), one annotator twice on a task, sizes
that disagree within a task) raises
:class:`~agreement.core.validation.AnnotationError` naming the task, the
annotation and the region.
"""

from __future__ import annotations

import json
import math
import numbers
import os
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence
from urllib.parse import parse_qs, unquote, urlparse

import numpy as np

from agreement.core.data import AnnotationSet, MultiRaterAnnotations
from agreement.core.validation import AnnotationError
from agreement.io.labelstudio_choices import (
    ChoiceControl,
    add_choices,
    choices_of,
    parse_label_config,
    resolve_controls,
)

__all__ = ["Region", "LabelStudioExport", "read_label_studio", "parse_label_studio", "ROTATED_POLICIES",
           "RATER_SOURCES"]

ROTATED_POLICIES = ("error", "bbox", "skip")
#: Where an annotation's rater comes from: ``completed_by`` only, or ``updated_by`` when it has no ``completed_by``.
RATER_SOURCES = ("completed_by", "updated_by_fallback")
_GEOMETRY = {"rectangle": "box", "polygon": "polygon", "keypoint": "keypoint"}


@dataclass(frozen=True)
class Region:
    """One labelled region of one annotator on one task (relative coordinates).

    Attributes:
        kind: ``"box"``, ``"polygon"`` or ``"keypoint"``.
        label: the class name.
        box: relative ``[x, y, w, h]`` (a polygon's bounding box; a keypoint's
            zero-size box at the point).
        points: ``(k, 2)`` relative points (polygon ring or the keypoint), or ``None``.
        region_id: Label Studio's region id.
    """

    kind: str
    label: str
    box: tuple[float, float, float, float]
    points: np.ndarray | None
    region_id: str | None


@dataclass
class LabelStudioExport:
    """A parsed Label Studio JSON export.

    Attributes:
        tasks: per task ``{"id", "image", "file_name", "width", "height"}``
            (sizes ``None`` when no region gives them).
        raters: the annotators, in order of first appearance.
        regions: ``{(task index, rater): [Region, ...]}`` for every submitted
            annotation (an empty list is explicit absence).
        per_rater: per annotator ``{"tasks", "regions", "skipped", "repaired"}``.
        skipped, repaired: the same counts over all annotators, by reason.
        choices: ``{(task index, rater): {control: [choices]}}`` for every
            submitted annotation (``{}``: it answered no control).
        controls: the ``Choices`` controls (:class:`ChoiceControl`), from the
            label config or inferred from the export.
        where: ``{(task index, rater): "file: task .., annotation .. (annotator ..)"}``.
    """

    tasks: list[dict]
    raters: list[str]
    regions: dict[tuple[int, str], list[Region]]
    per_rater: dict[str, dict]
    skipped: dict[str, int] = field(default_factory=dict)
    repaired: dict[str, int] = field(default_factory=dict)
    choices: dict[tuple[int, str], dict[str, list[str]]] = field(default_factory=dict)
    controls: dict[str, ChoiceControl] = field(default_factory=dict)
    where: dict[tuple[int, str], str] = field(default_factory=dict)
    fell_back: int = 0

    def choices_report(self) -> dict:
        """Per control: its label type, classes, where they come from, and how many annotations answered it."""
        out = {}
        for name, c in self.controls.items():
            answered = sum(1 for per in self.choices.values() if per.get(name))
            out[name] = {"label_type": c.label_type, "classes": list(c.classes), "source": c.source,
                         "answered": answered, "not_answered": len(self.choices) - answered,
                         "not_answered_means": "explicit absence (no tag)" if c.multiple else "missing (no class)"}
        return out

    def report(self) -> dict:
        """Counts for people: tasks, annotators, regions, skipped and repaired by reason."""
        return {
            "tasks": len(self.tasks),
            "raters": list(self.raters),
            "regions": int(sum(len(v) for v in self.regions.values())),
            "skipped": dict(self.skipped),
            "repaired": dict(self.repaired),
            "per_rater": {r: dict(v) for r, v in self.per_rater.items()},
            "fell_back_to_updated_by": int(self.fell_back),
            **({"choices": self.choices_report()} if self.controls else {}),
        }

    def to_annotations(self, kinds: Sequence[str] = ("box", "polygon"),
                       box_policy: str = "error") -> MultiRaterAnnotations:
        """The boxes (rectangles and polygons' bounding boxes, with the polygons) as a corpus.

        Sample ids are the task ids, rater names the annotators; sizes from
        ``original_width``/``original_height`` (NaN where unknown). A box past
        the image border (a region drawn over the edge, or a rotated
        rectangle's enclosing box with ``rotated="bbox"``) is refused
        (``box_policy="error"``, naming the task and annotator), clipped
        (``"clip"``) or dropped (``"drop"``), counted in the corpus's
        ``repairs`` (:class:`agreement.core.data.MultiRaterAnnotations`).
        """
        sets = []
        for t in range(len(self.tasks)):
            per = {}
            for r in self.raters:
                regs = self.regions.get((t, r))
                if regs is None:
                    continue
                regs = [g for g in regs if g.kind in kinds]
                polys = [[g.points] if g.kind == "polygon" else None for g in regs]
                per[r] = AnnotationSet(
                    np.array([g.box for g in regs], dtype=np.float64).reshape(-1, 4),
                    [g.label for g in regs], [g.region_id for g in regs],
                    polygons=polys if "polygon" in kinds else None,
                )
            sets.append(per)
        sizes = np.array([[t["width"] or np.nan, t["height"] or np.nan] for t in self.tasks], dtype=np.float64)
        return MultiRaterAnnotations.from_sets(
            [t["id"] for t in self.tasks], self.raters, sets, image_sizes=sizes.reshape(-1, 2),
            sample_names=[t["file_name"] for t in self.tasks], box_policy=box_policy,
        )


def read_label_studio(path: str | os.PathLike, **kwargs) -> LabelStudioExport:
    """Reads a Label Studio JSON export file (see :func:`parse_label_studio` for the options)."""
    with open(path, encoding="utf-8") as f:
        try:
            data = json.load(f)
        except json.JSONDecodeError as e:
            raise AnnotationError(f"{path}: not a valid JSON file ({e})") from e
    return parse_label_studio(data, source=os.fspath(path), **kwargs)


def parse_label_studio(
    data: Any,
    *,
    source: str = "<label studio export>",
    image_key: str | None = None,
    rotated: str = "error",
    rater_names: Mapping[str, str] | None = None,
    label_config: str | os.PathLike | None = None,
    rater_from: str = "completed_by",
) -> LabelStudioExport:
    """Parses the JSON export (a list of tasks) into regions and choices per (task, annotator).

    Args:
        data: the decoded JSON (a list of tasks, or one task).
        source: the file name, for error messages.
        image_key: the ``data`` key holding the image (default ``"image"``,
            else the task's only string value).
        rotated: rotated rectangles: ``"error"`` (default), ``"bbox"`` (their
            bounding box, counted as repaired) or ``"skip"`` (counted).
        rater_names: optional new names by annotator (``{"7": "alice"}``).
        label_config: the project's label config (XML text or a path): decides
            whether a ``Choices`` control is one class or tags, lists its
            classes, and is checked (see :mod:`agreement.io.labelstudio_choices`).
        rater_from: ``"completed_by"`` (default: an annotation without it is
            an error) or ``"updated_by_fallback"`` (such an annotation's rater
            is its ``updated_by``; counted in ``fell_back_to_updated_by``,
            overall and per annotator).

    Raises:
        AnnotationError: malformed input, naming the task, annotation and region;
            choices that disagree with ``label_config``, naming the annotator.
        ValueError: an unknown ``rotated`` policy.
    """
    if rotated not in ROTATED_POLICIES:
        raise ValueError(f"rotated must be one of {ROTATED_POLICIES}, got {rotated!r}")
    if rater_from not in RATER_SOURCES:
        raise ValueError(f"rater_from must be one of {RATER_SOURCES}, got {rater_from!r}")
    if isinstance(data, dict) and "annotations" in data:
        data = [data]
    if not isinstance(data, list):
        raise AnnotationError(f"{source}: expected Label Studio's JSON export, a list of tasks; got {type(data).__name__}")
    names = {str(k): str(v) for k, v in (rater_names or {}).items()}
    config = parse_label_config(label_config) if label_config is not None else None
    out = LabelStudioExport([], [], {}, {})
    skipped: Counter[str] = Counter()
    repaired: Counter[str] = Counter()
    seen_ids: dict[Any, int] = {}
    for t, task in enumerate(data):
        where = f"{source}: task #{t}"
        if not isinstance(task, dict):
            raise AnnotationError(f"{where}: expected an object with id, data and annotations; got {task!r:.80}")
        tid = task.get("id", t)
        where = f"{source}: task {tid!r}"
        if tid in seen_ids:
            raise AnnotationError(f"{where}: the task id appears twice (tasks #{seen_ids[tid]} and #{t})")
        seen_ids[tid] = t
        image = _image_ref(task, image_key, where)
        task_rec = {"id": tid, "image": image, "file_name": _file_name(image), "width": None, "height": None}
        out.tasks.append(task_rec)
        annotations = task.get("annotations") or []
        if not isinstance(annotations, list):
            raise AnnotationError(f"{where}: 'annotations' must be a list, got {type(annotations).__name__}")
        for a, ann in enumerate(annotations):
            _annotation(out, t, task_rec, ann, a, where, rotated=rotated, names=names, skipped=skipped,
                        repaired=repaired, rater_from=rater_from)
    out.skipped, out.repaired = dict(skipped), dict(repaired)
    out.controls = resolve_controls(out.choices, out.where, config)
    return out


def _annotation(out: LabelStudioExport, t: int, task: dict, ann: Any, a: int, where: str, rotated: str,
                names: dict, skipped: Counter, repaired: Counter, rater_from: str = "completed_by") -> None:
    """One annotation of one task: its annotator and regions, added to ``out``."""
    if not isinstance(ann, dict):
        raise AnnotationError(f"{where}, annotation #{a}: expected an object, got {ann!r:.80}")
    aid = ann.get("id", a)
    where = f"{where}, annotation {aid!r}"
    rater, fell_back = _rater(ann, where, names, rater_from)
    stats = out.per_rater.setdefault(rater, {"tasks": 0, "regions": 0, "skipped": {}, "repaired": {}})
    if fell_back:
        out.fell_back += 1
        stats["fell_back_to_updated_by"] = stats.get("fell_back_to_updated_by", 0) + 1
    if rater not in out.raters:
        out.raters.append(rater)
    if ann.get("was_cancelled"):
        _count(stats, skipped, "skipped", "cancelled annotations")
        return
    if (t, rater) in out.regions:
        raise AnnotationError(f"{where}: annotator {rater!r} has a second annotation on this task; "
                              "keep one annotation per annotator and task")
    results = ann.get("result") or []
    if not isinstance(results, list):
        raise AnnotationError(f"{where}: 'result' must be a list, got {type(results).__name__}")
    regions: list[Any] = []
    choices: dict[str, Any] = {}
    who = f"{where} (annotator {rater!r})"
    for group in _grouped(results, where):
        found = choices_of(group, who)
        if found is not None:
            add_choices(choices, found, who)
            continue
        region = _region(group, task, where, rotated, stats, skipped, repaired=repaired)
        if region is not None:
            regions.append(region)
    out.regions[(t, rater)] = regions
    out.choices[(t, rater)] = choices
    out.where[(t, rater)] = who
    stats["tasks"] += 1
    stats["regions"] += len(regions)


def _count(stats: dict, total: Counter, what: str, reason: str) -> None:
    stats[what][reason] = stats[what].get(reason, 0) + 1
    total[reason] += 1


def _user(value: Any) -> str | None:
    """A Label Studio user reference (an id, or a user object with ``email``/``id``) as a name, or ``None``."""
    if isinstance(value, dict):
        value = value.get("email") or value.get("id")
    if value is None or isinstance(value, bool) or value == "":
        return None
    return str(value)


def _rater(ann: dict, where: str, names: dict, rater_from: str = "completed_by") -> tuple[str, bool]:
    """``(rater, fell back)``: the annotation's ``completed_by``, else (when asked) its ``updated_by``."""
    who, fell_back = _user(ann.get("completed_by")), False
    if who is None and rater_from == "updated_by_fallback":
        who, fell_back = _user(ann.get("updated_by")), True
        if who is None:
            raise AnnotationError(f"{where}: neither 'completed_by' nor 'updated_by': the annotator of an "
                                  "annotation must be known")
    if who is None:
        hint = (" (it has 'updated_by': pass rater_from='updated_by_fallback' to take that as its annotator, "
                "counted in the report)" if _user(ann.get("updated_by")) is not None else
                "; rater_from='updated_by_fallback' takes 'updated_by' instead when the export has it")
        raise AnnotationError(f"{where}: no 'completed_by': the annotator of an annotation must be known{hint}")
    return names.get(who, who), fell_back


def _image_ref(task: dict, image_key: str | None, where: str) -> str:
    data = task.get("data")
    if not isinstance(data, dict):
        raise AnnotationError(f"{where}: 'data' must be an object naming the image")
    if image_key is not None:
        ref = data.get(image_key)
    elif "image" in data:
        ref = data["image"]
    else:
        strings = [v for v in data.values() if isinstance(v, str)]
        ref = strings[0] if len(strings) == 1 else None
    if not isinstance(ref, str) or not ref:
        key = image_key or "image"
        raise AnnotationError(f"{where}: no image in data[{key!r}] (data keys: {sorted(data)}); "
                              "give image_key= the key of the image")
    return ref


def _file_name(ref: str) -> str:
    """The image's file name from a Label Studio path or URL (``/data/upload/3/a.jpg``,
    ``/data/local-files/?d=dir/a.jpg``, ``s3://b/a.jpg``)."""
    parsed = urlparse(ref)
    query = parse_qs(parsed.query)
    path = query["d"][0] if "d" in query else parsed.path or ref
    return os.path.basename(unquote(path).rstrip("/")) or ref


def _grouped(results: list, where: str) -> list[list[dict]]:
    """Results grouped into regions: a geometry and a separate ``labels`` result share an ``id``."""
    groups: dict[Any, list[dict]] = {}
    for k, res in enumerate(results):
        if not isinstance(res, dict):
            raise AnnotationError(f"{where}, result #{k}: expected an object, got {res!r:.80}")
        rid = res.get("id")
        groups.setdefault(rid if rid is not None else ("#", k), []).append(res)
    return list(groups.values())


def _region(group: list[dict], task: dict, where: str, rotated: str, stats: dict, skipped: Counter,
            repaired: Counter) -> Region | None:
    """The region of a group of results, or ``None`` (counted) when it is not a supported one."""
    geom = [r for r in group if str(r.get("type", "")).removesuffix("labels") in _GEOMETRY]
    others = [str(r.get("type")) for r in group if r not in geom and r.get("type") != "labels"]
    if not geom:
        for typ in others or ["labels without a region"]:
            _count(stats, skipped, "skipped", f"{typ} regions" if typ in others else typ)
        return None
    res = geom[0]
    typ = str(res.get("type")).removesuffix("labels")
    rid = res.get("id")
    where = f"{where}, region {rid!r} ({res.get('type')})"
    _task_size(task, res, where)
    value = res.get("value")
    if not isinstance(value, dict):
        raise AnnotationError(f"{where}: 'value' must be an object")
    labels = list(value.get(f"{typ}labels") or [])
    for r in group:
        if r.get("type") == "labels" and isinstance(r.get("value"), dict):
            labels += list(r["value"].get("labels") or [])
    if len(labels) != 1:
        _count(stats, skipped, "skipped", "regions without a label" if not labels else "regions with several labels")
        return None
    kind = _GEOMETRY[typ]
    if kind == "box":
        return _box(value, str(labels[0]), rid, task, where, rotated, stats=stats, skipped=skipped, repaired=repaired)
    if kind == "polygon":
        pts = _points(value, where)
        if len(pts) < 3:
            _count(stats, skipped, "skipped", "polygons with fewer than 3 points")
            return None
        lo, hi = pts.min(axis=0), pts.max(axis=0)
        return Region("polygon", str(labels[0]), (lo[0], lo[1], hi[0] - lo[0], hi[1] - lo[1]), pts, rid)
    x, y = (_number(value, k, where) / 100.0 for k in ("x", "y"))
    return Region("keypoint", str(labels[0]), (x, y, 0.0, 0.0), np.array([[x, y]]), rid)


def _box(value: dict, label: str, rid, task: dict, where: str, rotated: str, stats: dict, skipped: Counter,
         repaired: Counter) -> Region | None:
    x, y, w, h = (_number(value, k, where) for k in ("x", "y", "width", "height"))
    if w < 0 or h < 0:
        raise AnnotationError(f"{where}: negative width or height ({w}, {h}); expected a size >= 0 in percent")
    angle = _number(value, "rotation", where) if "rotation" in value else 0.0
    if abs(math.remainder(angle, 360.0)) > 1e-9:
        if rotated == "error":
            raise AnnotationError(
                f"{where}: a rectangle rotated by {angle} degrees; agreement is measured on axis-aligned boxes: "
                "pass rotated='bbox' to take its bounding box, or rotated='skip' to leave it out (both counted)"
            )
        if rotated == "skip":
            _count(stats, skipped, "skipped", "rotated rectangles")
            return None
        W, H = task["width"], task["height"]
        if not W or not H:
            raise AnnotationError(f"{where}: a rotated rectangle needs original_width and original_height")
        x, y, w, h = _rotated_bbox(x * W / 100, y * H / 100, w * W / 100, h * H / 100, angle)
        x, y, w, h = x / W * 100, y / H * 100, w / W * 100, h / H * 100
        _count(stats, repaired, "repaired", "rotated rectangles -> bounding box")
    return Region("box", label, (x / 100.0, y / 100.0, w / 100.0, h / 100.0), None, rid)


def _rotated_bbox(x: float, y: float, w: float, h: float, angle: float) -> tuple[float, float, float, float]:
    """Axis-aligned bounding box (pixels) of a ``w x h`` rectangle at ``(x, y)`` rotated by
    ``angle`` degrees clockwise about that corner (Label Studio's convention, y pointing down)."""
    a = math.radians(angle)
    c, s = math.cos(a), math.sin(a)
    corners = np.array([[0, 0], [w, 0], [w, h], [0, h]], dtype=np.float64)
    rot = corners @ np.array([[c, s], [-s, c]]) + [x, y]
    lo, hi = rot.min(axis=0), rot.max(axis=0)
    return float(lo[0]), float(lo[1]), float(hi[0] - lo[0]), float(hi[1] - lo[1])


def _task_size(task: dict, res: dict, where: str) -> None:
    """``original_width``/``original_height`` of a region, checked against the task's."""
    for key, name in (("original_width", "width"), ("original_height", "height")):
        if key not in res:
            continue
        v = _number(res, key, where)
        if v <= 0:
            raise AnnotationError(f"{where}: {key} must be a positive number of pixels, got {res[key]!r}")
        if task[name] is None:
            task[name] = v
        elif task[name] != v:
            raise AnnotationError(f"{where}: {key} {v} differs from {task[name]} in another region of the task")


def _number(obj: dict, key: str, where: str) -> float:
    v = obj.get(key)
    if isinstance(v, bool) or not isinstance(v, numbers.Real) or not math.isfinite(float(v)):
        raise AnnotationError(f"{where}: {key!r} must be a finite number, got {v!r}")
    return float(v)


def _points(value: dict, where: str) -> np.ndarray:
    pts = value.get("points")
    if not isinstance(pts, list) or not all(isinstance(p, (list, tuple)) and len(p) == 2 for p in pts):
        raise AnnotationError(f"{where}: 'points' must be a list of [x, y] pairs in percent")
    flat = [{"x": p[0], "y": p[1]} for p in pts]
    return np.array([[_number(p, "x", where), _number(p, "y", where)] for p in flat], dtype=np.float64).reshape(-1, 2) / 100.0
