"""export_agreement_report: per run, an HTML page with the panel's figures (plotly.js one shared file), the results as JSON and
tidy CSV tables (plain column names, rounded numbers, reasons in their own column, typed label conflicts)."""

from __future__ import annotations

import csv
import json
import math
import re
from html import unescape

import pytest

from test_panel_classes import RATERS as CLASS_RATERS, class_consensus_ds, class_ds  # noqa: F401 - fixtures
from test_panel_masks import RATERS as MASK_RATERS, mask_ds  # noqa: F401 - fixture

pytestmark = pytest.mark.fiftyone

OP = "@iaa/agreement/{}"
PLAIN = re.compile(r"^[a-z][a-z0-9_]*$")
CARD = re.compile(r"<div class='card'><div class='label'>(.*?)</div><div class='value'>(.*?)</div></div>")
FIELDS_CARD = ("rater assignment", "a rater is assigned where its field is set (None = not assigned)")


@pytest.fixture
def scored(fo, make_dataset):
    from conftest import crowd_with_runs

    runs = (("compute_ot_agreement", "ot", {}), ("compute_kalos", "kal", {}), ("compute_geometry_agreement", "geo", {}),
            ("calibrate_agreement", "cal", {}), ("compute_consensus", "cons", {"method": "majority"}))
    return crowd_with_runs(make_dataset, n=12, raters=3, seed=2, folder="/data", runs=runs)


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
    assert html.count("window.PlotlyConfig") <= 1  # plotly.js loaded once
    # plotly.js from the export's one shared file beside the run folders, nothing from the network
    assert re.findall(r"<script[^>]+src=['\"]([^'\"]+)", html) == ["../plotly.min.js"]
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
        "cons/confusion.csv", "plotly.min.js",
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
    _check_numbers_against_the_pure_library(report, ds, corpus)


def _sig4(value) -> str:
    """A number as the CSV writes it (4 significant digits), ``""`` for None."""
    return "" if value is None else str(float(f"{value:.4g}"))


def _check_numbers_against_the_pure_library(report, ds, corpus) -> None:
    """The OT report's numbers are the pure library's on the same corpus, each in its own row and column; the
    KαLOS tables are the run's stored values, in order, every column."""
    from agreement.methods.ot import sample_ot_scores
    from agreement.methods.ot.alpha_ot import alpha_ot

    pure = alpha_ot(corpus)
    doc = json.loads((report / "ot" / "run.json").read_text())
    assert doc["results"]["summary"]["alpha_ot"] == pytest.approx(pure.alpha, abs=1e-12)
    pairs = {(p["rater_a"], p["rater_b"]): p for p in _rows(report / "ot" / "rater_pairs.csv")}
    expected = {(r["rater_a"], r["rater_b"]): r for r in pure.pairs.to_records()}
    assert set(pairs) == set(expected)
    for pair, rec in expected.items():
        row = pairs[pair]
        assert (row["alpha_ot"], row["observed_cost"], row["expected_cost"]) == (
            _sig4(rec["alpha_ot"]), _sig4(rec["observed_cost"]), _sig4(rec["expected_cost"])), pair
        assert (row["shared_samples"], row["chance_pairs"], row["exact_chance_baseline"]) == (
            str(rec["n_shared_samples"]), str(int(rec["n_cross_pairs"])), "1"), pair
    # samples.csv: one row per sample in the dataset's order, the per-sample OT scores of the pure library
    scores = sample_ot_scores(corpus)
    samples = _rows(report / "ot" / "samples.csv")
    assert [r["sample_id"] for r in samples] == ds.values("id")
    assert [r["filepath"] for r in samples] == [f"/data/{i:03d}.jpg" for i in range(12)]
    assert [r["file_name"] for r in samples] == [f"{i:03d}.jpg" for i in range(12)]
    assert [r["score"] for r in samples] == [_sig4(v) for v in scores.mean]
    assert [r["ot_min"] for r in samples] == [_sig4(v) for v in scores.min]
    assert [r["reason"] for r in samples] == [""] * 12
    # raters.csv: labels and samples counted per rater in the corpus
    raters = {r["rater"]: r for r in _rows(report / "ot" / "raters.csv")}
    for k, rater in enumerate(corpus.raters):
        assert raters[rater]["labels"] == str(int((corpus.rater_index == k).sum())), rater
        assert raters[rater]["samples"] == str(int(corpus.assigned[:, k].sum())), rater
    # KαLOS: every column of the α-versus-τ curve and of the class table, in order
    kal = json.loads((report / "kal" / "run.json").read_text())["results"]["detail"]
    curve = kal["sensitivity_curve"]
    assert [(r["tau"], r["global_alpha"], r["mean_alpha"], r["undefined_samples"], r["units"])
            for r in _rows(report / "kal" / "alpha_by_tau.csv")] == [
        (_sig4(t), _sig4(g), _sig4(m), str(u), str(n))
        for t, g, m, u, n in zip(curve["taus"], curve["global_alpha"], curve["mean_alpha"], curve["n_undefined"],
                                 curve["n_units"])]
    diff = kal["class_difficulty"]
    assert [(c["class"], c["alpha"], c["units"]) for c in _rows(report / "kal" / "classes.csv")] == [
        (diff["classes"][i], _sig4(diff["alpha"][i]), str(diff["n_units"][i])) for i in diff["hardest_first"]]


