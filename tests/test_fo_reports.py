"""export_agreement_report: per run, a self-contained HTML page with the panel's figures, the results as JSON and
tidy CSV tables (plain column names, rounded numbers, reasons in their own column, typed label conflicts)."""

from __future__ import annotations

import csv
import json
import math
import re

import pytest

from test_panel_classes import RATERS as CLASS_RATERS, class_consensus_ds, class_ds  # noqa: F401 - fixtures
from test_panel_masks import RATERS as MASK_RATERS, mask_ds  # noqa: F401 - fixture

pytestmark = pytest.mark.fiftyone

OP = "@iaa/agreement/{}"
PLAIN = re.compile(r"^[a-z][a-z0-9_]*$")


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
    for op, key, extra in (("compute_ot_agreement", "ot", {}), ("compute_kalos", "kal", {}),
                           ("compute_geometry_agreement", "geo", {}), ("calibrate_agreement", "cal", {}),
                           ("compute_consensus", "cons", {"method": "majority"})):
        r = foo.execute_operator(OP.format(op), ctx=dict(view=ds.view(), params=dict(fields=fields, key=key, **extra)))
        assert r.error is None, r.error
        out[key] = r.result
    return ds, corpus, out


def _rows(path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _significant(cell: str) -> int:
    """The significant digits written in a numeric cell."""
    mantissa = cell.lstrip("-").split("e")[0].replace(".", "").lstrip("0")
    return len(mantissa.rstrip("0")) if "." in cell else len(mantissa.rstrip("0") or "0")


def _check_tidy(path) -> list[dict]:
    """A tidy CSV: plain column names, numbers with at most 4 significant digits, no repr or JSON in a cell."""
    rows = _rows(path)
    with open(path, newline="", encoding="utf-8") as f:
        header = next(csv.reader(f))
    assert all(PLAIN.match(c) for c in header), (path, header)
    for row in rows:
        for col, cell in row.items():
            assert not cell.startswith(("{", "[", "<")), (path, col, cell)
            if re.fullmatch(r"-?\d+\.\d+(e-?\d+)?", cell):
                assert _significant(cell) <= 4, (path, col, cell)
    return rows


def _plots(html: str) -> int:
    assert html.count("window.PlotlyConfig") <= 1  # plotly.js inlined once
    assert not re.search(r"<script[^>]+src=", html)  # nothing fetched from the network
    return html.count('class="plotly-graph-div"')


def test_every_run_gets_a_folder_with_its_page_json_and_tidy_tables(fo, scored, tmp_path):
    import fiftyone.operators as foo

    ds, corpus, headline = scored
    result = foo.execute_operator(OP.format("export_agreement_report"),
                                  ctx=dict(view=ds.view(), params=dict(output_dir=str(tmp_path / "report")))).result
    assert result["runs"] == ["cal", "cons", "geo", "kal", "ot"]
    report = tmp_path / "report"
    assert result["reports"] == [str(report / k / "report.html") for k in result["runs"]]
    files = {p.relative_to(report).as_posix() for p in report.rglob("*") if p.is_file()}
    assert files == {
        "ot/report.html", "ot/run.json", "ot/raters.csv", "ot/rater_pairs.csv", "ot/samples.csv", "ot/conflicts.csv",
        "kal/report.html", "kal/run.json", "kal/raters.csv", "kal/rater_pairs.csv", "kal/classes.csv",
        "kal/samples.csv", "kal/conflicts.csv", "kal/alpha_by_tau.csv",
        "geo/report.html", "geo/run.json", "geo/samples.csv",
        "cal/report.html", "cal/run.json",
        "cons/report.html", "cons/run.json", "cons/raters.csv", "cons/samples.csv", "cons/conflicts.csv",
        "cons/confusion.csv",
    }
    assert result["num_files"] == len(files) and sorted(result["files"]) == sorted(str(report / f) for f in files)
    for key, head in headline.items():
        doc = json.loads((report / key / "run.json").read_text())  # strict JSON: NaN written as null
        assert doc["dataset"] == ds.name and doc["run"]["key"] == key
        for name, value in head.items():
            if isinstance(value, float) and math.isfinite(value):
                assert doc["results"]["summary"][name] == pytest.approx(value)
    for path in report.rglob("*.csv"):
        _check_tidy(path)
    # one row per rater pair, the run's values rounded to 4 significant digits
    pairs = _rows(report / "ot" / "rater_pairs.csv")
    detail = json.loads((report / "ot" / "run.json").read_text())["results"]["detail"]
    assert {(p["rater_a"], p["rater_b"]) for p in pairs} == {("w000", "w001"), ("w000", "w002"), ("w001", "w002")}
    for p, rec in zip(pairs, detail["rater_pairs"]):
        assert float(p["alpha_ot"]) == float(f"{rec['alpha_ot']:.4g}")
        assert p["shared_samples"] == str(rec["n_shared_samples"]) and p["exact_chance_baseline"] in ("0", "1")
    # an OT run's raters.csv has its per-rater figures, not only names
    ot_raters = _rows(report / "ot" / "raters.csv")
    assert [r["rater"] for r in ot_raters] == list(corpus.raters)
    assert {"pair_alpha_ot", "partners", "labels", "samples"} <= set(ot_raters[0])
    kal = json.loads((report / "kal" / "run.json").read_text())["results"]["detail"]
    raters = _rows(report / "kal" / "raters.csv")
    assert [float(r["vitality"]) for r in raters] == [float(f"{v:.4g}") for v in kal["rater_vitality"]["vitality"]]
    assert "vitality_reason" in raters[0] and not any("." in c for c in raters[0])
    classes = _rows(report / "kal" / "classes.csv")
    assert [c["class"] for c in classes] == [kal["class_difficulty"]["classes"][i]
                                             for i in kal["class_difficulty"]["hardest_first"]]
    assert [c["difficulty_rank"] for c in classes] == ["1", "2", "3"]
    curve = _rows(report / "kal" / "alpha_by_tau.csv")
    assert [float(r["tau"]) for r in curve] == pytest.approx(kal["sensitivity_curve"]["taus"])
    samples = _rows(report / "ot" / "samples.csv")
    assert len(samples) == 12 and list(samples[0])[:4] == ["sample_id", "file_name", "filepath", "score"]
    assert samples[0]["file_name"] == "000.jpg" and {"ot_min", "f1", "mean_iou", "reason"} <= set(samples[0])


def test_cells_are_rounded_and_columns_named_plainly():
    from agreement.fo.report.tables import pair_rows, plain_name, rater_rows, round_value

    assert round_value(0.6000000000000001) == 0.6 and round_value(-0.123456) == -0.1235
    assert round_value(123456.7) == 123500.0 and round_value(1.23456e-5) == 1.235e-5
    assert round_value(30.999999999999996, count=True) == 31 and isinstance(round_value(np_int(7)), int)
    assert round_value(float("nan")) is None and round_value(float("inf")) is None and round_value(True) == 1
    assert plain_name("n_shared_samples") == "shared_samples" and plain_name("reason", "rater_vitality") == \
        "vitality_reason"
    assert plain_name("agreement", "rater_majority") == "agrees_with_majority"
    rows = rater_rows({"raters": ["a", "b"], "rater_vitality": {"raters": ["a", "b"], "vitality": [0.10000000000000002,
                                                                                                      None],
                                                                 "reason": ["", "a single rater"]},
                       "repairs": {"per_rater": {"b": {"clipped_boxes": 2}}}})
    assert rows == [{"rater": "a", "vitality": 0.1, "vitality_reason": "", "repairs_clipped_boxes": None},
                    {"rater": "b", "vitality": None, "vitality_reason": "a single rater", "repairs_clipped_boxes": 2}]
    assert pair_rows({"rater_pairs": {"rater_a": ["a"], "rater_b": ["b"], "n_units": [4.0], "alpha": [0.33333]}}) == [
        {"rater_a": "a", "rater_b": "b", "units": 4, "alpha": 0.3333}]


def np_int(v: int):
    import numpy as np

    return np.int64(v)


def test_consensus_samples_are_counts_never_label_reprs(fo, scored, tmp_path):
    from agreement.fo.reports import export_agreement_report

    ds, _, _ = scored
    out = export_agreement_report(ds, tmp_path, keys="cons")["runs"]["cons"]
    rows = _check_tidy(out["samples"])
    labels = ds.values("cons_consensus.detections")
    review = ds.values("cons_consensus.detections.cons_review")
    assert [int(r["consensus_labels"]) for r in rows] == [len(x or []) for x in labels]
    assert [int(r["flagged_for_review"]) for r in rows] == [sum(map(bool, x or [])) for x in review]
    assert max(len(c) for r in rows for c in r.values()) < 100  # no Detections repr (2,333 characters before)
    confusion = _rows(out["confusion"])
    report = ds.load_run_results("cons").detail["rater_report"]
    assert {(c["rater"], c["consensus_class"], c["rater_class"]) for c in confusion} == {
        (r, y, c) for r, e in report.items() for y, row in e["confusion"].items() for c in row}
    conflicts = _rows(out["conflicts"])
    assert conflicts and {c["rater_a"] for c in conflicts} == {"consensus"}
    html = (tmp_path / "cons" / "report.html").read_text()
    assert _plots(html) >= 3 and "consensus labels" in html


def test_undefined_scores_have_their_reason(fo, scored, tmp_path):
    from agreement.fo.reports import export_agreement_report

    ds, _, _ = scored
    out = export_agreement_report(ds, tmp_path, keys=["geo", "kal"])
    for key in ("geo", "kal"):
        undefined = ds.load_run_results(key).detail["undefined_samples"]
        assert undefined  # this corpus has samples without a score
        rows = _rows(out["runs"][key]["samples"])
        for r in rows:
            assert (r["score"] == "") == (r["sample_id"] in undefined)
            assert r["reason"] == (undefined.get(r["sample_id"], "") if r["score"] == "" else "")


def test_conflicts_are_typed_on_a_case_where_every_conflict_is_known(fo, make_dataset, tmp_path):
    """Two raters, OT with β = 0.3: a match (none), another class on the same box (label differs), a box b does
    not have (missing), a box a does not have (extra), a matched box with IoU 1/3 (low overlap, below the run's
    iou_threshold 0.5) and a box too far to match (low overlap, the run's reason ``too far``)."""
    import fiftyone.operators as foo

    from agreement.fo.reports import export_agreement_report

    D, B = fo.Detections, fo.Detection
    cases = [  # (a's labels, b's labels) per sample
        ([("cat", [0.1, 0.1, 0.2, 0.2])], [("cat", [0.1, 0.1, 0.2, 0.2])]),
        ([("cat", [0.3, 0.3, 0.2, 0.2])], [("dog", [0.3, 0.3, 0.2, 0.2])]),
        ([("cat", [0.5, 0.5, 0.2, 0.2])], []),
        ([], [("cat", [0.5, 0.1, 0.2, 0.2])]),
        ([("cat", [0.1, 0.1, 0.2, 0.2])], [("cat", [0.2, 0.1, 0.2, 0.2])]),
        ([("cat", [0.0, 0.0, 0.2, 0.2])], [("cat", [0.15, 0.15, 0.2, 0.2])]),
    ]
    ds = make_dataset([fo.Sample(filepath=f"/c/{i}.jpg", **{r: D(detections=[B(label=c, bounding_box=b) for c, b in labs])
                                                             for r, labs in zip("ab", case)})
                       for i, case in enumerate(cases)])
    r = foo.execute_operator(OP.format("compute_ot_agreement"),
                             ctx=dict(view=ds.view(), params=dict(fields=["a", "b"], key="ot", beta=0.3)))
    assert r.error is None, r.error
    rows = _rows(export_agreement_report(ds, tmp_path, keys="ot")["runs"]["ot"]["conflicts"])
    got = sorted((r["file_name"], r["type"], r["cvat_type"], r["rater_a"], r["class_a"], r["rater_b"], r["class_b"])
                 for r in rows)
    assert got == sorted([
        ("1.jpg", "label differs", "mismatching label", "a", "cat", "b", "dog"),
        ("2.jpg", "missing", "missing annotation", "a", "cat", "b", ""),
        ("3.jpg", "extra", "extra annotation", "a", "", "b", "cat"),
        ("4.jpg", "low overlap", "low overlap", "a", "cat", "b", "cat"),
        ("5.jpg", "low overlap", "low overlap", "a", "cat", "b", "cat"),
    ])
    by_file = {r["file_name"]: r for r in rows}
    assert float(by_file["1.jpg"]["iou"]) == 1.0 and by_file["1.jpg"]["reason"] == "label differs"
    assert float(by_file["4.jpg"]["iou"]) == pytest.approx(1 / 3, abs=1e-4) and by_file["4.jpg"]["reason"] == ""
    assert float(by_file["5.jpg"]["iou"]) == pytest.approx(0.0025 / 0.0775, abs=1e-4)
    assert by_file["5.jpg"]["reason"] == "too far"
    ids = dict(zip(ds.values("filepath"), ds.values("a.detections.id")))
    assert by_file["2.jpg"]["label_id_a"] == ids["/c/2.jpg"][0] and by_file["2.jpg"]["sample_id"] == ds.values("id")[2]
    html = (tmp_path / "ot" / "report.html").read_text()
    assert "5 conflicts in conflicts.csv" in html


def test_one_key_a_view_and_bad_keys(fo, scored, tmp_path):
    from agreement.fo.reports import export_agreement_report
    from agreement.fo.runs import RunError

    ds, _, _ = scored
    out = export_agreement_report(ds.limit(5), tmp_path, keys="ot", samples_csv=True)
    assert list(out["runs"]) == ["ot"]
    assert len(_rows(out["runs"]["ot"]["samples"])) == 5
    assert not (tmp_path / "ot" / "samples.csv").read_text().count("/data/007.jpg")
    with pytest.raises(RunError, match="no agreement run 'nope'"):
        export_agreement_report(ds, tmp_path / "bad", keys=["ot", "nope"])
    assert not (tmp_path / "bad").exists()  # every key is checked before anything is written
    out = export_agreement_report(ds, tmp_path / "nos", keys="ot", samples_csv=False)
    assert "samples" not in out["runs"]["ot"] and not (tmp_path / "nos" / "ot" / "samples.csv").exists()


def test_undefined_numbers_are_empty_cells_and_null(fo, make_dataset, tmp_path):
    import fiftyone.operators as foo

    from agreement.fo.reports import export_agreement_report

    ds = make_dataset()
    det = fo.Detections(detections=[fo.Detection(label="a", bounding_box=[0.1, 0.1, 0.2, 0.2])])
    ds.add_samples([fo.Sample(filepath=f"/d/{i}.jpg", a=det.copy(), b=fo.Detections()) for i in range(2)],
                   progress=False)
    foo.execute_operator(OP.format("compute_kalos"), ctx=dict(view=ds.view(), params=dict(fields=["a", "b"], key="k")))
    out = export_agreement_report(ds, tmp_path)
    assert "NaN" not in (tmp_path / "k" / "run.json").read_text()
    rows = _check_tidy(out["runs"]["k"]["samples"])
    assert all((r["score"] == "") == bool(r["reason"]) for r in rows)  # an empty score has its reason
    assert all(r["score"] == "" or float(r["score"]) <= 1 for r in rows)  # never "nan"


def _export_one(ds, key, tmp_path) -> tuple[str, dict]:
    import fiftyone.operators as foo

    r = foo.execute_operator(OP.format("export_agreement_report"),
                             ctx=dict(view=ds.view(), params=dict(output_dir=str(tmp_path), keys=[key])))
    assert r.error is None, r.error
    files = {p.rsplit("/", 1)[-1]: p for p in r.result["files"]}
    for name, path in files.items():
        if name.endswith(".csv"):
            _check_tidy(path)
    return (tmp_path / key / "report.html").read_text(), files


def test_class_and_class_consensus_runs_write_their_report(fo, class_consensus_ds, tmp_path):  # noqa: F811
    html, files = _export_one(class_consensus_ds, "cls", tmp_path)
    assert _plots(html) >= 4 and {"raters.csv", "rater_pairs.csv", "classes.csv", "samples.csv",
                                  "class_confusion.csv"} <= set(files)
    classes = _rows(files["classes.csv"])
    assert all(re.fullmatch(r"\d+", c["values"]) for c in classes)  # counts as integers
    assert "stores no per-label counterparts" in html and "conflicts.csv" not in files
    html, files = _export_one(class_consensus_ds, "vote", tmp_path)
    assert _plots(html) >= 2 and "one class per sample" in html
    rows = _rows(files["samples.csv"])
    assert {"consensus_class"} <= set(rows[0]) and set(class_consensus_ds.values("vote_consensus.label")) >= {
        r["consensus_class"] for r in rows if r["consensus_class"]}


def test_mask_runs_write_their_report(fo, mask_ds, tmp_path):  # noqa: F811
    import fiftyone.operators as foo

    ds, _, _ = mask_ds
    html, files = _export_one(ds, "seg", tmp_path)
    assert _plots(html) >= 3  # histogram, class bars, pair x class heatmap
    classes = _rows(files["classes.csv"])
    assert {c["class"] for c in classes} >= {"road", "car"} and "alpha_reason" in classes[0]
    r = foo.execute_operator(OP.format("compute_mask_consensus"),
                             ctx=dict(view=ds.view(), params=dict(fields=MASK_RATERS, key="st")))
    assert r.error is None, r.error
    html, files = _export_one(ds, "st", tmp_path)
    assert _plots(html) >= 2 and "sensitivity" in _rows(files["raters.csv"])[0]


def test_video_frame_and_track_runs_write_their_report(fo, tmp_path):
    import fiftyone.operators as foo

    from agreement.fo.video_simulate import simulate_video_dataset

    ds, _ = simulate_video_dataset(num_videos=3, num_frames=20, num_objects=2, num_raters=3, magnitude=3.0, seed=0)
    try:
        fields = [f"frames.r{k}" for k in (1, 2, 3)]
        for op, key in (("compute_ot_agreement", "ot"), ("compute_kalos", "k"), ("compute_track_agreement", "tr")):
            r = foo.execute_operator(OP.format(op), ctx=dict(view=ds.view(), params=dict(fields=fields, key=key)))
            assert r.error is None, r.error
        for key in ("ot", "k", "tr"):
            html, files = _export_one(ds, key, tmp_path)
            assert _plots(html) >= 2 and "video_timeline" in html, key
            assert "3 videos with the least agreement" in html, key
            assert "this run is on video frames" in html or "stores no per-label" in html
            assert len(_rows(files["samples.csv"])) == 3
    finally:
        ds.delete()


def test_a_simulation_run_gets_a_page_that_says_why_it_has_no_figures(fo, scored, tmp_path):
    import fiftyone.operators as foo

    from agreement.fo.reports import export_agreement_report

    ds, _, _ = scored
    r = foo.execute_operator(OP.format("simulate_raters"),
                             ctx=dict(view=ds.view(), params=dict(field="w000", num_raters=2, key="sim")))
    assert r.error is None, r.error
    out = export_agreement_report(ds, tmp_path, keys="sim")["runs"]["sim"]
    html = (tmp_path / "sim" / "report.html").read_text()
    assert _plots(html) == 0 and "A simulation run writes simulated raters, not agreement" in html
    rows = _check_tidy(out["samples"])
    counted = [c for c in rows[0] if c.endswith("_labels")]
    assert len(counted) == 2 and all(re.fullmatch(r"\d+", r[c]) for r in rows for c in counted)
