"""simulate_raters through execute_operator: new fields only, both layouts, deletable; and the simulated video
raters' media: every video a playable file with the frames its labels need, existing videos used as they are."""

import os

import pytest

pytestmark = pytest.mark.fiftyone

OP = "@iaa/agreement/simulate_raters"


@pytest.fixture
def ref_ds(fo, make_dataset):
    import numpy as np

    rng = np.random.default_rng(0)
    D = fo.Detections
    samples = []
    for i in range(25):
        boxes = [[float(x), float(y), 0.15, 0.15] for x, y in rng.uniform(0, 0.8, (int(rng.integers(1, 6)), 2))]
        samples.append(fo.Sample(filepath=f"/d/{i}.jpg", truth=D(detections=[
            fo.Detection(label=str(rng.choice(["a", "b"])), bounding_box=b) for b in boxes])))
    samples.append(fo.Sample(filepath="/d/none.jpg", truth=None))
    samples.append(fo.Sample(filepath="/d/empty.jpg", truth=D()))
    return make_dataset(samples)


def _run(ds, **params):
    import fiftyone.operators as foo

    return foo.execute_operator(OP, ctx={"view": ds.view(), "params": params}).result


def test_fields_layout_adds_raters_and_leaves_the_reference(fo, ref_ds):
    from agreement.fo.runs import delete_agreement_run
    from agreement.fo.storage.reading import read_annotations

    before_schema = set(ref_ds.get_field_schema(flat=True))
    before = ref_ds.values("truth.detections.bounding_box")
    out = _run(ref_ds, field="truth", key="sim", num_raters=3, magnitude=1.0, seed=4)
    assert out["fields"] == ["sim_r1", "sim_r2", "sim_r3"]
    assert ref_ds.values("truth.detections.bounding_box") == before
    read = read_annotations(ref_ds, fields=out["fields"])
    a = read.annotations
    assert not a.assigned[25].any()  # reference None: nobody assigned
    assert a.assigned[26].all() and a.counts()[26].sum() == 0  # empty reference: explicit absence
    _run(ref_ds, field="truth", key="sim2", num_raters=3, magnitude=1.0, seed=4)
    assert [ref_ds.values(f"sim2_r{i}.detections.bounding_box") for i in (1, 2, 3)] == \
        [ref_ds.values(f"sim_r{i}.detections.bounding_box") for i in (1, 2, 3)]  # deterministic
    delete_agreement_run(ref_ds, "sim")
    delete_agreement_run(ref_ds, "sim2")
    assert set(ref_ds.get_field_schema(flat=True)) == before_schema


def test_attribute_layout_and_perturbations(fo, ref_ds):
    from agreement.fo.storage.reading import read_annotations

    out = _run(ref_ds, field="truth", key="drop", noise="drop", magnitude=0.5, num_raters=2, layout="attribute")
    a = read_annotations(ref_ds, field="drop_labels", raters_field="drop_raters").annotations
    assert a.raters == ("r1", "r2")
    n_ref = ref_ds.count("truth.detections")
    assert a.counts().sum() == pytest.approx(n_ref, rel=0.25)  # half of each of 2 raters' boxes
    assert out["labels"] == a.counts().sum()


@pytest.mark.parametrize(
    "params, message",
    [
        ({"magnitude": -1.0}, "magnitude"),
        ({"num_raters": 0}, "num_raters"),
        ({"noise": "nope"}, "noise"),
        ({"profile": "/no/such/profile.json"}, "profile"),
        ({"noise": "drop", "magnitude": 0.2, "profile": "mine.json"}, "profile"),  # never silently ignored
    ],
)
def test_bad_input_writes_nothing(fo, ref_ds, params, message):
    from fiftyone.operators.executor import ExecutionError

    before = set(ref_ds.get_field_schema(flat=True))
    with pytest.raises(ExecutionError, match=message):
        _run(ref_ds, **{"field": "truth", "key": "bad", **params})
    assert set(ref_ds.get_field_schema(flat=True)) == before and ref_ds.list_runs() == []


