"""The demo end to end on a small dataset: builds, runs the operators, reports."""

import pytest

pytestmark = pytest.mark.fiftyone


def test_demo_builds_both_layouts_and_runs(fo, tmp_path, monkeypatch, capsys):
    from agreement.fo.demo import run_demo
    from agreement.fo.reading import read_annotations

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
        assert "make app" in out and "careful" in out
    finally:
        ds.delete()
        fo.delete_dataset("iaa-demo-test-coco")
        fo.delete_dataset("iaa-demo-test-3d")
