"""The panel for hundreds of raters: sortable rater tables (worst first, minimum labels, name filter), the
per-rater charts cut to their lowest and highest raters, the rater-pair heatmap's selection rules, its
support and minimum support, and the panel's controls driving them."""

import re

import numpy as np
import pytest

from agreement.fo.panel.rater_tables import (
    RATER_COLUMNS,
    f1_score,
    natural_key,
    rater_options,
    rater_table_markdown,
    sort_rater_rows,
    top_bottom_bars,
    visible_columns,
)
from agreement.reporting.figures.pair_heatmap import (
    pair_matrix,
    pair_matrix_figure,
    select_pair_raters,
)

PANEL = "@iaa/agreement/annotator_agreement"


# ---------------------------------------------------------------------------- pure: tables
def _rows(values: dict, labels: dict) -> list[dict]:
    cols = RATER_COLUMNS["iaa.kalos"]
    rows = []
    for r, v in values.items():
        row = {"rater": r, "vitality": v, "alpha_without": None, "partner_agreement": None, "n_partners": None,
               "n_labels": labels[r], "n_samples": 3}
        row["text"] = {c.key: str(row.get(c.key)) for c in cols}
        rows.append(row)
    return rows


def test_natural_order_of_rater_names():
    assert sorted(["w10", "w2", "w100", "w1", "W3", "a"], key=natural_key) == ["a", "w1", "w2", "W3", "w10", "w100"]


def test_rows_come_worst_first_with_the_minimum_labels_and_the_name_filter():
    vit = RATER_COLUMNS["iaa.kalos"][0]
    rows = _rows({"w1": 0.01, "w2": -0.03, "w10": -0.05, "w11": None, "w3": -0.02, "w4": -0.04},
                 {"w1": 20, "w2": 20, "w10": 2, "w11": 30, "w3": 20, "w4": 20})
    out = sort_rater_rows(rows, vit, worst_first=True, min_labels=5)
    # w10 has the lowest vitality but only 2 labels: left out; undefined (w11) last
    assert [r["rater"] for r in out["rows"]] == ["w4", "w2", "w3", "w1", "w11"]
    assert out["n_below_min"] == 1 and out["n_total"] == 6
    assert [r["rater"] for r in sort_rater_rows(rows, vit, False, 5)["rows"]] == ["w1", "w3", "w2", "w4", "w11"]
    assert next(r["rater"] for r in sort_rater_rows(rows, vit, True, 0)["rows"]) == "w10"
    named = sort_rater_rows(rows, vit, True, 0, name_filter="W1")
    assert [r["rater"] for r in named["rows"]] == ["w10", "w1", "w11"] and named["n_filtered_out"] == 3


def test_a_lower_is_better_column_sorts_highest_first_when_worst_first():
    fp = next(c for c in RATER_COLUMNS["iaa.consensus"] if c.key == "false_positive_rate")
    rows = [{"rater": r, "false_positive_rate": v, "n_labels": 10} for r, v in (("a", 0.1), ("b", 0.5), ("c", 0.0))]
    assert [r["rater"] for r in sort_rater_rows(rows, fp)["rows"]] == ["b", "a", "c"]


def test_the_table_is_narrow_and_says_what_it_shows():
    cols = RATER_COLUMNS["iaa.consensus"]
    shown = visible_columns(cols, "localisation_error")
    assert [c.key for c in shown] == ["localisation_error", "f1", "sensitivity", "precision", "false_positive_rate"]
    rows = [{"rater": f"w{i}", **{c.key: i / 10 for c in cols}} for i in range(1, 9)]
    for r in rows:
        r["text"] = {c.key: f"{r[c.key]:.3f}" for c in cols}
    result = sort_rater_rows(rows, shown[0], True, 0)
    md = rater_table_markdown(result, shown, shown[0], True, 3, 0, "**Rater report**", "note")
    lines = md.splitlines()
    assert lines[0].startswith("**Rater report**: the first 3 of 8 raters, by *loc. error*, worst first (lower is better)")
    assert lines[2] == "| rater | loc. error | F1 | sensitivity | precision | FP / sample |"
    assert lines[4].startswith("| w8 | **0.800** |") and len([x for x in lines if x.startswith("| w")]) == 3
    assert lines[-1] == "note"


