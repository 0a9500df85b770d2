"""One video export per rater (CVAT for video 1.1, or any FiftyOne video labels format) merged by video.

:func:`import_multi_rater` sends video formats here. Each rater's export is
read by FiftyOne's own importer (``fo.Dataset.from_dir``, e.g.
``CVATVideoDataset``: ``data/`` videos and ``labels/<video>.xml``) into a
temporary dataset; the videos are matched across raters by file name and
written into one video dataset:

* frame labels: ``frames.<rater>`` (``Detections``; ``_polygons``
  ``Polylines`` and ``_keypoints`` ``Keypoints`` when the exports have
  them), or in the attribute layout ``frames.<field>`` whose labels carry
  ``<rater_attr>``; every label keeps FiftyOne's ``index``, the CVAT track id;
* each sample's ``metadata``: a ``VideoMetadata`` read from the video file
  with OpenCV (frame count, frame rate, size; FiftyOne's own
  ``compute_metadata()`` needs ``ffprobe``), else the frame count and size
  the CVAT XML declares (``<size>``, ``<original_size>``);
* temporal detections (a sample-level ``TemporalDetection(s)`` field of the
  export, e.g. FiftyOne's video labels format's events): ``<rater>_segments``,
  or ``<field>_segments`` whose labels carry ``<rater_attr>``
  (``TemporalDetections``; a support outside ``[1, frames]`` is an error);
* ``raters``: the raters assigned to the video (recorded as the assignment
  in the attribute layout).

Absence, as for images: a video in a rater's export was labelled by that
rater, so each of its frames gets the rater's labels or an empty list
(explicit absence); a video missing from a rater's export is implicit
absence (``None`` on every frame) unless the export is ``complete``.

Checks. The same video (file name) with different frame counts, frame
rates or frame sizes in two raters' exports is an error naming the video
and each rater's value (two different videos with one name, or a
re-encoded copy); so is a label on a frame past the video's end. A video
whose frame count neither the file nor the XML tells gets the last
labelled frame as its count, reported in ``report["per_rater"][rater]
["frame_count_from_labels"]``.

CVAT gives each ``<track>`` one label: a box keeps its track's label and
its track id (``index``) on every frame, so an exporter that writes a
track whose boxes carry several classes (an identity switch between
objects of different classes) keeps one of them (FiftyOne's keeps the
last).

The frames are written in bulk (:mod:`agreement.fo.storage.frame_labels`), one
video at a time straight from the temporary datasets' frame documents.
"""

from __future__ import annotations

import math
import mimetypes
import os
from typing import Any, Callable, Iterator, Sequence
from xml.etree import ElementTree

import cv2

import fiftyone as fo
import fiftyone.types as fot

from agreement.core.gc_pause import gc_paused
from agreement.fo.importers.coco import INFO_KEY, discard_dataset, swap_in, temporary_name
from agreement.fo.importers.common import IMPORT_INFO_KEY, KINDS, MultiRaterImportError, file_key, kind_fields
from agreement.fo.importers.media_types import set_empty_dataset_media_type
from agreement.fo.kinds import instance_lists
from agreement.fo.storage.assignment import declare_raters_field
from agreement.fo.storage.frame_labels import declare_frame_field, insert_frames

__all__ = ["is_video_format", "read_video_metadata", "import_video_exports", "VIDEO_FORMATS"]

#: format name -> (FiftyOne dataset type, importer keyword arguments), merged into ``FORMATS``.
VIDEO_FORMATS: dict[str, tuple[str, dict]] = {
    "cvat_video": ("CVATVideoDataset", {}),
    "fiftyone_video": ("FiftyOneVideoLabelsDataset", {}),
}
#: the frame label lists read, by their list attribute (agreement.fo.kinds): the list and its class name
_KIND_OF = instance_lists()
_LIST = {attr: attr for attr in _KIND_OF.values()}
_CLS = {attr: t.__name__ for t, attr in _KIND_OF.items()}
_BUILTIN_ATTRS = {"id", "_id", "tags", "attributes", "label", "bounding_box", "mask", "mask_path", "confidence",
                  "index", "points", "closed", "filled", "instance"}
