"""The samples an operator works on: FiftyOne's target choice, the whole dataset unless chosen (issue 38).

Every compute and export operator offers the choice (whole dataset, current
view, selected samples) with the dataset as default and the current view's
size in its description; a run computes on exactly the chosen samples and
records which they were; a request naming no target runs on the whole
dataset whatever view is loaded; a Python call runs on the collection given.
"""

from __future__ import annotations

import csv

import pytest

from label_kinds import kind_dataset

pytestmark = pytest.mark.fiftyone

URI = "@iaa/agreement/{}"
EXPORTS = ("export_agreement_report", "export_multi_rater_coco")
FILTER = dict(fields=["a", "b", "c", "d"])


def _target_operators() -> list[str]:
    from agreement.fo.methods import declarations

    return [d.operator for d in declarations()] + list(EXPORTS) + ["simulate_raters"]


@pytest.fixture
def boxes(fo, make_dataset):
    """8 samples, raters a..d as fields; ``view``: the 3 samples tagged ``keep`` (a filtered view)."""
    ds, params, _, _ = kind_dataset(fo, make_dataset, "boxes", "fields")
    ids = ds.values("id")[2:5]
    ds.select(ids).tag_samples("keep")
    return ds, params, ds.match_tags("keep"), ids


def _ctx(ds, view=None, params=None, selected=None):
    from fiftyone.operators.executor import ExecutionContext

    request = {"dataset_name": ds.name, "view": (view if view is not None else ds.view())._serialize(),
               "params": dict(params or {})}
    if selected:
        request["selected"] = list(selected)
    return ExecutionContext(request_params=request)


def _form(ds, name, view=None, params=None, selected=None):
    import fiftyone.operators as foo

    return foo.get_operator(URI.format(name)).resolve_input(_ctx(ds, view, params, selected)).type.properties


def _run(name, view, **kw):
    import fiftyone.operators as foo

    return foo.execute_operator(URI.format(name), ctx=dict(view=view, **kw)).result


def _target(ds, key):
    from agreement.fo.runs import get_agreement_run_info

    return get_agreement_run_info(ds, key)["params"]["target"]


def test_every_compute_and_export_form_offers_the_target_with_the_dataset_as_default(boxes):
    ds, _, view, ids = boxes
    for name in _target_operators():
        prop = _form(ds, name, view, selected=ids[:2])["view_target"]
        assert prop.default == "DATASET", name
        described = {c.value: c.description for c in prop.view.choices}
        assert set(described) == {"DATASET", "CURRENT_VIEW", "SELECTED_SAMPLES"}, name
        assert "3 of 8 samples, with its sidebar filters" in described["CURRENT_VIEW"], name
        assert "8 samples" in described["DATASET"] and "2 selected samples" in described["SELECTED_SAMPLES"], name
    # the run pickers that work on a stored run offer none: finalize writes the whole run's field
    for name in ("finalize_consensus", "export_rater_report", "rename_agreement_run"):
        assert "view_target" not in _form(ds, name, view), name


def test_the_form_describes_the_chosen_target(fo, make_dataset):
    ds, params, _, _ = kind_dataset(fo, make_dataset, "boxes", "attribute")
    view = ds.limit(3)
    notice = _form(ds, "compute_kalos", view, dict(params, layout="attribute", view_target="CURRENT_VIEW"))
    assert notice["raters_found"].view.label == "Raters found in the chosen target (3 samples): a, b, c, d"
    whole = _form(ds, "compute_kalos", view, dict(params, layout="attribute"))
    assert whole["raters_found"].view.label == "Raters found: a, b, c, d"


def test_current_view_target_computes_on_exactly_its_samples_and_records_it(boxes):
    from agreement.fo.runs.declaration import run_target

    ds, params, view, ids = boxes
    out = _run("compute_ot_agreement", view, params=dict(key="ot", view_target="CURRENT_VIEW", **params))
    assert sorted(ds.exists("ot_ot").values("id")) == sorted(ids)
    assert _target(ds, "ot") == {"target": "current view", "n_samples": 3, "dataset_samples": 8, "via": "sdk"}
    assert out["target"] == run_target(ds, "ot") == "current view (3 of 8 samples)"