def test_f1_and_options_are_safe():
    assert f1_score(0.5, 1.0) == pytest.approx(2 / 3) and f1_score(0, 0) == 0 and f1_score(None, 1) is None
    o = rater_options({"rows": "7", "pair_k": 99, "pair_rule": "nope", "min_labels": -3, "bars_k": None})
    assert o["rows"] == 7 and o["pair_k"] == 20 and o["pair_rule"] == "shared" and o["min_labels"] == 0
    assert o["bars_k"] == 10


def test_per_rater_bars_show_the_lowest_and_highest_k():
    raters = [f"w{i}" for i in range(30)]
    ys = [float((i * 7) % 30) - 15 for i in range(30)]
    fig = {"traces": [{"type": "bar", "x": raters, "y": ys, "hovertext": [f"h{r}" for r in raters],
                       "marker": {"color": ["c" + r for r in raters]}}],
           "layout": {"title": {"text": "<b>Rater vitality</b>"}, "margin": {"t": 40}, "height": 300, "xaxis": {}}}
    keep = set(raters) - {"w0"}
    out = top_bottom_bars(fig, 4, keep)
    x, y = out["traces"][0]["x"], out["traces"][0]["y"]
    kept = sorted((v, r) for r, v in zip(raters, ys) if r in keep)
    assert x == [r for _, r in kept[:4]] + ["…"] + [r for _, r in kept[-4:]]
    assert y[4] is None and y[:4] == sorted(y[:4]) and out["traces"][0]["hovertext"][0] == "h" + x[0]
    assert out["traces"][0]["marker"]["color"][0] == "c" + x[0]
    assert "the 4 lowest and 4 highest of 29 raters with enough labels" in out["layout"]["title"]["text"]
    assert fig["traces"][0]["x"] == raters  # the figure given is not changed
    small = top_bottom_bars(fig, 20)  # all fit: the chart's own order
    assert small["traces"][0]["x"] == raters


# ---------------------------------------------------------------------------- pure: the table's legend
_RATERS3 = ["w1", "w2", "w10"]
_VALUES = {"w1": 0.31, "w2": 0.5, "w10": -0.0625}
_PAIRS = [{"rater_a": a, "rater_b": b, "n_shared_samples": 4, "kappa": 0.4, "observed_agreement": 0.7,
           "alpha_ot": 0.55} for a, b in (("w1", "w2"), ("w1", "w10"), ("w2", "w10"))]
_VITALITY = {"raters": _RATERS3, "vitality": [_VALUES[r] for r in _RATERS3], "alpha_without": [0.3, 0.2, 0.1]}
#: For each rater table: the run's method and results (no FiftyOne: the label counts come from the test).
_RUNS = {
    "iaa.consensus": ("iaa.consensus", {"rater_report": {r: {
        "sensitivity": v, "precision": 0.8, "false_positive_rate": 0.1, "localisation_error": 0.2, "agreement": 0.9,
        "n_labels": 10, "n_samples": 5} for r, v in _VALUES.items()}}),
    "iaa.consensus/classes": ("iaa.consensus", {"rater_report": {r: {"competence": v, "agreement": 0.9, "labels": 10}
                                                                 for r, v in _VALUES.items()}}),
    "iaa.kalos": ("iaa.kalos", {"raters": _RATERS3, "rater_vitality": _VITALITY}),
    "iaa.ot_agreement": ("iaa.ot_agreement", {"raters": _RATERS3, "rater_pairs": _PAIRS}),
    "iaa.class_agreement": ("iaa.class_agreement", {
        "raters": _RATERS3, "rater_vitality": _VITALITY, "rater_pairs": _PAIRS,
        "rater_majority": {"raters": _RATERS3, "agreement": [0.9, 0.8, 0.7]}}),
}


