"""Label Studio's JSON export (several annotations per task) as a multi-rater FiftyOne dataset.

Parsing is :mod:`agreement.io.labelstudio` (no FiftyOne); this module turns the
regions into labels and writes the dataset in either layout
(:mod:`agreement.fo.importers.common`):

* a rectangle becomes a ``Detection`` in the rater's box field;
* a polygon becomes a ``Polyline`` in the ``_polygons`` field and, as a COCO
  annotation's ``bbox`` does, a ``Detection`` of its bounding box in the box
  field (so a Label Studio export and the equivalent KαLOS COCO file import
  to the same labels);
* a keypoint becomes a one-point ``Keypoint`` in the ``_keypoints`` field;
* the answer to an image-level ``Choices`` control named ``<control>``
  becomes a ``Classification`` (single choice) or a ``Classifications`` of
  tags (multiple choice) in the field ``<rater field>_<control>`` (fields
  layout) or, with the rater in ``rater_attr``, in the ``Classifications``
  field ``<field>_<control>`` (attribute layout). An annotation that gave no
  choice is a missing class (the field is ``None``) but explicit absence of
  tags (an empty ``Classifications``); the ``raters`` list says who was
  assigned. The classes are recorded in ``dataset.classes[<field>]`` (the
  label config's order when ``label_config`` is given). See
  :mod:`agreement.io.labelstudio_choices` for the checks the label config
  adds. A project without rectangles, polygons or keypoints gets no box field.

Every label carries ``ls_region_id``; every sample ``ls_task_id`` and
``ls_image`` (the task's image reference). One sample per task, in file order.
Images are named by the matching rule of :mod:`agreement.io.image_names`
(by default Label Studio's upload id is removed: ``01b89637-photo.jpg`` is
``photo.jpg``); two tasks with one name are refused. The file path is
``image_dir`` (default: the JSON file's folder) joined with that name, or with
the name as Label Studio wrote it when only that file exists (the files need
not exist). The report's ``match`` says per annotator how many of its images
other annotators also annotated and which rule renamed them; ``warnings``
says when the export has fewer than two annotators.
"""

from __future__ import annotations

import os
import re
from typing import Mapping, cast

import numpy as np

import fiftyone as fo

from agreement.fo.importers.common import (
    KindSpec,
    MergedImages,
    MultiRaterImportError,
    check_layout,
    rater_warnings,
    write_merged_dataset,
)
from agreement.io.image_names import NameMatchError, NameRule, keys_of, match_report, name_rule
from agreement.io.labelstudio import RATER_SOURCES, LabelStudioExport, Region, read_label_studio

__all__ = ["import_label_studio", "region_labels"]


def region_labels(regions: list[Region]) -> dict[str, list]:
    """FiftyOne labels of one annotation's regions, by kind (``detections``, ``polylines``, ``keypoints``)."""
    out: dict[str, list] = {"detections": [], "polylines": [], "keypoints": []}
    for g in regions:
        attrs = {"ls_region_id": g.region_id} if g.region_id is not None else {}
        if g.kind in ("box", "polygon"):
            out["detections"].append(fo.Detection(label=g.label, bounding_box=[float(v) for v in g.box], **attrs))
        if g.kind == "polygon":
            points = cast(np.ndarray, g.points)  # set on every polygon region
            out["polylines"].append(fo.Polyline(label=g.label, points=[points.tolist()], closed=True, filled=True,
                                                **attrs))
        if g.kind == "keypoint":
            points = cast(np.ndarray, g.points)  # set on every keypoint region
            out["keypoints"].append(fo.Keypoint(label=g.label, points=points.tolist(), **attrs))
    return out


def _choice_kinds(parsed: LabelStudioExport) -> dict[str, KindSpec]:
    """One kind per ``Choices`` control: ``choices:<control>``, field suffix ``_<control>``."""
    specs = {}
    for name, control in parsed.controls.items():
        suffix = "_" + re.sub(r"[^A-Za-z0-9_]", "_", name)
        specs[f"choices:{name}"] = KindSpec(suffix, fo.Classifications if control.multiple else fo.Classification,
                                            classes=control.classes)
    return specs


