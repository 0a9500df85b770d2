"""The operators' forms and results (issue 38): run pickers preselect the run open in the panel, else the
newest, and list only the runs the operator accepts; every operator shows what it returned."""

from __future__ import annotations

import json

import numpy as np
import pytest

from label_kinds import RATERS, kind_dataset

pytestmark = pytest.mark.fiftyone

URI = "@iaa/agreement/{}"
PICKERS = ("get_agreement_run_info", "rename_agreement_run", "delete_agreement_run", "load_agreement_view")


def _ctx(ds, params=None, results=None):
    from fiftyone.operators.executor import ExecutionContext

    request = {"dataset_name": ds.name, "view": ds.view()._serialize(), "params": dict(params or {})}
    if results is not None:
        request["results"] = results
    return ExecutionContext(request_params=request)


def _form(ds, name, params=None):
    import fiftyone.operators as foo

    return foo.get_operator(URI.format(name)).resolve_input(_ctx(ds, params)).type.properties


def _fake_run(ds, key: str) -> None:
    from agreement.fo import runs

    plan = runs.prepare_run(ds, key, "iaa.test", ["score"])
    runs.write_sample_values(ds, plan, "score", {ds.first().id: 1.0})
    runs.register_run(ds, plan, {}, {}, {"summary": {}})


def test_run_pickers_preselect_the_open_run_else_the_newest(fo, make_dataset):
    from agreement.fo.panel.app_state import remember_open_run

    ds = make_dataset([fo.Sample(filepath="/data/x.jpg")])
    for key in ("b_old", "m_mid", "z_new", "a_newest"):  # the newest is alphabetically first
        _fake_run(ds, key)
    for name in PICKERS:
        assert _form(ds, name)["key"].default == "a_newest", name
    remember_open_run(ds, "m_mid")
    for name in PICKERS:
        assert _form(ds, name)["key"].default == "m_mid", name
    remember_open_run(ds, None)
    assert _form(ds, "rename_agreement_run")["key"].default == "a_newest"


def test_a_renamed_open_run_stays_preselected(fo, make_dataset):
    import fiftyone.operators as foo

    from agreement.fo.panel.app_state import open_run, remember_open_run

    ds = make_dataset([fo.Sample(filepath="/data/x.jpg")])
    _fake_run(ds, "k")
    _fake_run(ds, "later")
    remember_open_run(ds, "k")
    out = foo.get_operator(URI.format("rename_agreement_run"))(ds, key="k", new_key="k2")
    assert out["renamed"] == "k → k2" and out["renamed_sample_fields"] == {"k_score": "k2_score"}
    assert open_run(ds) == "k2" and _form(ds, "get_agreement_run_info")["key"].default == "k2"


@pytest.fixture
def consensus_ds(fo, make_dataset):
    """8 samples, raters a..d; runs ``ot`` (OT), ``kalos`` (KαLOS), then ``cons`` and ``cons_b`` (consensus)."""
    import fiftyone.operators as foo

    ds, params, _, _ = kind_dataset(fo, make_dataset, "boxes", "fields")
    for op, key in (("compute_consensus", "cons"), ("compute_ot_agreement", "ot"), ("compute_kalos", "kalos"),
                    ("compute_consensus", "cons_b")):
        foo.execute_operator(URI.format(op), ctx=dict(view=ds.view(), params=dict(key=key, **params)))
    return ds, params


def test_consensus_operators_list_only_consensus_runs(consensus_ds, fo, make_dataset):
    from agreement.fo.panel.app_state import remember_open_run

    ds, _ = consensus_ds
    for name in ("finalize_consensus", "export_rater_report"):
        key = _form(ds, name)["key"]
        assert key.type.values == ["cons", "cons_b"] and key.default == "cons_b", name
    remember_open_run(ds, "kalos")  # a run the operator does not take: the newest consensus run
    assert _form(ds, "finalize_consensus")["key"].default == "cons_b"
    remember_open_run(ds, "cons")
    assert _form(ds, "finalize_consensus")["key"].default == "cons"
    assert _form(ds, "finalize_consensus")["what"].view.label.startswith("Writes cons_final for every sample")

    other, params, _, _ = kind_dataset(fo, make_dataset, "boxes", "fields")
    import fiftyone.operators as foo

    foo.execute_operator(URI.format("compute_kalos"), ctx=dict(view=other.view(), params=dict(key="k", **params)))
    for name in ("finalize_consensus", "export_rater_report"):
        props = _form(other, name)
        assert "key" not in props, name
        assert props["no_runs"].view.label == "No consensus runs", name
        assert "compute_consensus" in props["no_runs"].view.description, name


