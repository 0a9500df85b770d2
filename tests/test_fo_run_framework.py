"""Agreement runs on FiftyOne's run framework: FiftyOne's own commands do what the plugin's operators do.

For every method: ``dataset.rename_run`` renames the run's fields and label
attributes, ``dataset.load_run_results`` gives the method's typed results
(with a report and the panel's figures), ``dataset.delete_run`` leaves no
field, declaration or stored value of the run, and the same key can be
computed again. Runs of earlier releases (a plain ``RunConfig``, untyped
results) still list, load, rename and delete, and are upgraded on first touch.
"""

from __future__ import annotations

import pytest

from label_kinds import kind_dataset

pytestmark = pytest.mark.fiftyone

# operator, label kind, extra parameters (calibration writes no field: its results are the run)
METHODS = [
    ("compute_ot_agreement", "boxes", {}),
    ("compute_kalos", "boxes", {}),
    ("compute_geometry_agreement", "boxes", {}),
    ("calibrate_agreement", "boxes", {}),
    ("compute_consensus", "boxes", {}),
    ("compute_mask_consensus", "masks", {}),
    ("simulate_raters", "boxes", {"field": "a", "num_raters": 2, "magnitude": 0.5}),
]


def _run(ds, op, **params):
    import fiftyone.operators as foo

    res = foo.execute_operator(f"@iaa/agreement/{op}", ctx=dict(view=ds.view(), params=params))
    assert res.error is None, res.error
    return res.result


def _stored_names(ds) -> set[str]:
    """Every key of every stored sample document, nested ones as dotted paths (list items merged)."""
    names: set[str] = set()

    def walk(value, prefix):
        if isinstance(value, dict):
            for k, v in value.items():
                names.add(prefix + k)
                walk(v, prefix + k + ".")
        elif isinstance(value, list):
            for v in value:
                walk(v, prefix)

    for doc in ds._sample_collection.find({}):
        walk(doc, "")
    return names


def _of_key(names, key: str) -> set[str]:
    return {n for n in names if any(part.startswith(f"{key}_") for part in n.split("."))}


@pytest.mark.parametrize("op,kind,extra", METHODS, ids=[m[0] for m in METHODS])
def test_fiftyone_run_commands_rename_load_and_delete_every_method(fo, make_dataset, op, kind, extra):
    from agreement.fo.runs.classes import AgreementRunConfig
    from agreement.fo.runs.results import AgreementResults, results_class

    ds, rater_params, _, _ = kind_dataset(fo, make_dataset, kind, "fields")
    schema_before = set(ds.get_field_schema(flat=True))
    stored_before = _stored_names(ds)
    rater_params = {} if op == "simulate_raters" else rater_params
    _run(ds, op, key="runx", **rater_params, **extra)

    written = set(ds.get_field_schema(flat=True)) - schema_before
    assert (bool(written) == (op != "calibrate_agreement")) and all(_of_key([n], "runx") for n in written), written
    assert ds.list_runs() == ["runx"]
    info = ds.get_run_info("runx")
    assert isinstance(info.config, AgreementRunConfig) and info.config.status == "complete"

    results = ds.load_run_results("runx", cache=False)
    assert type(results) is results_class(info.config.method) and isinstance(results, AgreementResults)
    report = results.report()
    assert "runx" in report and len(report.splitlines()) >= 2, report
    assert results.summary and isinstance(results.detail, dict)

    ds.rename_run("runx", "runy")
    assert ds.list_runs() == ["runy"]
    renamed = set(ds.get_field_schema(flat=True)) - schema_before
    assert renamed == {n.replace("runx_", "runy_") for n in written}
    stored = _stored_names(ds)
    assert not _of_key(stored, "runx") and bool(_of_key(stored, "runy")) == bool(written)
    cfg = ds.get_run_info("runy").config
    assert all(f.startswith("runy_") for f in cfg.sample_fields)
    assert all(a.startswith("runy_") for _, a in cfg.label_attrs)
    assert ds.load_run_results("runy", cache=False).summary == results.summary

    ds.delete_run("runy")
    assert ds.list_runs() == []
    assert set(ds.get_field_schema(flat=True)) == schema_before
    assert _stored_names(ds) == stored_before

    _run(ds, op, key="runy", **rater_params, **extra)  # the key is free again
    assert set(ds.get_field_schema(flat=True)) - schema_before == renamed


def test_fiftyone_delete_run_removes_an_incomplete_run(fo, make_dataset):
    from agreement.fo import runs

    ds, _, _, _ = kind_dataset(fo, make_dataset, "boxes", "fields")
    before = set(ds.get_field_schema(flat=True))
    plan = runs.prepare_run(ds, "part", "iaa.kalos", ["alpha"], ["a", "b"], ["unit"])
    runs.write_sample_values(ds, plan, "alpha", {sid: 0.5 for sid in ds.values("id")[:3]})
    assert ds.get_run_info("part").config.status == "incomplete"
    ds.delete_run("part")
    assert set(ds.get_field_schema(flat=True)) == before and not _of_key(_stored_names(ds), "part")


