"""compute_kalos through execute_operator: fields, units, diagnostics, panel, layouts."""

import numpy as np
import pytest

pytestmark = pytest.mark.fiftyone

OP = "@iaa/agreement/compute_kalos"


@pytest.fixture
def k_ds(fo, make_dataset):
    """3 raters; c confuses class 'x' for 'y' on odd samples; s4 nobody drew anything."""
    rng = np.random.default_rng(5)
    D = fo.Detections
    samples = []
    for i in range(8):
        base = [[float(x), float(y), 0.2, 0.2] for x, y in rng.uniform(0, 0.7, (3, 2))] if i != 4 else []
        kw = {}
        for r in ("a", "b", "c"):
            dets = []
            for k, b in enumerate(base):
                label = "y" if (r == "c" and i % 2 and k == 0) else ("x" if k % 2 == 0 else "y")
                dets.append(fo.Detection(label=label, bounding_box=[b[0] + rng.normal(0, 0.005), b[1], 0.2, 0.2],
                                         session=f"s{i % 2}"))
            kw[r] = D(detections=dets)
        samples.append(fo.Sample(filepath=f"/d/{i}.jpg", **kw))
    return make_dataset(samples)


def _run(ds, **params):
    import fiftyone.operators as foo

    return foo.execute_operator(OP, ctx=dict(view=ds.view(), params=params)).result


def test_kalos_fields_units_and_results(fo, k_ds):
    from agreement.fo.runs import delete_agreement_run, load_agreement_results

    before = set(k_ds.get_field_schema(flat=True))
    r = _run(k_ds, fields=["a", "b", "c"], key="ka", tau=0.5)
    assert 0 < r["global_alpha"] < 1 and r["n_undefined"] >= 1
    alphas = k_ds.values("ka_alpha")
    assert alphas[4] is None  # every rater drew nothing: alpha undefined, never 1.0
    assert all(a == pytest.approx(1.0) for i, a in enumerate(alphas) if i % 2 == 0 and i != 4)
    assert k_ds.values("ka_n_units")[0] == 3
    # the same object gets the same unit number across raters
    units = [k_ds.values(f"{r}.detections.ka_unit")[0] for r in ("a", "b", "c")]
    assert units[0] == units[1] == units[2] and len(set(units[0])) == 3
    res = load_agreement_results(k_ds, "ka")
    d = res["detail"]
    undefined = d["undefined_samples"]
    assert "drew nothing" in undefined[str(k_ds.values("id")[4])]
    assert set(undefined) == {sid for sid, a in zip(k_ds.values("id"), alphas) if a is None}
    assert d["rater_vitality"]["raters"] == ["a", "b", "c"]
    vit = dict(zip(d["rater_vitality"]["raters"], d["rater_vitality"]["vitality"]))
    assert vit["c"] < vit["a"] and vit["c"] < vit["b"]  # c's confusions lower agreement
    assert len(d["sensitivity_curve"]["taus"]) == 8
    assert sorted(d["rater_order"]) == [0, 1, 2]
    delete_agreement_run(k_ds, "ka")
    assert set(k_ds.get_field_schema(flat=True)) == before


def test_attribute_layout_gives_the_same_numbers(fo, k_ds, make_dataset):
    out = []
    for s in k_ds.iter_samples():
        dets = [fo.Detection(label=d.label, bounding_box=d.bounding_box, annotator=r)
                for r in ("a", "b", "c") for d in s[r].detections]
        out.append(fo.Sample(filepath=s.filepath, gt=fo.Detections(detections=dets), raters=["a", "b", "c"]))
    attr = make_dataset(out)
    r1 = _run(k_ds, fields=["a", "b", "c"], key="k")
    r2 = _run(attr, field="gt", raters_field="raters", key="k")
    assert r1["global_alpha"] == pytest.approx(r2["global_alpha"], abs=1e-12)
    assert k_ds.values("k_alpha") == attr.values("k_alpha")


