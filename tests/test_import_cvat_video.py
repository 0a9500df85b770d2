"""Per-rater CVAT for video 1.1 exports merged by ``import_multi_rater`` into one video dataset.

The exports are made the way a user's would be: tiny real videos written
with OpenCV, each rater's simulated tracks put on a FiftyOne video dataset
and exported by FiftyOne's own ``CVATVideoDataset`` exporter (``data/`` and
``labels/<video>.xml`` with ``<track>``s of ``<box>``es). Checked: the round
trip in both layouts (boxes to the pixel, classes, track ids as ``index``,
explicit absence on frames without boxes, metadata read from the videos), a
video missing from one export (implicit, or explicit when complete), and the
errors: one video name with different frame counts or frame rates across
raters, labels past a video's end, an XML without its video, videos mixed
with images. Nothing is left behind by a failed import.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from agreement.simulate.video import VideoNoise, generate_videos, simulate_video_raters

pytestmark = pytest.mark.fiftyone

W, H, F, FPS = 64, 48, 12, 10.0


def write_video(path: Path, frames: int = F, fps: float = FPS) -> None:
    """A tiny real video (mp4v; MJPG in an .avi if this OpenCV cannot write mp4v)."""
    import cv2

    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), fps, (W, H))
    assert writer.isOpened(), f"OpenCV cannot write {path}"
    for i in range(frames):
        writer.write(np.full((H, W, 3), (17 * i) % 256, np.uint8))
    writer.release()


@pytest.fixture(scope="module")
def exports(tmp_path_factory, fo):
    """``(root, reference, simulation, [export dicts])``: three raters' CVAT video exports of three videos."""
    import fiftyone.types as fot

    from agreement.fo.simulate.video import build_video_dataset

    root = tmp_path_factory.mktemp("cvat-video")
    videos = root / "videos"
    videos.mkdir()
    reference = generate_videos(num_videos=3, num_frames=F, num_objects=3, seed=4, frame_size=(W, H), frame_rate=FPS,
                                min_lifetime=0.7)
    for v in reference:
        write_video(videos / v.name)
    # no identity switches: a CVAT track has one label, so a track that jumps to an object of another class
    # cannot keep both classes (FiftyOne's exporter writes one of them)
    sim = simulate_video_raters(reference, VideoNoise(miss_rate=0.25, drift=0.05, spurious_rate=0.05), seed=2)
    out = []
    for r in sim.raters:
        ds = build_video_dataset(reference, {r: sim.videos[r]}, name=f"cvat-src-{r}", media_dir=str(videos))
        ds.export(export_dir=str(root / r), dataset_type=fot.CVATVideoDataset, label_field=f"frames.{r}")
        ds.delete()
        out.append({"rater": r, "path": str(root / r), "format": "cvat_video"})
    return root, reference, sim, out


def _expected(video) -> dict:
    """``{frame: sorted [(track, label, pixel box)]}`` of a VideoLabels, boxes rounded as CVAT writes them."""
    out = {t: [] for t in range(1, video.num_frames + 1)}
    for t, j, lab, (x, y, w, h) in zip(video.frames, video.tracks, video.labels, video.boxes):
        out[int(t)].append((int(j), str(lab), [x * W, y * H, (x + w) * W, (y + h) * H]))
    return {t: sorted(v) for t, v in out.items()}


def _got(values, frames, attr=None, who=None) -> dict:
    out = {}
    for t, dets in zip(frames, values):
        assert dets is not None
        rows = [(d.index, d.label, [d.bounding_box[0] * W, d.bounding_box[1] * H,
                                    (d.bounding_box[0] + d.bounding_box[2]) * W,
                                    (d.bounding_box[1] + d.bounding_box[3]) * H])
                for d in dets.detections if who is None or d[attr] == who]
        out[t] = sorted(rows)
    return out