@pytest.fixture
def no_label_counts(monkeypatch):
    """The rater tables' label and pair counts without a dataset."""
    import agreement.fo.panel.rater_counts as rc

    monkeypatch.setattr(rc, "rater_label_counts", lambda samples, info: {r: {"labels": 10, "samples": 5}
                                                                         for r in _RATERS3})
    monkeypatch.setattr(rc, "kalos_pair_counts", lambda samples, info: {
        "w1|w2": {"n_shared": 4, "n_units": 10, "n_agree": 7}, "w1|w10": {"n_shared": 4, "n_units": 8, "n_agree": 2}})


def _table_and_legend(md: str) -> tuple[list[str], list[str], str]:
    """The headings of a rater table's numeric columns, the columns its legend describes and the columns it
    names as not shown."""
    header = next(line for line in md.splitlines() if line.startswith("| rater |"))
    shown = [h.strip() for h in header.strip("| ").split(" | ")][1:]
    after = md.split(header, 1)[1].split("\n\n")
    legend = after[1] if len(after) > 1 else ""
    descriptions, _, rest = legend.partition(" Not shown: ")
    return shown, re.findall(r"\*([^*]+)\*: ", descriptions), rest


@pytest.mark.parametrize("table", sorted(_RUNS))
def test_each_rater_tables_legend_describes_exactly_the_columns_it_shows(no_label_counts, table):
    """Issue 48: the class rater table's legend described partners, labels and samples, which it did not show.
    For every method's table and every sort column, the legend names each shown column once, in order, and
    no other; the columns left out are only named as such."""
    from agreement.fo.panel.raters import rater_table

    method, detail = _RUNS[table]
    columns = RATER_COLUMNS[table]
    assert all(c.description for c in columns), table
    for column in columns:
        out = rater_table(None, {"method": method, "key": "k"}, {"detail": detail},
                          rater_options({"sort": column.key, "min_labels": 0}))
        assert out["sort"] == column.key
        shown, described, rest = _table_and_legend(out["markdown"])
        assert described == shown and shown[0] == column.heading, (table, column.key, out["markdown"])
        hidden = [c.heading for c in columns if c.heading not in shown]
        assert len(shown) == min(5, len(columns))
        assert rest == (f"{', '.join(hidden)} (sort by one to show it)." if hidden else "")


def test_the_rater_tables_write_three_significant_figures(no_label_counts):
    """Issue 48 saw "0.31" where three significant figures give 0.310: the tables keep the trailing zeros."""
    from agreement.fo.panel.raters import rater_table

    for table, key in (("iaa.consensus/classes", "competence"), ("iaa.kalos", "vitality"),
                       ("iaa.class_agreement", "vitality")):
        method, detail = _RUNS[table]
        out = rater_table(None, {"method": method, "key": "k"}, {"detail": detail},
                          rater_options({"sort": key, "min_labels": 0, "worst_first": False}))
        rows = re.findall(r"^\| (w\d+) \| \*\*([^*]+)\*\*", out["markdown"], flags=re.MULTILINE)
        assert rows == [("w2", "0.500"), ("w1", "0.310"), ("w10", "-0.0625")], (table, out["markdown"])
    ot = rater_table(None, {"method": "iaa.ot_agreement", "key": "k"}, {"detail": _RUNS["iaa.ot_agreement"][1]},
                     rater_options({"min_labels": 0}))
    assert "| w1 | **0.550** | 2 | 8 | 10 | 5 |" in ot["markdown"]


# ---------------------------------------------------------------------------- pure: heatmap
def _rec(a, b, n, v):
    return {"rater_a": a, "rater_b": b, "n_shared_samples": n, "alpha": v}


RECORDS = [_rec("a", "b", 5, 0.9), _rec("a", "c", 4, 0.8), _rec("b", "c", 4, 0.7), _rec("c", "d", 1, -0.6),
           _rec("d", "e", 2, -0.4), _rec("e", "f", 1, 0.2), _rec("a", "f", 1, 0.1), _rec("b", "e", 3, 0.0)]
RATERS = ["a", "b", "c", "d", "e", "f"]