def _choice_labels(parsed: LabelStudioExport, t: int, rater: str) -> dict[str, list]:
    """The answers of one annotation, by kind: a class answered, or tags (an empty list: no tag)."""
    out = {}
    answers = parsed.choices.get((t, rater), {})
    for name, control in parsed.controls.items():
        got = answers.get(name) or []
        if got or control.multiple:
            out[f"choices:{name}"] = [fo.Classification(label=c) for c in got]
    return out


def _image_path(image_dir: str, key: str, file_name: str) -> str:
    """``image_dir/key``, or ``image_dir/file_name`` (the name as exported) when only that file exists."""
    path = os.path.join(image_dir, key)
    original = os.path.join(image_dir, file_name)
    return original if not os.path.exists(path) and os.path.exists(original) else path


def _merged(parsed: LabelStudioExport, image_dir: str, keys: list[str]) -> MergedImages:
    filepaths: list[str] = []
    sizes: list[tuple[int, int] | None] = []
    labels: list[dict[str, dict[str, list] | None]] = []
    extra: list[dict] = []
    for t, task in enumerate(parsed.tasks):
        filepaths.append(_image_path(image_dir, keys[t], task["file_name"]))
        w, h = task["width"], task["height"]
        sizes.append((int(round(w)), int(round(h))) if w and h else None)
        labels.append({r: {**region_labels(parsed.regions[(t, r)]), **_choice_labels(parsed, t, r)}
                       for r in parsed.raters if (t, r) in parsed.regions})
        extra.append({"ls_task_id": task["id"], "ls_image": task["image"]})
    return MergedImages(list(keys), filepaths, sizes, list(parsed.raters), labels, extra,
                        kind_specs=_choice_kinds(parsed))


def _match(parsed: LabelStudioExport, rule: NameRule, source: str) -> tuple[list[str], dict]:
    """The tasks' image names under ``rule`` (two tasks with one name are refused) and the match report."""
    refs = [t["file_name"] for t in parsed.tasks]
    by_key: dict[str, list] = {}
    for t, ref in zip(parsed.tasks, refs, strict=False):
        by_key.setdefault(rule.key(ref)[0], []).append(t)
    for key, tasks in by_key.items():
        if len(tasks) > 1:
            raise NameMatchError(
                f"{source}: tasks {[t['id'] for t in tasks]} (images {[t['file_name'] for t in tasks]}) all match "
                f"the image name {key!r} ({rule.describe()}); one task per image: remove the duplicate tasks, or "
                "pass upload_ids=False or a name_map that tells them apart")
    keys = [rule.key(ref)[0] for ref in refs]
    per_rater, rules = {}, {}
    for r in parsed.raters:
        mine = [t for t in range(len(keys)) if (t, r) in parsed.regions]
        per_rater[r] = {keys[t]: parsed.tasks[t]["file_name"] for t in mine}
        rules[r] = keys_of([refs[t] for t in mine], rule, source)[1]
    return keys, match_report(per_rater, rules, rule)