def _same(got: dict, want: dict) -> None:
    assert got.keys() == want.keys()
    for t in want:
        assert [r[:2] for r in got[t]] == [r[:2] for r in want[t]], f"frame {t}"
        for a, b in zip(got[t], want[t]):  # CVAT stores pixel corners, FiftyOne's exporter rounds them
            np.testing.assert_allclose(a[2], b[2], atol=0.51)


@pytest.mark.parametrize("layout", ["fields", "attribute"])
def test_round_trip_in_both_layouts(fo, exports, layout):
    from agreement.fo.importers import import_multi_rater

    root, reference, sim, specs = exports
    ds, report = import_multi_rater(specs, f"cvat-video-{layout}", layout=layout)
    try:
        assert ds.media_type == "video" and len(ds) == 3 and ds.count("frames") == 3 * F
        assert report["videos"] == 3 and report["frames"] == 3 * F and report["raters"] == list(sim.raters)
        names = [os.path.basename(p) for p in ds.values("filepath")]
        assert names == [v.name for v in reference]
        for meta in ds.values("metadata"):
            assert (meta.total_frame_count, meta.frame_rate, meta.frame_width, meta.frame_height) == (F, FPS, W, H)
        frames = ds.values("frames.frame_number")
        for r in sim.raters:
            assert report["per_rater"][r]["labels"] == sum(len(v) for v in sim.videos[r])
            values = ds.values(f"frames.{r}" if layout == "fields" else "frames.ground_truth")
            for i, video in enumerate(sim.videos[r]):
                got = _got(values[i], frames[i], *(("annotator", r) if layout == "attribute" else ()))
                _same(got, _expected(video))
        assert ds.values("raters") == [list(sim.raters)] * 3
        info = ds.info["iaa_coco"]
        if layout == "fields":
            assert info["rater_fields"] == {r: f"frames.{r}" for r in sim.raters}
        else:
            assert info["field"] == "frames.ground_truth"
            assert ds.info["iaa_assignment"]["frames.ground_truth"]["raters_field"] == "raters"
        if layout == "fields":  # a frame where the rater drew nothing: an empty Detections (explicit absence)
            empty = sum(1 for v in ds.values("frames.r1") for d in v if not d.detections)
            assert empty == sum(1 for v in sim.videos["r1"] for t in range(1, F + 1) if not np.any(v.frames == t))
    finally:
        ds.delete()


def _copy_without(src: str, dst: Path, video: str) -> str:
    shutil.copytree(src, dst)
    os.remove(dst / "data" / video)
    os.remove(dst / "labels" / (os.path.splitext(video)[0] + ".xml"))
    return str(dst)


def test_a_video_missing_from_an_export_is_implicit_or_explicit_absence(fo, exports, tmp_path):
    from agreement.fo.importers import import_multi_rater

    root, reference, sim, specs = exports
    gone = reference[1].name
    partial = dict(specs[2], path=_copy_without(specs[2]["path"], tmp_path / "r3", gone))
    ds, report = import_multi_rater([*specs[:2], partial], "cvat-video-missing")
    try:
        assert report["per_rater"]["r3"]["videos_missing"] == 1 and report["per_rater"]["r3"]["missing_examples"] == [gone]
        assert ds.values("raters")[1] == ["r1", "r2"]
        assert all(v is None for v in ds.values("frames.r3")[1])  # not assigned: None on every frame
        assert all(v is not None for v in ds.values("frames.r3")[0])
    finally:
        ds.delete()
    ds, report = import_multi_rater([*specs[:2], dict(partial, complete=True)], "cvat-video-complete")
    try:
        assert ds.values("raters")[1] == ["r1", "r2", "r3"]
        assert all(v is not None and not v.detections for v in ds.values("frames.r3")[1])  # explicit absence
    finally:
        ds.delete()


def _replace_video(src: str, dst: Path, video: str, **kwargs) -> str:
    shutil.copytree(src, dst)
    write_video(dst / "data" / video, **kwargs)
    return str(dst)