def test_heatmap_rules_pick_the_right_raters():
    # most shared samples with each other: a-b (5), then c (4 + 4), then e (3 with b)
    assert select_pair_raters(RECORDS, "alpha", RATERS, rule="shared", k=4) == ["a", "b", "c", "e"]
    # lowest pairs: c-d (-0.6), then d-e (-0.4): c, d, e
    assert select_pair_raters(RECORDS, "alpha", RATERS, rule="lowest", k=3) == ["c", "d", "e"]
    # the minimum support leaves the thin pairs out of the ranking
    assert select_pair_raters(RECORDS, "alpha", RATERS, rule="lowest", k=3, min_support=2) == ["b", "d", "e"]
    # a named rater and its partners, most shared samples first
    assert select_pair_raters(RECORDS, "alpha", RATERS, rule="rater", k=3, rater="e") == ["e", "b", "d"]
    assert select_pair_raters(RECORDS, "alpha", RATERS, rule="lowest", k=6) == RATERS  # all fit
    with pytest.raises(ValueError):
        select_pair_raters(RECORDS, "alpha", RATERS, rule="rater", k=3, rater="zz")
    with pytest.raises(ValueError):
        select_pair_raters(RECORDS, "alpha", RATERS, rule="shared", k=30)


def test_heatmap_cells_carry_their_support_and_the_minimum_hides_thin_pairs():
    detail = {"raters": RATERS, "rater_pairs": RECORDS}
    counts = {"a|b": {"n_units": 10, "n_agree": 9}, "c|d": {"n_units": 3, "n_agree": 1}}
    pm = pair_matrix(detail, "alpha", "α per rater pair", raters=["a", "b", "c", "d"], counts=counts, min_support=2)
    i = {r: k for k, r in enumerate(pm["raters"])}
    assert pm["z"][i["a"]][i["b"]] == 0.9 and pm["shared"][i["a"]][i["b"]] == 5
    assert pm["z"][i["c"]][i["d"]] is None and pm["hidden"][i["c"]][i["d"]] and pm["n_hidden"] == 1
    fig = pair_matrix_figure(pm, "α", "whole run", clickable=True, show_support=True)
    trace = fig["traces"][0]
    hover_ab = trace["hovertext"][i["a"]][i["b"]]
    assert "α 0.900 on 5 shared samples, 10 objects either drew" in hover_ab
    assert "observed agreement 0.900, 95% [" in hover_ab and "(9 of 10 objects alike)" in hover_ab
    assert "hidden, 1 shared sample" in trace["hovertext"][i["c"]][i["d"]]
    assert trace["text"][i["a"]][i["b"]] == "0.900<br>n=5" and trace["text"][i["c"]][i["d"]] == "n=1"
    assert trace["text"][i["a"]][i["d"]] == ""  # never met: empty, unlike a pair whose value is undefined
    undefined = pair_matrix({"raters": RATERS, "rater_pairs": RECORDS + [_rec("a", "d", 2, None)]}, "alpha", "t",
                            raters=["a", "d"])
    assert pair_matrix_figure(undefined, "α", "s", False)["traces"][0]["text"][0][1] == "undef."
    assert "1 pair below 2 shared samples hidden" in fig["layout"]["title"]["text"]
    # every rater named on both axes, the height from the number of raters
    assert fig["layout"]["xaxis"]["tickvals"] == pm["raters"] == fig["layout"]["yaxis"]["ticktext"]
    assert fig["layout"]["height"] < pair_matrix_figure(pair_matrix(detail, "alpha", "t"), "α", "s", False)["layout"][
        "height"] + 200
    obs = pair_matrix_figure(pm, "α", "whole run", clickable=False, statistic="observed")
    assert obs["traces"][0]["z"][i["a"]][i["b"]] == 0.9 and obs["traces"][0]["zmax"] == 1.0
    assert obs["layout"]["title"]["text"].startswith("<b>Observed agreement per rater pair")


