"""compute_ot_agreement through execute_operator on a real dataset, both layouts."""

import math

import numpy as np
import pytest

pytestmark = pytest.mark.fiftyone

OP = "@iaa/agreement/compute_ot_agreement"


def _det(fo, label, box, **kw):
    return fo.Detection(label=label, bounding_box=box, **kw)


@pytest.fixture
def ot_ds(fo, make_dataset, three_rater_samples):
    """4 samples, raters a/b/c; c is not assigned to s3 (only a, b); s2: a found nothing; plus a lonely sample."""
    D = fo.Detections
    lonely = fo.Sample(filepath="/data/lonely.jpg", a=D(detections=[_det(fo, "cat", [0.1, 0.1, 0.1, 0.1])]),
                       b=None, c=None)
    return make_dataset(three_rater_samples + [lonely])


def _attribute_copy(fo, ds, make_dataset):
    out = []
    for s in ds.iter_samples():
        dets, raters = [], []
        for r in ("a", "b", "c"):
            if s[r] is None:
                continue
            raters.append(r)
            dets += [_det(fo, d.label, d.bounding_box, annotator=r) for d in s[r].detections]
        out.append(fo.Sample(filepath=s.filepath, gt=fo.Detections(detections=dets), raters=raters))
    return make_dataset(out)


def _run(ds, **params):
    import fiftyone.operators as foo

    return foo.execute_operator(OP, ctx=dict(view=ds.view(), params=params)).result


def test_fields_and_attribute_layouts_give_the_same_run(fo, ot_ds, make_dataset):
    r1 = _run(ot_ds, fields=["a", "b", "c"], key="ot", max_pairs=10_000)
    attr = _attribute_copy(fo, ot_ds, make_dataset)
    r2 = _run(attr, field="gt", rater_attr="annotator", raters_field="raters", key="ot", max_pairs=10_000)
    for k in ("alpha_ot", "mean_ot", "observed_cost", "expected_cost", "f1", "threshold_alpha", "n_scored"):
        assert r1[k] == pytest.approx(r2[k], abs=1e-12), k
    assert r1["n_samples"] == 5 and r1["n_scored"] == 4 and r1["n_undefined"] == 1
    assert 0 < r1["alpha_ot"] <= 1 and r1["alpha_ot_exact"]
    np.testing.assert_allclose(
        np.array(ot_ds.values("ot_ot"), dtype=float), np.array(attr.values("ot_ot"), dtype=float), atol=1e-12
    )