MAX_LISTED = 10


def is_video_format(cls: type) -> bool:
    """Whether a FiftyOne dataset type holds videos with frame labels."""
    return isinstance(cls, type) and issubclass(cls, fot.VideoLabelsDataset)


def read_video_metadata(path: str) -> dict | None:
    """``{"frames", "fps", "width", "height"}`` of a video file read with OpenCV, or ``None`` if unreadable.

    The frame count is the container's (``CAP_PROP_FRAME_COUNT``), as
    ``ffprobe`` reports it; ``fps`` is ``None`` when the file does not say."""
    cap = cv2.VideoCapture(os.fspath(path))
    try:
        if not cap.isOpened():
            return None
        frames = int(round(cap.get(cv2.CAP_PROP_FRAME_COUNT)))
        fps = float(cap.get(cv2.CAP_PROP_FPS))
        width, height = int(cap.get(cv2.CAP_PROP_FRAME_WIDTH)), int(cap.get(cv2.CAP_PROP_FRAME_HEIGHT))
    finally:
        cap.release()
    if frames <= 0 or width <= 0 or height <= 0:
        return None
    return {"frames": frames, "fps": fps if math.isfinite(fps) and fps > 0 else None, "width": width, "height": height}


def _cvat_declared(export_path: str, filepath: str, labels_dir: str | None) -> dict:
    """Frame count and size a CVAT video XML declares for the video (``{}`` when none is found)."""
    stem = os.path.splitext(os.path.basename(filepath))[0]
    folder = labels_dir or os.path.join(export_path, "labels")
    xml = os.path.join(folder, stem + ".xml")
    try:
        task = ElementTree.parse(xml).getroot().find("meta/task")
    except (OSError, ElementTree.ParseError):
        return {}
    if task is None:
        return {}
    out = {}
    size, width, height = task.findtext("size"), task.findtext("original_size/width"), task.findtext(
        "original_size/height")
    if size and size.strip().isdigit() and int(size) > 0:
        out["frames"] = int(size)
    if width and height and width.strip().isdigit() and height.strip().isdigit():
        out["width"], out["height"] = int(width), int(height)
    return out


def _label_fields(ds: fo.Dataset, rater: str, path: str) -> tuple[dict[str, str], str | None, dict[str, int]]:
    """``({frame field: kind}, segments field or None, {skipped label type: count})`` of a rater's temporary
    dataset."""
    fields: dict[str, str] = {}
    segments: str | None = None
    skipped: dict[str, int] = {}
    for name, fld in (ds.get_frame_field_schema() or {}).items():
        doc = getattr(fld, "document_type", None)
        if doc in _KIND_OF:
            if _KIND_OF[doc] in fields.values():
                raise MultiRaterImportError(f"rater {rater!r}: {path!r} gives several {_KIND_OF[doc]} frame fields "
                                            f"({sorted(fields)}, {name!r}); import one label type")
            fields[name] = _KIND_OF[doc]
        elif doc is not None and issubclass(doc, fo.Label):
            n = ds.count(f"frames.{name}")
            if n:
                skipped[f"frame {doc.__name__} labels"] = n
    for name, fld in ds.get_field_schema().items():
        doc = getattr(fld, "document_type", None)
        if doc in (fo.TemporalDetections, fo.TemporalDetection):
            if segments is not None:
                raise MultiRaterImportError(f"rater {rater!r}: {path!r} gives several temporal detection fields "
                                            f"({segments!r}, {name!r}); import one")
            segments = name
        elif doc is not None and issubclass(doc, fo.Label):
            n = ds.count(name)
            if n:
                skipped[f"sample {doc.__name__} labels"] = n
    return fields, segments, skipped