def test_heatmap_height_follows_the_raters_and_stays_under_twenty():
    names = [f"r{i}" for i in range(40)]
    recs = [_rec(names[i], names[j], 1 + (i + j) % 3, 0.1) for i in range(40) for j in range(i + 1, 40) if (i + j) % 5 == 0]
    pm = pair_matrix({"raters": names, "rater_pairs": recs}, "alpha", "α per rater pair")
    assert len(pm["raters"]) == 20
    heights = [pair_matrix_figure(pair_matrix({"raters": names, "rater_pairs": recs}, "alpha", "t", raters=names[:n]),
                                  "α", "s", False)["layout"]["height"] for n in (4, 10, 20)]
    assert heights[0] < heights[1] < heights[2] <= 760


# ---------------------------------------------------------------------------- the panel on a crowd
@pytest.fixture(scope="module")
def crowd(fo):
    """90 samples, 40 raters (w0 … w39), 5 per sample, attribute layout with the assignment recorded; runs
    kalos, ot and cons."""
    import dataclasses

    from agreement.fo.importers.build import samples_from_corpus
    from agreement.fo.methods.consensus import compute_consensus
    from agreement.fo.methods.kalos import compute_kalos
    from agreement.fo.methods.ot_agreement import compute_ot_agreement
    from agreement.fo.storage.assignment import declare_raters_field
    from agreement.simulate.synthetic.crowd import crowd_corpus

    corpus, _ = crowd_corpus(90, 40, raters_per_sample=5, num_classes=1, seed=8, min_objects=1, max_objects=5)
    corpus = dataclasses.replace(corpus, raters=tuple(f"w{i}" for i in range(40)))
    name = "panel-raters-crowd"
    if fo.dataset_exists(name):
        fo.delete_dataset(name)
    ds = fo.Dataset(name)
    ds.add_samples(samples_from_corpus(corpus, [f"/crowd/{i}.jpg" for i in range(90)], layout="attribute",
                                       field="gt", raters_field="raters"))
    declare_raters_field(ds, "gt", "raters")
    kw = {"field": "gt", "rater_attr": "annotator"}
    compute_consensus(ds, "cons", **kw)
    compute_ot_agreement(ds, "ot", **kw)
    compute_kalos(ds, "kalos", **kw)
    yield ds
    fo.delete_dataset(name)


def _label_counts(ds) -> dict:
    return {r: n for r, n in ds.count_values("gt.detections.annotator").items()}


@pytest.mark.fiftyone
def test_kalos_pair_counts_are_the_runs_pair_units(crowd):
    from agreement.fo.panel.rater_counts import kalos_pair_counts
    from agreement.fo.runs import get_agreement_run_info, load_agreement_results

    counts = kalos_pair_counts(crowd, get_agreement_run_info(crowd, "kalos"))
    records = load_agreement_results(crowd, "kalos")["detail"]["rater_pairs"]
    assert len(counts) == len(records) > 100
    for rec in records:
        c = counts[f"{rec['rater_a']}|{rec['rater_b']}"] if rec["rater_a"] < rec["rater_b"] else \
            counts[f"{rec['rater_b']}|{rec['rater_a']}"]
        assert c["n_units"] == rec["n_units"] and c["n_shared"] == rec["n_shared_samples"]
        assert 0 <= c["n_agree"] <= c["n_units"]