def test_empty_reference_is_refused(fo, make_dataset):
    from fiftyone.operators.executor import ExecutionError

    ds = make_dataset([fo.Sample(filepath="/d/e.jpg", truth=fo.Detections())])
    with pytest.raises(ExecutionError, match="has no labels"):
        _run(ds, field="truth", key="sim")


# ---------------------------------------------------------------------------- simulated video raters: their media
def _read_video(path: str) -> tuple[int, float, int, int, list]:
    """``(frames counted by decoding, frame rate, width, height, decoded frames)`` of a video file, via OpenCV."""
    import cv2

    cap = cv2.VideoCapture(path)
    assert cap.isOpened(), f"OpenCV cannot open {path}"
    frames = []
    while True:
        ok, img = cap.read()
        if not ok:
            break
        frames.append(img)
    info = (len(frames), cap.get(cv2.CAP_PROP_FPS), int(cap.get(cv2.CAP_PROP_FRAME_WIDTH)),
            int(cap.get(cv2.CAP_PROP_FRAME_HEIGHT)), frames)
    cap.release()
    return info


def _digest(path) -> str:
    import hashlib

    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def test_every_simulated_video_is_a_playable_file_with_the_frames_its_labels_need(fo, tmp_path, monkeypatch):
    import numpy as np

    from agreement.fo.simulate.video import simulate_video_dataset
    from agreement.simulate.video.render import _colour

    monkeypatch.setattr(fo.config, "default_dataset_dir", str(tmp_path))
    ds, _ = simulate_video_dataset("vsim-media", num_videos=3, num_frames=24, num_objects=3, num_raters=2,
                                   magnitude=2.0, seed=1, min_lifetime=0.5)
    try:
        assert ds.info["iaa_video_simulation"]["media"] == "render"
        numbers, refs, segs = ds.values(["frames.frame_number", "frames.reference", "reference_segments"])
        for sample, frame_numbers, ref_frames, ref_segs in zip(ds, numbers, refs, segs):
            path, meta = sample.filepath, sample.metadata
            assert os.path.isfile(path) and os.path.dirname(path) == os.path.join(str(tmp_path), "vsim-media")
            n, rate, w, h, images = _read_video(path)
            needed = max(frame_numbers + [int(d.support[1]) for d in ref_segs.detections])
            assert n == meta.total_frame_count == 24 >= needed
            assert (rate, w, h) == (meta.frame_rate, meta.frame_width, meta.frame_height) == (30.0, 320, 240)
            assert meta.mime_type == "video/mp4" and meta.size_bytes == os.path.getsize(path)
            # the frames show the reference: the top (smallest) box of a frame has its class's colour at its centre
            checked = 0
            for t, dets in zip(frame_numbers, ref_frames):
                if not dets.detections:
                    continue
                top = min(dets.detections, key=lambda d: d.bounding_box[2] * d.bounding_box[3])
                x, y, bw, bh = top.bounding_box
                pixel = images[t - 1][int((y + bh / 2) * h), int((x + bw / 2) * w)].astype(int)
                assert np.abs(pixel - np.array(_colour(top.label))).max() < 40, (path, t, pixel, top.label)
                checked += 1
            assert checked > 0
    finally:
        ds.delete()
    first = _digest(os.path.join(str(tmp_path), "vsim-media", "video_0001.mp4"))
    again, _ = simulate_video_dataset("vsim-media", num_videos=1, num_frames=24, num_objects=3, num_raters=2,
                                      seed=2, overwrite=True)
    try:  # simulated again with another seed: rendered again, not the earlier render reused
        assert _digest(again.first().filepath) != first
    finally:
        again.delete()