def test_fields_labels_and_results_are_written(fo, ot_ds):
    from agreement.fo.runs import get_agreement_run_info, load_agreement_results

    _run(ot_ds, fields=["a", "b", "c"], key="ot", lam=0.5, beta=0.5)
    scores = ot_ds.values("ot_ot")
    assert scores[-1] is None  # one rater only: not scored, not 1.0
    assert all(0.5 <= s <= 1 for s in scores[:-1])
    mins = ot_ds.values("ot_ot_min")
    assert all(m <= s + 1e-12 for m, s in zip(mins[:-1], scores[:-1]))
    positions = ot_ds.values("ot_ot_position")
    assert all(p is None or 0 <= p <= 1 for p in positions)
    # s2: rater a found nothing, so b and c's boxes paid beta against a, and matched each other
    costs_b = ot_ds.values("b.detections.ot_cost")
    assert costs_b[-1] is None  # b not assigned to the lonely sample
    assert all(c is not None and 0 <= c <= 0.5 for cs in costs_b[:-1] for c in cs)
    match_a = ot_ds.values("a.detections.ot_match")
    ids_b = set(ot_ds.values("b.detections.id", unwind=True))
    ids_c = set(ot_ds.values("c.detections.id", unwind=True))
    assert all(m in ids_b | ids_c for m in match_a[0])
    # the lonely label has no pair: cost and match are None
    assert ot_ds.values("a.detections.ot_cost")[-1] == [None] and ot_ds.values("a.detections.ot_match")[-1] == [None]
    res = load_agreement_results(ot_ds, "ot")
    assert "only one rater assigned" in next(iter(res["detail"]["undefined_samples"].values()))
    assert res["detail"]["raters"] == ["a", "b", "c"]
    recs = res["detail"]["rater_pairs"]
    assert [(r["rater_a"], r["rater_b"], r["n_shared_samples"]) for r in recs] == [
        ("a", "b", 4), ("a", "c", 3), ("b", "c", 3)]
    for r in recs:
        assert {"mean_ot", "alpha_ot", "alpha_ot_se", "observed_cost", "expected_cost", "threshold_alpha",
                "exact"} <= set(r)
        assert 0.5 <= r["mean_ot"] <= 1 and r["exact"] == 1.0
    assert "per_rater_pair" not in res["detail"] and "rater_pair_mean_ot" not in res["detail"]
    from agreement.core.rater_pairs import records_to_matrix

    raters, m, shared = records_to_matrix(recs, "alpha_ot", raters=res["detail"]["raters"])
    assert m.shape == (3, 3) and np.allclose(m, m.T, equal_nan=True) and shared[0, 1] == 4
    # every label is matched (it names its match) or says why it was not
    reasons = ot_ds.values("a.detections.ot_reason", unwind=True)
    matches = ot_ds.values("a.detections.ot_match", unwind=True)
    assert all((r is None) == (m is not None) for r, m in zip(reasons, matches))
    assert set(reasons) - {None} <= {"no counterpart", "label differs", "too far", "counterpart taken"}
    assert ot_ds.values("a.detections.ot_reason")[-1] == ["no counterpart"]
    info = get_agreement_run_info(ot_ds, "ot")
    assert info["params"]["beta"] == 0.5 and info["method"] == "iaa.ot_agreement"
    assert set(info["sample_fields"]) == {"ot_ot", "ot_ot_min", "ot_ot_position", "ot_f1", "ot_mean_iou"}


def test_overwrite_and_delete_touch_only_the_run(fo, ot_ds):
    import fiftyone.operators as foo
    from fiftyone.operators.executor import ExecutionError

    before = set(ot_ds.get_field_schema(flat=True))
    _run(ot_ds, fields=["a", "b", "c"], key="k")
    with pytest.raises(ExecutionError, match="overwrite=True"):
        _run(ot_ds, fields=["a", "b", "c"], key="k")
    r = _run(ot_ds, fields=["a", "b", "c"], key="k", beta=0.8, overwrite=True)
    assert r["mean_ot"] >= 0.2
    foo.execute_operator("@iaa/agreement/delete_agreement_run", ctx=dict(view=ot_ds.view(), params={"key": "k"}))
    assert set(ot_ds.get_field_schema(flat=True)) == before


@pytest.mark.parametrize(
    "params, message",
    [
        ({"lam": 1.5}, "lam"),
        ({"beta": 0.0}, "beta"),
        ({"beta": 1.2}, "beta"),
        ({"normalization": "nope"}, "normalization"),
        ({"max_pairs": 0}, "max_pairs"),
    ],
)
def test_bad_parameters_are_refused_before_anything_is_written(fo, ot_ds, params, message):
    from fiftyone.operators.executor import ExecutionError

    before = set(ot_ds.get_field_schema(flat=True))
    with pytest.raises(ExecutionError, match=message):
        _run(ot_ds, fields=["a", "b"], key="bad", **params)
    assert set(ot_ds.get_field_schema(flat=True)) == before and ot_ds.list_runs() == []


def test_single_sample_gives_undefined_alpha_with_reason(fo, ot_ds):
    r = _run(ot_ds.limit(1), fields=["a", "b"], key="one", view_target="CURRENT_VIEW")  # the view, not the dataset
    assert r["alpha_ot"] is None and r["alpha_ot_reason"]
    assert r["mean_ot"] is not None and not math.isnan(r["mean_ot"])