@pytest.mark.parametrize("change, what", [({"frames": F + 3}, "frame counts"), ({"fps": 25.0}, "frame rates")])
def test_one_video_name_with_different_frame_counts_or_rates_is_an_error(fo, exports, tmp_path, change, what):
    from agreement.fo.importers import MultiRaterImportError, import_multi_rater

    root, reference, sim, specs = exports
    name = reference[0].name
    other = dict(specs[1], path=_replace_video(specs[1]["path"], tmp_path / "r2", name, **change))
    before = set(fo.list_datasets())
    with pytest.raises(MultiRaterImportError, match=rf"video '{re.escape(name)}' has different {what}.*'r1'.*'r2'"):
        import_multi_rater([specs[0], other], "cvat-video-mismatch")
    assert set(fo.list_datasets()) == before  # temporaries gone, nothing half-imported


def test_labels_past_the_end_of_the_video_are_an_error(fo, exports, tmp_path):
    from agreement.fo.importers import MultiRaterImportError, import_multi_rater

    root, reference, sim, specs = exports
    name = reference[0].name
    dst = tmp_path / "r1"
    shutil.copytree(specs[0]["path"], dst)
    xml = dst / "labels" / (os.path.splitext(name)[0] + ".xml")
    text = xml.read_text()
    # a visible box (outside="0") moved to 0-based frame F + 4, i.e. FiftyOne's frame F + 5
    visible = re.search(r'<box frame="(\d+)"([^>]*outside="0")', text)
    xml.write_text(text[:visible.start()] + f'<box frame="{F + 4}"{visible.group(2)}' + text[visible.end():])
    with pytest.raises(MultiRaterImportError, match=rf"rater 'r1': video '{re.escape(name)}' has labels on frame "
                                                    rf"{F + 5}, but the video has {F} frames"):
        import_multi_rater([dict(specs[0], path=str(dst)), specs[1]], "cvat-video-past-end")


def test_an_unreadable_video_takes_its_frame_count_from_the_xml(fo, exports, tmp_path):
    from agreement.fo.importers import import_multi_rater

    root, reference, sim, specs = exports
    dst = tmp_path / "r1"
    shutil.copytree(specs[0]["path"], dst)
    for v in reference:
        (dst / "data" / v.name).write_bytes(b"not a video")
    ds, report = import_multi_rater([dict(specs[0], path=str(dst)), specs[1]], "cvat-video-xml-size")
    try:
        assert ds.values("metadata.total_frame_count") == [F] * 3 and ds.count("frames") == 3 * F
        assert report["per_rater"]["r1"]["frame_count_from_labels"] == []
    finally:
        ds.delete()
    for xml in (dst / "labels").iterdir():  # no <size> either: the last labelled frame, within r2's count
        xml.write_text(re.sub(r"<size>\d+</size>", "", xml.read_text()))
    ds, report = import_multi_rater([dict(specs[0], path=str(dst)), specs[1]], "cvat-video-from-labels")
    try:
        assert ds.values("metadata.total_frame_count") == [F] * 3
        assert report["per_rater"]["r1"]["frame_count_from_labels"] == [v.name for v in reference]
    finally:
        ds.delete()


def test_bad_exports_are_named(fo, exports, tmp_path):
    from agreement.fo.importers import MultiRaterImportError, import_multi_rater

    root, reference, sim, specs = exports
    dst = tmp_path / "novideo"
    shutil.copytree(specs[0]["path"], dst)
    os.remove(dst / "data" / reference[2].name)
    with pytest.raises(MultiRaterImportError, match=r"rater 'r1': no video in .* \['video_0003.xml'\]"):
        import_multi_rater([dict(specs[0], path=str(dst)), specs[1]], "cvat-video-bad")
    xml = next((Path(specs[0]["path"]) / "labels").iterdir())
    with pytest.raises(MultiRaterImportError, match="is not a folder"):
        import_multi_rater([dict(specs[0], path=str(xml)), specs[1]], "cvat-video-bad")
    with pytest.raises(MultiRaterImportError, match="hold videos, those of \\['img'\\] images"):
        import_multi_rater([specs[0], {"rater": "img", "path": str(tmp_path), "format": "coco"}], "cvat-video-bad")
    with pytest.raises(MultiRaterImportError, match="label_type and mask_targets"):
        import_multi_rater(specs, "cvat-video-bad", label_type="tags")