def import_label_studio(
    json_path: str | os.PathLike,
    dataset_name: str | None = None,
    layout: str = "fields",
    field: str = "ground_truth",
    rater_attr: str = "annotator",
    image_dir: str | os.PathLike | None = None,
    image_key: str | None = None,
    rotated: str = "error",
    rater_names: Mapping[str, str] | None = None,
    label_config: str | os.PathLike | None = None,
    overwrite: bool = False,
    persistent: bool = False,
    rater_from: str = "completed_by",
    name_map: str | os.PathLike | Mapping[str, str] | None = None,
    strip_prefix: str | None = None,
    upload_ids: bool = True,
) -> tuple[fo.Dataset, dict]:
    """Builds a multi-rater dataset from Label Studio's JSON export.

    Args:
        json_path: the export (a list of tasks with ``annotations``).
        dataset_name: the new dataset (default: the file's stem).
        layout: ``"fields"`` (one field per annotator, named after
            ``completed_by``; numeric ids become ``rater_<id>``) or
            ``"attribute"`` (``field`` with ``rater_attr``; the sample field
            ``raters`` is declared as the assignment).
        field: the label field of the ``"attribute"`` layout.
        rater_attr: the label attribute naming the annotator in the ``"attribute"`` layout.
        image_dir: where the images are (default: the JSON file's folder).
        image_key: the task ``data`` key of the image (default ``"image"``).
        rotated: ``"error"`` (default), ``"bbox"`` or ``"skip"`` for rotated rectangles.
        rater_names: new names by annotator id or email (``{"7": "alice"}``).
        label_config: the project's label config (XML text, or a path to
            it): whether each ``Choices`` control is one class or tags, its
            classes in order, and checks (a choice it does not list, several
            choices on a single-choice control: errors naming the task,
            annotation and annotator). Default: inferred from the export (a
            control is tags when some annotation gave several choices).
        overwrite: replace an existing dataset of that name (once the new one
            is complete).
        persistent: keep the dataset after the process exits.
        rater_from: ``"completed_by"`` (an annotation without it is refused)
            or ``"updated_by_fallback"`` (its ``updated_by`` is the rater;
            counted in ``report["fell_back_to_updated_by"]``).
        name_map: an explicit mapping of the images' names (a dict, or a file of it;
            see :func:`agreement.io.image_names.name_rule`).
        strip_prefix: a prefix pattern removed from the images' names.
        upload_ids: remove Label Studio's upload id from the images' names.

    Returns:
        ``(dataset, report)``: the report counts tasks, regions, and the
        skipped and repaired regions by reason, overall and per annotator;
        ``report["choices"][control]`` gives each control's label type,
        classes and how many annotations answered it; ``report["match"]``
        the naming rule and, per annotator, its images, how many other
        annotators also annotated and which rule renamed them;
        ``report["warnings"]`` what the dataset cannot support (one annotator).

    Raises:
        agreement.core.validation.AnnotationError: malformed input (names task,
            annotation and region); nothing is written.
        MultiRaterImportError: no annotator in the file, or annotator names
            whose field names clash.
        agreement.io.image_names.NameMatchError: two tasks with the same
            image name (after the rule), a bad ``strip_prefix`` or ``name_map``.
    """
    check_layout(layout, field, rater_attr)
    if rater_from not in RATER_SOURCES:
        raise ValueError(f"rater_from must be one of {RATER_SOURCES}, got {rater_from!r}")
    rule = name_rule(name_map=name_map, strip_prefix=strip_prefix, upload_ids=upload_ids)
    path = os.fspath(json_path)
    name = dataset_name or os.path.splitext(os.path.basename(path))[0]
    if fo.dataset_exists(name) and not overwrite:
        raise ValueError(f"dataset {name!r} already exists; pass overwrite=True or another dataset_name")
    parsed = read_label_studio(path, image_key=image_key, rotated=rotated, rater_names=rater_names,
                               label_config=label_config, rater_from=rater_from)
    if not parsed.tasks:
        raise MultiRaterImportError(f"{path}: the export has no tasks")
    if not parsed.regions:
        raise MultiRaterImportError(f"{path}: no task has a submitted annotation (raters: {parsed.raters or 'none'})")
    image_dir = os.fspath(image_dir) if image_dir is not None else os.path.dirname(os.path.abspath(path))
    keys, match = _match(parsed, rule, os.path.basename(path))
    merged = _merged(parsed, image_dir, keys)
    report = {**parsed.report(), "match": match, "warnings": rater_warnings(parsed.raters)}
    dataset = write_merged_dataset(merged, name, layout, field, rater_attr, overwrite, persistent=persistent,
                                   source=os.path.basename(path), report=report)
    return dataset, report
