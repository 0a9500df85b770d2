"""Label Studio converter outputs that FiftyOne's importers do not read as they are, made readable.

Label Studio's converter (``label-studio-converter``, and the ``converter``
of ``label-studio-sdk``) writes

* **YOLO** as ``labels/<image stem>.txt``, ``classes.txt`` and ``notes.json``,
  with ``images/`` only when it could download the images, and no
  ``dataset.yaml``: FiftyOne's ``YOLOv5Dataset`` needs that file. The export
  is read by FiftyOne's ``YOLOv4Dataset`` importer instead (it takes the
  classes and a labels folder), given the class names (``classes``: the names
  in order, or the path of the converter's ``classes.txt``; a ``classes.txt``
  or ``obj.names`` in the export is used when ``classes`` is not given, and
  the report says so). The images are looked for in the export's
  ``image_dir``, the import's ``image_dir`` and the export's ``images/``, each
  paired with its label file by the import's name rule
  (:mod:`agreement.io.image_names`): ``labels/01b89637-photo.txt`` is
  the label file of ``photo.jpg``. A label file with no image is an error
  (YOLO's file names have no extension, so the image must be found).
* **VOC** as ``Annotations/<image stem>.xml`` (and ``images/`` only when
  downloaded): read by FiftyOne's ``VOCDetectionDataset`` importer with
  ``labels_path`` the ``Annotations`` folder and a data map from each file's
  ``<filename>`` to ``image_dir`` (default: the export's ``images/``) joined
  with the image's matched name. The images need not exist: VOC files give
  each image's size.

Nothing here parses a label: FiftyOne's importers do.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections import Counter
from typing import Any, Callable, Sequence
from xml.etree import ElementTree

from agreement.fo.importers.common import MultiRaterImportError
from agreement.io.image_names import NameRule

__all__ = ["converted_layout", "read_classes"]

_CLASS_FILES = ("classes.txt", "obj.names")
MAX_LISTED = 5


def read_classes(value: Sequence[str] | str | os.PathLike, who: str) -> list[str]:
    """Class names given as a list, or as the path of a file of one name per line (``classes.txt``)."""
    if isinstance(value, (str, os.PathLike)):
        path = os.fspath(value)
        if not os.path.isfile(path):
            raise MultiRaterImportError(f"{who}: classes={path!r} is not a file; give the class names in order, "
                                        "or the path of the converter's classes.txt")
        with open(path, encoding="utf-8") as f:
            names = [line.strip() for line in f if line.strip()]
    else:
        names = [str(c) for c in value]
    if not names or len(set(names)) != len(names):
        raise MultiRaterImportError(f"{who}: classes must be distinct class names, in the order of the YOLO class "
                                    f"ids; got {names!r}")
    return names


def _yolo(path: str, who: str, rule: NameRule, image_dirs: list[str], classes: Any, tmp: str) -> tuple[str, dict, dict]:
    labels_dir = os.path.join(path, "labels") if os.path.isdir(os.path.join(path, "labels")) else path
    stems = sorted(os.path.splitext(f)[0] for f in os.listdir(labels_dir) if f.endswith(".txt") and f not in _CLASS_FILES)
    source = "the classes parameter"
    if classes is None:
        found = next((os.path.join(path, f) for f in _CLASS_FILES if os.path.isfile(os.path.join(path, f))), None)
        if found is None:
            raise MultiRaterImportError(
                f"{who}: YOLO export {path!r} has no dataset.yaml and no classes.txt: give classes= (the class names "
                "in the order of the class ids, or the path of the classes.txt Label Studio's converter wrote)")
        classes, source = found, os.path.basename(found) + " in the export"
    names = read_classes(classes, who)
    images: dict[str, str] = {}
    for d in image_dirs:
        for f in sorted(os.listdir(d)) if os.path.isdir(d) else []:
            if os.path.isfile(os.path.join(d, f)) and not f.endswith(".txt"):
                images.setdefault(os.path.splitext(rule.key(f)[0])[0], os.path.join(d, f))
    pairs: dict[str, str] = {}
    lost: list[str] = []
    renamed: Counter[str] = Counter()
    for s in stems:
        key, how = rule.stem_key(s)
        image = images.get(key)
        (lost.append(s) if image is None else pairs.setdefault(image, s))
        renamed[how] += image is not None
    if lost:
        raise MultiRaterImportError(
            f"{who}: {len(lost)} YOLO label file(s) of {path!r} have no image ({lost[:MAX_LISTED]}; looked in "
            f"{image_dirs}, {rule.describe()}): give image_dir= the folder of the images (YOLO names no extension)")
    links = os.path.join(tmp, "labels")
    os.makedirs(links)
    for image, s in pairs.items():
        target = os.path.join(links, os.path.splitext(os.path.basename(image))[0] + ".txt")
        if os.path.exists(target):
            raise MultiRaterImportError(f"{who}: two images named {os.path.basename(image)!r} (without extension) "
                                        f"in {image_dirs}: YOLO pairs images and label files by that name")
        shutil.copyfile(os.path.join(labels_dir, s + ".txt"), target)
    listing = os.path.join(tmp, "images.txt")
    with open(listing, "w", encoding="utf-8") as listing_file:
        listing_file.writelines(p + "\n" for p in pairs)
    kwargs = {"images_path": listing, "labels_path": links, "classes": names}
    return "YOLOv4Dataset", kwargs, {"layout": "Label Studio YOLO (no dataset.yaml)", "classes_from": source,
                                     "label_files_renamed_by": dict(renamed)}


def _voc(path: str, rule: NameRule, image_dir: str | None) -> tuple[str, dict, dict]:
    annotations = os.path.join(path, "Annotations")
    data_dir = image_dir or os.path.join(path, "images")
    data_map: dict[str, str] = {}
    renamed: Counter[str] = Counter()
    for f in sorted(os.listdir(annotations)):
        if not f.endswith(".xml"):
            continue
        try:
            name = ElementTree.parse(os.path.join(annotations, f)).getroot().findtext("filename")
        except ElementTree.ParseError:
            continue  # FiftyOne's importer says why
        stem = os.path.splitext(f)[0]
        name = name or stem
        key, how = rule.key(name)
        renamed[how] += 1
        data_map[stem + os.path.splitext(name)[1]] = os.path.join(data_dir, key)
    kwargs = {"labels_path": annotations, "data_path": data_map}
    return "VOCDetectionDataset", kwargs, {"layout": "VOC Annotations/ (Label Studio converter)", "images": data_dir,
                                           "label_files_renamed_by": dict(renamed)}


def converted_layout(export: Any, type_name: str, rule: NameRule, image_dir: str | None,
                     classes: Any) -> tuple[str, dict, dict, Callable[[], None]] | None:
    """``(dataset type name, importer kwargs, note, cleanup)`` for a converter output, else ``None``.

    Args:
        export: the :class:`~agreement.fo.importers.multi_rater.RaterExport`.
        type_name: the FiftyOne dataset type its format resolves to.
        rule: the import's name rule.
        image_dir: the import's image folder (the export's own comes first).
        classes: the import's class names for YOLO (the export's own come first).
    """
    path = os.fspath(export.path)
    who = f"rater {export.rater!r}"
    own = os.fspath(export.image_dir) if export.image_dir else None
    if not os.path.isdir(path):
        return None
    if type_name == "YOLOv5Dataset" and not os.path.isfile(os.path.join(path, "dataset.yaml")):
        tmp = tempfile.mkdtemp(prefix="iaa-yolo-")
        try:
            dirs = [d for d in (own, image_dir, os.path.join(path, "images")) if d]
            chosen = export.classes if export.classes is not None else classes
            name, kwargs, note = _yolo(path, who, rule, dirs, chosen, tmp)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return name, kwargs, note, lambda: shutil.rmtree(tmp, ignore_errors=True)
    if (type_name == "VOCDetectionDataset" and os.path.isdir(os.path.join(path, "Annotations"))
            and not os.path.isdir(os.path.join(path, "labels"))):
        name, kwargs, note = _voc(path, rule, own or (os.fspath(image_dir) if image_dir else None))
        return name, kwargs, note, lambda: None
    return None