def _segment_labels(value, rater: str, video: str, frames: int) -> list:
    """The ``TemporalDetection`` labels of a sample value, each ``support`` checked against the frame count."""
    if value is None:
        return []
    labels = list(value.detections) if isinstance(value, fo.TemporalDetections) else [value]
    for lab in labels:
        first, last = (list(lab.support) + [None, None])[:2] if lab.support is not None else (None, None)
        if first is None or last is None or not 1 <= first <= last <= frames:
            raise MultiRaterImportError(
                f"rater {rater!r}: video {video!r} has a temporal detection {lab.label!r} with support "
                f"{lab.support} that is not [first, last] frames with 1 <= first <= last <= {frames}")
    return labels


def _label_attributes(ds: fo.Dataset, fields: dict[str, str]) -> dict[str, dict[str, Any]]:
    """``{kind: {attribute: field}}``: the labels' own attributes (CVAT's), to declare on the merged fields."""
    schema = ds.get_frame_field_schema(flat=True) or {}
    out: dict[str, dict[str, Any]] = {}
    for fname, kind in fields.items():
        prefix = f"{fname}.{_LIST[kind]}."
        for path, fld in schema.items():
            attr = path[len(prefix):] if path.startswith(prefix) else ""
            if attr and "." not in attr and attr not in _BUILTIN_ATTRS:
                out.setdefault(kind, {})[attr] = fld
    return out


def _extract(export, ds: fo.Dataset, cls: type) -> tuple[dict, dict, dict]:
    """``({video: info}, report, {kind: {attribute: field}})`` of one rater's temporary dataset.

    ``info``: ``sample_id``, ``filepath``, ``frames``, ``fps``, ``width``, ``height``, ``source`` (of the
    frame count: ``"video file"``, ``"labels file"`` or ``"labels"``, the last labelled frame),
    ``frames_labelled`` and ``segments`` (the ``TemporalDetection`` labels, or ``None``)."""
    path = os.fspath(export.path)
    fields, seg_field, skipped = _label_fields(ds, export.rater, path)
    seg_values = ds.values(seg_field) if seg_field else None
    labelled = [{"$match": {"$or": [{f: {"$ne": None}} for f in fields]}}] if fields else []
    last = {d["_id"]: (d["last"], d["n"]) for d in ds._frame_collection.aggregate(
        labelled + [{"$group": {"_id": "$_sample_id", "last": {"$max": "$frame_number"}, "n": {"$sum": 1}}}])}
    counts = {kind: ds.count(f"frames.{f}.{_LIST[kind]}") for f, kind in fields.items()}
    if seg_field:
        counts["segments"] = ds.count(f"{seg_field}.detections" if isinstance(
            ds.get_field(seg_field), fo.EmbeddedDocumentField) and ds.get_field(seg_field).document_type
            is fo.TemporalDetections else seg_field)
    labels_dir = os.fspath(export.options["labels_path"]) if export.options and "labels_path" in export.options else None
    videos: dict[str, dict] = {}
    guessed = []
    for i, (sid, filepath) in enumerate(zip(*ds.values(["_id", "filepath"]), strict=False)):
        key = file_key(filepath)
        if key in videos:
            raise MultiRaterImportError(f"rater {export.rater!r}: {path!r} has two videos named {key!r} "
                                        f"({videos[key]['filepath']!r} and {filepath!r}); videos are matched across "
                                        "exports by file name")
        meta = read_video_metadata(filepath)
        source = "video file"
        if meta is None:
            meta = _cvat_declared(path, filepath, labels_dir) if cls.__name__ == "CVATVideoDataset" else {}
            source = "labels file" if "frames" in meta else "labels"
        labelled, n_frames = last.get(sid, (0, 0))
        if "frames" not in meta:
            meta["frames"] = max(labelled, 1)
            guessed.append(key)
        if labelled > meta["frames"]:
            raise MultiRaterImportError(
                f"rater {export.rater!r}: video {key!r} has labels on frame {labelled}, but the video has "
                f"{meta['frames']} frames (from its {source}); is the export for another video of that name?")
        videos[key] = {"sample_id": sid, "filepath": filepath, "frames": meta["frames"], "fps": meta.get("fps"),
                       "width": meta.get("width"), "height": meta.get("height"), "source": source,
                       "frames_labelled": n_frames,
                       "segments": _segment_labels(seg_values[i], export.rater, key, meta["frames"])
                       if seg_values is not None else None}
    report = {
        "path": path, "format": cls.__name__, "videos": len(videos), "labels": int(sum(counts.values())),
        "labels_by_kind": {k: v for k, v in counts.items() if v}, "skipped": skipped,
        "frames_labelled": int(sum(v["frames_labelled"] for v in videos.values())),
        "frame_count_from_labels": guessed[:MAX_LISTED], "frame_count_from_labels_total": len(guessed),
        "_fields": fields,
    }
    return videos, report, _label_attributes(ds, fields)


