"""compute_geometry_agreement through execute_operator: fields, intervals, budget, panel."""

import numpy as np
import pytest

pytestmark = pytest.mark.fiftyone

OP = "@iaa/agreement/compute_geometry_agreement"


@pytest.fixture
def g_ds(fo, make_dataset):
    rng = np.random.default_rng(11)
    D = fo.Detections
    samples = []
    for i in range(25):
        base = [[float(x), float(y), 0.15, 0.15] for x, y in rng.uniform(0, 0.8, (4, 2))]
        kw = {}
        for r, noise in (("a", 0.0), ("b", 0.01), ("c", 0.04)):
            kw[r] = D(detections=[fo.Detection(label="x" if k % 2 else "y",
                                               bounding_box=[b[0] + rng.normal(0, noise), b[1], 0.15, 0.15])
                                  for k, b in enumerate(base) if not (r == "c" and k == 3)])
        samples.append(fo.Sample(filepath=f"/d/{i}.jpg", **kw))
    return make_dataset(samples)


def _run(ds, **params):
    import fiftyone.operators as foo

    return foo.execute_operator(OP, ctx=dict(view=ds.view(), params=params)).result


def test_geometry_run_fields_results_and_panel(fo, g_ds):
    import fiftyone.operators as foo

    from agreement.fo.runs import delete_agreement_run

    before = set(g_ds.get_field_schema(flat=True))
    r = _run(g_ds, fields=["a", "b", "c"], key="geo", bootstrap=200)
    for name in ("sigma", "distance_alpha", "ks", "detection_alpha", "classification_alpha"):
        assert r[name] is not None, (name, r[f"{name}_reason"])
        assert r[f"{name}_ci_low"] <= r[name] <= r[f"{name}_ci_high"], name
    assert 0.5 < r["distance_alpha"] <= 1 and r["detection_alpha"] < 1  # c misses objects
    assert r["truncated"] is False and r["n_samples_measured"] == 25
    d = g_ds.values("geo_distance")
    assert all(0 <= x <= 0.5 for x in d)
    assert all(v is None or 0 <= v <= 0.5 for vs in g_ds.values("c.detections.geo_distance") for v in vs)
    # the panel: cards with intervals, distance densities, and "worst first" sorts distances descending
    params = {"__method__": "on_load", "panel_id": "p", "panel_state": {}}
    res = foo.execute_operator("@iaa/agreement/annotator_agreement", ctx=dict(view=g_ds.view(), params=params))
    state = {}
    for q in res.executor.to_json()["requests"]:
        if q["operator_uri"] == "patch_panel_state":
            state.update(q["params"]["state"])
    assert "[" in state["cards"][0]["text"] and state["worst_first_descending"] is True
    res = foo.execute_operator("@iaa/agreement/annotator_agreement", ctx=dict(
        view=g_ds.view(), params={"__method__": "on_sort_lowest", "panel_id": "p", "panel_state": state}))
    from fiftyone.core.view import DatasetView

    stages = [q["params"]["view"] for q in res.executor.to_json()["requests"] if q["operator_uri"] == "set_view"][0]
    worst = DatasetView._build(g_ds, stages).values("geo_distance")
    assert worst == sorted(worst, reverse=True)
    delete_agreement_run(g_ds, "geo")
    assert set(g_ds.get_field_schema(flat=True)) == before


def test_no_intervals_and_budget(fo, g_ds):
    from agreement.fo.runs import load_agreement_results

    # Nothing is skipped at the default budget.
    r = _run(g_ds, fields=["a", "b"], key="g1", intervals=False)
    assert r["sigma_ci_low"] is None and r["sigma"] is not None
    assert r["truncated"] is False and r["n_samples_skipped"] == 0 and r["n_samples_measured"] == 25
    assert load_agreement_results(g_ds, "g1")["detail"]["skipped_samples"] == []
    # One sample of 30 x 30 boxes needs 900 comparisons: over a budget of 500 it alone is skipped and listed.
    xy = np.random.default_rng(3).uniform(0, 0.8, (30, 2))
    big = fo.Sample(filepath="/d/big.jpg", **{
        r: fo.Detections(detections=[fo.Detection(label="x", bounding_box=[float(x), float(y), 0.05, 0.05])
                                     for x, y in xy]) for r in ("a", "b")})
    g_ds.add_sample(big)
    r = _run(g_ds, fields=["a", "b"], key="g0", intervals=False, max_pairs=500)
    assert r["truncated"] is True and r["n_samples_skipped"] == 1 and r["n_samples_measured"] == 25
    detail = load_agreement_results(g_ds, "g0")["detail"]
    assert detail["skipped_samples"] == [{"sample_id": big.id, "comparisons": 900, "raters": 2, "annotations": 60}]
    assert "skipped whole" in detail["undefined_samples"][big.id]
    assert g_ds[big.id]["g0_distance"] is None


@pytest.mark.parametrize("params, message", [({"bootstrap": 1}, "bootstrap"), ({"distance": "nope"}, "distance")])
def test_bad_parameters(fo, g_ds, params, message):
    from fiftyone.operators.executor import ExecutionError

    with pytest.raises(ExecutionError, match=message):
        _run(g_ds, fields=["a", "b"], key="bad", **params)
    from agreement.fo.methods.geometry_agreement import compute_geometry_agreement

    with pytest.raises(ValueError, match="bootstrap"):
        compute_geometry_agreement(g_ds, "bad2", fields=["a", "b"], bootstrap=1)