def test_load_agreement_view_offers_the_drill_downs_of_the_chosen_run(consensus_ds):
    ds, _ = consensus_ds
    modes = {key: _form(ds, "load_agreement_view", {"key": key})["mode"].type.values for key in ("cons", "ot", "kalos")}
    assert modes == {"cons": ["lowest", "pair", "review"], "ot": ["lowest", "pair", "unmatched"],
                     "kalos": ["lowest", "pair", "unmatched", "class"]}


def _every_operator_run(fo, ds, params, tmp_path) -> dict[str, tuple[dict, object]]:
    """Each operator executed once as the SDK runs it: ``{name: (params, dataset or None)}`` in order."""
    from fiftyone import ViewField as F

    from labelstudio_export import annotation, rectangle, task

    ds.set_values("metadata", [fo.ImageMetadata(width=100, height=80) for _ in range(len(ds))])
    coco = tmp_path / "raters.json"
    exports = []
    for r in ("a", "b"):
        d = tmp_path / "exports" / r
        ds.export(export_dir=str(d), dataset_type=fo.types.COCODetectionDataset, label_field=r,
                  export_media=False, progress=False)
        exports.append({"rater": r, "path": str(d), "format": "coco"})
    ls = tmp_path / "ls.json"
    ls.write_text(json.dumps([task(1, "x.jpg", [annotation(1, [rectangle([0.1, 0.1, 0.2, 0.2], "c", 100, 80)]),
                                                 annotation(2, [rectangle([0.1, 0.1, 0.2, 0.3], "c", 100, 80)])])]))
    judgements = tmp_path / "judgements.tsv"
    judgements.write_text("w1\ti1\ta\nw2\ti1\tb\nw1\ti2\ta\nw2\ti2\ta\n")
    return {
        "compute_consensus": (dict(key="cons", method="majority", **params), ds),  # half-vote labels flagged
        "compute_ot_agreement": (dict(key="ot", **params), ds),
        "compute_kalos": (dict(key="kalos", **params), ds),
        "compute_geometry_agreement": (dict(key="geo", **params), ds),
        "calibrate_agreement": (dict(key="cal", **params), ds),
        "plan_raters": (dict(key="kalos", repeats=5), ds),
        "suggest_relabel": (dict(key="cons", budget=2), ds),
        "review_consensus_labels": (lambda: dict(key="cons", decision="reject", label_ids=ds.filter_labels(
            "cons_consensus", F("cons_review") == True).values("cons_consensus.detections.id",  # noqa: E712
                                                                unwind=True)[:1]), ds),
        "finalize_consensus": (dict(key="cons"), ds),
        "export_rater_report": (dict(key="cons", output_dir=str(tmp_path / "raters")), ds),
        "export_agreement_report": (dict(output_dir=str(tmp_path / "report")), ds),
        "export_multi_rater_coco": (dict(coco_path=str(coco), fields=list(RATERS)), ds),
        "simulate_raters": (dict(field="a", key="sim", num_raters=2, magnitude=0.5), ds),
        "list_agreement_runs": ({}, ds),
        "get_agreement_run_info": (dict(key="ot"), ds),
        "load_agreement_view": (dict(key="ot", limit=3), ds),
        "rename_agreement_run": (dict(key="geo", new_key="geo2"), ds),
        "delete_agreement_run": (dict(key="geo2"), ds),
        "import_multi_rater_coco": (dict(coco_path=str(coco), dataset_name="forms-coco", persistent=False), None),
        "import_multi_rater": (dict(exports=exports, dataset_name="forms-multi", persistent=False), None),
        "import_label_studio": (dict(json_path=str(ls), dataset_name="forms-ls", persistent=False), None),
        "import_judgements": (dict(path=str(judgements), dataset_name="forms-judgements", persistent=False), None),
    }