def _check_same_video(key: str, holders: dict[str, dict]) -> dict:
    """The video's metadata, the same in every rater's export; an error names the video and each rater's value.

    A frame count taken from a rater's last labelled frame (the export did not
    tell it) only has to fit within the others' count."""
    told = {r: v for r, v in holders.items() if v["source"] != "labels"}
    guessed = {r: v["frames"] for r, v in holders.items() if v["source"] == "labels"}
    for what, name in (("frames", "frame counts"), ("width", "frame widths"), ("height", "frame heights")):
        found = {r: v[what] for r, v in (told if what == "frames" else holders).items() if v[what] is not None}
        if len(set(found.values())) > 1:
            raise MultiRaterImportError(
                f"video {key!r} has different {name} in the raters' exports {found}: are these different videos "
                "with the same file name, or re-encoded copies? Give every rater the same video file "
                "(e.g. image_dir=<one folder of videos>)")
    rates = {r: v["fps"] for r, v in holders.items() if v["fps"] is not None}
    if rates and max(rates.values()) - min(rates.values()) > 1e-3 * max(rates.values()):
        raise MultiRaterImportError(
            f"video {key!r} has different frame rates in the raters' exports {rates}: are these different videos "
            "with the same file name, or re-encoded copies? Give every rater the same video file "
            "(e.g. image_dir=<one folder of videos>)")
    frames = next(iter(told.values()))["frames"] if told else max(guessed.values())
    past = {r: n for r, n in guessed.items() if n > frames}
    if past:
        r, n = next(iter(past.items()))
        raise MultiRaterImportError(f"rater {r!r}: video {key!r} has labels on frame {n}, but the video has {frames} "
                                    f"frames (from the exports of {sorted(told)})")
    return {"frames": frames, "fps": next(iter(rates.values()), None),
            "width": next((v["width"] for v in holders.values() if v["width"]), None),
            "height": next((v["height"] for v in holders.values() if v["height"]), None)}


def _merge(per_rater: dict[str, dict], exports: list, default_complete: bool, reports: dict) -> list[dict]:
    """One entry per video over all exports: ``key``, ``meta``, ``holders`` ({rater: info}) and ``assigned``."""
    keys = list(dict.fromkeys(k for e in exports for k in per_rater[e.rater]))
    merged = []
    for key in keys:
        holders = {e.rater: per_rater[e.rater][key] for e in exports if key in per_rater[e.rater]}
        meta = _check_same_video(key, holders)
        assigned = [e.rater for e in exports if e.rater in holders
                    or (e.complete if e.complete is not None else default_complete)]
        merged.append({"key": key, "meta": meta, "holders": holders, "assigned": assigned})
    for e in exports:
        missing = [k for k in keys if k not in per_rater[e.rater]]
        complete = e.complete if e.complete is not None else default_complete
        reports[e.rater].update({
            "videos_missing": len(missing), "missing_examples": missing[:MAX_LISTED],
            "missing_means": "explicit absence (complete export)" if complete else "implicit absence (not assigned)",
        })
    return merged


