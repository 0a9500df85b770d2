"""Every operator called from Python the FiftyOne way: ``foo.get_operator(uri)(dataset_or_view, **params)``.

The call takes the App form's parameter names with their defaults, refuses a
parameter the operator does not take, returns the typed results of the run
it computes (else the operator's result dict), and gives the same numbers as
``execute_operator``. ``inspect.signature`` and ``__doc__`` describe it.
"""

from __future__ import annotations

import inspect
import json

import pytest

from label_kinds import RATERS, kind_dataset

pytestmark = pytest.mark.fiftyone

URI = "@iaa/agreement/{}"


def _op(name: str):
    import fiftyone.operators as foo

    return foo.get_operator(URI.format(name))


def test_every_registered_operator_has_a_python_signature_and_help():
    import fiftyone.operators as foo

    from operators import OPERATORS

    ours = [op for op in foo.list_operators(builtin=False) if op.uri.startswith("@iaa/agreement/")
            and op.config.name != "annotator_agreement" and not op.config.unlisted]  # not the App's own helpers
    assert len(ours) == len(OPERATORS)
    for op in ours:
        # the plugin's own copy of the operators package (FiftyOne loads it under a module name of its own)
        assert "AgreementOperator" in [c.__name__ for c in type(op).__mro__], op.uri
        sig = inspect.signature(op)
        assert list(sig.parameters)[0] == "sample_collection", op.uri
        assert f"foo.get_operator('{op.uri}')" in op.__doc__, op.__doc__
    kalos = inspect.signature(_op("compute_kalos")).parameters
    assert kalos["tau"].default == 0.5 and kalos["similarity"].default == "iou"
    assert kalos["key"].default is inspect.Parameter.empty  # required
    assert {"fields", "field", "rater_attr", "box_policy", "backend", "overwrite"} <= set(kalos)
    assert "τ (similarity threshold)" in _op("compute_kalos").__doc__


def test_compute_operators_return_the_typed_results_of_their_run(fo, make_dataset):
    import fiftyone.operators as foo

    from agreement.fo.methods.kalos import KalosResults
    from agreement.fo.methods.ot_agreement import OTAgreementResults

    ds, params, _, _ = kind_dataset(fo, make_dataset, "boxes", "fields")
    res = _op("compute_kalos")(ds, key="ka", tau=0.4, **params)
    assert isinstance(res, KalosResults) and res.key == "ka" and res.params["tau"] == 0.4
    direct = foo.execute_operator(URI.format("compute_kalos"),
                                  ctx=dict(view=ds.view(), params=dict(key="kb", tau=0.4, **params))).result
    assert res.summary["global_alpha"] == pytest.approx(direct["global_alpha"])
    ot = _op("compute_ot_agreement")(ds.limit(5), key="ot", beta=0.7, **params)  # a view
    assert isinstance(ot, OTAgreementResults) and ot.params["beta"] == 0.7
    assert ds.count("ot_ot") == 5

    with pytest.raises(TypeError, match=r"does not take: \['taux'\]"):
        _op("compute_kalos")(ds, key="kc", taux=0.4, **params)
    assert "kc" not in ds.list_runs()


