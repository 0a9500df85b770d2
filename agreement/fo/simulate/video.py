"""Simulated video raters as a FiftyOne video dataset, written in bulk.

:func:`build_video_dataset` writes a reference corpus of
:class:`~agreement.simulate.video.VideoLabels` and its simulated raters
(:func:`agreement.simulate.video.simulate_video_raters`) as a new video
dataset; :func:`simulate_video_dataset` generates, simulates and writes in
one call. Each sample's ``filepath`` is the video's name under
``media_dir`` and its ``metadata`` a ``VideoMetadata`` with the file's frame
count, rate and size. The media (``media=``):

* ``"auto"`` (:func:`build_video_dataset`'s default): a video file already
  at the path is used as it is (your own videos: it must read with OpenCV
  and have at least the labels' frames); a missing one is rendered;
* ``"render"`` (:func:`simulate_video_dataset`'s default): every video is
  rendered (:func:`agreement.simulate.video.render_video`: the reference's
  boxes drawn frame by frame, VP9 in ``.mp4``, VP8 in ``.webm``, both played
  by the App in Chromium, Chrome, Edge and Firefox), replacing the file;
* ``"none"``: no file is written or read; the App shows an error tile per
  video (for benchmarks of the labels alone).

Rendering costs about 5 ms per frame of 320 x 240 on one core (four times
that at 640 x 480), on as many threads as cores (at most 8).

Fields, in either rater layout (the architecture's two):

==================  ===================================  =======================================
                    ``layout="fields"``                  ``layout="attribute"``
==================  ===================================  =======================================
frame boxes         ``frames.<rater>`` (``Detections``)  ``frames.<field>``, labels carry
                                                         ``<rater_attr>``
segments            ``<rater>_segments``                 ``<segments_field>``, labels carry
                    (``TemporalDetections``)             ``<rater_attr>``
reference           ``frames.<reference_field>`` and ``<reference_field>_segments`` (optional)
assignment          ``raters``: every rater on every video (fully crossed)
==================  ===================================  =======================================

Every box's ``index`` is its track id. Each rater has a ``Detections`` on
every frame of every video (empty where the rater drew nothing: explicit
absence). ``dataset.info["iaa_coco"]`` records the layout as the importers
do; in the attribute layout ``raters`` is declared as the assignment of the
frame and segment fields.

Speed: the frame documents are built as dicts and inserted with pymongo
(:mod:`agreement.fo.storage.frame_labels`), not through ``sample.frames``.
"""

from __future__ import annotations

import mimetypes
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict

from bson import ObjectId

import fiftyone as fo
import fiftyone.core.dataset as fod

from agreement.core.gc_pause import gc_paused
from agreement.fo.importers.coco import (
    INFO_KEY,
    LAYOUTS,
    discard_dataset,
    rater_field_name,
    swap_in,
    temporary_name,
)
from agreement.fo.importers.common import check_layout
from agreement.fo.importers.media_types import set_empty_dataset_media_type
from agreement.fo.storage.assignment import declare_raters_field
from agreement.fo.storage.frame_labels import declare_frame_field, detection_docs, insert_frames
from agreement.simulate.video import (
    VideoLabels,
    VideoNoise,
    VideoSimulation,
    check_video,
    generate_videos,
    simulate_video_raters,
)
from agreement.simulate.video.render import (
    VideoFileInfo,
    probe_video,
    render_videos,
    video_codec,
)

__all__ = ["MEDIA_MODES", "SIMULATION_INFO_KEY", "build_video_dataset", "simulate_video_dataset", "video_field_names"]

MEDIA_MODES = ("auto", "render", "none")

SIMULATION_INFO_KEY = "iaa_video_simulation"
_FRAME_RESERVED = {"id", "_id", "frame_number", "created_at", "last_modified_at"}