@pytest.mark.shared_data
def test_lvis_operator_matches_the_pure_library(fo, lvis_path):
    from agreement.fo.importers.coco import import_multi_rater_coco
    from agreement.io.coco import read_multi_rater_coco
    from agreement.methods.ot import sample_ot_scores
    from agreement.methods.ot.alpha_ot import alpha_ot

    ds = import_multi_rater_coco(lvis_path, dataset_name="lvis_ot", polygons="none")
    try:
        r = _run(ds, fields=["r1", "r2"], key="ot", lam=0.5, beta=0.6)
        corpus = read_multi_rater_coco(lvis_path).annotations
        pure = sample_ot_scores(corpus, lam=0.5, beta=0.6)
        by_id = dict(zip(corpus.sample_ids, pure.mean))
        got = dict(zip(ds.values("coco_id"), ds.values("ot_ot")))
        assert max(abs(got[k] - by_id[k]) for k in by_id) < 1e-9
        assert r["alpha_ot"] == pytest.approx(alpha_ot(corpus, lam=0.5, beta=0.6).alpha, abs=1e-9)
        # cross pairs within the image-size strata (sqrt(W H): 25, 165 and 10 images): 25² + 165² + 10² − 200;
        # 200 × 199 = 39,800 before chance pairs joined only images of comparable size
        assert r["alpha_ot_exact"] and r["n_cross_pairs"] == 27_750
    finally:
        ds.delete()


def _resolve(ds, params):
    import fiftyone.operators as foo
    from fiftyone.operators.executor import ExecutionContext

    op = foo.get_operator(OP)
    ctx = ExecutionContext(request_params={"dataset_name": ds.name, "view": ds.view()._serialize(), "params": params})
    return op.resolve_input(ctx).type.properties


def test_form_lists_fitting_fields_and_detects_raters(fo, ot_ds, make_dataset):
    props = _resolve(ot_ds, {})
    assert props["layout"].default == "fields"
    assert {c.value for c in props["fields"].view.choices} == {"a", "b", "c"}
    assert {"lam", "beta", "normalization", "max_pairs", "seed", "key"} <= set(props)
    assert "overwrite" not in props
    attr = _attribute_copy(fo, ot_ds, make_dataset)
    props = _resolve(attr, {"field": "gt"})
    assert props["layout"].default == "attribute"
    assert props["raters_found"].view.label == "Raters found: a, b, c"
    assert "raters" in props["raters_field"].type.values
    # an existing key offers overwrite
    _run(attr, field="gt", key="old")
    assert "overwrite" in _resolve(attr, {"field": "gt", "key": "old"})
    # a dataset without label fields explains what to do
    empty = make_dataset([fo.Sample(filepath="/data/none.jpg")])
    assert "no_fields" in _resolve(empty, {})


def test_load_agreement_view_lowest_and_rater_pair(fo, ot_ds):
    import fiftyone.operators as foo
    from fiftyone.operators.executor import ExecutionError

    _run(ot_ds, fields=["a", "b", "c"], key="ot")

    def load(**params):
        return foo.execute_operator("@iaa/agreement/load_agreement_view",
                                    ctx=dict(view=ot_ds.view(), params=dict(key="ot", **params))).result

    out = load(limit=3, save_as="worst")
    scores = [s for s in ot_ds.values("ot_ot") if s is not None]
    assert out["count"] == 3 and ot_ds.has_saved_view("worst")
    saved = ot_ds.load_saved_view("worst").values("ot_ot")
    assert saved == sorted(scores)[:3]
    with pytest.raises(ExecutionError, match="already has a saved view 'worst'"):
        load(limit=3, save_as="worst")
    pair = load(mode="pair", rater_a="c", rater_b="a", limit=10)
    from agreement.fo.runs import load_agreement_results

    ac = load_agreement_results(ot_ds, "ot")["detail"]["pair_sample_scores"]["a|c"]
    assert pair["sample_ids"] == [sid for _, sid in sorted((v, k) for k, v in ac.items())]
    assert "lonely" not in str(ot_ds.select(pair["sample_ids"]).values("filepath"))
    with pytest.raises(ExecutionError, match="rater_b"):  # the form only offers the run's raters
        load(mode="pair", rater_a="a", rater_b="zz")