def _make_legacy(ds, key: str) -> None:
    """Rewrites run ``key`` the way releases before the run classes stored it."""
    import fiftyone.core.runs as fors

    from agreement.fo.runs.results import encode_detail

    cfg = ds.get_run_info(key).config
    attrs = {k: v for k, v in vars(cfg).items() if not k.startswith("_")}
    legacy = fors.RunConfig(method=cfg.method, **{**attrs, "format_version": 1})
    res = ds.load_run_results(key, cache=False)
    ds.update_run_config(key, legacy)
    ds.save_run_results(key, fors.RunResults(ds, legacy, key, summary=res.summary, detail=encode_detail(res.detail)),
                        overwrite=True, cache=False)
    assert type(ds.get_run_info(key).config) is fors.RunConfig
    assert type(ds.load_run_results(key, cache=False)) is fors.RunResults


def test_runs_of_earlier_releases_list_load_rename_and_delete(fo, make_dataset):
    from agreement.fo import runs
    from agreement.fo.methods.kalos import KalosResults
    from agreement.fo.runs.classes import AgreementRunConfig

    ds, rater_params, _, _ = kind_dataset(fo, make_dataset, "boxes", "fields")
    before = set(ds.get_field_schema(flat=True))
    _run(ds, "compute_kalos", key="old", **rater_params)
    expected = runs.load_agreement_results(ds, "old")
    _make_legacy(ds, "old")

    assert runs.list_agreement_runs(ds) == ["old"]
    loaded = runs.load_agreement_results(ds, "old")  # the first touch upgrades the run
    assert loaded["summary"] == expected["summary"]
    assert loaded["detail"]["rater_pairs"] == expected["detail"]["rater_pairs"]
    assert isinstance(ds.get_run_info("old").config, AgreementRunConfig)
    assert isinstance(ds.load_run_results("old", cache=False), KalosResults)

    runs.rename_agreement_run(ds, "old", "older")
    assert "older_alpha" in ds.get_field_schema() and "old_alpha" not in ds.get_field_schema()
    ds.delete_run("older")
    assert set(ds.get_field_schema(flat=True)) == before and not _of_key(_stored_names(ds), "older")

    _run(ds, "compute_kalos", key="legacy", **rater_params)
    _make_legacy(ds, "legacy")
    runs.delete_agreement_run(ds, "legacy")  # the plugin's own delete, untouched before
    assert set(ds.get_field_schema(flat=True)) == before and ds.list_runs() == []


def test_rename_onto_an_existing_field_is_refused_and_changes_nothing(fo, make_dataset):
    from agreement.fo import runs

    ds, rater_params, _, _ = kind_dataset(fo, make_dataset, "boxes", "fields")
    _run(ds, "compute_kalos", key="ka", **rater_params)
    ds.add_sample_field("kb_alpha", fo.FloatField)
    schema = set(ds.get_field_schema(flat=True))
    with pytest.raises(runs.RunError, match="kb_alpha"):
        runs.rename_agreement_run(ds, "ka", "kb")
    assert ds.list_runs() == ["ka"] and set(ds.get_field_schema(flat=True)) == schema


def test_typed_results_draw_the_panel_figures(fo, make_dataset):
    ds, rater_params, _, _ = kind_dataset(fo, make_dataset, "boxes", "fields")
    _run(ds, "compute_kalos", key="ka", **rater_params)
    results = ds.load_run_results("ka", cache=False)
    names = results.figures()
    assert "pair_matrix" in names and "alpha_tau" in names, names
    assert results.global_alpha == results.summary["global_alpha"]
    fig = results.plot("alpha_tau")
    assert len(fig.data) >= 2 and fig.data[0].x is not None
    with pytest.raises(ValueError, match="no figure 'nope'"):
        results.plot("nope")
    with pytest.raises(AttributeError, match="no attribute or summary number"):
        results.not_a_number  # noqa: B018


def test_runs_stored_under_the_class_paths_of_the_previous_layout_still_work(fo, make_dataset):
    """Runs made before the bridge was laid out by role stored their config class as
    ``agreement.fo.run_classes.AgreementRunConfig``: they still list, load, rename and delete."""
    from agreement.fo import runs
    from agreement.fo.runs.classes import AgreementRunConfig

    ds, rater_params, _, _ = kind_dataset(fo, make_dataset, "boxes", "fields")
    before = set(ds.get_field_schema(flat=True))
    _run(ds, "compute_kalos", key="prev", **rater_params)
    expected = runs.load_agreement_results(ds, "prev")
    doc = ds._doc.runs["prev"]
    assert doc.config["cls"] == "agreement.fo.runs.classes.AgreementRunConfig"  # what this release stores
    doc.config["cls"] = "agreement.fo.run_classes.AgreementRunConfig"  # what the previous release stored
    doc.save()
    ds.reload()

    assert runs.list_agreement_runs(ds) == ["prev"]
    assert ds.get_run_info("prev").config.__class__ is AgreementRunConfig
    assert runs.load_agreement_results(ds, "prev")["summary"] == expected["summary"]
    ds.rename_run("prev", "prev2")
    assert "prev2_alpha" in ds.get_field_schema() and "prev_alpha" not in ds.get_field_schema()
    ds.delete_run("prev2")
    assert set(ds.get_field_schema(flat=True)) == before and ds.list_runs() == []
