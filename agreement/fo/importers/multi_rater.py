"""One export per rater, in any format FiftyOne reads, merged by image (or video) into one multi-rater dataset.

Each rater's export is read by FiftyOne's own importer
(``fo.Dataset.from_dir``) into a temporary dataset; the temporaries are then
merged by image name into one dataset in the fields or the attribute
layout (:mod:`agreement.fo.importers.common`) and deleted.

Names. Images are matched by the rule of :mod:`agreement.io.image_names`:
the file name, with Label Studio's upload id (``01b89637-``) removed by
default, a prefix pattern (``strip_prefix``) removed, or an explicit mapping
(``name_map``). The report's ``match`` says, per rater, how many of its images
met images of the other raters, lists a few that did not, and counts the rule
that renamed them. Label Studio's converter outputs (YOLO without
``dataset.yaml``, VOC ``Annotations/`` without images) are read as
:mod:`agreement.fo.importers.converted` says. ``warnings`` in the report says
when the import has fewer than two raters.

Absence. An image that is in a rater's export is one the rater looked at: its
labels, or explicit absence (an empty set) when it has none. An image that a
rater's export lacks is implicit absence (not assigned), unless the export is
declared ``complete`` (it covers every image: then it is explicit absence).

Image-level labels (:mod:`agreement.fo.importers.image_level`): the classes
of an image classification directory tree (``"classification_tree"``), the
``<tag>`` elements of CVAT for images XML and the masks of an image
segmentation directory (``"segmentation_dir"``) become a ``Classification``
(``_class``), ``Classifications`` (``_tags``) or ``Segmentation`` (``_mask``)
field per rater; an import with no instance labels names these fields after
the raters alone (``alice``). ``label_type`` chooses class or tags,
``mask_targets`` the masks' classes.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import dataclass
from typing import Any, Mapping, Sequence
from xml.etree import ElementTree

import fiftyone as fo
import fiftyone.types as fot

from agreement.fo.importers.coco import discard_dataset, temporary_name
from agreement.fo.importers.common import (
    KINDS,
    MergedImages,
    MultiRaterImportError,
    check_layout,
    check_rater_names,
    rater_warnings,
    write_merged_dataset,
)
from agreement.fo.importers.converted import converted_layout
from agreement.fo.importers.image_level import (
    CLASS_CARRIERS,
    IMAGE_KINDS,
    LABEL_TYPES,
    check_listed,
    class_labels,
    cvat_listed_labels,
    export_label_path,
    image_kind_specs,
)
from agreement.fo.importers.label_studio_rater import LABEL_STUDIO_FORMAT, load_label_studio_rater
from agreement.fo.importers.video import VIDEO_FORMATS, import_video_exports, is_video_format
from agreement.fo.kinds import instance_lists, item_type
from agreement.io.image_names import HOW_TO_MAP, NameRule, match_report, name_rule

__all__ = ["FORMATS", "RaterExport", "import_multi_rater", "resolve_format"]

# format name -> (FiftyOne dataset type, importer keyword arguments)
FORMATS: dict[str, tuple[str, dict]] = {
    "coco": ("COCODetectionDataset", {"label_types": ["detections", "segmentations", "keypoints"], "use_polylines": True}),
    "cvat_image": ("CVATImageDataset", {}),
    "voc": ("VOCDetectionDataset", {}),
    "yolo": ("YOLOv5Dataset", {"include_all_data": True}),
    "yolov5": ("YOLOv5Dataset", {"include_all_data": True}),
    "yolov4": ("YOLOv4Dataset", {"include_all_data": True}),
    "kitti": ("KITTIDetectionDataset", {}),
    "fiftyone_detection": ("FiftyOneImageDetectionDataset", {}),
    "classification_tree": ("ImageClassificationDirectoryTree", {}),
    "segmentation_dir": ("ImageSegmentationDirectory", {}),
    # one annotator of a Label Studio JSON export (agreement.fo.importers.label_studio_rater)
    LABEL_STUDIO_FORMAT: ("ImageDetectionDataset", {}),
    **VIDEO_FORMATS,
}
#: the instance label lists an export may hold, by their list attribute, and their labels (agreement.fo.kinds)
_KIND_OF = instance_lists()
_WRAP = {item_type(t): (attr, t) for t, attr in _KIND_OF.items()}
MAX_LISTED = 10


@dataclass
class RaterExport:
    """One rater's export.

    Attributes:
        rater: the rater's name (unique).
        path: the export: a directory in the format's layout, or its labels
            file (COCO JSON, CVAT XML); images are then looked for in
            ``image_dir`` or the file's folder.
        format: a name of :data:`FORMATS` (``"label_studio"``: one
            annotator of a Label Studio JSON export, see
            :mod:`agreement.fo.importers.label_studio_rater`), or a FiftyOne
            dataset type name (``"COCODetectionDataset"``) or class.
        image_dir: where the images are, if not where the format puts them.
        complete: the export covers every image of the dataset (a missing
            image is explicit absence); ``None`` takes the import's default.
        options: extra keyword arguments for FiftyOne's importer (e.g.
            ``{"split": "train"}`` for YOLO).
        classes: a YOLO export without ``dataset.yaml`` (Label Studio's
            converter): the class names in the order of the class ids, or the
            path of its ``classes.txt``; ``None`` takes the import's.
    """

    rater: str
    path: str
    format: Any
    image_dir: str | None = None
    complete: bool | None = None
    options: Mapping[str, Any] | None = None
    classes: Sequence[str] | str | None = None

    @classmethod
    def coerce(cls, value: "RaterExport | Mapping | Sequence", index: int) -> "RaterExport":
        """From a mapping ``{rater, path, format, ...}`` or a ``(rater, path, format)`` tuple."""
        if isinstance(value, RaterExport):
            return value
        if isinstance(value, Mapping):
            unknown = set(value) - {"rater", "path", "format", "image_dir", "complete", "options", "classes"}
            if unknown:
                raise MultiRaterImportError(f"export #{index}: unknown key(s) {sorted(unknown)}; expected rater, path, "
                                            "format and optionally image_dir, complete, options, classes")
            missing = [k for k in ("rater", "path", "format") if not value.get(k)]
            if missing:
                raise MultiRaterImportError(f"export #{index}: missing {', '.join(missing)} (got {dict(value)!r})")
            return cls(**{k: v for k, v in value.items() if not (k == "classes" and v in ("", []))})
        if isinstance(value, (list, tuple)) and len(value) == 3:
            return cls(*value)
        raise MultiRaterImportError(f"export #{index}: expected {{rater, path, format}} or (rater, path, format), "
                                    f"got {value!r}")


def resolve_format(fmt: Any) -> tuple[type, dict]:
    """The FiftyOne dataset type and importer options of a format name, type name or class."""
    if isinstance(fmt, type) and issubclass(fmt, fot.Dataset):
        return fmt, {}
    name = str(fmt)
    if name.lower() in FORMATS:
        type_name, options = FORMATS[name.lower()]
        return getattr(fot, type_name), dict(options)
    cls = getattr(fot, name.rsplit(".", 1)[-1], None)
    if isinstance(cls, type) and issubclass(cls, (fot.ImageLabelsDataset, fot.ImageDetectionDataset,
                                                  fot.ImageClassificationDataset, fot.ImageSegmentationDataset,
                                                  fot.VideoLabelsDataset)):
        return cls, {}
    raise MultiRaterImportError(
        f"format {name!r} is not one FiftyOne can import here: use one of {', '.join(FORMATS)}, or the name of a "
        "FiftyOne image or video labels dataset type (fiftyone.types, e.g. 'COCODetectionDataset', 'CVATVideoDataset')"
    )


def _from_dir_kwargs(export: RaterExport, cls: type | None = None) -> dict:
    path = os.fspath(export.path)
    if os.path.isdir(path):
        kwargs = {"dataset_dir": path}
        if export.image_dir:
            kwargs["data_path"] = os.fspath(export.image_dir)
    elif os.path.isfile(path):
        kwargs = {"labels_path": path, "data_path": os.fspath(export.image_dir or os.path.dirname(os.path.abspath(path)))}
    else:
        raise MultiRaterImportError(f"rater {export.rater!r}: export {path!r} does not exist")
    if cls is not None and cls.__name__ in _LABELS_FILE:
        kwargs = _labels_only(export, cls, kwargs)
    return kwargs


# formats whose labels file names every image (with its size): the images need not exist
_LABELS_FILE = {"COCODetectionDataset": "labels.json", "CVATImageDataset": "labels.xml"}


def _labels_only(export: RaterExport, cls: type, kwargs: dict) -> dict:
    """COCO and CVAT image: tell FiftyOne's importer where each image named in the labels file is
    (a data map), so that the images need not be on disk, as for the COCO layout importer."""
    labels = kwargs.get("labels_path") or os.path.join(kwargs["dataset_dir"], _LABELS_FILE[cls.__name__])
    data_dir = kwargs.get("data_path") or os.path.join(kwargs["dataset_dir"], "data")
    if not os.path.isfile(labels) or not isinstance(data_dir, str):
        return kwargs  # FiftyOne's importer reports it
    try:
        if cls.__name__ == "COCODetectionDataset":
            with open(labels, encoding="utf-8") as f:
                names = [img.get("file_name") for img in json.load(f).get("images", [])]
        else:
            names = [el.get("name") for el in ElementTree.parse(labels).getroot().iter("image")]
    except (ValueError, AttributeError, ElementTree.ParseError, OSError):
        return kwargs  # not readable as that format: FiftyOne's importer says why
    names = [n for n in names if isinstance(n, str) and n and not os.path.isabs(n)]
    return {**kwargs, "labels_path": labels, "data_path": {n: os.path.join(data_dir, n) for n in names}}


def _load(export: RaterExport, tmp_name: str, rule: NameRule | None = None, image_dir: str | None = None,
          classes: Any = None, notes: dict | None = None) -> fo.Dataset:
    """The export read by FiftyOne's importer into a new temporary dataset (a Label Studio converter
    output as :func:`converted_layout` says; ``notes`` gets what it did, by rater)."""
    if str(export.format).lower() == LABEL_STUDIO_FORMAT:
        return load_label_studio_rater(export, tmp_name, image_dir, notes)
    cls, options = resolve_format(export.format)
    converted = converted_layout(export, cls.__name__, rule or name_rule(), image_dir, classes)
    cleanup = None
    if converted is not None:
        type_name, kwargs, note, cleanup = converted
        cls = getattr(fot, type_name)
        kwargs = {**kwargs, **dict(export.options or {})}
        if notes is not None:
            notes[export.rater] = note
    else:
        kwargs = {**_from_dir_kwargs(export, cls), **options, **dict(export.options or {})}
    try:
        return fo.Dataset.from_dir(dataset_type=cls, name=tmp_name, label_field="labels", progress=False, **kwargs)
    except MultiRaterImportError:
        raise
    except Exception as e:
        if fo.dataset_exists(tmp_name):
            discard_dataset(fo.load_dataset(tmp_name))
        raise MultiRaterImportError(
            f"rater {export.rater!r}: FiftyOne could not read {os.fspath(export.path)!r} as {cls.__name__} "
            f"({type(e).__name__}: {e})"
        ) from e
    finally:
        if cleanup is not None:
            cleanup()


def _extract(export: RaterExport, ds: fo.Dataset, rule: NameRule | None = None) -> tuple[dict, dict]:
    """``({key: (filepath, size, {kind: [labels]})}, report)`` of one rater's temporary dataset.

    The report's private ``_classes`` and ``_mask_targets`` are what the export declares, ``_rules`` how many
    images each naming rule renamed."""
    rule = rule or name_rule()
    schema = ds.get_field_schema()
    cls = resolve_format(export.format)[0]
    label_fields: dict[str, str] = {}
    skipped: dict[str, str] = {}
    for name, fld in schema.items():
        doc = getattr(fld, "document_type", None)
        if doc is not None and (doc in _KIND_OF or doc in _WRAP or doc in IMAGE_KINDS):
            kind = _KIND_OF.get(doc) or IMAGE_KINDS.get(doc) or _WRAP[doc][0]
            if kind in label_fields.values():
                raise MultiRaterImportError(f"rater {export.rater!r}: {os.fspath(export.path)!r} gives several "
                                            f"{kind} fields ({sorted(label_fields)}, {name!r}); import one label type")
            label_fields[name] = kind
        elif doc is not None and issubclass(doc, fo.Label):
            skipped[name] = doc.__name__
    paths, widths, heights = ds.values(["filepath", "metadata.width", "metadata.height"])
    values = {f: ds.values(f) for f in label_fields}
    skipped_counts = {}
    for f, tname in skipped.items():
        n = sum(1 for v in ds.values(f) if v is not None)
        if n:
            skipped_counts[f"{tname} labels"] = n
    images: dict[str, tuple] = {}
    counts = {k: 0 for k in (*KINDS, "class", "segmentation")}
    tree = cls.__name__ == "ImageClassificationDirectoryTree"
    carries_class = cls.__name__ in CLASS_CARRIERS or "class" in label_fields.values()
    rules: Counter = Counter()
    for i, path in enumerate(paths):
        key, how = rule.key(path)
        labels: dict[str, list] = {"class": []} if carries_class else {}
        for f, kind in label_fields.items():
            v = values[f][i]
            if kind in ("class", "segmentation"):
                labs = class_labels(v)
            else:
                if isinstance(v, tuple(_WRAP)):
                    v = _WRAP[type(v)][1](**{kind: [v]})
                labs = list(getattr(v, kind)) if v is not None else []
            counts[kind] += len(labs)
            labels[kind] = labs
        if key in images and tree:  # an image in several class folders: its classes
            images[key][2]["class"] += labels.get("class", [])
            continue
        if key in images:
            raise MultiRaterImportError(
                f"rater {export.rater!r}: {os.fspath(export.path)!r} has two images, {images[key][0]!r} and "
                f"{path!r}, that both match the name {key!r} ({rule.describe()}); each image of an export must "
                "have its own name: "
                + ("pass upload_ids=False if these ids are part of the names, or "
                   if "upload_id" in (how, rule.key(images[key][0])[1]) else "")
                + "give a name_map that tells them apart"
            )
        rules[how] += 1
        size = (int(widths[i]), int(heights[i])) if widths[i] and heights[i] else None
        images[key] = (path, size, labels)
    if cls.__name__ == "CVATImageDataset":
        check_listed(export.rater, os.fspath(export.path), images,
                     cvat_listed_labels(export_label_path(os.fspath(export.path))))
    report = {
        "path": os.fspath(export.path),
        "format": cls_name(export.format),
        "images": len(images),
        "labels": int(sum(counts.values())),
        "labels_by_kind": {k: v for k, v in counts.items() if v},
        "skipped": skipped_counts,
        "_classes": list(ds.default_classes or ds.classes.get("labels") or []),
        "_mask_targets": dict(ds.mask_targets.get("labels") or ds.default_mask_targets or {}),
        "_rules": rules,
    }
    return images, report


def cls_name(fmt: Any) -> str:
    return fmt.__name__ if isinstance(fmt, type) else str(fmt)


def _check_overlap(per_rater: dict[str, dict], exports: list[RaterExport], rule: NameRule | None = None) -> None:
    """Every export has images, and each shares at least one with the others."""
    for e in exports:
        if not per_rater[e.rater]:
            raise MultiRaterImportError(f"rater {e.rater!r}: export {os.fspath(e.path)!r} has no images")
    if len(exports) < 2:
        return
    for e in exports:
        others = set().union(*(per_rater[o.rater] for o in exports if o.rater != e.rater))
        if not others.intersection(per_rater[e.rater]):
            mine = sorted(per_rater[e.rater])[:3]
            theirs = sorted(others)[:3]
            how = rule.describe() if rule is not None else "images are matched by file name"
            raise MultiRaterImportError(
                f"rater {e.rater!r}: no image of export {os.fspath(e.path)!r} matches an image of the other exports "
                f"(its names start {mine}, theirs {theirs}); {how}. If these are the same images, {HOW_TO_MAP}"
            )


def _merge(per_rater: dict[str, dict], exports: list[RaterExport], default_complete: bool,
           image_dir: str | None, reports: dict) -> MergedImages:
    """One entry per image over all exports; sizes that disagree are an error."""
    keys = list(dict.fromkeys(k for e in exports for k in per_rater[e.rater]))
    raters = [e.rater for e in exports]
    filepaths, sizes, labels = [], [], []
    for key in keys:
        holders = [e.rater for e in exports if key in per_rater[e.rater]]
        found = {per_rater[r][key][1] for r in holders} - {None}
        if len(found) > 1:
            by = {r: per_rater[r][key][1] for r in holders}
            raise MultiRaterImportError(f"image {key!r} has different sizes in the raters' exports {by}: "
                                        "are these different images with the same file name?")
        sizes.append(found.pop() if found else None)
        if image_dir:
            filepaths.append(os.path.join(os.fspath(image_dir), key))
        else:
            paths = [per_rater[r][key][0] for r in holders]
            filepaths.append(next((p for p in paths if os.path.exists(p)), paths[0]))
        per = {}
        for e in exports:
            if key in per_rater[e.rater]:
                per[e.rater] = per_rater[e.rater][key][2]
            elif (e.complete if e.complete is not None else default_complete):
                carries = any("class" in v[2] for v in per_rater[e.rater].values())
                per[e.rater] = {"class": []} if carries else {}
        labels.append(per)
    for e in exports:
        missing = [k for k in keys if k not in per_rater[e.rater]]
        complete = e.complete if e.complete is not None else default_complete
        reports[e.rater].update({
            "images_missing": len(missing),
            "missing_examples": missing[:MAX_LISTED],
            "missing_means": "explicit absence (complete export)" if complete else "implicit absence (not assigned)",
        })
    return MergedImages(keys, filepaths, sizes, raters, labels)


def _check_classes(specs: list[RaterExport], classes: Any) -> None:
    """``classes`` is for YOLO exports without ``dataset.yaml``: given to any other export, it is refused."""
    def takes(s: RaterExport) -> bool:
        return (resolve_format(s.format)[0].__name__ == "YOLOv5Dataset" and os.path.isdir(os.fspath(s.path))
                and not os.path.isfile(os.path.join(os.fspath(s.path), "dataset.yaml")))

    for s in specs:
        if s.classes is not None and not takes(s):
            raise MultiRaterImportError(f"rater {s.rater!r}: classes apply to a YOLO export without dataset.yaml "
                                        f"(Label Studio's converter); {os.fspath(s.path)!r} is not one")
    if classes is not None and not any(takes(s) and s.classes is None for s in specs):
        raise MultiRaterImportError("classes apply to YOLO exports without dataset.yaml (Label Studio's converter) "
                                    "that do not give their own; no export here is one")


def _export_rules(rules: Counter, note: dict | None) -> Counter:
    """How the export's own names were renamed: a converter output's label files (their images were found by
    the rule), else the images' names."""
    return Counter((note or {}).get("label_files_renamed_by") or rules)


