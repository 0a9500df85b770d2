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
        ids = ds.values("judgements.classifications.id", unwind=True)  # written in bulk: one fresh id per label
        assert len(ids) == len(set(ids)) == ds.count("judgements.classifications") == 34768
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


# ------------------------------------------------------------------------------- files as people export them
URI = "@iaa/agreement/import_judgements"


def _import_op(**params):
    import fiftyone.operators as foo

    return foo.get_operator(URI)(**params)


BAD_FILES = {  # name: (bytes, what the message must say, beyond the file's name)
    "empty.tsv": (b"\n# nothing\n\n", r"empty\.tsv: no judgements: its 3 line\(s\) are blank or comments"),
    "part.tsv": (b"worker_id\turl\tlabel\nw1\ti1\tA\nw2\ti1\tB\n", r"part\.tsv, line 1: .*looks partly like a header"),
    "latin.tsv": ("w1\ti1\tA\nw2\ti1\tcaf\xe9\n".encode("latin-1"),
                  r"latin\.tsv, line 2 \(byte offset 17\): not UTF-8 text.*iconv -f latin1 -t utf-8"),
    "bin.tsv": (b"\x00\x01\x02", r"bin\.tsv, line 1 \(byte offset 0\): not a text file"),
}


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_bad_files_are_refused_by_type_naming_file_and_line(fo, tmp_path, name):
    """Through the Python function and the operator's Python call: the plugin's TextFileError (a ValueError),
    its message naming the file and the line, and no dataset made."""
    from agreement.fo.importers.judgements import import_judgements
    from agreement.io.text_files import TextFileError

    data, message = BAD_FILES[name]
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(TextFileError, match=message):
        import_judgements(str(path), "jbad", persistent=False)
    with pytest.raises(ValueError, match=message):
        _import_op(path=str(path), dataset_name="jbad", persistent=False)
    assert not fo.dataset_exists("jbad")


def test_exported_file_header_whitespace_bom_are_repaired_and_reported(fo, tmp_path):
    """A spreadsheet's export: a byte order mark, a header in crowd-kit's column order, stray spaces. Nothing
    of the header becomes a worker, an item or a class, and 'A ' is 'A'; the operator's result, the summary
    and dataset.info say what was repaired."""
    path = tmp_path / "export.tsv"
    path.write_bytes("\ufeffTask\tWorker\tLabel\ni1\tw1\tA \ni1\t w2\tA\ni2\tw1\tB\ni2\tw2\tB\n".encode())
    out = _import_op(path=str(path), dataset_name="jexp", persistent=False)
    try:
        ds = fo.load_dataset("jexp")
        assert sorted(out["raters"]) == ["w1", "w2"] and out["classes"] == ["A", "B"] and out["judgements"] == 4
        assert sorted(ds.values("item")) == ["i1", "i2"] and ds.classes["judgements"] == ["A", "B"]
        assert out["header"] == "line 1: Task | Worker | Label" and out["columns"] == ["item", "worker", "label"]
        assert out["whitespace_stripped"] == 2 and out["bom"] is True
        assert "header line 1: Task | Worker | Label skipped" in out["summary"]
        assert "2 fields had surrounding whitespace, stripped" in out["summary"]
        info = ds.info["iaa_import"]
        assert info["header"] == out["header"] and info["whitespace_examples"] == ["line 2: 'A '", "line 3: ' w2'"]
        res = _op("compute_class_agreement", ds, key="c", field="judgements")
        assert res["alpha"] == pytest.approx(1.0)  # 'A ' and 'A' are one class: the workers agree
    finally:
        fo.delete_dataset("jexp")


def test_one_worker_is_warned_in_the_result_and_the_dataset(fo, tmp_path):
    from agreement.fo.importers.judgements import import_judgements

    path = _write(tmp_path / "solo.tsv", [("w1", "i1", "A"), ("w1", "i2", "B")])
    out = _import_op(path=path, dataset_name="jsolo", persistent=False)
    try:
        warned = [w for w in out["warnings"] if "one worker ('w1')" in w]
        assert len(warned) == 1 and "solo.tsv" in warned[0] and "alpha is undefined" in warned[0]
        assert warned[0] in fo.load_dataset("jsolo").info["iaa_import"]["warnings"]
    finally:
        fo.delete_dataset("jsolo")
    _, record = import_judgements(path, "jsolo2", persistent=False)
    assert any("one worker ('w1')" in w for w in record["warnings"])
    fo.delete_dataset("jsolo2")


def test_csv_with_the_delimiter_and_a_categories_file_with_a_header(fo, tmp_path):
    path = tmp_path / "j.csv"
    path.write_text("worker,item,label\nw1,i1,low\nw2,i1,high\nw1,i2,mid\nw2,i2,mid\n")
    cats = tmp_path / "cats.txt"
    cats.write_text("category\nlow\n mid\nhigh\n")
    with pytest.raises(ValueError, match=r"j\.csv, line 1: .*comma-separated: pass delimiter=','"):
        _import_op(path=str(path), dataset_name="jcsv", persistent=False, header="no")
    out = _import_op(path=str(path), dataset_name="jcsv", persistent=False, delimiter=",", categories=str(cats))
    try:
        assert out["classes"] == ["low", "mid", "high"] and out["header"] == "line 1: worker | item | label"
        assert out["categories_file"]["header"] == "line 1: category" and out["categories_file"]["whitespace_stripped"] == 1
        assert "categories file: header line 1: category skipped" in out["summary"]
    finally:
        fo.delete_dataset("jcsv")