def test_no_target_given_computes_on_the_whole_dataset_whatever_view_is_loaded(boxes):
    ds, params, view, _ = boxes
    _run("compute_kalos", view, params=dict(key="k", **params))
    assert ds.exists("k_alpha").count() == 8
    assert _target(ds, "k") == {"target": "dataset", "n_samples": 8, "dataset_samples": 8, "via": "sdk"}


def test_selected_samples_target(boxes):
    from fiftyone.operators.executor import ExecutionError

    ds, params, view, ids = boxes
    _run("compute_kalos", view, params=dict(key="sel", view_target="SELECTED_SAMPLES", **params), selected=ids[:2])
    assert sorted(ds.exists("sel_alpha").values("id")) == sorted(ids[:2])
    assert _target(ds, "sel")["target"] == "selected samples" and _target(ds, "sel")["n_samples"] == 2
    with pytest.raises(ExecutionError, match="no samples are selected"):
        _run("compute_kalos", view, params=dict(key="none", view_target="SELECTED_SAMPLES", **params))
    assert "none" not in ds.list_runs()


def test_python_call_runs_on_the_collection_given_and_records_it(boxes):
    import fiftyone.operators as foo

    from agreement.fo.runs.declaration import run_target

    ds, params, view, ids = boxes
    op = foo.get_operator(URI.format("compute_ot_agreement"))
    res = op(view, key="py", **params)
    assert res.params["target"] == {"target": "view", "n_samples": 3, "dataset_samples": 8, "via": "python"}
    assert run_target(ds, "py") == "view (3 of 8 samples)"
    assert sorted(ds.exists("py_ot").values("id")) == sorted(ids)
    op(ds, key="whole", **params)
    assert _target(ds, "whole") == {"target": "dataset", "n_samples": 8, "dataset_samples": 8, "via": "python"}
    op(view, key="named", view_target="dataset", **params)  # a view_target given from Python: plain names too
    assert ds.exists("named_ot").count() == 8 and _target(ds, "named")["target"] == "dataset"


def test_an_unknown_target_is_refused_with_the_choices(boxes):
    import fiftyone.operators as foo
    from fiftyone.operators.executor import ExecutionError

    ds, params, view, _ = boxes
    with pytest.raises(ValueError, match=r"unknown target 'everything': choose 'dataset'.*'current view'"):
        foo.get_operator(URI.format("compute_kalos"))(view, key="bad", view_target="everything", **params)
    with pytest.raises(ExecutionError, match="unknown target 'everything'"):
        _run("compute_kalos", view, params=dict(key="bad", view_target="everything", **params))
    assert "bad" not in ds.list_runs()


def test_exports_write_the_chosen_target(boxes, tmp_path):
    ds, params, view, _ = boxes
    _run("compute_kalos", ds.view(), params=dict(key="k", **params))

    def sample_rows(folder) -> int:
        with open(folder / "k" / "samples.csv", newline="") as f:
            return sum(1 for _ in csv.reader(f)) - 1

    out = _run("export_agreement_report", view, params=dict(output_dir=str(tmp_path / "whole")))
    assert sample_rows(tmp_path / "whole") == 8 and out["target"] == "whole dataset (8 samples)"
    out = _run("export_agreement_report", view, params=dict(output_dir=str(tmp_path / "view"),
                                                            view_target="CURRENT_VIEW"))
    assert sample_rows(tmp_path / "view") == 3 and out["target"] == "current view (3 of 8 samples)"
    assert out["rows"][str(tmp_path / "view" / "k" / "samples.csv")] == 3
    coco = _run("export_multi_rater_coco", view, params=dict(coco_path=str(tmp_path / "c.json"),
                                                             view_target="CURRENT_VIEW", **FILTER))
    assert coco["images"] == 3 and coco["path"] == str(tmp_path / "c.json")


def test_run_target_of_a_run_that_recorded_none():
    from agreement.fo.runs.declaration import run_target

    assert run_target({"params": {"tau": 0.5}}) == "not recorded"
    assert run_target({"target": "selected samples", "n_samples": 5, "dataset_samples": 200}) == \
        "selected samples (5 of 200 samples)"