def test_existing_videos_are_used_as_they_are_and_checked_before_anything_is_written(fo, tmp_path):
    import cv2
    import numpy as np

    from agreement.fo.simulate.video import build_video_dataset
    from agreement.simulate.video import (
        VideoNoise,
        generate_videos,
        simulate_video_raters,
    )

    reference = generate_videos(num_videos=3, num_frames=12, num_objects=2, seed=5, frame_size=(160, 120))
    sim = simulate_video_raters(reference, VideoNoise.scaled(1.0), num_raters=2, seed=5)
    media = tmp_path / "videos"
    media.mkdir()
    mine = media / reference[0].name  # the user's own video: 14 frames of 96 x 64 at 12 fps
    writer = cv2.VideoWriter(str(mine), cv2.VideoWriter_fourcc(*"mp4v"), 12.0, (96, 64))
    for i in range(14):
        writer.write(np.full((64, 96, 3), 10 * i, np.uint8))
    writer.release()
    before = _digest(mine)
    ds = build_video_dataset(reference, sim, name="vsim-existing", media_dir=str(media))
    try:
        metas = ds.values("metadata")
        assert _digest(mine) == before  # used, never replaced
        assert (metas[0].total_frame_count, metas[0].frame_rate, metas[0].frame_width) == (14, 12.0, 96)
        for v, m in zip(reference[1:], metas[1:]):  # the missing ones rendered
            assert _read_video(str(media / v.name))[:4] == (12, 30.0, 160, 120) == \
                (m.total_frame_count, m.frame_rate, m.frame_width, m.frame_height)
    finally:
        ds.delete()

    short = tmp_path / "short"
    short.mkdir()
    writer = cv2.VideoWriter(str(short / reference[1].name), cv2.VideoWriter_fourcc(*"mp4v"), 30.0, (96, 64))
    for _ in range(5):
        writer.write(np.zeros((64, 96, 3), np.uint8))
    writer.release()
    datasets = set(fo.list_datasets())
    with pytest.raises(ValueError, match="has 5 frames but the labels of 'video_0002.mp4' reach frame 12"):
        build_video_dataset(reference, sim, name="vsim-short", media_dir=str(short))
    (short / "video_0003.mp4").write_bytes(b"not a video")
    with pytest.raises(ValueError, match="cannot read it as a video"):
        build_video_dataset(reference[2:], {r: v[2:] for r, v in sim.videos.items()}, name="vsim-short",
                            media_dir=str(short))
    assert sorted(os.listdir(short)) == ["video_0002.mp4", "video_0003.mp4"]  # nothing rendered
    assert set(fo.list_datasets()) == datasets


def test_no_media_and_unplayable_names(fo, tmp_path):
    from dataclasses import replace

    from agreement.fo.simulate.video import build_video_dataset
    from agreement.simulate.video import (
        VideoNoise,
        generate_videos,
        simulate_video_raters,
    )

    reference = generate_videos(num_videos=2, num_frames=6, num_objects=1, seed=0)
    sim = simulate_video_raters(reference, VideoNoise(), num_raters=1, seed=0)
    ds = build_video_dataset(reference, sim, name="vsim-none", media_dir=str(tmp_path / "none"), media="none")
    try:  # for benchmarks of the labels alone: no file written, the reference's metadata
        assert not (tmp_path / "none").exists() and ds.first().metadata.total_frame_count == 6
        assert ds.first().metadata.frame_width == 640
    finally:
        ds.delete()
    avi = [replace(v, name=v.name.replace(".mp4", ".avi")) for v in reference]
    raters = {r: [replace(v, name=v.name.replace(".mp4", ".avi")) for v in vs] for r, vs in sim.videos.items()}
    datasets = set(fo.list_datasets())
    with pytest.raises(ValueError, match=r"cannot render a browser-playable video named 'video_0001.avi'"):
        build_video_dataset(avi, raters, name="vsim-avi", media_dir=str(tmp_path / "avi"))
    with pytest.raises(ValueError, match="media must be one of"):
        build_video_dataset(reference, sim, name="vsim-bad", media="copy")
    assert not (tmp_path / "avi").exists() and set(fo.list_datasets()) == datasets