def test_intra_annotator_consistency_and_panel(fo, k_ds):
    import fiftyone.operators as foo

    from agreement.fo.runs import load_agreement_results

    _run(k_ds, fields=["a", "b", "c"], key="ks", session_attr="session")
    intra = load_agreement_results(k_ds, "ks")["detail"]["intra_annotator_consistency"]
    assert set(intra) == {"a", "b", "c"} and intra["a"]["sessions"] == ["s0", "s1"]
    res = foo.execute_operator("@iaa/agreement/annotator_agreement", ctx=dict(
        view=k_ds.view(), params={"__method__": "on_load", "panel_id": "p", "panel_state": {}}))
    state, data = {}, {}
    for q in res.executor.to_json()["requests"]:
        if q["operator_uri"] == "patch_panel_state":
            state.update(q["params"]["state"])
        if q["operator_uri"] == "patch_panel_data":
            data.update(q["params"]["data"])
    assert state["score_field"] == "ks_alpha"
    assert state["bar_titles"][0].startswith("Rater vitality")
    assert state["curve_titles"] == ["α versus τ (localisation sensitivity)"]
    assert data["pair_matrix"][0]["type"] == "heatmap"


@pytest.mark.parametrize("params, message", [({"tau": 0.0}, "tau"), ({"solver": "nope"}, "solver"),
                                             ({"similarity": "polygon_iou"}, "polygon")])
def test_bad_parameters(fo, k_ds, params, message):
    from fiftyone.operators.executor import ExecutionError

    before = set(k_ds.get_field_schema(flat=True))
    with pytest.raises(ExecutionError, match=message):
        _run(k_ds, fields=["a", "b"], key="bad", **params)
    assert set(k_ds.get_field_schema(flat=True)) == before


@pytest.mark.shared_data
def test_lvis_operator_matches_the_pure_library(fo, lvis_path):
    from agreement.fo.importers.coco import import_multi_rater_coco
    from agreement.io.coco import read_multi_rater_coco
    from agreement.methods.kalos import kalos_alpha

    ds = import_multi_rater_coco(lvis_path, dataset_name="lvis_kalos", polygons="none")
    try:
        r = _run(ds, fields=["r1", "r2"], key="ka", tau=0.5)
        pure = kalos_alpha(read_multi_rater_coco(lvis_path).annotations, similarity="iou", tau=0.5)
        assert r["global_alpha"] == pytest.approx(pure.global_alpha, abs=1e-9)
        assert r["n_undefined"] == pure.n_undefined
    finally:
        ds.delete()


def test_3d_cuboids_are_read_and_compared_exactly(fo, make_dataset, tmp_path):
    from fiftyone.operators.executor import ExecutionError

    from agreement.core.validation import AnnotationError
    from agreement.fo.storage.reading import read_annotations

    scene_path = str(tmp_path / "scene.fo3d")
    fo.Scene().write(scene_path)

    def det(loc, rot=(0.0, 0.0, 0.0), dims=(4.0, 2.0, 1.5)):
        return fo.Detection(label="car", location=list(loc), dimensions=list(dims), rotation=list(rot))

    D = fo.Detections
    ds = make_dataset([fo.Sample(filepath=scene_path, a=D(detections=[det((0, 0, 0)), det((10, 0, 0))]),
                                 b=D(detections=[det((0, 0, 0), (0, 0, np.pi / 4)), det((10, 0, 5))]))])
    read = read_annotations(ds, fields=["a", "b"])
    assert read.annotations.cuboids.shape == (4, 9) and np.isnan(read.annotations.boxes).all()
    r = _run(ds, fields=["a", "b"], key="k3", similarity="cuboid_iou", tau=0.3)
    units = [ds.values(f"{f}.detections.k3_unit")[0] for f in ("a", "b")]
    assert units[0][0] == units[1][0]  # the rotated car is the same object (IoU > 0.3)
    assert units[0][1] != units[1][1]  # vertically separated boxes never match
    assert r["n_units"] == 3
    with pytest.raises(ExecutionError, match="3D detections"):
        import fiftyone.operators as foo

        foo.execute_operator("@iaa/agreement/compute_ot_agreement",
                             ctx=dict(view=ds.view(), params=dict(fields=["a", "b"], key="ot3")))
    for op in ("compute_kalos", "compute_geometry_agreement"):  # the default 2D similarity: told what to use
        with pytest.raises(ExecutionError, match="3D labels: use 'cuboid_iou'"):
            foo.execute_operator(f"@iaa/agreement/{op}",
                                 ctx=dict(view=ds.view(), params=dict(fields=["a", "b"], key="d3")))
    bad = make_dataset([fo.Sample(filepath=scene_path, a=D(detections=[det((0, 0, 0), dims=(4, 0, 1))]),
                                  b=D(detections=[det((0, 0, 0))]))])
    with pytest.raises(AnnotationError, match="field 'a'"):
        read_annotations(bad, fields=["a", "b"])