def test_every_other_operator_runs_from_python(fo, make_dataset, tmp_path):
    from labelstudio_export import annotation, rectangle, task

    ds, params, _, _ = kind_dataset(fo, make_dataset, "boxes", "fields")
    cons = _op("compute_consensus")(ds, key="cons", **params)
    assert cons.key == "cons" and set(cons.detail["rater_report"]) == set(RATERS)
    assert _op("finalize_consensus")(ds, key="cons")["kept"] >= 8
    assert _op("export_rater_report")(ds, key="cons", output_dir=str(tmp_path / "raters"))["raters"] == 4
    assert _op("export_agreement_report")(ds, output_dir=str(tmp_path / "report"))["runs"] == ["cons"]

    assert _op("list_agreement_runs")(ds)["keys"] == ["cons"]
    assert _op("get_agreement_run_info")(ds, key="cons")["method"] == "iaa.consensus"
    lowest = _op("load_agreement_view")(ds, key="cons", limit=5)  # least confident samples first
    scores = dict(zip(ds.values("id"), ds.values("cons_min_confidence")))
    assert lowest["count"] == len(lowest["sample_ids"]) == 5
    assert [scores[i] for i in lowest["sample_ids"]] == sorted(scores[i] for i in lowest["sample_ids"])
    assert _op("rename_agreement_run")(ds, key="cons", new_key="cons2")["key"] == "cons2"
    _op("delete_agreement_run")(ds, key="cons2")
    assert ds.list_runs() == []

    sim = _op("simulate_raters")(ds, field="a", key="sim", num_raters=2, magnitude=0.5)
    assert sim["fields"] == ["sim_r1", "sim_r2"]
    masks, mask_params, _, _ = kind_dataset(fo, make_dataset, "masks", "fields")
    assert _op("compute_mask_consensus")(masks, key="st", **mask_params).key == "st"
    assert _op("calibrate_agreement")(ds, key="cal", **params).key == "cal"

    ds.set_values("metadata", [fo.ImageMetadata(width=100, height=80) for _ in range(len(ds))])
    coco = tmp_path / "raters.json"
    _op("export_multi_rater_coco")(ds, coco_path=str(coco), fields=list(RATERS))
    made = []
    try:
        out = _op("import_multi_rater_coco")(coco_path=str(coco), dataset_name="py-coco", persistent=False)
        made.append("py-coco")
        assert out["dataset_name"] == "py-coco" and fo.load_dataset("py-coco").count() == len(ds)

        exports = []
        for r in ("a", "b"):
            d = tmp_path / "exports" / r
            ds.export(export_dir=str(d), dataset_type=fo.types.COCODetectionDataset, label_field=r,
                      export_media=False, progress=False)
            exports.append({"rater": r, "path": str(d), "format": "coco"})
        out = _op("import_multi_rater")(exports=exports, dataset_name="py-multi", persistent=False)
        made.append("py-multi")
        assert out["dataset_name"] == "py-multi"

        ls = tmp_path / "ls.json"
        ls.write_text(json.dumps([task(1, "x.jpg", [annotation(1, [rectangle([0.1, 0.1, 0.2, 0.2], "c", 100, 80)]),
                                                     annotation(2, [rectangle([0.1, 0.1, 0.2, 0.3], "c", 100, 80)])])]))
        out = _op("import_label_studio")(json_path=str(ls), dataset_name="py-ls", persistent=False)
        made.append("py-ls")
        assert out["dataset_name"] == "py-ls"
    finally:
        for name in made:
            if fo.dataset_exists(name):
                fo.delete_dataset(name)


def test_the_manifest_lists_every_registered_operator_and_no_other():
    from agreement.fo.runs.manifest import MANIFEST, listed_operators, missing_operators
    from operators import APP_OPERATORS, OPERATORS

    text = MANIFEST.read_text()
    assert missing_operators(text) == []
    # the App's own helpers too: an operator the manifest does not list is not found by the App, and triggering
    # it (restore_filters at the end of a run) replaced the whole App with an error page
    assert set(listed_operators(text)) == {cls().config.name for cls in OPERATORS + APP_OPERATORS}


def test_the_parameter_reference_is_made_from_the_declarations():
    from agreement.fo.runs.reference import REFERENCE, reference_text

    assert REFERENCE.read_text() == reference_text(), "run python -m agreement.fo.runs.reference"
    text = REFERENCE.read_text()
    for name in ("compute_kalos", "compute_ot_agreement", "compute_geometry_agreement", "compute_consensus",
                 "compute_mask_consensus", "calibrate_agreement"):
        assert f"## `{name}`" in text
    assert "| `beta` | float | `0.5` | in (0.0, 1.0] |" in text
    assert "| `tau` | float | `'auto'` | in (0.0, 1.0] or 'auto' |" in text