def _video_sample(entry: dict, video_dir: str | None, segments: dict[str, str] | None, layout: str,
                  rater_attr: str) -> fo.Sample:
    key, meta = entry["key"], entry["meta"]
    paths = [h["filepath"] for h in entry["holders"].values()]
    path = os.path.join(video_dir, key) if video_dir else next((p for p in paths if os.path.exists(p)), paths[0])
    sample = fo.Sample(filepath=path, raters=list(entry["assigned"]))
    fps = meta["fps"]
    size = os.path.getsize(path) if os.path.isfile(path) else None
    sample.metadata = fo.VideoMetadata(
        total_frame_count=meta["frames"], frame_rate=fps, frame_width=meta["width"], frame_height=meta["height"],
        duration=meta["frames"] / fps if fps else None, size_bytes=size, mime_type=mimetypes.guess_type(path)[0])
    if segments:  # an assigned rater without segments of this video gave none (explicit absence)
        per = {r: [fo.TemporalDetection.from_dict(lab.to_dict()) for lab in
                   (entry["holders"][r]["segments"] or [] if r in entry["holders"] else [])]
               for r in entry["assigned"]}
        if layout == "fields":
            for r, labels in per.items():
                sample[segments[r]] = fo.TemporalDetections(detections=labels)
        elif entry["assigned"]:
            merged = [_set_rater_label(lab, rater_attr, r, key) for r, labels in per.items() for lab in labels]
            sample[segments[entry["assigned"][0]]] = fo.TemporalDetections(detections=merged)
    return sample


def _set_rater_label(label: fo.Label, rater_attr: str, rater: str, video: str) -> fo.Label:
    existing = label[rater_attr] if label.has_field(rater_attr) else None
    if existing is not None and existing != rater:
        raise MultiRaterImportError(f"video {video!r}: a temporal detection of rater {rater!r} already has the "
                                    f"attribute {rater_attr}={existing!r}; choose another rater_attr")
    label[rater_attr] = rater
    return label


def _rater_frames(temps: dict[str, fo.Dataset], fields: dict[str, dict[str, str]], rater: str,
                  sample_id) -> dict[int, dict[str, list]]:
    """``{frame number: {kind: [stored labels]}}`` of one rater's video, from its temporary dataset."""
    src = fields[rater]
    out: dict[int, dict[str, list]] = {}
    cursor = temps[rater]._frame_collection.find({"_sample_id": sample_id},
                                                 {"frame_number": 1, **{f: 1 for f in src}})
    for doc in cursor:
        per = out.setdefault(int(doc["frame_number"]), {})
        for f, kind in src.items():
            value = doc.get(f)
            if value:
                per.setdefault(kind, []).extend(value.get(_LIST[kind]) or [])
    return out


def _set_rater(label: dict, rater_attr: str, rater: str, video: str, frame: int) -> dict:
    existing = label.get(rater_attr)
    if existing is not None and existing != rater:
        raise MultiRaterImportError(
            f"video {video!r}, frame {frame}: a label of rater {rater!r} already has the attribute "
            f"{rater_attr}={existing!r}; choose another rater_attr")
    label[rater_attr] = rater
    return label


def _frame_docs(merged: list[dict], sample_ids: Sequence[str], temps: dict, src_fields: dict, out_fields: dict,
                kinds: list[str], layout: str, rater_attr: str) -> Iterator[dict]:
    """Every frame of every merged video: each assigned rater's labels of each kind (possibly none)."""
    from bson import ObjectId

    for entry, sid in zip(merged, sample_ids, strict=False):
        oid = ObjectId(sid)
        per_rater = {r: _rater_frames(temps, src_fields, r, h["sample_id"]) for r, h in entry["holders"].items()}
        for t in range(1, entry["meta"]["frames"] + 1):
            doc: dict = {"_sample_id": oid, "frame_number": t}
            for kind in kinds:
                if layout == "fields":
                    for r in entry["assigned"]:
                        labels = per_rater.get(r, {}).get(t, {}).get(kind, [])
                        doc[out_fields[r][kind]] = {"_cls": _CLS[kind], _LIST[kind]: labels}
                else:
                    labels = [_set_rater(lab, rater_attr, r, entry["key"], t) for r in entry["assigned"]
                              for lab in per_rater.get(r, {}).get(t, {}).get(kind, [])]
                    doc[out_fields[entry["assigned"][0]][kind]] = {"_cls": _CLS[kind], _LIST[kind]: labels}
            yield doc