def test_form_offers_only_detections_and_checks_the_key(fo, ot_ds):
    ot_ds.add_sample_field("kps", fo.EmbeddedDocumentField, embedded_doc_type=fo.Keypoints)
    props = _resolve(ot_ds, {"key": "1 bad"})
    assert "kps" not in {c.value for c in props["fields"].view.choices}  # OT compares boxes only
    assert props["key"].invalid and "invalid run key" in props["key"].error_message
    assert not _resolve(ot_ds, {"key": "good_key"})["key"].invalid


def test_label_reasons_nearest_counterpart_and_match_rater(fo, make_dataset):
    """A perfectly fitting box pair with different classes costs exactly beta = 0.5 and is not matched
    ("label differs"); a box nobody else drew has no counterpart."""
    D = fo.Detections
    box = [0.1, 0.1, 0.3, 0.3]
    samples = [
        fo.Sample(filepath="/data/fit.jpg", a=D(detections=[_det(fo, "cat", box)]),
                  b=D(detections=[_det(fo, "dog", box)])),
        fo.Sample(filepath="/data/same.jpg", a=D(detections=[_det(fo, "cat", box)]),
                  b=D(detections=[_det(fo, "cat", [0.11, 0.1, 0.3, 0.3])])),
        fo.Sample(filepath="/data/lone.jpg", a=D(detections=[_det(fo, "cat", box)]), b=D()),
    ]
    ds = make_dataset(samples)
    _run(ds, fields=["a", "b"], key="ot", lam=0.5, beta=0.5)
    get = lambda path: [x[0] if x else None for x in ds.values(path)]  # noqa: E731
    ids_b = [x[0] if x else None for x in ds.values("b.detections.id")]
    # s0: a different class on a perfectly fitting box
    assert get("a.detections.ot_reason")[0] == "label differs"
    assert get("a.detections.ot_nearest_rater")[0] == "b"
    assert get("a.detections.ot_nearest_id")[0] == ids_b[0]
    assert get("a.detections.ot_nearest_cost")[0] == 0.5
    assert get("a.detections.ot_match")[0] is None and get("a.detections.ot_match_rater")[0] is None
    assert get("b.detections.ot_reason")[0] == "label differs"
    # s1: matched, with the matched label's id and rater
    assert get("a.detections.ot_reason")[1] is None  # a matched label stores no reason: its match says it
    assert get("a.detections.ot_match")[1] == ids_b[1] and get("a.detections.ot_match_rater")[1] == "b"
    assert get("a.detections.ot_nearest_id")[1] is None  # a matched label's counterpart is its match
    assert get("a.detections.ot_nearest_cost")[1] is None
    # s2: b looked and drew nothing: no counterpart
    assert get("a.detections.ot_reason")[2] == "no counterpart"
    assert get("a.detections.ot_nearest_rater")[2] is None and get("a.detections.ot_nearest_id")[2] is None
    assert get("a.detections.ot_nearest_cost")[2] is None
    assert get("a.detections.ot_cost")[2] == 0.5
    # the App's per-label explanation (the panel, open sample): matched, with its match; or why not
    from agreement.fo.panel.data import label_explanations
    from agreement.fo.runs import get_agreement_run_info

    info = get_agreement_run_info(ds, "ot")
    rows = {(r["rater"], i): r for i, sid in enumerate(ds.values("id"))
            for r in label_explanations(ds, info, sid)}
    assert rows[("a", 1)]["status"] == "matched" and rows[("a", 1)]["counterpart"] == "b: cat"
    assert rows[("a", 1)]["value"].endswith("paid") and not rows[("a", 1)]["disagrees"]
    assert rows[("a", 0)]["status"] == "label differs" and rows[("a", 0)]["disagrees"]
    assert rows[("a", 2)]["status"] == "no counterpart"
