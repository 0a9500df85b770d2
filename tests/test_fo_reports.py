"""export_agreement_report: every run's results as JSON, its per-rater and per-pair tables as CSV."""

from __future__ import annotations

import csv
import json

import pytest

pytestmark = pytest.mark.fiftyone

OP = "@iaa/agreement/{}"


@pytest.fixture
def scored(fo, make_dataset):
    import fiftyone.operators as foo

    from agreement.fo.build import samples_from_corpus
    from agreement.simulate.synthetic.crowd import crowd_corpus

    corpus, _ = crowd_corpus(12, 3, raters_per_sample=3, seed=2)
    ds = make_dataset()
    ds.add_samples(samples_from_corpus(corpus, [f"/data/{i:03d}.jpg" for i in range(12)]), progress=False)
    fields = list(corpus.raters)
    out = {}
    for op, key in (("compute_ot_agreement", "ot"), ("compute_kalos", "kal"), ("compute_geometry_agreement", "geo")):
        r = foo.execute_operator(OP.format(op), ctx=dict(view=ds.view(), params=dict(fields=fields, key=key)))
        out[key] = r.result
    return ds, corpus, out


def _rows(path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_every_run_exports_json_and_its_tables(fo, scored, tmp_path):
    import fiftyone.operators as foo

    ds, corpus, headline = scored
    result = foo.execute_operator(OP.format("export_agreement_report"),
                                  ctx=dict(view=ds.view(), params=dict(output_dir=str(tmp_path / "report")))).result
    assert result["runs"] == ["geo", "kal", "ot"]
    names = sorted(p.rsplit("/", 1)[-1] for p in result["files"])
    assert names == sorted([
        "ot.json", "ot_raters.csv", "ot_pairs.csv", "ot_samples.csv",
        "kal.json", "kal_raters.csv", "kal_pairs.csv", "kal_classes.csv", "kal_samples.csv",
        "geo.json", "geo_raters.csv", "geo_samples.csv",
    ])
    report = tmp_path / "report"
    for key, head in headline.items():
        doc = json.loads((report / f"{key}.json").read_text())  # strict JSON: NaN written as null
        assert doc["dataset"] == ds.name and doc["run"]["key"] == key
        for name, value in head.items():
            if isinstance(value, float):
                assert doc["results"]["summary"][name] == pytest.approx(value)
    pairs = _rows(report / "ot_pairs.csv")
    assert {(p["rater_a"], p["rater_b"]) for p in pairs} == {("w000", "w001"), ("w000", "w002"), ("w001", "w002")}
    assert all(float(p["alpha_ot"]) <= 1 for p in pairs)
    raters = _rows(report / "kal_raters.csv")
    assert [r["rater"] for r in raters] == list(corpus.raters)
    vitality = json.loads((report / "kal.json").read_text())["results"]["detail"]["rater_vitality"]["vitality"]
    assert [float(r["rater_vitality.vitality"]) for r in raters] == pytest.approx(vitality)
    classes = _rows(report / "kal_classes.csv")
    assert sorted(c["class"] for c in classes) == sorted(set(corpus.labels.tolist()))
    samples = _rows(report / "ot_samples.csv")
    assert len(samples) == 12 and {"sample_id", "filepath", "ot_ot", "ot_f1"} <= set(samples[0])


def test_one_key_a_view_and_bad_keys(fo, scored, tmp_path):
    from agreement.fo.reports import export_agreement_report
    from agreement.fo.runs import RunError

    ds, _, _ = scored
    out = export_agreement_report(ds.limit(5), tmp_path, keys="ot", samples_csv=True)
    assert list(out["runs"]) == ["ot"]
    assert len(_rows(out["runs"]["ot"]["samples"])) == 5
    with pytest.raises(RunError, match="no agreement run 'nope'"):
        export_agreement_report(ds, tmp_path / "bad", keys=["ot", "nope"])
    assert not (tmp_path / "bad").exists()  # every key is checked before anything is written


def test_undefined_numbers_are_empty_cells_and_null(fo, make_dataset, tmp_path):
    import fiftyone.operators as foo

    from agreement.fo.reports import export_agreement_report

    ds = make_dataset()
    det = fo.Detections(detections=[fo.Detection(label="a", bounding_box=[0.1, 0.1, 0.2, 0.2])])
    ds.add_samples([fo.Sample(filepath=f"/d/{i}.jpg", a=det.copy(), b=fo.Detections()) for i in range(2)],
                   progress=False)
    foo.execute_operator(OP.format("compute_kalos"), ctx=dict(view=ds.view(), params=dict(fields=["a", "b"], key="k")))
    out = export_agreement_report(ds, tmp_path)
    text = (tmp_path / "k.json").read_text()
    assert "NaN" not in text
    rows = _rows(out["runs"]["k"]["samples"])
    assert all(r["k_alpha"] in ("", "nan") or float(r["k_alpha"]) <= 1 for r in rows)