def _cards(page: str) -> list[tuple[str, str]]:
    """The "At a glance" cards of a report page, in order: ``(label, the text shown)``."""
    return [(unescape(a), unescape(b)) for a, b in CARD.findall(page)]


def _three(x: float) -> str:
    """Three significant figures, trailing zeros kept (the panel's way: 0.640, 1.00; numbers in [0.001, 1000))."""
    assert 1e-3 <= abs(x) < 1e3, x
    return f"{x:#.3g}".rstrip(".")


def _summary(folder) -> dict:
    return json.loads((folder / "run.json").read_text())["results"]["summary"]


def test_the_cards_show_each_number_as_the_panel_writes_it(fo, scored, tmp_path):
    """The headline cards of report.html carry the panel's text (three figures, ± its 95% half-width or "exact
    chance baseline", counts), never the raw value: the cards of an exact and of a Monte-Carlo OT run, a KαLOS
    run and a consensus run, each built here from the run's stored summary (run.json) or the dataset."""
    import fiftyone.operators as foo

    from agreement.fo.reports import export_agreement_report
    from agreement.methods.consensus.threshold import AUTO_TAU_RANGE

    ds, corpus, _ = scored
    r = foo.execute_operator(OP.format("compute_ot_agreement"), ctx=dict(
        view=ds.view(), params=dict(fields=list(corpus.raters), key="mc", max_pairs=50)))
    assert r.error is None, r.error
    export_agreement_report(ds, tmp_path, keys=["ot", "mc", "kal", "cons"])
    on = ("computed on", "whole dataset (12 samples)")

    def page(key: str) -> str:
        return (tmp_path / key / "report.html").read_text()

    s = _summary(tmp_path / "ot")
    assert s["alpha_ot_exact"] is True and s["alpha_ot_se"] == 0.0 and s["n_undefined"] == 0
    assert _cards(page("ot")) == [
        ("αOT", f"{_three(s['alpha_ot'])} (exact chance baseline)"), ("mean OT score", _three(s["mean_ot"])),
        ("F1@IoU (baseline)", _three(s["f1"])), ("threshold α (baseline)", _three(s["threshold_alpha"])),
        ("samples without a score", "0"), on, FIELDS_CARD]
    assert _cards(page("ot"))[0] == ("αOT", "0.640 (exact chance baseline)")  # the example
    s = _summary(tmp_path / "mc")
    assert s["alpha_ot_exact"] is False and s["alpha_ot_se"] > 0
    assert _cards(page("mc"))[0] == ("αOT", f"{_three(s['alpha_ot'])} ± {_three(1.96 * s['alpha_ot_se'])} (95%)")
    assert _cards(page("mc"))[0][1].startswith("0.640 ± 0.00")
    s = _summary(tmp_path / "kal")
    assert _cards(page("kal")) == [
        ("global α (pooled)", _three(s["global_alpha"])), ("mean α (defined samples)", _three(s["mean_alpha"])),
        ("samples with α undefined", str(s["n_undefined"])), ("τ", _three(s["tau"])), on, FIELDS_CARD]
    assert s["n_undefined"] == 1 and _three(s["tau"]) == "0.500"
    s = _summary(tmp_path / "cons")
    n = ds.count("cons_consensus.detections")
    flagged = ds.count_values("cons_consensus.detections.cons_review").get(True, 0)
    mean = ds.mean("cons_consensus.detections.confidence")
    assert (n, flagged) == (s["n_consensus"], s["n_review"]) and 0 < flagged < n
    lo, hi = AUTO_TAU_RANGE
    assert _cards(page("cons")) == [
        ("consensus labels", str(n)), ("flagged for review", f"{_three(100 * flagged / n)}% ({flagged} of {n} labels)"),
        ("mean confidence of the consensus labels", _three(mean)), ("consensus method", "majority vote"),
        ("same-object threshold τ", f"{_three(s['tau'])} (chosen from the data in [{lo:g}, {hi:g}])"), on, FIELDS_CARD]


