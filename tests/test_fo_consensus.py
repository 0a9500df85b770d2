"""compute_mask_consensus through execute_operator: consensus field, per-rater estimates, skips."""

import numpy as np
import pytest

pytestmark = pytest.mark.fiftyone

OP = "@iaa/agreement/compute_mask_consensus"


def _disk(cx, cy, r, W=64, H=48):
    yy, xx = np.mgrid[:H, :W]
    return (xx - cx) ** 2 + (yy - cy) ** 2 <= r ** 2


def _det(fo, label, full, W=64, H=48):
    ys, xs = np.nonzero(full)
    x0, x1, y0, y1 = xs.min(), xs.max() + 1, ys.min(), ys.max() + 1
    return fo.Detection(label=label, bounding_box=[x0 / W, y0 / H, (x1 - x0) / W, (y1 - y0) / H],
                        mask=full[y0:y1, x0:x1])


@pytest.fixture
def mask_ds(fo, make_dataset):
    rng = np.random.default_rng(0)
    D = fo.Detections
    samples = []
    for i in range(3):
        truth = _disk(30, 24, 12)
        kw = {}
        for r, noise in (("a", 0.0), ("b", 0.02), ("c", 0.3)):
            m = truth ^ (rng.random(truth.shape) < noise * 0.2)
            kw[r] = D(detections=[_det(fo, "blob", m)])
        samples.append(fo.Sample(filepath=f"/d/{i}.png", metadata=fo.ImageMetadata(width=64, height=48), **kw))
    samples.append(fo.Sample(filepath="/d/one.png", metadata=fo.ImageMetadata(width=64, height=48),
                             a=D(detections=[_det(fo, "blob", _disk(10, 10, 5))]), b=None, c=None))
    return make_dataset(samples)


def test_consensus_field_and_rater_estimates(fo, mask_ds):
    import fiftyone.operators as foo

    from agreement.fo.runs import delete_agreement_run, load_agreement_results

    before = set(mask_ds.get_field_schema(flat=True))
    r = foo.execute_operator(OP, ctx=dict(view=mask_ds.view(), params=dict(fields=["a", "b", "c"], key="st"))).result
    assert r["n_consensus"] == 3 and r["n_skipped"] == 1
    assert r["sensitivity_a"] > r["sensitivity_c"] - 1e-9
    cons = mask_ds.values("st_consensus")
    assert cons[3] is None  # skipped sample: no consensus written
    det = cons[0].detections[0]
    assert det.label == "blob" and 0.5 <= det.staple_probability <= 1
    truth = _disk(30, 24, 12)
    x, y, w, h = det.bounding_box
    assert abs(w * 64 - (truth.any(axis=0).sum())) <= 2  # consensus close to the true disk
    res = load_agreement_results(mask_ds, "st")
    assert "STAPLE needs two" in next(iter(res["detail"]["skipped_samples"].values()))
    delete_agreement_run(mask_ds, "st")
    assert set(mask_ds.get_field_schema(flat=True)) == before


def test_boxes_only_is_refused(fo, make_dataset):
    from agreement.fo.methods.mask_consensus import compute_mask_consensus

    D = fo.Detections
    ds = make_dataset([fo.Sample(filepath="/d/b.png", a=D(detections=[fo.Detection(label="x", bounding_box=[0, 0, .5, .5])]),
                                 b=D())])
    with pytest.raises(ValueError, match="needs instance masks"):
        compute_mask_consensus(ds, "st", fields=["a", "b"])


def test_panel_shows_rater_bars(fo, mask_ds):
    import fiftyone.operators as foo

    foo.execute_operator(OP, ctx=dict(view=mask_ds.view(), params=dict(fields=["a", "b", "c"], key="st")))
    res = foo.execute_operator("@iaa/agreement/annotator_agreement", ctx=dict(
        view=mask_ds.view(), params={"__method__": "on_load", "panel_id": "p", "panel_state": {}}))
    state, data = {}, {}
    for q in res.executor.to_json()["requests"]:
        if q["operator_uri"] == "patch_panel_state":
            state.update(q["params"]["state"])
        if q["operator_uri"] == "patch_panel_data":
            data.update(q["params"]["data"])
    assert state["score_field"] == "st_sensitivity"
    assert [t["name"] for t in data["bars_0"]] == ["sensitivity", "specificity"]
    assert data["bars_0"][0]["x"] == ["a", "b", "c"]
    assert sum(data["histogram"][0]["y"]) == 3


@pytest.mark.parametrize("method", ["em", "majority", "wbf"])
def test_consensus_of_raters_who_drew_nothing_is_a_run_with_warnings(fo, make_dataset, method):
    """Issue 47: every rater looked and drew nothing (empty ``Detections()``): the EM used to divide by zero
    classes. The run completes: no consensus label, agreement and mean confidence None with the reason,
    and the run warns that nothing was labelled."""
    import fiftyone.operators as foo

    ds = make_dataset([fo.Sample(filepath=f"/empty/{i}.jpg", a=fo.Detections(), b=fo.Detections())
                       for i in range(4)])
    r = foo.execute_operator("@iaa/agreement/compute_consensus", ctx=dict(
        view=ds.view(), params=dict(fields=["a", "b"], key="nil", method=method))).result
    assert r["n_consensus"] == 0 and r["n_units"] == 0
    assert r["agreement"] is None and "no rater labelled anything" in r["agreement_reason"]
    assert r["mean_confidence"] is None and "no rater labelled anything" in r["mean_confidence_reason"]
    assert any("no rater drew any label" in w for w in r["warnings"])
    assert ds.count("nil_consensus.detections") == 0