def test_3d_points_polylines_and_segments_through_the_operators(fo, make_dataset, tmp_path):
    import fiftyone.operators as foo
    from fiftyone.operators.executor import ExecutionError

    from agreement.fo.storage.reading import read_annotations

    scene_path = str(tmp_path / "cloud.fo3d")
    fo.Scene().write(scene_path)
    rng = np.random.default_rng(2)
    D, P = fo.Detections, fo.Polylines
    samples = []
    for i in range(6):
        centres = rng.uniform(0, 30, (3, 3))
        kw = {"num_points": 500}
        for r, noise in (("a", 0.02), ("b", 0.05)):
            kw[f"pts_{r}"] = D(detections=[fo.Detection(label="pole", location=(c + rng.normal(0, noise, 3)).tolist())
                                           for c in centres])
            kw[f"line_{r}"] = P(polylines=[fo.Polyline(label="lane", points3d=[
                (c + np.array([[0, 0, 0], [4, 0, 0]]) + rng.normal(0, noise, (2, 3))).tolist()]) for c in centres])
            kw[f"seg_{r}"] = D(detections=[fo.Detection(label="car", point_indices=list(range(k * 150 + i * 15, k * 150 + i * 15 + 60 + r.count("b") * 5)))
                                           for k in range(3)])
        samples.append(fo.Sample(filepath=scene_path, **kw))
    ds = make_dataset(samples)
    a = read_annotations(ds, fields=["pts_a", "pts_b"]).annotations
    assert a.points3d.shape == (36, 3) and a.cuboids is None
    assert len(read_annotations(ds, fields=["line_a", "line_b"]).annotations.polylines3d) == 36
    assert read_annotations(ds, fields=["seg_a", "seg_b"]).annotations.num_points.tolist() == [500] * 6

    def run(op, **params):
        return foo.execute_operator(f"@iaa/agreement/{op}", ctx=dict(view=ds.view(), params=params)).result

    for fields, sim in ((["pts_a", "pts_b"], "point3d"), (["line_a", "line_b"], "polyline3d_f1"),
                        (["seg_a", "seg_b"], "segment_jaccard")):
        k = run("compute_kalos", fields=fields, key=f"k_{sim}", similarity=sim, tau=0.3)
        assert k["n_units"] == 18, sim  # every object found by both raters is one unit
        # lines of different scenes never overlap: their chance baseline exists only at threshold 0, where
        # everything matches and detection agreement is undefined (with a reason)
        t = 0.0 if sim == "polyline3d_f1" else 0.05
        g = run("compute_geometry_agreement", fields=fields, key=f"g_{sim}", distance=sim, threshold=t,
                intervals=False)
        assert g["distance_alpha"] is not None and g["distance_alpha"] > 0.5, (sim, g)
        if sim == "polyline3d_f1":
            assert g["detection_alpha"] is None and g["detection_alpha_reason"]
        else:
            assert g["detection_alpha"] > 0.5, (sim, g)
    from agreement.fo.runs import get_agreement_run_info

    run("compute_geometry_agreement", fields=["pts_a", "pts_b"], key="g_wide", distance="point3d",
        threshold=0.05, intervals=False, point3d_scale=5.0)
    assert get_agreement_run_info(ds, "g_wide")["params"]["point3d_scale"] == 5.0
    with pytest.raises(ExecutionError, match="point3d_scale"):
        run("compute_geometry_agreement", fields=["pts_a", "pts_b"], key="bad_scale", distance="point3d",
            point3d_scale=0.0, intervals=False)
    ds.set_values("num_points", [50] * 6)  # now the indices run past the cloud
    with pytest.raises(ExecutionError, match="range"):
        run("compute_kalos", fields=["seg_a", "seg_b"], key="bad", similarity="segment_jaccard", tau=0.3)


def test_a_failed_overwrite_keeps_the_previous_run(fo, k_ds):
    from fiftyone.operators.executor import ExecutionError

    from agreement.fo.runs import list_agreement_runs

    _run(k_ds, fields=["a", "b", "c"], key="keep")
    before = k_ds.values("keep_alpha")
    sample = k_ds.first()
    sample["a"].detections[0].label = "no_object"  # collides with KaLOS's no_object code
    sample.save()
    with pytest.raises(ExecutionError, match="no_object"):
        _run(k_ds, fields=["a", "b", "c"], key="keep", overwrite=True)
    assert list_agreement_runs(k_ds) == ["keep"] and k_ds.values("keep_alpha") == before
