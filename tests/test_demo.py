"""The demo end to end on a small dataset: builds, runs the operators, reports."""

import os

import pytest

pytestmark = pytest.mark.fiftyone


def test_demo_builds_both_layouts_and_runs(fo, tmp_path, monkeypatch, capsys):
    from agreement.fo.demo import run_demo
    from agreement.fo.storage.reading import read_annotations

    monkeypatch.setattr(fo.config, "default_dataset_dir", str(tmp_path))
    report = run_demo(name="iaa-demo-test", num_images=24, seed=3)
    ds = fo.load_dataset("iaa-demo-test")
    try:
        fields = ds.info["iaa_demo"]["rater_fields"]
        assert len(fields) >= 5
        a = read_annotations(ds, fields=fields).annotations
        b = read_annotations(ds, field="annotations", raters_field="raters").annotations
        assert a.assigned.tolist() == b.assigned.tolist()
        assert a.counts().tolist() == b.counts().tolist()
        part_time = a.raters.index("part_time")
        assert 0 < (~a.assigned[:, part_time]).sum() < 24  # implicit absence for part of the images
        assert report["import"]["num_labels"] == len(a)
        assert report["ot"]["alpha_ot"] is not None and report["kalos"]["global_alpha"] is not None
        assert report["geometry"]["sigma_ci_low"] is not None
        assert report["staple"]["n_consensus"] == 24 and report["staple"]["n_skipped"] == 0
        assert report["kalos_3d"]["similarity"] == "cuboid_iou" and report["geometry_3d"]["detection_alpha"] > 0.5
        assert report["simulation"]["fields"] == ["sim_r1", "sim_r2", "sim_r3", "sim_r4"]
        out = capsys.readouterr().out
        assert "make app" in out and "careful" in out and "iaa-demo-test-video" in out
        _check_video_media(fo.load_dataset("iaa-demo-test-video"), str(tmp_path))
        assert report["kalos_video"]["global_alpha"] is not None
    finally:
        ds.delete()
        for suffix in ("coco", "3d", "video"):
            if fo.dataset_exists(f"iaa-demo-test-{suffix}"):
                fo.delete_dataset(f"iaa-demo-test-{suffix}")


def _check_video_media(videos, root: str) -> None:
    """Every video of the demo is a file under the dataset directory that OpenCV decodes, with the frame count,
    rate and size of its metadata, and at least the frames its labels are on (the App plays it: no error tile)."""
    import cv2

    from agreement.fo.demo import VIDEO_DEMO

    assert len(videos) == VIDEO_DEMO["num_videos"]
    for sample, numbers in zip(videos, videos.values("frames.frame_number")):
        path, meta = sample.filepath, sample.metadata
        assert os.path.isfile(path) and os.path.commonpath([path, root]) == root, path
        cap = cv2.VideoCapture(path)
        decoded = 0
        while cap.grab():
            decoded += 1
        rate, w, h = (cap.get(p) for p in (cv2.CAP_PROP_FPS, cv2.CAP_PROP_FRAME_WIDTH, cv2.CAP_PROP_FRAME_HEIGHT))
        cap.release()
        assert decoded == meta.total_frame_count == VIDEO_DEMO["num_frames"] >= max(numbers), path
        assert (rate, int(w), int(h)) == (meta.frame_rate, meta.frame_width, meta.frame_height), path