def _declare(dataset: fo.Dataset, kinds: list[str], out_fields: dict, segments: dict | None, attrs: dict,
             layout: str, rater_attr: str) -> None:
    """The frame label fields (with the exports' own label attributes), the segments and ``raters`` fields."""
    label_attrs = {k: {a: f for per in attrs.values() for a, f in per.get(k, {}).items()} for k in kinds}
    for kind in kinds:
        extra = {a: _field_spec(f) for a, f in label_attrs[kind].items()}
        if layout == "attribute":
            extra[rater_attr] = (fo.StringField, {})
        for fname in dict.fromkeys(per[kind] for per in out_fields.values()):
            declare_frame_field(dataset, fname, KINDS[kind].doc_type)
            for attr, (ftype, kwargs) in extra.items():
                dataset.add_frame_field(f"{fname}.{_LIST[kind]}.{attr}", ftype, **kwargs)
    for sname in dict.fromkeys((segments or {}).values()):
        dataset.add_sample_field(sname, fo.EmbeddedDocumentField, embedded_doc_type=fo.TemporalDetections)
        if layout == "attribute":
            dataset.add_sample_field(f"{sname}.detections.{rater_attr}", fo.StringField)
    dataset.add_sample_field("raters", fo.ListField, subfield=fo.StringField)


def _write(merged: list[dict], raters: list[str], temps: dict, reports: dict, attrs: dict, name: str, layout: str,
           field: str, rater_attr: str, video_dir: str | None, report: dict) -> fo.Dataset:
    """The merged videos as a new dataset under a temporary name (deleted again if writing fails)."""
    src_fields = {r: reports[r].pop("_fields") for r in raters}
    found = {k for f in src_fields.values() for k in f.values()}
    kinds = [k for k in KINDS if k == "detections" or k in found]
    out_fields = kind_fields(raters, kinds, layout, field)
    taken = sorted({f for per in out_fields.values() for f in per.values()} & {"frame_number", "id"})
    if taken:
        raise MultiRaterImportError(f"frame field name(s) {taken} are FiftyOne's own frame fields: rename the rater")
    has_segments = any(h["segments"] is not None for e in merged for h in e["holders"].values())
    segments = {r: f"{per['detections']}_segments" for r, per in out_fields.items()} if has_segments else None
    dataset = fo.Dataset(temporary_name(name, "import"), persistent=False)
    try:
        set_empty_dataset_media_type(dataset, "video")
        _declare(dataset, kinds, out_fields, segments, attrs, layout, rater_attr=rater_attr)
        samples = [_video_sample(e, video_dir, segments, layout, rater_attr) for e in merged]
        ids = dataset.add_samples(samples, progress=False)
        with gc_paused():
            insert_frames(dataset, _frame_docs(merged, ids, temps, src_fields, out_fields, kinds, layout=layout,
                                               rater_attr=rater_attr))
        frames = {r: {k: f"frames.{f}" for k, f in per.items()} for r, per in out_fields.items()}
        label_fields: dict[str, dict[str, Any]] = {k: {"type": KINDS[k].doc_type.__name__, "fields": {r: per[k] for r, per in frames.items()}}
                        for k in kinds}
        if segments:
            label_fields["segments"] = {"type": "TemporalDetections", "fields": dict(segments)}
        dataset.info[INFO_KEY] = {
            "source": "import_multi_rater", "layout": layout, "polygons": "polylines",
            "field": frames[raters[0]]["detections"] if layout == "attribute" else None,
            "rater_attr": rater_attr if layout == "attribute" else None,
            "rater_fields": {r: per["detections"] for r, per in frames.items()},
            "label_fields": label_fields, "rater_ids": {r: r for r in raters}, "categories": None, "info": {},
        }
        dataset.info[IMPORT_INFO_KEY] = {**report, "media": {"media_type": "video", "by_name": len(merged)}}
        dataset.save()
        if layout == "attribute":
            for spec in label_fields.values():
                declare_raters_field(dataset, spec["fields"][raters[0]], "raters", raters=raters)
    except BaseException:
        discard_dataset(dataset)
        raise
    return dataset


