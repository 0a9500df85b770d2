"""Crowd judgement files through import_judgements: the shared real crowd (about 90 workers per item) and small
files with every repair, then class agreement and consensus on the imported dataset by the operators' defaults."""

from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.fiftyone

from conftest import SHARED_DATA  # noqa: E402

TSV = SHARED_DATA / "adultcontent3_hcomp2010_labels.tsv"


def _op(name: str, view=None, **params):
    import fiftyone.operators as foo

    ctx = dict(params=params) if view is None else dict(view=view.view(), params=params)
    return foo.execute_operator(f"@iaa/agreement/{name}", ctx=ctx).result


def _write(path, lines):
    path.write_text("".join(f"{w}\t{i}\t{lab}\n" for w, i, lab in lines))
    return str(path)


def test_repairs_are_reported_and_the_assignment_recorded(fo, tmp_path):
    path = _write(tmp_path / "j.tsv", [("w1", "a", "x"), ("w1", "a", "y"), ("w1", "a", "y"), ("w2", "a", "x"),
                                       ("w2", "b", "z"), ("w3", "b", "y"), ("w3", "b", "y")])
    with pytest.raises(Exception, match="not among the categories.*unknown_labels=.drop."):
        _op("import_judgements", path=path, dataset_name="jj", categories=str(_cats(tmp_path)))
    assert not fo.dataset_exists("jj")
    out = _op("import_judgements", path=path, dataset_name="jj", categories=str(_cats(tmp_path)),
              unknown_labels="drop")
    try:
        ds = fo.load_dataset("jj")
        assert out["repeated_pairs"] == 2 and out["conflicting_pairs"] == 1 and out["dropped"] == 1
        a = ds.match({"filepath": {"$regex": "a$"}}).first()
        assert sorted((c.annotator, c.label) for c in a.judgements.classifications) == [("w1", "y"), ("w2", "x")]
        b = ds.match({"filepath": {"$regex": "b$"}}).first()
        assert sorted(b.raters) == ["w2", "w3"]  # w2 judged b: assigned, its unknown label dropped (missing)
        res = _op("compute_class_agreement", ds, key="c", field="judgements")  # the recorded assignment by default
        assert res["n_units"] == 1
    finally:
        fo.delete_dataset("jj")


def _cats(tmp_path):
    p = tmp_path / "cats.txt"
    p.write_text("x\ny\n")
    return p


def test_real_crowd_alpha_equals_krippendorff_and_consensus_runs(fo):
    if not TSV.exists():
        pytest.skip(f"shared data not found: {TSV.name} is expected in ../shared/data beside the repository")
    krippendorff = pytest.importorskip("krippendorff")
    from agreement.io.judgements import read_judgements

    out = _op("import_judgements", path=str(TSV), dataset_name="adult", categories="G, P, R, X",
              unknown_labels="drop")
    try:
        ds = fo.load_dataset("adult")
        assert out["num_samples"] == 496 and len(out["raters"]) == 338 and out["dropped"] == 737
        ratings, _ = read_judgements(TSV, ["G", "P", "R", "X"], unknown_labels="drop")
        data = np.where(ratings.codes.T >= 0, ratings.codes.T, np.nan).astype(float)
        res = _op("compute_class_agreement", ds, key="c", field="judgements", bootstrap=100)
        assert res["alpha"] == pytest.approx(krippendorff.alpha(reliability_data=data,
                                                                level_of_measurement="nominal"), abs=1e-12)
        cons = _op("compute_consensus", ds, key="m", field="judgements", method="em")
        assert cons["n_consensus"] == 496
    finally:
        fo.delete_dataset("adult")
