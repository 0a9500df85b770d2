"""Run-management operators through execute_operator on a real dataset."""

import pytest

pytestmark = pytest.mark.fiftyone


def test_list_info_rename_delete_through_operators(fo, make_dataset):
    import fiftyone.operators as foo
    from fiftyone.operators.executor import ExecutionError

    from agreement.fo import runs
    from agreement.fo.storage.reading import read_annotations

    D = fo.Detections
    ds = make_dataset([
        fo.Sample(filepath=f"/data/{i}.jpg", a=D(detections=[fo.Detection(label="x", bounding_box=[0.1, 0.1, 0.2, 0.2])]),
                  b=D()) for i in range(3)
    ])
    read = read_annotations(ds, fields=["a", "b"])
    plan = runs.prepare_run(ds, "k", "iaa.test", ["score"])
    runs.write_sample_values(ds, plan, "score", {sid: 1.0 for sid in read.annotations.sample_ids})
    runs.register_run(ds, plan, {"lam": 0.5}, read.layout, {"summary": {"alpha": 0.5}})

    def run(name, **params):
        return foo.execute_operator(f"@iaa/agreement/{name}", ctx=dict(view=ds.view(), params=params)).result

    assert run("list_agreement_runs")["keys"] == ["k"]
    info = run("get_agreement_run_info", key="k")
    assert info["method"] == "iaa.test" and info["summary"] == {"alpha": 0.5} and info["sample_fields"] == ["k_score"]
    assert run("rename_agreement_run", key="k", new_key="k2")["key"] == "k2"
    assert "k2_score" in ds.get_field_schema() and "k_score" not in ds.get_field_schema()
    out = run("delete_agreement_run", key="k2")
    assert out["deleted_sample_fields"] == ["k2_score"]
    assert run("list_agreement_runs")["keys"] == []
    assert set(ds.get_field_schema()) >= {"a", "b"} and "k2_score" not in ds.get_field_schema()
    with pytest.raises(ExecutionError, match="no agreement run 'k2'"):
        run("delete_agreement_run", key="k2")
    with pytest.raises(ExecutionError, match="parameter 'key' is required"):
        run("get_agreement_run_info")


def _form(ds, name, params=None):
    """The properties of operator ``name``'s input form as the App resolves it."""
    import fiftyone.operators as foo
    from fiftyone.operators.executor import ExecutionContext

    op = foo.get_operator(f"@iaa/agreement/{name}")
    ctx = ExecutionContext(request_params={"dataset_name": ds.name, "view": ds.view()._serialize(),
                                           "params": dict(params or {})})
    return op.resolve_input(ctx).type.properties


def test_forms_resolve_with_and_without_runs(fo, make_dataset):
    from agreement.fo import runs

    ds = make_dataset([fo.Sample(filepath="/data/x.jpg",
                                 a=fo.Detections(detections=[fo.Detection(label="x", bounding_box=[0.1, 0.1, 0.2, 0.2])]))])
    for name in ("get_agreement_run_info", "rename_agreement_run", "delete_agreement_run"):
        props = _form(ds, name)  # no run yet: the form says so and asks for no key
        assert "no_runs" in props and "key" not in props and "new_key" not in props, name
    assert "method" in _form(ds, "list_agreement_runs")
    for name in ("import_multi_rater_coco", "export_multi_rater_coco"):
        assert _form(ds, name), name
    plan = runs.prepare_run(ds, "k1", "iaa.test", ["score"])
    runs.write_sample_values(ds, plan, "score", {ds.first().id: 0.5})
    runs.register_run(ds, plan, {}, {}, {"summary": {}})
    plan = runs.prepare_run(ds, "k2", "iaa.test", ["score"], ["a"], ["cost"])
    runs.write_sample_values(ds, plan, "score", {ds.first().id: 1.0})
    runs.register_run(ds, plan, {}, {}, {"summary": {}})
    for name in ("get_agreement_run_info", "rename_agreement_run", "delete_agreement_run"):
        props = _form(ds, name)  # the runs to choose from, the newest preselected (no run open in a panel)
        assert "no_runs" not in props, name
        assert props["key"].type.values == ["k1", "k2"] and props["key"].default == "k2", name
    assert "new_key" in _form(ds, "rename_agreement_run")
    notice = _form(ds, "delete_agreement_run", {"key": "k2"})["what"].view.label
    assert notice == "Will delete: k2_score, a.k2_cost"  # exactly what the run wrote