def _field_spec(fld) -> tuple[type, dict]:
    """A FiftyOne field's class and the keyword arguments that declare it again."""
    kwargs = {}
    if isinstance(fld, fo.ListField) and getattr(fld, "field", None) is not None:
        kwargs["subfield"] = type(fld.field)
    if isinstance(fld, fo.EmbeddedDocumentField):
        kwargs["embedded_doc_type"] = fld.document_type
    return type(fld), kwargs


def import_video_exports(specs: list, classes: dict[str, type], dataset_name: str, layout: str, field: str,
                         rater_attr: str, complete: bool, video_dir: str | os.PathLike | None, overwrite: bool,
                         persistent: bool, load: Callable, check_overlap: Callable) -> tuple[fo.Dataset, dict]:
    """The video branch of :func:`agreement.fo.importers.multi_rater.import_multi_rater` (module docstring).

    ``classes`` is each rater's FiftyOne dataset type; ``load(export,
    tmp_name)`` reads one export with FiftyOne's importer and
    ``check_overlap(per_rater, specs)`` checks that every export shares a
    video with the others (both those of the image path, so that errors read
    the same).
    """
    for s in specs:
        _check_video_export(s, classes[s.rater])
    per_rater, reports, attrs, temps = {}, {}, {}, {}
    try:
        for s in specs:
            tmp = load(s, temporary_name(dataset_name, "rater"))
            temps[s.rater] = tmp
            per_rater[s.rater], reports[s.rater], attrs[s.rater] = _extract(s, tmp, classes[s.rater])
        check_overlap(per_rater, specs)
        merged = _merge(per_rater, specs, bool(complete), reports)
        raters = [s.rater for s in specs]
        report = {"videos": len(merged), "frames": int(sum(e["meta"]["frames"] for e in merged)), "raters": raters,
                  "per_rater": reports}
        dataset = _write(merged, raters, temps, reports, attrs, dataset_name, layout=layout, field=field,
                         rater_attr=rater_attr, video_dir=os.fspath(video_dir) if video_dir else None, report=report)
    finally:
        for tmp in temps.values():
            discard_dataset(tmp)
    report["label_fields"] = {k: v["type"] for k, v in dataset.info[INFO_KEY]["label_fields"].items()}
    return swap_in(dataset, dataset_name, overwrite=overwrite, persistent=persistent), report


def _check_video_export(export, cls: type) -> None:
    """A CVAT video export is a folder (``data/``, ``labels/``) whose every XML has its video."""
    path = os.fspath(export.path)
    if cls.__name__ != "CVATVideoDataset":
        return
    if not os.path.isdir(path):
        raise MultiRaterImportError(f"rater {export.rater!r}: a CVAT video export is a folder with data/ (the videos) "
                                    f"and labels/ (one <video>.xml each); {path!r} is not a folder")
    opts = dict(export.options or {})
    labels = os.fspath(opts.get("labels_path") or os.path.join(path, "labels"))
    data = os.fspath(export.image_dir or opts.get("data_path") or os.path.join(path, "data"))
    if not os.path.isdir(labels):
        raise MultiRaterImportError(f"rater {export.rater!r}: {path!r} has no labels folder {labels!r}")
    stems = {os.path.splitext(f)[0] for f in os.listdir(data)} if os.path.isdir(data) else set()
    xmls = sorted(f for f in os.listdir(labels) if f.lower().endswith(".xml"))
    missing = [f for f in xmls if os.path.splitext(f)[0] not in stems]
    if missing:
        raise MultiRaterImportError(
            f"rater {export.rater!r}: no video in {data!r} for {len(missing)} labels file(s) {missing[:MAX_LISTED]} "
            "(a CVAT video export needs its videos: put them in data/ or pass image_dir=<folder of the videos>)")