def video_field_names(raters: Sequence[str], *, layout: str = "fields", field: str = "labels",
                      segments_field: str = "segments", reference_field: str | None = None) -> dict:
    """``{"frames": {rater: frame field}, "segments": {rater: sample field}}`` (frame fields without
    ``frames.``), plus ``"reference"``: ``(frame field, segments field)`` or ``None``.

    Raises:
        ValueError: names that clash with each other or with FiftyOne's fields.
    """
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")
    if layout == "attribute":
        check_layout(layout, field, "annotator")
        check_layout(layout, segments_field, "annotator")
        frames = {r: field for r in raters}
        segments = {r: segments_field for r in raters}
    else:
        frames = {r: rater_field_name(r) for r in raters}
        segments = {r: f"{frames[r]}_segments" for r in raters}
    ref = None
    if reference_field is not None:
        check_layout("attribute", reference_field, "annotator")
        ref = (reference_field, f"{reference_field}_segments")
    frame_names = list(dict.fromkeys(frames.values())) + ([ref[0]] if ref else [])
    reserved = sorted(set(frame_names) & _FRAME_RESERVED)
    if reserved:
        raise ValueError(f"frame field name(s) {reserved} are FiftyOne's own frame fields; rename the rater or field")
    sample_names = list(dict.fromkeys(segments.values())) + ([ref[1]] if ref else []) + ["raters"]
    if len(set(frame_names)) != len(frame_names) or len(set(sample_names)) != len(sample_names):
        raise ValueError(f"field names clash: frame fields {frame_names}, sample fields {sample_names}; "
                         "rename a rater or the reference_field")
    return {"frames": frames, "segments": segments, "reference": ref}


def _check_corpus(reference: Sequence[VideoLabels], raters: Mapping[str, Sequence[VideoLabels]]) -> None:
    """Every rater has one labelling per reference video, same name and frame count, all valid."""
    if not reference:
        raise ValueError("no reference videos to write")
    names = [v.name for v in reference]
    if len(set(names)) != len(names):
        raise ValueError(f"reference video names must be unique (matched by name), got duplicates in {names[:10]}")
    if not raters:
        raise ValueError("no raters to write")
    for v in reference:
        check_video(v)
    for r, videos in raters.items():
        if len(videos) != len(reference):
            raise ValueError(f"rater {r!r} has {len(videos)} videos for {len(reference)} reference videos")
        for ref, v in zip(reference, videos, strict=True):
            if v.name != ref.name or v.num_frames != ref.num_frames:
                raise ValueError(f"rater {r!r}: video {v.name!r} ({v.num_frames} frames) is not reference video "
                                 f"{ref.name!r} ({ref.num_frames} frames); give them in the reference's order")
            check_video(v)


def _segments(video: VideoLabels, extra: dict) -> fo.TemporalDetections:
    # both are arrays once the VideoLabels is built (its __post_init__ fills absent segments with empty ones)
    assert video.segments is not None and video.segment_labels is not None
    return fo.TemporalDetections(detections=[
        fo.TemporalDetection(label=str(lab), support=[int(a), int(b)], **extra)
        for lab, (a, b) in zip(video.segment_labels, video.segments.tolist(), strict=False)
    ])


def _metadata(ref: VideoLabels, path: str, info: VideoFileInfo | None) -> fo.VideoMetadata:
    """The file's frame count, rate and size (the reference's when no file was written or read)."""
    if info is None:
        return fo.VideoMetadata(total_frame_count=ref.num_frames, frame_rate=ref.frame_rate, frame_width=ref.width,
                                frame_height=ref.height, duration=ref.num_frames / ref.frame_rate)
    rate = info.frame_rate if info.frame_rate > 0 else ref.frame_rate
    return fo.VideoMetadata(total_frame_count=info.num_frames, frame_rate=rate, frame_width=info.width,
                            frame_height=info.height, duration=info.num_frames / rate,
                            size_bytes=os.path.getsize(path), mime_type=mimetypes.guess_type(path)[0])


def _sample(i: int, ref: VideoLabels, raters: Mapping[str, Sequence[VideoLabels]], names: dict, layout: str,
            rater_attr: str, path: str, info: VideoFileInfo | None) -> fo.Sample:
    sample = fo.Sample(filepath=path, raters=list(raters))
    sample.metadata = _metadata(ref, path, info)
    if layout == "fields":
        for r, videos in raters.items():
            sample[names["segments"][r]] = _segments(videos[i], {})
    else:
        merged = [d for r, videos in raters.items() for d in _segments(videos[i], {rater_attr: r}).detections]
        sample[names["segments"][next(iter(raters))]] = fo.TemporalDetections(detections=merged)
    if names["reference"]:
        sample[names["reference"][1]] = _segments(ref, {})
    return sample