@pytest.mark.parametrize("layout", ["fields", "attribute"])
def test_fiftyone_video_labels_exports_bring_their_temporal_detections(fo, exports, tmp_path, layout):
    import fiftyone.types as fot

    from agreement.fo.importers import import_multi_rater
    from agreement.fo.simulate.video import build_video_dataset

    root, reference, sim, _ = exports
    specs = []
    for r in sim.raters[:2]:
        src = build_video_dataset(reference, {r: sim.videos[r]}, name=f"fov-src-{r}", media_dir=str(root / "videos"))
        src.export(export_dir=str(tmp_path / r), dataset_type=fot.FiftyOneVideoLabelsDataset,
                   label_field=f"{r}_segments", frame_labels_field=f"frames.{r}")
        src.delete()
        specs.append({"rater": r, "path": str(tmp_path / r), "format": "fiftyone_video"})
    ds, report = import_multi_rater(specs, f"fov-{layout}", layout=layout)
    try:
        assert report["label_fields"] == {"detections": "Detections", "segments": "TemporalDetections"}
        frames = ds.values("frames.frame_number")
        for r in sim.raters[:2]:
            assert report["per_rater"][r]["labels_by_kind"]["segments"] == sum(len(v.segments) for v in sim.videos[r])
            for i, video in enumerate(sim.videos[r]):
                if layout == "fields":
                    segs = ds.values(f"{r}_segments")[i].detections
                    got = _got(ds.values(f"frames.{r}")[i], frames[i])
                else:
                    segs = [d for d in ds.values("ground_truth_segments")[i].detections if d["annotator"] == r]
                    got = _got(ds.values("frames.ground_truth")[i], frames[i], "annotator", r)
                assert sorted((d.label, list(d.support)) for d in segs) == sorted(
                    zip(video.segment_labels, video.segments.tolist()))
                want = _expected(video)
                assert {t: [x[:2] for x in v] for t, v in got.items()} == {t: [x[:2] for x in v] for t, v in want.items()}
                for t in want:  # this format keeps the relative boxes as they were
                    for a, b in zip(got[t], want[t]):
                        np.testing.assert_allclose(a[2], b[2], atol=1e-9)
        if layout == "attribute":
            assert ds.info["iaa_assignment"]["ground_truth_segments"]["raters_field"] == "raters"
    finally:
        ds.delete()
    if layout == "fields":  # a segment past the video's end
        labels = tmp_path / sim.raters[0] / "labels" / reference[0].name.replace(".mp4", ".json")
        text = labels.read_text()
        first = re.search(r'"ranges": "(\d+)-(\d+)"', text)
        labels.write_text(text[:first.start()] + f'"ranges": "{first.group(1)}-{F + 30}"' + text[first.end():])
        from agreement.fo.importers import MultiRaterImportError

        with pytest.raises(MultiRaterImportError, match=rf"rater 'r1': video '{reference[0].name}' has a temporal detection .* "
                                            rf"that is not \[first, last\] frames with 1 <= first <= last <= {F}"):
            import_multi_rater(specs, "fov-bad-support")


def test_the_import_operator_takes_cvat_video_exports(fo, exports):
    import fiftyone.operators as foo

    root, reference, sim, specs = exports
    op = foo.get_operator("@iaa/agreement/import_multi_rater")
    out = op(exports=specs, dataset_name="cvat-video-operator", layout="attribute", persistent=False)
    try:
        assert out["dataset_name"] == "cvat-video-operator" and out["media_type"] == "video"
        assert out["num_samples"] == 3 and out["videos"] == 3 and out["field"] == "frames.ground_truth"
    finally:
        fo.delete_dataset("cvat-video-operator")