def test_every_declared_default_is_inside_its_declared_range():
    """Every declared default validates to itself (same value, the declared type), is the Python signature's
    default, and every closed numeric bound is accepted at the bound itself (an open one refused there)."""
    import inspect

    from agreement.fo.methods import declarations
    from agreement.fo.runs.declaration import python_function

    bounds = 0
    for decl in declarations():
        signature = inspect.signature(python_function(decl)).parameters
        for p in decl.params:
            where = (decl.operator, p.name)
            if p.default is not None:
                got = p.validate(p.default)
                special = p.default in p.special
                assert got == (list(p.default) if p.kind is list and not special else p.default), where
                assert type(got) is (type(p.default) if special else p.kind), where
            if p in decl.method_params:
                assert signature[p.name].default == p.default, where
            if p.kind not in (int, float) or p.choices:
                continue
            for bound, open_ in ((p.low, p.low_open), (p.high, p.high_open)):
                if bound is None:
                    continue
                bounds += 1
                if open_:
                    with pytest.raises(ValueError, match=p.name):
                        p.validate(p.kind(bound))
                else:
                    assert p.validate(p.kind(bound)) == bound and type(p.validate(p.kind(bound))) is p.kind, where
        with pytest.raises(ValueError, match=decl.params[0].name):
            decl.param(decl.params[0].name).validate(object())
    assert bounds >= 15  # the loop above is not vacuous


def test_beta_zero_is_refused_by_the_function_and_the_operator(fo, make_dataset):
    """The form once accepted β = 0, which the OT kernel refuses: both now take the declared range (0, 1]."""
    from agreement.fo.methods.ot_agreement import compute_ot_agreement

    ds, params, _, _ = kind_dataset(fo, make_dataset, "boxes", "fields")
    with pytest.raises(ValueError, match=r"beta must be in \(0.0, 1.0\], got 0"):
        compute_ot_agreement(ds, "o", beta=0, **params)
    with pytest.raises(Exception, match=r"beta must be in \(0.0, 1.0\]"):
        _op("compute_ot_agreement")(ds, key="o", beta=0.0, **params)
    assert ds.list_runs() == []


def _app_request(uri: str, ds, params: dict):
    """The operator executed as the App's immediate request does (the request names ``operator_uri``)."""
    import asyncio

    from fiftyone.operators.executor import execute_or_delegate_operator

    body = {"operator_uri": uri, "dataset_name": ds.name, "view": [], "params": params}
    return asyncio.run(execute_or_delegate_operator(uri, body))


def test_refusals_raise_for_python_callers_and_are_shown_by_the_app(fo, make_dataset, monkeypatch):
    """A refusal (our error for input we do not take) still reaches a Python caller and ``execute_operator``
    as an exception with its message; only the App's request gets it as a result it shows in full (issue 48,
    item 4), with a notification."""
    import fiftyone.operators as foo

    from agreement.fo.methods.class_agreement import compute_class_agreement

    order = ["low", "mid", "high"]
    ds = make_dataset([fo.Sample(filepath=f"/o/{i}.jpg", **{r: fo.Classification(label=order[(i + (r == "c")) % 3])
                                                             for r in ("a", "b", "c")}) for i in range(9)])
    fields = ["a", "b", "c"]
    with pytest.raises(Exception, match=r"level 'ordinal' needs the order of the classes"):
        _op("compute_class_agreement")(ds, key="o1", fields=fields, level="ordinal")
    res = _op("compute_class_agreement")(ds, key="o2", fields=fields, level="ordinal", classes=order)
    direct = compute_class_agreement(ds, "o3", fields=fields, level="ordinal", classes=order)
    assert res.params["classes"] == order and res.summary["alpha"] == pytest.approx(direct["alpha"], abs=1e-12)

    rename = URI.format("rename_agreement_run")
    with pytest.raises(Exception, match=r"already has a run 'o3'"):
        _op("rename_agreement_run")(ds, key="o2", new_key="o3")
    with pytest.raises(Exception, match=r"already has a run 'o3'"):  # execute_operator too: no result
        foo.execute_operator(rename, ctx=dict(view=ds.view(), params=dict(key="o2", new_key="o3")))
    app = _app_request(rename, ds, dict(key="o2", new_key="o3"))
    assert app.error is None and app.result == {"refused": "dataset " + repr(ds.name) + " already has a run 'o3'"}
    notes = [r for r in app.executor.to_json()["requests"] if r["operator_uri"] == "notify"]
    assert notes and notes[0]["params"] == {"message": app.result["refused"], "variant": "error"}
    assert sorted(ds.list_runs()) == ["o2", "o3"]  # nothing renamed

    def fault(*args, **kwargs):
        raise RuntimeError("a bug")

    monkeypatch.setattr("agreement.fo.runs.store.rename_agreement_run", fault)
    faulty = _app_request(rename, ds, dict(key="o2", new_key="o4"))
    assert "a bug" in str(faulty.error) and not faulty.result  # a fault is no refusal: FiftyOne's error path