def test_every_operator_shows_every_key_of_its_result(fo, make_dataset, tmp_path):
    """Executed on a small dataset, each operator's result has an output property per key (as the App
    resolves the output for that result), and its output form without a result is not empty."""
    import fiftyone.operators as foo

    from operators import OPERATORS

    ds, params, _, _ = kind_dataset(fo, make_dataset, "boxes", "fields")
    runs = _every_operator_run(fo, ds, params, tmp_path)
    image_level = {"compute_class_agreement", "compute_mask_agreement", "compute_track_agreement"}
    # request_labels and load_requested_labels need a labelling server: tests/test_fo_labelstudio_roundtrip.py
    # checks the same for them against the real Label Studio server (its _shows_every_key)
    round_trip = {"request_labels", "load_requested_labels"}
    assert set(runs) >= {cls().config.name for cls in OPERATORS} - {"compute_mask_consensus"} - image_level - round_trip
    masks, mask_params, _, _ = kind_dataset(fo, make_dataset, "masks", "fields")
    runs["compute_mask_consensus"] = (dict(key="st", **mask_params), masks)
    classes = make_dataset([fo.Sample(filepath=f"/nonexistent/c{i}", r1=fo.Classification(label="ab"[i % 2]),
                                      r2=fo.Classification(label="ab"[i // 2 % 2])) for i in range(8)])
    runs["compute_class_agreement"] = (dict(key="ca", fields=["r1", "r2"], bootstrap=50), classes)
    grid = np.indices((6, 6)).sum(axis=0) % 3
    segs = make_dataset([fo.Sample(filepath=f"/nonexistent/m{i}", m1=fo.Segmentation(mask=grid.astype(np.uint8)),
                                   m2=fo.Segmentation(mask=np.roll(grid, i, axis=0).astype(np.uint8)))
                         for i in range(3)])
    runs["compute_mask_agreement"] = (dict(key="ma", fields=["m1", "m2"]), segs)
    from agreement.fo.simulate.video import simulate_video_dataset

    videos, _ = simulate_video_dataset(num_videos=2, num_frames=12, num_objects=2, num_raters=2, reference_field=None)
    runs["compute_track_agreement"] = (dict(key="tracks", fields=["frames.r1", "frames.r2"]), videos)
    try:
        for name, (given, samples) in runs.items():
            given = given() if callable(given) else given
            op = foo.get_operator(URI.format(name))
            ctx = dict(view=samples.view()) if samples is not None else {}
            result = foo.execute_operator(op.uri, ctx=dict(ctx, params=given)).result
            assert isinstance(result, dict) and result, name
            where = samples if samples is not None else fo.load_dataset(result["dataset_name"])
            shown = op.resolve_output(_ctx(where, given, results=result)).type.properties
            valued = {k for k, v in result.items() if v not in (None, "", [], {})}  # an empty value shows no line
            assert valued <= set(shown), (name, sorted(valued - set(shown)))
            static = op.resolve_output(_ctx(where, given)).type.properties
            assert static, name
            assert all(p.view is not None and p.view.label for p in shown.values()), name
            # declared, not only shown: every key but a method's further summary numbers has its own label
            extra = set(result) - set(static)
            if getattr(op, "declaration", None) is None:
                assert not extra, (name, sorted(extra))
            else:
                assert {"key", "target", "fields_written"} <= set(static) and not extra & {"target", "key"}, name
    finally:
        videos.delete()
        for made in ("forms-coco", "forms-multi", "forms-ls", "forms-judgements"):
            if fo.dataset_exists(made):
                fo.delete_dataset(made)


def test_imports_open_the_new_dataset_in_the_app(fo, tmp_path):
    import fiftyone.operators as foo

    from labelstudio_export import annotation, rectangle, task

    ls = tmp_path / "ls.json"
    ls.write_text(json.dumps([task(1, "x.jpg", [annotation(1, [rectangle([0.1, 0.1, 0.2, 0.2], "c", 100, 80)]),
                                                 annotation(2, [rectangle([0.1, 0.1, 0.2, 0.3], "c", 100, 80)])])]))
    try:
        run = foo.execute_operator(URI.format("import_label_studio"),
                                   ctx=dict(params=dict(json_path=str(ls), dataset_name="opened", persistent=False)))
        requests = run.executor.to_json()["requests"]
        assert {"operator_uri": "open_dataset", "params": {"dataset": "opened"}} in [
            {k: r[k] for k in ("operator_uri", "params")} for r in requests]
        assert run.result["media_type"] == "image" and run.result["raters"] and run.result["num_samples"] == 1
    finally:
        if fo.dataset_exists("opened"):
            fo.delete_dataset("opened")


# ------------------------------------------------------------------ every parameter, where it applies (issue 48)
ORDER = ["low", "mid", "high"]  # alphabetically: high, low, mid


def _class_ds(fo, make_dataset, labels=ORDER, n: int = 9, field_type: str = "Classification"):
    """``n`` samples, raters r1..r3 giving classes of ``labels`` (r3 one step off now and then)."""
    samples = []
    for i in range(n):
        got = {r: labels[min(len(labels) - 1, i % len(labels) + (r == "r3" and i % 4 == 0))] for r in ("r1", "r2", "r3")}
        samples.append(fo.Sample(filepath=f"/classes/{i}.jpg", **{r: fo.Classification(label=c) for r, c in got.items()}))
    return make_dataset(samples)


def test_the_class_order_is_offered_for_ordered_levels_and_says_what_is_missing(fo, make_dataset):
    """Issue 48, item 3: choosing "ordinal" offered no control for the class order and Execute failed. The form
    now offers the classes found, in order (filled in where the data tells it), and marks the control invalid
    with the run's reason until every class is given; nominal shows no order. Classes have no box policy."""
    ds = _class_ds(fo, make_dataset)
    raters = {"fields": ["r1", "r2", "r3"]}
    nominal = _form(ds, "compute_class_agreement", raters)
    assert "classes" not in nominal and "box_policy" not in nominal and "seed" in nominal
    form = _form(ds, "compute_class_agreement", {**raters, "level": "ordinal"})
    order = form["classes"]
    assert [c.value for c in order.view.choices] == ["high", "low", "mid"] and order.default is None
    assert order.invalid and order.error_message == (
        "level 'ordinal' needs the order of the classes: pick all 3 (high, low, mid) lowest first")
    given = _form(ds, "compute_class_agreement", {**raters, "level": "ordinal", "classes": ORDER})["classes"]
    assert not given.invalid
    short = _form(ds, "compute_class_agreement", {**raters, "level": "ordinal", "classes": ["low", "high"]})
    assert short["classes"].invalid and "['mid'] are labelled but not in the order given" in short["classes"].error_message
    interval = _form(ds, "compute_class_agreement", {**raters, "level": "interval"})["classes"]
    assert interval.invalid and "needs numeric classes" in interval.error_message

    ds.classes = {"r1": ORDER}  # an order the dataset records (e.g. an import's categories): filled in
    recorded = _form(ds, "compute_class_agreement", {**raters, "level": "ordinal"})["classes"]
    assert recorded.default == ORDER and not recorded.invalid

    numeric = _class_ds(fo, make_dataset, labels=["1", "2", "10"])
    filled = _form(numeric, "compute_class_agreement", {**raters, "level": "interval"})["classes"]
    assert filled.default == ["1", "2", "10"] and not filled.invalid  # numeric order, not "1", "10", "2"


def test_every_python_parameter_of_a_method_is_in_its_form(fo, make_dataset):
    """Every declared method parameter is offered in the App form, or set there through form-only controls
    (``form_via``); the only exception is one the run fills in itself (the label type)."""
    from agreement.fo.methods import declarations

    python_only = {(d.operator, p.name) for d in declarations() for p in d.method_params
                   if not p.form and not p.form_via}
    assert python_only == {("compute_mask_consensus", "label_type")}
    ds, params, _, _ = kind_dataset(fo, make_dataset, "boxes", "fields")
    assert {"taus", "session_attr"} <= set(_form(ds, "compute_kalos", params))
    assert "confidence" in _form(ds, "compute_geometry_agreement", params)
    assert "confidence" not in _form(ds, "compute_geometry_agreement", {**params, "intervals": False})
    assert "similarity" in _form(ds, "compute_consensus", params)


def test_forms_show_only_what_applies_to_the_rater_fields_label_type(fo, make_dataset):
    """Issue 48, item 11: class forms showed box-border options. The consensus form on class fields offers
    neither the box policy nor τ, the similarity, the minimum confidence, the review band's lower end (a
    class consensus flags by its upper end only), nor WBF; on boxes, no MACE."""
    classes = _class_ds(fo, make_dataset)
    raters = {"fields": ["r1", "r2", "r3"]}
    on_classes = _form(classes, "compute_consensus", raters)
    box_only = {"box_policy", "tau_auto", "tau", "min_confidence", "similarity", "review_lo"}
    assert not box_only & set(on_classes) and {"method", "review_hi", "key"} <= set(on_classes)
    assert on_classes["method"].type.values == ["auto", "em", "majority", "mace"]
    assert "quorum" not in _form(classes, "compute_consensus", {**raters, "method": "majority"})
    boxes, params, _, _ = kind_dataset(fo, make_dataset, "boxes", "fields")
    on_boxes = _form(boxes, "compute_consensus", params)
    assert box_only - {"tau"} <= set(on_boxes) and "tau" in _form(boxes, "compute_consensus",
                                                                   {**params, "tau_auto": False})
    assert on_boxes["method"].type.values == ["auto", "em", "majority", "wbf"]
    assert "quorum" in _form(boxes, "compute_consensus", {**params, "method": "majority"})
    before = _form(boxes, "compute_consensus", {"fields": []})  # no rater field chosen yet: every option
    assert "box_policy" in before and "mace" in before["method"].type.values
    assert "box_policy" not in _form(classes, "compute_class_agreement", {})  # it reads no boxes at all


def _shown_result(ds, name: str, params: dict) -> dict:
    """What the App shows at the end of an immediate run: the results of the stream's ``show_output``."""
    from test_operators_progress import _endpoint_lines

    body = {"operator_uri": URI.format(name), "dataset_name": ds.name if ds is not None else None, "view": [],
            "params": params}
    lines = _endpoint_lines(body)
    shown = [line["body"]["params"] for line in lines if line.get("cls") == "InvocationRequest"
             and line["body"]["operator_uri"] == "show_output"]
    assert shown, lines
    return shown[-1]["results"]


def test_results_show_no_box_counts_for_classes_and_summarise_a_crowd(fo, make_dataset, tmp_path):
    """Issue 48, item 11: class results showed clipped-box counts, and an import listed 196 raters and a
    196-entry table. The App's result of a class run has no box counts (a box run's keeps them, zeros
    included); an import of 40 workers shows their count and the first few; the Python result is whole."""
    import fiftyone.operators as foo

    from operators.outputs import SHOWN

    classes = _class_ds(fo, make_dataset)
    shown = _shown_result(classes, "compute_class_agreement", dict(key="ca", fields=["r1", "r2", "r3"], bootstrap=0))
    sdk = foo.execute_operator(URI.format("compute_class_agreement"), ctx=dict(
        view=classes.view(), params=dict(key="cb", fields=["r1", "r2", "r3"], bootstrap=0))).result
    repairs = {"clipped_boxes", "outside_boxes", "dropped_boxes", "resized_masks"}
    assert repairs <= set(sdk) and not repairs & set(shown)
    boxes, params, _, _ = kind_dataset(fo, make_dataset, "boxes", "fields")
    assert repairs - {"resized_masks"} <= set(_shown_result(boxes, "compute_kalos", dict(key="k", **params)))

    judgements = tmp_path / "crowd.tsv"
    judgements.write_text("".join(f"w{w:02d}\ti{i}\t{'ab'[(i + w) % 2]}\n" for w in range(40) for i in range(3)))
    try:
        shown = _shown_result(None, "import_judgements", dict(path=str(judgements), dataset_name="forms-crowd",
                                                                persistent=False))
        assert shown["raters"] == "40 raters: " + ", ".join(f"w{w:02d}" for w in range(SHOWN)) + ", … and 30 more"
        fo.delete_dataset("forms-crowd")
        sdk = foo.execute_operator(URI.format("import_judgements"), ctx=dict(params=dict(
            path=str(judgements), dataset_name="forms-crowd", persistent=False))).result
        assert sdk["raters"] == [f"w{w:02d}" for w in range(40)]
    finally:
        if fo.dataset_exists("forms-crowd"):
            fo.delete_dataset("forms-crowd")
