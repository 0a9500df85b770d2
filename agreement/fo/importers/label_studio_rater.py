"""One annotator of a Label Studio JSON export as one rater's export of ``import_multi_rater`` (``format="label_studio"``).

A Label Studio project exported as JSON (filtered to one annotator, or with
``options={"annotator": <id or email>}`` choosing one) meets the other raters'
exports (CVAT, COCO, ...) by the import's name rule
(:mod:`agreement.io.image_names`: the upload id is removed by default).
The file is parsed by :mod:`agreement.io.labelstudio` and its regions become
the labels :func:`agreement.fo.importers.label_studio.import_label_studio`
makes (rectangles and polygons' boxes, polygons, keypoints), in a temporary
dataset that the import reads like any other export. The tasks the annotator
did not submit are not in the rater's export (implicit absence); an
annotation with no region is explicit absence. ``Choices`` answers are not
imported here (``import_label_studio`` imports them): their count is
reported.

``options``: ``annotator`` (the annotator's id, email or, with
``rater_names``, name), ``rater_from`` (``"updated_by_fallback"``: an
annotation without ``completed_by`` is its ``updated_by``'s), ``image_key``,
``rotated``, ``rater_names`` (as :func:`import_label_studio` takes them).
"""

from __future__ import annotations

import os
from typing import Any

import fiftyone as fo

from agreement.fo.importers.common import KINDS, MultiRaterImportError
from agreement.fo.importers.label_studio import region_labels
from agreement.io.labelstudio import read_label_studio

__all__ = ["LABEL_STUDIO_FORMAT", "load_label_studio_rater"]

LABEL_STUDIO_FORMAT = "label_studio"
_OPTIONS = ("annotator", "rater_from", "image_key", "rotated", "rater_names")
#: list attribute -> (field name, label list class) of the kinds written: the importers' instance kinds
#: (:data:`agreement.fo.importers.common.KINDS`, from the declared label types).
_FIELDS = {kind: ("labels" + spec.suffix, spec.doc_type) for kind, spec in KINDS.items()}


def _annotator(raters: list[str], wanted: Any, who: str, path: str) -> str:
    if wanted is not None:
        if str(wanted) not in raters:
            raise MultiRaterImportError(f"{who}: annotator {wanted!r} has no annotation in {path!r} (its annotators: "
                                        f"{raters})")
        return str(wanted)
    if len(raters) != 1:
        raise MultiRaterImportError(
            f"{who}: the Label Studio export {path!r} has {len(raters)} annotators ({raters}); choose one with "
            "options={'annotator': <id or email>}, or import the whole file with import_label_studio")
    return raters[0]


def load_label_studio_rater(export: Any, tmp_name: str, image_dir: str | None, notes: dict | None) -> fo.Dataset:
    """A temporary dataset of one annotator's annotations in a Label Studio JSON export.

    Samples: the tasks the annotator submitted, at ``image_dir`` (the
    export's own, else the import's, else the JSON file's folder) joined with
    the image's name as Label Studio wrote it; fields ``labels`` (boxes),
    ``labels_polygons`` and ``labels_keypoints`` when the annotator drew such
    regions. ``notes[rater]`` gets the annotator, the counts of skipped
    regions, of choices not imported and of annotations whose rater is their
    ``updated_by``.

    Raises:
        MultiRaterImportError: unknown options, an annotator that is not in
            the file, several annotators and none chosen.
        agreement.core.validation.AnnotationError: a malformed export (as
            :func:`agreement.io.labelstudio.parse_label_studio` says).
    """
    path = os.fspath(export.path)
    who = f"rater {export.rater!r}"
    options = dict(export.options or {})
    unknown = set(options) - set(_OPTIONS)
    if unknown:
        raise MultiRaterImportError(f"{who}: unknown option(s) {sorted(unknown)} for a Label Studio export; "
                                    f"expected {list(_OPTIONS)}")
    parsed = read_label_studio(path, image_key=options.get("image_key"), rotated=options.get("rotated", "error"),
                               rater_names=options.get("rater_names"),
                               rater_from=options.get("rater_from", "completed_by"))
    annotator = _annotator(list(parsed.raters), options.get("annotator"), who, path)
    folder = os.fspath(export.image_dir or image_dir or os.path.dirname(os.path.abspath(path)))
    mine = [(task, region_labels(parsed.regions[(t, annotator)])) for t, task in enumerate(parsed.tasks)
            if (t, annotator) in parsed.regions]
    # the bare kind (boxes) always, the others where some task has them
    kinds = [k for k, spec in KINDS.items() if not spec.suffix or any(labels.get(k) for _, labels in mine)]
    samples = []
    for task, labels in mine:
        sample = fo.Sample(filepath=os.path.join(folder, task["file_name"]))
        if task["width"] and task["height"]:
            sample.metadata = fo.ImageMetadata(width=int(round(task["width"])), height=int(round(task["height"])))
        for kind in kinds:
            name, doc = _FIELDS[kind]
            sample[name] = doc(**{kind: labels[kind]})
        samples.append(sample)
    dataset = fo.Dataset(tmp_name)
    try:
        for kind in kinds:
            name, doc = _FIELDS[kind]
            dataset.add_sample_field(name, fo.EmbeddedDocumentField, embedded_doc_type=doc)
        dataset.add_samples(samples, progress=False)
    except BaseException:
        dataset.delete()
        raise
    if notes is not None:
        stats = parsed.per_rater.get(annotator, {})
        answered = sum(1 for (t, r), per in parsed.choices.items() if r == annotator and per)
        notes[export.rater] = {"layout": "Label Studio JSON export", "annotator": annotator,
                               "skipped": dict(stats.get("skipped", {})), "choices_not_imported": answered,
                               "fell_back_to_updated_by": int(stats.get("fell_back_to_updated_by", 0))}
    return dataset