def test_an_undefined_headline_card_shows_its_reason(fo, make_dataset, tmp_path):
    """One sample (no cross-sample pair: αOT and the threshold α undefined), and a consensus with no label
    (rater b saw the samples and drew nothing): each card says "undefined: <the run's reason>"."""
    import fiftyone.operators as foo

    from agreement.fo.reports import export_agreement_report

    box = fo.Detections(detections=[fo.Detection(label="a", bounding_box=[0.1, 0.1, 0.2, 0.2])])
    one = make_dataset([fo.Sample(filepath="/u/0.jpg", a=box.copy(), b=box.copy())])
    empty = make_dataset([fo.Sample(filepath=f"/v/{i}.jpg", a=box.copy(), b=fo.Detections()) for i in range(2)])
    for ds, op, key in ((one, "compute_ot_agreement", "o"), (empty, "compute_consensus", "c")):
        r = foo.execute_operator(OP.format(op), ctx=dict(view=ds.view(), params=dict(fields=["a", "b"], key=key)))
        assert r.error is None, r.error
    export_agreement_report(one, tmp_path, keys="o")
    s = _summary(tmp_path / "o")
    assert s["alpha_ot"] is None and s["alpha_ot_reason"].startswith("D_e undefined for the corpus: no cross-sample")
    assert s["threshold_alpha"] is None and s["threshold_alpha_reason"]
    cards = dict(_cards((tmp_path / "o" / "report.html").read_text()))
    assert cards["αOT"] == f"undefined: {s['alpha_ot_reason']}"
    assert cards["threshold α (baseline)"] == f"undefined: {s['threshold_alpha_reason']}"
    assert (cards["mean OT score"], cards["samples without a score"]) == ("1.00", "0")
    export_agreement_report(empty, tmp_path, keys="c")  # no sample has a score: once an IndexError
    assert _summary(tmp_path / "c")["n_consensus"] == 0
    cards = dict(_cards((tmp_path / "c" / "report.html").read_text()))
    assert (cards["consensus labels"], cards["flagged for review"], cards["mean confidence of the consensus labels"]) \
        == ("0", "undefined: no consensus labels", "undefined: no consensus labels")


