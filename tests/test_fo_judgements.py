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
        ratings, _ = read_judgements(TSV, categories=["G", "P", "R", "X"], unknown_labels="drop")
        data = np.where(ratings.codes.T >= 0, ratings.codes.T, np.nan).astype(float)
        res = _op("compute_class_agreement", ds, key="c", field="judgements", bootstrap=100)
        assert res["alpha"] == pytest.approx(krippendorff.alpha(reliability_data=data,
                                                                level_of_measurement="nominal"), abs=1e-12)
        cons = _op("compute_consensus", ds, key="m", field="judgements", method="em")
        assert cons["n_consensus"] == 496
    finally:
        fo.delete_dataset("adult")


def test_items_become_files_under_the_file_folder_or_image_dir_and_stay_as_written(fo, tmp_path, monkeypatch):
    """A web address is not stored as '<cwd>/http:/...' (FiftyOne's reading of it): the file name made from
    the address, under the judgement file's folder or image_dir; the item as written in `item`; images."""
    import os

    from agreement.fo.importers.judgements import item_filepath

    folder = tmp_path / "crowd"
    folder.mkdir()
    monkeypatch.chdir(tmp_path)  # the current directory must not matter
    absolute = str(tmp_path / "abs" / "c.png")
    path = _write(folder / "j.tsv", [("w1", "http://101date.com", "x"), ("w2", "http://101date.com", "y"),
                                     ("w1", "https://a.com/x?y=1", "x"), ("w1", "rel/b", "x"), ("w2", absolute, "x")])
    out = _op("import_judgements", path=path, dataset_name="jurl", persistent=False)
    try:
        ds = fo.load_dataset("jurl")
        got = dict(zip(ds.values("item"), ds.values("filepath")))
        assert got == {"http://101date.com": str(folder / "101date.com"), "https://a.com/x?y=1": str(folder / "a.com_x_y_1"),
                       "rel/b": str(folder / "rel" / "b"), absolute: absolute}
        assert ds.media_type == "image"
        assert any("taken as image" in w for w in out["warnings"])  # the files cannot be read: said, not silent
    finally:
        fo.delete_dataset("jurl")
    out = _op("import_judgements", path=path, dataset_name="jurl2", persistent=False, image_dir=str(tmp_path / "img"))
    assert fo.load_dataset("jurl2").match({"item": "rel/b"}).first().filepath == str(tmp_path / "img" / "rel" / "b")
    fo.delete_dataset("jurl2")
    assert item_filepath("http://a.com/", os.sep + "d") == os.path.join(os.sep + "d", "a.com")
    clash = _write(folder / "k.tsv", [("w1", "http://a.com/x", "x"), ("w2", "https://a.com/x", "x")])
    with pytest.raises(Exception, match="items 'http://a.com/x' and 'https://a.com/x' name the same file"):
        _op("import_judgements", path=clash, dataset_name="jclash", persistent=False)
    assert not fo.dataset_exists("jclash")