@pytest.mark.fiftyone
@pytest.mark.parametrize("key, column", [("kalos", "vitality"), ("ot", "pair_alpha"), ("cons", "f1")])
def test_rater_table_is_worst_first_with_at_least_the_minimum_labels(crowd, key, column):
    from agreement.fo.panel.data import run_panel_data

    labels = _label_counts(crowd)
    floor = sorted(labels.values())[len(labels) // 4]  # leaves out about a quarter of the raters
    table = run_panel_data(crowd, key, options={"min_labels": floor, "rows": 8})["rater_table"]
    assert table["sort"] == column
    rows = table["rows"]
    assert rows and all(labels[r["rater"]] >= floor for r in rows)
    assert {r for r, n in labels.items() if n >= floor} == {r["rater"] for r in rows}
    values = [r[column] for r in rows if r[column] is not None]
    assert values == sorted(values)  # worst (lowest) first
    body = [line for line in table["markdown"].splitlines() if re.match(r"\| w\d+ \|", line)]
    assert [line.split(" | ")[0][2:] for line in body] == [r["rater"] for r in rows[:8]]
    assert f"fewer than {floor} labels" in table["markdown"]


@pytest.mark.fiftyone
def test_kalos_panel_data_explains_the_heatmap_and_cuts_the_vitality_chart(crowd):
    from agreement.fo.panel.data import run_panel_data

    data = run_panel_data(crowd, "kalos", options={"bars_k": 5, "pair_k": 8, "min_support": 2})
    vit = next(b for b in data["bars"] if b["name"] == "vitality")
    assert len(vit["traces"][0]["x"]) == 11 and vit["traces"][0]["x"][5] == "…"
    pm = data["pair_matrix"]
    assert len(pm["raters"]) == 8
    assert all(pm["z"][i][j] is None for i in range(8) for j in range(8) if pm["shared"][i][j] < 2)
    pairs = data["pairs"]
    assert pairs["contrast"]["contradicts"]  # a one-class crowd: most pairwise α below the pooled α
    assert "Why the cells look worse than the headline" in pairs["note"] and "observed agreement" in pairs["note"]
    assert 0 < pairs["observed_median"] <= 1
    shared = run_panel_data(crowd, "kalos", options={"pair_rule": "rater", "pair_rater": "w7", "pair_k": 5})
    assert shared["pair_matrix"]["raters"][0] == "w7"


def _panel(ds, method, state=None, panel_id="raters-panel", **event):
    import fiftyone.operators as foo

    params = {"__method__": method, "panel_id": panel_id, "panel_state": dict(state or {}), **event}
    r = foo.execute_operator(PANEL, ctx={"view": ds.view(), "params": params})
    assert r.error is None, r.error
    new_state, data, output = dict(state or {}), {}, None
    for q in r.executor.to_json()["requests"]:
        if q["operator_uri"] == "patch_panel_state":
            new_state.update(q["params"]["state"])
        elif q["operator_uri"] == "patch_panel_data":
            data.update(q["params"]["data"])
        elif q["operator_uri"] == "show_panel_output":
            output = q["params"]
    return new_state, data, str(output)


@pytest.mark.fiftyone
def test_the_panel_controls_drive_the_table_and_the_heatmap(crowd):
    from agreement.fo.panel.app_state import open_run

    state, data, output = _panel(crowd, "on_load")
    assert state["run_key"] == "kalos" and open_run(crowd) == "kalos"  # the operators' forms preselect it
    for name in ("rater_sort", "rater_order", "rater_filter", "rater_min_labels", "rater_rows", "rater_bars_k",
                 "pair_rule", "pair_k", "pair_min_support", "pair_stat", "pair_cell_support"):
        assert f"'{name}'" in output, name
    assert "by *vitality*, worst first" in data["rater_table_md"]
    state, data, _ = _panel(crowd, "on_change_rater_order", state, value="best")
    assert "by *vitality*, best first" in data["rater_table_md"]
    state, data, _ = _panel(crowd, "on_change_rater_sort", state, value="partner_agreement")
    assert "by *agrees*, best first" in data["rater_table_md"]
    state, data, _ = _panel(crowd, "on_change_rater_filter", state, value="w3")
    names = re.findall(r"^\| (w\d+) \|", data["rater_table_md"], flags=re.MULTILINE)
    assert names and all("w3" in n for n in names)
    state, data, output = _panel(crowd, "on_change_pair_rule", state, value="rater")
    assert "'pair_rater'" in output
    state, data, output = _panel(crowd, "on_change_pair_rater", state, value="w12")
    heat = data["pair_matrix"][0]
    assert heat["y"][0] == "w12"
    state, data, _ = _panel(crowd, "on_change_pair_stat", state, value="observed")
    assert data["pair_matrix"][0]["zmax"] == 1.0 and data["pair_matrix"][0]["zmin"] == 0.0
    state, data, _ = _panel(crowd, "on_change_min_support", state, value=2)
    heat = data["pair_matrix"][0]
    assert all("hidden" in h or "never" in h or "diagonal" in h or " 1 shared sample" not in h
               for row in heat["hovertext"] for h in row)
    state, _, _ = _panel(crowd, "on_change_run", state, value="cons")
    assert open_run(crowd) == "cons"


@pytest.mark.fiftyone
def test_the_consensus_rater_report_is_sortable(crowd):
    state, data, _ = _panel(crowd, "on_load", panel_id="cons-panel")
    state, data, _ = _panel(crowd, "on_change_run", state, value="cons", panel_id="cons-panel")
    assert data["rater_table_md"].startswith("**Rater report** (whole run, against the consensus)")
    assert "by *F1*, worst first" in data["rater_table_md"] and "false positives per assigned sample" in data[
        "rater_table_md"]
    state, data, _ = _panel(crowd, "on_change_rater_sort", state, value="false_positive_rate", panel_id="cons-panel")
    fp = [float(x) for x in re.findall(r"^\| w\d+ \| \*\*([\d.]+|0)\*\*", data["rater_table_md"], flags=re.MULTILINE)]
    assert fp and fp == sorted(fp, reverse=True)  # worst (most false positives) first
    np.testing.assert_array_less(-1, fp)


@pytest.mark.fiftyone
def test_clicking_an_empty_cell_loads_nothing(crowd):
    import fiftyone.operators as foo

    from agreement.fo.runs import load_agreement_results

    met = {(r["rater_a"], r["rater_b"]) for r in load_agreement_results(crowd, "kalos")["detail"]["rater_pairs"]}
    a, b = next((f"w{i}", f"w{j}") for i in range(40) for j in range(i + 1, 40)
                if (f"w{i}", f"w{j}") not in met and (f"w{j}", f"w{i}") not in met)
    state, _, _ = _panel(crowd, "on_load", panel_id="empty-cell")
    params = {"__method__": "on_pair_click", "panel_id": "empty-cell", "panel_state": state, "x": a, "y": b}
    r = foo.execute_operator(PANEL, ctx={"view": crowd.view(), "params": params})
    uris = [q["operator_uri"] for q in r.executor.to_json()["requests"]]
    assert "set_view" not in uris and "notify" in uris  # the grid is not emptied


def test_a_drill_down_stage_sent_back_with_whole_numbers_is_still_the_panels():
    """The App sends a stage's 0.0 back as 0 (one number type in JavaScript): the panel must still see its
    own histogram drill-down, or the next bar narrows it instead of replacing it."""
    from panels.panel_filters import _same

    mine = [{"_cls": "fiftyone.core.stages.Match", "kwargs": [["filter", {"$and": [
        {"$gte": ["$kalos_alpha", -0.1]}, {"$lt": ["$kalos_alpha", 0.0]}]}]], "_uuid": "x"}]
    echoed = [{"_cls": "fiftyone.core.stages.Match", "kwargs": [["filter", {"$and": [
        {"$gte": ["$kalos_alpha", -0.1]}, {"$lt": ["$kalos_alpha", 0]}]}]], "_uuid": "y"}]
    assert _same(mine, echoed)
    assert not _same(mine, [{**echoed[0], "kwargs": [["filter", {"$lt": ["$kalos_alpha", 1]}]]}])
    assert not _same([{"a": True}], [{"a": 1}])  # a flag is not a number


def test_numbers_have_three_significant_figures_with_their_trailing_zeros():
    from agreement.reporting.figures.base import count_text, sig3

    cases = {0.56: "0.560", 1.0: "1.00", -0.0714: "-0.0714", 0.000321: "0.000321", 5e-5: "5.00e-05", 12.0: "12.0",
             999.5: "1,000", 1234.5: "1,234", 0: "0", None: "undefined", float("nan"): "undefined"}
    for x, text in cases.items():
        assert sig3(x) == text, x
    assert sig3(0.5, signed=True) == "+0.500"
    assert count_text(1, what="class") == "1 class" and count_text(3, what="class") == "3 classes"