def test_several_runs_each_report_their_own_numbers(fo, scored, tmp_path):
    """Keys asked in any order: each folder holds its own run (run.json, cards, tables), never another's."""
    from agreement.fo.reports import export_agreement_report

    ds, _, headline = scored
    out = export_agreement_report(ds, tmp_path, keys=["ot", "kal", "cons", "geo"])
    assert list(out["runs"]) == ["ot", "kal", "cons", "geo"]
    first = {"ot": "αOT", "kal": "global α (pooled)", "cons": "consensus labels", "geo": "σ (Braylan)"}
    for key, files in out["runs"].items():
        assert files["folder"] == str(tmp_path / key) and files["html"] == str(tmp_path / key / "report.html")
        doc = json.loads((tmp_path / key / "run.json").read_text())
        assert doc["run"]["key"] == key
        numbers = {k: v for k, v in headline[key].items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
        assert len(numbers) >= 8 and {k: doc["results"]["summary"][k] for k in numbers} == numbers, key
        page = (tmp_path / key / "report.html").read_text()
        assert f"run &#x27;{key}&#x27;" in page and _cards(page)[0][0] == first[key]
        rows = _rows(files["samples"])
        assert [r["sample_id"] for r in rows] == ds.values("id")
    scores = {"ot": "ot_ot", "kal": "kal_alpha"}
    for key, field in scores.items():
        assert field in ds.get_field_schema()
        assert [r["score"] for r in _rows(out["runs"][key]["samples"])] == [_sig4(v) for v in ds.values(field)]


def test_cells_are_rounded_and_columns_named_plainly():
    from agreement.reporting.tables import pair_rows, plain_name, rater_rows, round_value

    assert round_value(0.6000000000000001) == 0.6 and round_value(-0.123456) == -0.1235
    assert round_value(123456.7) == 123500.0 and round_value(1.23456e-5) == 1.235e-5
    assert round_value(30.999999999999996, count=True) == 31 and isinstance(round_value(np_int(7)), int)
    assert round_value(float("nan")) is None and round_value(float("inf")) is None and round_value(True) == 1
    assert plain_name("n_shared_samples") == "shared_samples" and plain_name("reason", block="rater_vitality") == \
        "vitality_reason"
    assert plain_name("agreement", block="rater_majority") == "agrees_with_majority"
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


def test_consensus_conflicts_are_the_fused_labels_read_back(fo, scored, tmp_path):
    """A consensus run's conflicts.csv against what the run wrote on the dataset: every rater label no consensus
    label fused is one ``extra`` row (with its id), every consensus label a rater has no member in is one
    ``missing`` row, and each two-sided row joins a consensus label with one of its own members."""
    from agreement.fo.reports import export_agreement_report

    ds, corpus, _ = scored
    rows = _rows(export_agreement_report(ds, tmp_path, keys="cons")["runs"]["cons"]["conflicts"])
    raters = list(corpus.raters)
    ids = ds.values("id")
    rater_labels = {r: ds.values(f"{r}.detections") for r in raters}
    fused = ds.values("cons_consensus.detections")
    extra, missing, members_of = set(), set(), {}
    for s, sid in enumerate(ids):
        used = set()
        for lab in fused[s] or []:
            members = [str(m) for m in lab["cons_members"]]
            used.update(members)
            members_of[lab.id] = set(members)
            mine = {r: [d.id for d in rater_labels[r][s] or [] if d.id in members] for r in raters}
            missing.update((sid, lab.id, r) for r in raters if not mine[r])
        extra.update((sid, d.id, r) for r in raters for d in rater_labels[r][s] or [] if d.id not in used)
    assert extra and missing  # the run leaves both kinds
    assert {r["rater_a"] for r in rows} == {"consensus"} and {r["rater_b"] for r in rows} == set(raters)
    assert {(r["sample_id"], r["label_id_b"], r["rater_b"]) for r in rows if r["type"] == "extra"} == extra
    assert all(r["label_id_a"] == "" and r["class_a"] == "" for r in rows if r["type"] == "extra")
    assert {(r["sample_id"], r["label_id_a"], r["rater_b"]) for r in rows if r["type"] == "missing"} == missing
    assert all(r["label_id_b"] == "" and r["class_b"] == "" for r in rows if r["type"] == "missing")
    two_sided = [r for r in rows if r["type"] in ("label differs", "low overlap")]
    assert two_sided and all(r["label_id_b"] in members_of[r["label_id_a"]] for r in two_sided)
    assert all(r["class_a"] != r["class_b"] for r in two_sided if r["type"] == "label differs")
    assert all(r["class_a"] == r["class_b"] and float(r["iou"]) < 0.5 for r in two_sided if r["type"] == "low overlap")
    assert len(rows) == len(extra) + len(missing) + len(two_sided)


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
    assert str(tmp_path / "plotly.min.js") in r.result["files"]  # the export's one plotly.js, beside the run folder
    files = {p.rsplit("/", 1)[-1]: p for p in r.result["files"] if p.startswith(str(tmp_path / key))}
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

    ds, masks, ids = mask_ds
    html, files = _export_one(ds, "seg", tmp_path)
    assert _plots(html) >= 3  # histogram, class bars, pair x class heatmap
    assert set(files) == {"report.html", "run.json", "classes.csv", "samples.csv", "pair_class_dice.csv"}
    classes = _rows(files["classes.csv"])
    assert {c["class"] for c in classes} >= {"road", "car"} and "alpha_reason" in classes[0]
    # each class's row: its own name, value and pooled overlap (pixel counts summed over samples and rater pairs)
    names = {0: "background", 1: "road", 2: "car"}
    by_class = {c["class"]: c for c in classes}
    for value, name in names.items():
        inter = total = union = 0
        for per in masks:
            for k, a in enumerate(MASK_RATERS):
                for b in MASK_RATERS[k + 1:]:
                    if per[a] is not None and per[b] is not None:
                        x, y = per[a] == value, per[b] == value
                        inter, total, union = inter + int((x & y).sum()), total + int(x.sum() + y.sum()), \
                            union + int((x | y).sum())
        row = by_class[name]
        assert (row["class_value"], row["dice"], row["iou"]) == (str(value), _sig4(2 * inter / total),
                                                                _sig4(inter / union)), name
    # pair_class_dice.csv (docs/reports.md; once never written): per rater pair and class, the mean over the
    # samples where both raters have a mask and one draws the class of the Dice of their two masks
    expected = []
    for k, a in enumerate(MASK_RATERS):
        for b in MASK_RATERS[k + 1:]:
            for value, name in names.items():
                dice = [2 * int(((p[a] == value) & (p[b] == value)).sum()) / int((p[a] == value).sum()
                                                                             + (p[b] == value).sum())
                        for p in masks if p[a] is not None and p[b] is not None
                        and ((p[a] == value) | (p[b] == value)).any()]
                if dice:
                    expected.append((a, b, name, str(value), _sig4(sum(dice) / len(dice)), str(len(dice))))
    rows = _rows(files["pair_class_dice.csv"])
    assert sorted((r["rater_a"], r["rater_b"], r["class"], r["class_value"], r["mean_dice"], r["samples"])
                  for r in rows) == sorted(expected)
    assert ("r1", "r3", "car") not in {(r["rater_a"], r["rater_b"], r["class"]) for r in rows}  # never met on car
    r = foo.execute_operator(OP.format("compute_mask_consensus"),
                             ctx=dict(view=ds.view(), params=dict(fields=MASK_RATERS, key="st")))
    assert r.error is None, r.error
    html, files = _export_one(ds, "st", tmp_path)
    assert _plots(html) >= 2 and "sensitivity" in _rows(files["raters.csv"])[0]
    detail = json.loads(open(files["run.json"], encoding="utf-8").read())["results"]["detail"]
    assert [(r["rater"], r["sensitivity"]) for r in _rows(files["raters.csv"])] == [
        (rater, _sig4(v)) for rater, v in zip(detail["raters"], detail["rater_sensitivity"])]


def test_video_frame_and_track_runs_write_their_report(fo, tmp_path):
    import fiftyone.operators as foo

    from agreement.fo.panel.data import score_field
    from agreement.fo.runs import get_agreement_run_info
    from agreement.fo.simulate.video import simulate_video_dataset

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
            assert "conflicts.csv" not in files and {"report.html", "run.json", "samples.csv"} <= set(files), key
            # one row per video, in the dataset's order, with the per-video score the run wrote on it
            rows = _rows(files["samples.csv"])
            field = score_field(get_agreement_run_info(ds, key))
            assert [r["sample_id"] for r in rows] == ds.values("id"), key
            assert [r["score"] for r in rows] == [_sig4(v) for v in ds.values(field)], key
            assert all(r["score"] != "" for r in rows), key
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