def _frame_docs(sample_ids: Sequence[str], reference: Sequence[VideoLabels],
                sources: Callable[[int], list[tuple[str, list[tuple[VideoLabels, dict]]]]],
                progress: Callable[[float, str], None] | None) -> Iterator[dict]:
    """Every frame document of every video: each field's boxes of that frame (possibly none)."""
    n = len(reference)
    for i, (sid, ref) in enumerate(zip(sample_ids, reference, strict=False)):
        oid = ObjectId(sid)
        fields = []
        for fname, parts in sources(i):
            fields.append((fname, [(detection_docs(v.boxes, v.labels, v.tracks, extra), v.frame_bounds().tolist())
                                   for v, extra in parts]))
        for t in range(1, ref.num_frames + 1):
            doc = {"_sample_id": oid, "frame_number": t}
            for fname, slices in fields:
                if len(slices) == 1:
                    docs, b = slices[0]
                    dets = docs[b[t - 1]:b[t]]
                else:
                    dets = [d for docs, b in slices for d in docs[b[t - 1]:b[t]]]
                doc[fname] = {"_cls": "Detections", "detections": dets}
            yield doc
        if progress is not None and (i + 1) % max(1, n // 100) == 0:
            progress((i + 1) / n, f"frames of {i + 1} / {n} videos")


def _existing_media(reference: Sequence[VideoLabels], paths: Sequence[str],
                    media: str) -> tuple[list[VideoFileInfo | None], list[int]]:
    """What each video file holds (``None``: not read) and the videos to render; reads and checks, writes nothing.

    Raises:
        ValueError: in ``"auto"``, a file OpenCV cannot read or shorter than
            its labels; a video to render whose extension has no codec.
    """
    infos: list[VideoFileInfo | None] = [None] * len(reference)
    if media == "none":
        return infos, []
    todo = []
    for i, (ref, path) in enumerate(zip(reference, paths, strict=False)):
        if media == "render" or not os.path.exists(path):
            video_codec(path)
            todo.append(i)
            continue
        info = probe_video(path)
        if info is None:
            raise ValueError(f"{path!r} exists but OpenCV cannot read it as a video; pass media='render' to "
                             "replace it with a rendered video, or media='none' to write no media")
        if info.num_frames < ref.num_frames:
            raise ValueError(f"video file {path!r} has {info.num_frames} frames but the labels of {ref.name!r} "
                             f"reach frame {ref.num_frames}; pass media='render' to replace it")
        infos[i] = info
    return infos, todo


def _render(reference: Sequence[VideoLabels], paths: Sequence[str], infos: list[VideoFileInfo | None],
            todo: list[int], progress: Callable[[float, str], None] | None) -> None:
    """Renders the videos ``todo`` (in place into ``infos``), reporting up to 80 % of ``progress``."""
    if not todo:
        return
    report = None if progress is None else (lambda f, msg: progress(0.8 * f, msg))
    rendered = render_videos([reference[i] for i in todo], [paths[i] for i in todo], progress=report)
    for i, info in zip(todo, rendered, strict=False):
        infos[i] = info


def build_video_dataset(
    reference: Sequence[VideoLabels],
    raters: Mapping[str, Sequence[VideoLabels]] | VideoSimulation,
    *,
    name: str | None = None,
    layout: str = "fields",
    field: str = "labels",
    segments_field: str = "segments",
    rater_attr: str = "annotator",
    reference_field: str | None = None,
    media_dir: str | os.PathLike | None = None,
    media: str = "auto",
    overwrite: bool = False,
    persistent: bool = False,
    batch_size: int = 2000,
    progress: Callable[[float, str], None] | None = None,
) -> fo.Dataset:
    """Writes a reference corpus and its raters as a new FiftyOne video dataset (see the module docstring).

    Args:
        reference: the reference videos (unique names; their frame count,
            rate and size become each sample's ``VideoMetadata``).
        raters: ``{rater: [VideoLabels per reference video]}`` in the
            reference's order, or a :class:`VideoSimulation`.
        name: the new dataset's name (default: FiftyOne's next default name).
        layout: ``"fields"`` or ``"attribute"``.
        field: the frame field of the attribute layout (``frames.<field>``).
        segments_field: the segments field of the attribute layout.
        rater_attr: the label attribute naming the rater (attribute layout).
        reference_field: also write the reference as ``frames.<reference_field>``
            and ``<reference_field>_segments``; ``None``: not written.
        media_dir: the folder of the video files (``<media_dir>/<video name>``);
            default ``<fo.config.default_dataset_dir>/<name>``.
        media: ``"auto"`` (use the files there, render the missing ones),
            ``"render"`` (render every video, replacing its file) or
            ``"none"`` (no file written or read); see the module docstring.
        overwrite: replace an existing dataset of that name (once the new one
            is complete).
        persistent: keep the dataset after the process exits.
        batch_size: frame documents per ``insert_many``.
        progress: ``progress(fraction, message)`` while videos are rendered
            (up to 0.8 when any is) and frames written.

    Returns:
        The dataset; nothing is left behind when writing fails (videos
        already rendered stay in ``media_dir``).

    Raises:
        ValueError: bad input, checked before anything is written.
        RuntimeError: this OpenCV cannot write the videos' codec (then pass
            ``media="none"``).
    """
    videos = dict(raters.videos) if isinstance(raters, VideoSimulation) else {str(r): list(v) for r, v in
                                                                              raters.items()}
    reference = list(reference)
    _check_corpus(reference, videos)
    if layout == "attribute":
        check_layout(layout, field, rater_attr)
    names = video_field_names(list(videos), layout=layout, field=field, segments_field=segments_field,
                              reference_field=reference_field)
    name = name or fod.get_default_dataset_name()
    if fo.dataset_exists(name) and not overwrite:
        raise ValueError(f"dataset {name!r} already exists; pass overwrite=True or another name")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be an integer >= 1, got {batch_size!r}")
    if media not in MEDIA_MODES:
        raise ValueError(f"media must be one of {MEDIA_MODES}, got {media!r}")
    media_dir = os.fspath(media_dir) if media_dir is not None else os.path.join(fo.config.default_dataset_dir, name)
    paths = [os.path.join(media_dir, ref.name) for ref in reference]
    infos, todo = _existing_media(reference, paths, media)
    _render(reference, paths, infos, todo, progress)
    if todo and progress is not None:
        frames_progress = progress
        progress = lambda f, msg: frames_progress(0.8 + 0.2 * f, msg)

    def sources(i: int) -> list[tuple[str, list[tuple[VideoLabels, dict]]]]:
        out: list[tuple[str, list[tuple[VideoLabels, dict]]]]
        if layout == "fields":
            out = [(names["frames"][r], [(v[i], {})]) for r, v in videos.items()]
        else:
            out = [(field, [(v[i], {rater_attr: r}) for r, v in videos.items()])]
        return out + ([(names["reference"][0], [(reference[i], {})])] if names["reference"] else [])

    dataset = fo.Dataset(temporary_name(name, "video"), persistent=False)
    try:
        set_empty_dataset_media_type(dataset, "video")
        _declare(dataset, names, layout, rater_attr)
        samples = [_sample(i, ref, raters=videos, names=names, layout=layout, rater_attr=rater_attr, path=paths[i],
                           info=infos[i])
                   for i, ref in enumerate(reference)]
        ids = dataset.add_samples(samples, progress=False)
        with gc_paused():  # millions of small dicts, no cycles
            insert_frames(dataset, _frame_docs(ids, reference, sources, progress), batch_size=batch_size)
        _record(dataset, names, layout, rater_attr, list(videos))
    except BaseException:
        discard_dataset(dataset)
        raise
    return swap_in(dataset, name, overwrite=overwrite, persistent=persistent)


def _declare(dataset: fo.Dataset, names: dict, layout: str, rater_attr: str) -> None:
    """The frame, segment and assignment fields, declared before anything is written."""
    attrs = {rater_attr: fo.StringField} if layout == "attribute" else None
    for fname in dict.fromkeys(names["frames"].values()):
        declare_frame_field(dataset, fname, fo.Detections, attrs)
    for sname in dict.fromkeys(names["segments"].values()):
        dataset.add_sample_field(sname, fo.EmbeddedDocumentField, embedded_doc_type=fo.TemporalDetections)
        if attrs:
            dataset.add_sample_field(f"{sname}.detections.{rater_attr}", fo.StringField)
    if names["reference"]:
        declare_frame_field(dataset, names["reference"][0], fo.Detections)
        dataset.add_sample_field(names["reference"][1], fo.EmbeddedDocumentField,
                                 embedded_doc_type=fo.TemporalDetections)
    dataset.add_sample_field("raters", fo.ListField, subfield=fo.StringField)


def _record(dataset: fo.Dataset, names: dict, layout: str, rater_attr: str, raters: list[str]) -> None:
    """The layout in ``dataset.info["iaa_coco"]`` (as the importers write it) and, in the attribute
    layout, ``raters`` as the assignment of the frame and segment fields."""
    frames = {r: f"frames.{f}" for r, f in names["frames"].items()}
    dataset.info[INFO_KEY] = {
        "source": "simulate_video",
        "layout": layout,
        "field": frames[raters[0]] if layout == "attribute" else None,
        "rater_attr": rater_attr if layout == "attribute" else None,
        "rater_fields": frames,
        "label_fields": {
            "detections": {"type": "Detections", "fields": frames},
            "segments": {"type": "TemporalDetections", "fields": dict(names["segments"])},
        },
        "reference_fields": (
            {"detections": f"frames.{names['reference'][0]}", "segments": names["reference"][1]}
            if names["reference"] else None
        ),
        "rater_ids": {r: r for r in raters},
        "categories": None,
        "info": {},
    }
    dataset.save()
    if layout == "attribute":
        declare_raters_field(dataset, frames[raters[0]], "raters", raters=raters)
        declare_raters_field(dataset, names["segments"][raters[0]], "raters", raters=raters)


def simulate_video_dataset(
    name: str | None = None,
    *,
    num_videos: int = 10,
    num_frames: int = 300,
    num_objects: int = 5,
    num_raters: int | None = None,
    magnitude: float | None = None,
    noise: VideoNoise | Sequence[VideoNoise] | Mapping[str, VideoNoise] | None = None,
    seed: int = 0,
    layout: str = "fields",
    reference_field: str | None = "reference",
    min_lifetime: float = 1.0,
    frame_size: tuple[int, int] = (320, 240),
    frame_rate: float = 30.0,
    overwrite: bool = False,
    persistent: bool = False,
    progress: Callable[[float, str], None] | None = None,
    **options,
) -> tuple[fo.Dataset, VideoSimulation]:
    """Generates synthetic reference videos, simulates raters and writes them as a video dataset.

    ``num_videos x num_frames x num_objects`` reference boxes
    (:func:`agreement.simulate.video.generate_videos`, ``seed``), ``num_raters``
    raters (:func:`agreement.simulate.video.simulate_video_raters`, same
    ``seed``) with ``noise``, or the preset ``VideoNoise.scaled(magnitude)``
    (default ``magnitude=1``; giving both is an error), written by
    :func:`build_video_dataset` (``options``: its ``field``,
    ``segments_field``, ``rater_attr``, ``media_dir``, ``media``,
    ``batch_size``). The videos (``video_0001.mp4`` ...) are rendered into
    ``media_dir`` (default ``<fo.config.default_dataset_dir>/<name>``) at
    ``frame_size`` (width, height; small by default: rendering costs in
    proportion to the pixels) and ``frame_rate``, replacing earlier renders
    of that name (``media="render"``; ``media="none"``: no files, for
    benchmarks of the labels alone).
    ``dataset.info["iaa_video_simulation"]`` records the parameters, each
    rater's noise and counts.

    Returns:
        ``(dataset, simulation)``.
    """
    unknown = set(options) - {"field", "segments_field", "rater_attr", "media_dir", "media", "batch_size"}
    if unknown:
        raise TypeError(f"simulate_video_dataset() got unexpected keyword argument(s) {sorted(unknown)}")
    if noise is not None and magnitude is not None:
        raise ValueError("give either `noise` (VideoNoise) or `magnitude` (the preset VideoNoise.scaled), not both")
    noise = noise if noise is not None else VideoNoise.scaled(1.0 if magnitude is None else magnitude)
    options.setdefault("media", "render")
    reference = generate_videos(num_videos=num_videos, num_frames=num_frames, num_objects=num_objects, seed=seed,
                                min_lifetime=min_lifetime, frame_size=frame_size, frame_rate=frame_rate)
    sim = simulate_video_raters(reference, noise, num_raters=num_raters, seed=seed)
    dataset = build_video_dataset(reference, sim, name=name, layout=layout, reference_field=reference_field,
                                  overwrite=overwrite, persistent=persistent, progress=progress, **options)
    dataset.info[SIMULATION_INFO_KEY] = {
        "num_videos": num_videos, "num_frames": num_frames, "num_objects": num_objects, "seed": seed,
        "min_lifetime": min_lifetime, "frame_size": [int(v) for v in frame_size], "frame_rate": float(frame_rate),
        "media": options["media"], "magnitude": magnitude, "raters": list(sim.raters),
        "noise": {r: asdict(n) for r, n in sim.noise.items()}, "counts": sim.counts,
    }
    dataset.save()
    return dataset, sim