def _image_kinds(per_rater: dict, specs: list[RaterExport], reports: dict, label_type: str,
                 mask_targets: Mapping | None) -> dict:
    """The image-level kinds of the import (:func:`image_kind_specs`), the exports' declarations taken out of
    the reports."""
    declared = {r: rep.pop("_classes") for r, rep in reports.items()}
    targets = {r: rep.pop("_mask_targets") for r, rep in reports.items()}
    paths = {s.rater: os.fspath(s.path) for s in specs}
    return image_kind_specs(per_rater, paths, label_type, declared, targets, mask_targets, reports=reports)


def import_multi_rater(
    exports: Sequence[RaterExport | Mapping | Sequence],
    dataset_name: str,
    layout: str = "fields",
    field: str = "ground_truth",
    rater_attr: str = "annotator",
    complete: bool = False,
    image_dir: str | os.PathLike | None = None,
    overwrite: bool = False,
    persistent: bool = False,
    label_type: str = "auto",
    mask_targets: Mapping[Any, str] | None = None,
    name_map: str | os.PathLike | Mapping[str, str] | None = None,
    strip_prefix: str | None = None,
    upload_ids: bool = True,
    classes: Sequence[str] | str | None = None,
) -> tuple[fo.Dataset, dict]:
    """Merges one export per rater, read by FiftyOne's importers, into one multi-rater dataset.

    Args:
        exports: per rater ``{rater, path, format}`` (see :class:`RaterExport`
            for the optional ``image_dir``, ``complete`` and ``options``).
        dataset_name: the new dataset.
        layout: ``"fields"`` (one field per rater) or ``"attribute"`` (one
            ``field`` whose labels carry ``rater_attr``; the sample field
            ``raters`` is declared as the assignment).
        field: the label field of the ``"attribute"`` layout.
        rater_attr: the label attribute naming the rater in the ``"attribute"`` layout.
        complete: default for exports that do not say: an export covers
            every image, so an image it lacks is explicit absence.
        image_dir: where the images (or videos) are (file name = the matched
            name); default: where the first export that has the image points.
        overwrite: replace an existing dataset of that name (once the new
            one is complete).
        persistent: keep the dataset after the process exits.
        label_type: image-level classes (a classification tree, CVAT tags):
            ``"classification"`` (one per rater and image), ``"tags"`` or
            ``"auto"`` (tags when some rater gave an image several).
        mask_targets: ``{pixel value: class}`` of semantic masks, recorded as
            the mask fields' ``mask_targets`` (default: those the exports
            record, else none).
        name_map: an explicit mapping ``{export name: image name}`` (a dict,
            or a CSV or JSON file), tried first.
        strip_prefix: a regular expression removed from the start of file
            names (when it matches), tried next.
        upload_ids: remove Label Studio's upload id (``^[0-9a-f]{8}-``) from
            file names (default), tried last
            (:mod:`agreement.io.image_names`).
        classes: the class names of YOLO exports without ``dataset.yaml``
            (Label Studio's converter), in class id order, or the path of its
            ``classes.txt``; an export's own ``classes`` comes first.

    Video formats (``"cvat_video"``, ``"fiftyone_video"`` or a FiftyOne
    video labels dataset type) make a video dataset with frame fields
    (:mod:`agreement.fo.importers.video`: tracks keep their id as ``index``;
    the same video with different frame counts, rates or sizes across raters
    is an error); all exports must then be videos, matched by file name
    (``name_map`` and ``strip_prefix`` are refused; no upload id is removed).

    Returns:
        ``(dataset, report)``; ``report["per_rater"][rater]`` has ``images``,
        ``labels`` (``labels_by_kind``), ``images_missing``, the skipped
        labels and, for masks, ``mask_values``; ``report["label_fields"]``
        the kinds written and their fields' type; ``report["match"]`` the
        naming rule and, per rater, ``images``, ``matched`` (also in another
        rater's export), ``unmatched``, ``unmatched_examples`` and
        ``renamed_by`` (images per rule); ``report["converted"]`` how Label
        Studio converter outputs were read; ``report["warnings"]`` what the
        dataset cannot support (fewer than two raters).

    Raises:
        MultiRaterImportError: no or duplicate rater names, an unknown format,
            an export FiftyOne cannot read, two images of one export with the
            same file name, an export that matches no image of the others,
            sizes that disagree, two images of one export with the same name
            under the naming rule, a YOLO export without ``dataset.yaml`` and
            no ``classes``, several classes on an image with
            ``label_type="classification"``, a CVAT tag its file does not
            declare, a mask that is not a 2-D integer image or has values
            outside ``mask_targets``. Nothing is left behind.
    """
    check_layout(layout, field, rater_attr)
    if label_type not in LABEL_TYPES:
        raise ValueError(f"label_type must be one of {LABEL_TYPES}, got {label_type!r}")
    specs = [RaterExport.coerce(e, i) for i, e in enumerate(exports or [])]
    if not specs:
        raise MultiRaterImportError("no exports given: expected one {rater, path, format} per rater")
    check_rater_names([s.rater for s in specs])
    yolo_classes = classes
    dataset_types = {s.rater: resolve_format(s.format)[0] for s in specs}  # the dataset types, as the video import takes them
    for s in specs:
        _from_dir_kwargs(s)
    if fo.dataset_exists(dataset_name) and not overwrite:
        raise ValueError(f"dataset {dataset_name!r} already exists; pass overwrite=True or another dataset_name")
    videos = [r for r, c in dataset_types.items() if is_video_format(c)]
    if videos and len(videos) < len(specs):
        raise MultiRaterImportError(f"the exports of {videos} hold videos, those of "
                                    f"{[r for r in dataset_types if r not in videos]} images: import them separately")
    if videos:
        if label_type != "auto" or mask_targets:
            raise MultiRaterImportError("label_type and mask_targets apply to image-level labels, not to video exports")
        if name_map or strip_prefix or yolo_classes is not None:
            raise MultiRaterImportError("name_map, strip_prefix and classes apply to image exports, not to video "
                                        "exports (videos are matched by file name)")
        dataset, report = import_video_exports(specs, dataset_types, dataset_name, layout, field, rater_attr,
                                               complete=bool(complete), video_dir=image_dir, overwrite=overwrite,
                                               persistent=persistent, load=_load, check_overlap=_check_overlap)
        return dataset, {**report, "warnings": rater_warnings([s.rater for s in specs])}
    per_rater: dict[str, dict] = {}
    reports: dict[str, dict] = {}
    temps: list[fo.Dataset] = []
    notes: dict[str, Any] = {}
    rule = name_rule(name_map=name_map, strip_prefix=strip_prefix, upload_ids=upload_ids)
    image_folder = os.fspath(image_dir) if image_dir is not None else None
    _check_classes(specs, yolo_classes)
    try:
        for s in specs:
            tmp = _load(s, temporary_name(dataset_name, "rater"), rule, image_folder, yolo_classes, notes)
            temps.append(tmp)
            per_rater[s.rater], reports[s.rater] = _extract(s, tmp, rule)
        match = match_report({r: {k: os.path.basename(v[0]) for k, v in imgs.items()} for r, imgs in per_rater.items()},
                             {r: _export_rules(rep.pop("_rules"), notes.get(r)) for r, rep in reports.items()}, rule)
        _check_overlap(per_rater, specs, rule)
        kind_specs = _image_kinds(per_rater, specs, reports, label_type, mask_targets)
        merged = _merge(per_rater, specs, bool(complete), image_folder, reports)
        merged.kind_specs = kind_specs
    finally:
        for tmp in temps:
            discard_dataset(tmp)
    report = {"images": len(merged.keys), "raters": merged.raters, "per_rater": reports,
              "label_fields": {k: s.doc_type.__name__ for k, s in kind_specs.items()}, "match": match,
              "converted": notes, "warnings": rater_warnings(merged.raters)}
    dataset = write_merged_dataset(merged, dataset_name, layout, field, rater_attr, overwrite, persistent=persistent,
                                   source="import_multi_rater", report=report)
    return dataset, report
