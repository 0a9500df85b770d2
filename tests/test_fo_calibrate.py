"""calibrate_agreement through execute_operator, and its view in the panel."""

import numpy as np
import pytest

pytestmark = pytest.mark.fiftyone


@pytest.fixture
def cal_ds(fo, make_dataset):
    rng = np.random.default_rng(3)
    D = fo.Detections
    samples = []
    for i in range(30):
        base = [[float(x), float(y), 0.15, 0.15] for x, y in rng.uniform(0, 0.8, (4, 2))]
        kw = {r: D(detections=[fo.Detection(label="x", bounding_box=[b[0] + rng.normal(0, 0.01), b[1], 0.15, 0.15])
                              for b in base]) for r in ("a", "b", "c")}
        samples.append(fo.Sample(filepath=f"/d/{i}.jpg", **kw))
    return make_dataset(samples)


def test_calibration_run_results_and_panel(fo, cal_ds):
    import fiftyone.operators as foo

    from agreement.fo.runs import get_agreement_run_info, load_agreement_results

    before = set(cal_ds.get_field_schema(flat=True))
    r = foo.execute_operator("@iaa/agreement/calibrate_agreement", ctx=dict(
        view=cal_ds.view(), params=dict(fields=["a", "b", "c"], key="cal", distances=["iou", "giou"]))).result
    assert r["best_distance"] in ("iou", "giou") and r["ks"] > 0.8
    assert 0 < r["tau_star"] < 1 and r["similarity_threshold"] == pytest.approx(1 - r["tau_star"])
    assert r["beta_star"] == pytest.approx(r["tau_giou"])
    assert set(cal_ds.get_field_schema(flat=True)) == before  # calibration writes no field
    assert get_agreement_run_info(cal_ds, "cal")["method"] == "iaa.calibration"
    plot = load_agreement_results(cal_ds, "cal")["detail"]["per_distance"]["iou"]["plot"]
    assert len(plot["grid"]) == len(plot["density_observed"]) > 10

    params = {"__method__": "on_load", "panel_id": "p", "panel_state": {}}
    res = foo.execute_operator("@iaa/agreement/annotator_agreement", ctx=dict(view=cal_ds.view(), params=params))
    state, data = {}, {}
    for q in res.executor.to_json()["requests"]:
        if q["operator_uri"] == "patch_panel_state":
            state.update(q["params"]["state"])
        if q["operator_uri"] == "patch_panel_data":
            data.update(q["params"]["data"])
    assert state["run_key"] == "cal" and state["score_field"] is None
    assert state["cards"][0]["text"] == r["best_distance"]
    assert len(state["curve_titles"]) == 2 and len(data["curve_0"]) == 3  # observed, expected, tau*


def test_unknown_distance_is_refused(fo, cal_ds):
    from agreement.fo.methods.calibration import calibrate_agreement

    with pytest.raises(ValueError, match="unknown distance"):
        calibrate_agreement(cal_ds, "bad", fields=["a", "b"], distances=["nope"])


@pytest.mark.parametrize("kind, expected", [
    ("boxes", ["iou", "giou", "centroid"]),
    ("polygons", ["iou", "giou", "centroid", "polygon_iou", "polygon_giou", "mask_iou"]),  # rasterised
    ("masks", ["iou", "giou", "centroid", "mask_iou"]),
    ("keypoints", ["iou", "giou", "centroid"]),  # 3 points: no COCO σ, so no oks without sigmas
    ("3d", ["cuboid_iou"]),
])
def test_default_candidates_are_the_distances_the_labels_support(fo, make_dataset, kind, expected):
    """Without ``distances`` the run compares every distance the labels' geometry supports (3D cuboids
    have no 2D box: only cuboid_iou); given ones are compared as given."""
    import fiftyone.operators as foo

    from label_kinds import kind_dataset

    ds, raters, _, _ = kind_dataset(fo, make_dataset, kind, "fields")
    out = foo.execute_operator("@iaa/agreement/calibrate_agreement",
                               ctx=dict(view=ds.view(), params=dict(**raters, key="cal"))).result
    assert out["distances"] == expected and out["distances_selection"] == "auto"
    assert all(f"ks_{d}" in out for d in expected)
    if kind != "3d":
        given = foo.execute_operator("@iaa/agreement/calibrate_agreement", ctx=dict(
            view=ds.view(), params=dict(**raters, key="cal2", distances=["giou"]))).result
        assert given["distances"] == ["giou"] and given["distances_selection"] == "given"
