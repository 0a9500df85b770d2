"""The Annotator Agreement panel on image-level classes, driven through execute_operator as the App drives it.

A class agreement run (``compute_class_agreement``): α with its bootstrap interval (or why it is undefined),
the per-sample histogram of ``{key}_agreement``, the rater κ heatmap ("no data" where two raters never met),
rater vitality, class difficulty (hardest first), the confusion between raters; the sidebar filters and the
drill-downs. A class consensus run (``compute_consensus`` on Classification fields): each rater's confusion
matrix (the least competent rater first), the review queue as the flagged samples, and the review decisions
from the panel and from the operator ``review_consensus_labels``.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from test_panel import _built, _clear_memory, _g3, _output, _panel, _plots, _set_views  # noqa: F401

pytestmark = pytest.mark.fiftyone

RATERS = ["r1", "r2", "r3", "r4"]
CLASSES = ["bird", "cat", "dog"]


def _class_samples(fo, n: int = 30) -> list:
    """``n`` samples, true class cycling over CLASSES; r1 always right, r2 wrong on 1 in 10, r3 on 3 in 10
    (samples 0-19 only), r4 on 6 in 10 (samples 10-29 only): r3 and r4 meet on samples 10-19 only."""
    rng = np.random.default_rng(3)
    samples = []
    for i in range(n):
        truth = CLASSES[i % 3]
        kw = {}
        for r, err, rated in (("r1", 0.0, True), ("r2", 0.1, True), ("r3", 0.3, i < 20), ("r4", 0.6, i >= 10)):
            wrong = rng.random() < err
            if rated:
                kw[r] = fo.Classification(label=CLASSES[(CLASSES.index(truth) + 1) % 3] if wrong else truth)
        samples.append(fo.Sample(filepath=f"/cls/{i}.jpg", **kw))
    return samples


@pytest.fixture
def class_ds(fo, make_dataset):
    import fiftyone.operators as foo

    ds = make_dataset(_class_samples(fo))
    r = foo.execute_operator("@iaa/agreement/compute_class_agreement",
                             ctx={"view": ds.view(), "params": {"fields": RATERS, "key": "cls", "bootstrap": 200}})
    assert r.error is None, r.error
    return ds


def _results(ds, key: str) -> dict:
    from agreement.fo.runs import load_agreement_results

    return load_agreement_results(ds, key)


def test_class_run_shows_alpha_interval_histogram_kappa_vitality_difficulty_and_confusion(class_ds):
    ds = class_ds
    res = _results(ds, "cls")
    summary, detail = res["summary"], res["detail"]
    state, data, requests = _panel(ds, "on_load")
    assert state["run_key"] == "cls" and state["method"] == "iaa.class_agreement"
    alpha = state["cards"][0]
    assert alpha["label"] == "Krippendorff's α" and alpha["value"] == summary["alpha"]
    assert alpha["text"] == (f"{_g3(summary['alpha'])} (95% bootstrap interval [{_g3(summary['alpha_low'])}, "
                             f"{_g3(summary['alpha_high'])}])")
    assert "| Krippendorff's α | " in data["summary_md"] and "| level of measurement | nominal |" in data["summary_md"]
    # the per-sample histogram of cls_agreement: every scored sample in one of its bars
    assert state["score_field"] == "cls_agreement"
    assert sum(data["histogram"][0]["y"]) == ds.count("cls_agreement") == len(ds)
    plots = _plots(_output(requests))
    assert {"histogram", "pair_matrix", "bars_0", "bars_1", "curve_0"} <= set(plots)
    # the κ heatmap: the run's pairwise κ, nothing where two raters never met
    heat = plots["pair_matrix"]["data"][0]
    assert heat["x"] == RATERS and "κ" in plots["pair_matrix"]["layout"]["title"]["text"]
    kappa = {(p["rater_a"], p["rater_b"]): p["kappa"] for p in detail["rater_pairs"]}
    assert ("r3", "r4") in kappa  # they met on samples 10-19
    for (a, b), k in kappa.items():
        i, j = RATERS.index(a), RATERS.index(b)
        assert heat["z"][i][j] == pytest.approx(k) and heat["z"][j][i] == pytest.approx(k)
    assert "Cohen's κ" in data["pair_note_md"] and "Lowest pair" in data["pair_note_md"]
    # vitality (per rater), class difficulty (hardest first), the confusion between raters (rows sum to 1)
    titles = {name: p["layout"]["title"]["text"] for name, p in plots.items()}
    vit = next(p for n, p in plots.items() if "Rater vitality" in titles[n])["data"][0]
    assert dict(zip(vit["x"], vit["y"])) == pytest.approx(
        dict(zip(detail["rater_vitality"]["raters"], detail["rater_vitality"]["vitality"])))
    hard = next(p for n, p in plots.items() if "Class difficulty" in titles[n])["data"][0]
    rates = dict(zip(detail["class_match"]["classes"], detail["class_match"]["match_rate"]))
    assert hard["y"] == sorted(hard["y"]) and dict(zip(hard["x"], hard["y"])) == pytest.approx(rates)
    conf = next(p for n, p in plots.items() if "Confusion between raters" in titles[n])["data"][0]
    assert conf["type"] == "heatmap" and conf["x"] == conf["y"] == detail["confusion"]["classes"]
    assert np.allclose(conf["z"], detail["confusion"]["matrix"])
    assert np.allclose([sum(row) for row in conf["z"]], 1.0)
    # the rater table: worst vitality first
    assert data["rater_table_md"].startswith("**Raters** (whole run)")
    worst = min(zip(detail["rater_vitality"]["vitality"], detail["rater_vitality"]["raters"]))[1]
    assert data["rater_table_md"].split("\n")[4].startswith(f"| {worst} |")
    assert "with majority" in data["rater_table_md"].split("\n")[2]  # agreement with the others' majority


def _short_numbers(text: str) -> list[str]:
    """The decimal numbers of ``text`` written with fewer than three significant figures (``0.31``, ``1.0``)."""
    return [m for m in re.findall(r"(?<![\w.])-?\d+\.\d+(?![\w.])", text)
            if len(m.lstrip("-").replace(".", "").lstrip("0")) < 3]


@pytest.mark.parametrize("key", ["cls", "vote"])
def test_class_rater_tables_legend_is_its_columns_and_numbers_keep_three_figures(class_consensus_ds, key):
    """Issue 48: the class rater table's legend described columns it did not show, and a number read "0.31"
    where three significant figures give 0.310. The legend describes the shown columns, in order, and no
    other; the cards, the summary and the table write every number with three significant figures."""
    ds = class_consensus_ds
    state, data, _ = _panel(ds, "on_load")
    if state["run_key"] != key:
        state, data, _ = _panel(ds, "on_change_run", state, value=key)
    assert state["run_key"] == key
    md = data["rater_table_md"]
    header = next(line for line in md.splitlines() if line.startswith("| rater |"))
    shown = [h.strip() for h in header.strip("| ").split(" | ")][1:]
    legend = md.split(header, 1)[1].split("\n\n")[1]
    descriptions, _, hidden = legend.partition(" Not shown: ")
    assert re.findall(r"\*([^*]+)\*: ", descriptions) == shown, md
    if key == "cls":  # eight columns, five shown: the others only named
        assert shown == ["vitality", "α without", "mean κ", "agrees", "with majority"]
        assert hidden == "partners, labels, samples (sort by one to show it)."
        assert "*partners*" not in md and "*samples*" not in md
    texts = [c["text"] for c in state["cards"]] + [data["summary_md"], md]
    assert not [t for t in texts if _short_numbers(t)], [(t, _short_numbers(t)) for t in texts if _short_numbers(t)]


def test_pairs_that_never_met_are_no_data(fo, make_dataset):
    import fiftyone.operators as foo

    samples = _class_samples(fo)
    for i, s in enumerate(samples):  # r3 rates 0-14 and r4 15-29: they never meet
        if i < 15:
            s.clear_field("r4") if "r4" in s.field_names else None
        elif "r3" in s.field_names:
            s.clear_field("r3")
    ds = make_dataset(samples)
    r = foo.execute_operator("@iaa/agreement/compute_class_agreement",
                             ctx={"view": ds.view(), "params": {"fields": RATERS, "key": "cls", "bootstrap": 0}})
    assert r.error is None, r.error
    _, _data, requests = _panel(ds, "on_load")
    heat = _plots(_output(requests))["pair_matrix"]["data"][0]
    i, j = RATERS.index("r3"), RATERS.index("r4")
    assert heat["z"][i][j] is None and heat["text"][i][j] == ""
    assert "never given the same sample (no data)" in heat["hovertext"][i][j]
    assert heat["z"][0][1] is not None


def test_undefined_alpha_shows_its_reason(fo, make_dataset):
    import fiftyone.operators as foo

    ds = make_dataset([fo.Sample(filepath=f"/same/{i}.jpg", **{r: fo.Classification(label="cat") for r in RATERS})
                       for i in range(6)])
    r = foo.execute_operator("@iaa/agreement/compute_class_agreement",
                             ctx={"view": ds.view(), "params": {"fields": RATERS, "key": "same", "bootstrap": 50}})
    assert r.error is None, r.error
    reason = _results(ds, "same")["summary"]["reason"]
    assert reason
    state, data, _ = _panel(ds, "on_load")
    assert state["cards"][0]["text"] == f"undefined: {reason}"
    assert f"| Krippendorff's α | undefined: {reason} |" in data["summary_md"]


def test_class_run_follows_the_sidebar_filter_and_drills_down(fo, class_ds):
    from fiftyone import ViewField as F

    ds = class_ds
    filters = {"cls_agreement": {"isMatching": True, "exclude": False, "range": [0.0, 0.6], "none": False,
                                 "nan": False, "inf": False, "ninf": False}}
    low = ds.match(F("cls_agreement") <= 0.6)
    assert 0 < len(low) < len(ds)
    state, data, _ = _panel(ds, "on_load", filters=filters)
    assert sum(data["histogram"][0]["y"]) == len(low)
    assert f"this view ({len(low)} samples)" in data["summary_md"]
    assert f"| mean observed agreement | {_g3(low.mean('cls_agreement'))} |" in data["summary_md"]
    # a histogram bar: its samples, on top of the filter
    state, data, requests = _panel(ds, "on_histogram_click", state, filters=filters, idx=10)
    view, _ = _built(ds, requests)
    assert len(view) == len(ds.match((F("cls_agreement") >= 0.5) & (F("cls_agreement") < 0.55)))
    # a vitality bar: the samples where that rater differs from another
    state, data, requests = _panel(ds, "on_vitality_click", state, x="r4")
    view, _ = _built(ds, requests)
    rows = zip(*ds.values(["id"] + [f"{r}.label" for r in RATERS]))
    expected = {sid for sid, *labels in rows
                if labels[3] is not None and any(c is not None and c != labels[3] for c in labels[:3])}
    assert set(view.values("id")) == expected and expected
    assert "r4's class differs from another rater's" in data["drill_md"]
    # a class bar: the samples where that class is disputed
    state, data, requests = _panel(ds, "on_class_click", state, x="dog")
    view, _ = _built(ds, requests)
    rows = zip(*ds.values(["id"] + [f"{r}.label" for r in RATERS]))
    expected = {sid for sid, *labels in rows if "dog" in labels and len({c for c in labels if c}) > 1}
    assert set(view.values("id")) == expected and expected
    # a heatmap cell: the samples both raters rated (in the filtered view), lowest agreement first
    state, data, requests = _panel(ds, "on_pair_click", state, filters=filters, x="r3", y="r4")
    view, _ = _built(ds, requests)
    assert set(view.values("id")) == set(low.exists("r3").exists("r4").values("id")) != set()
    scores = view.values("cls_agreement")
    assert scores == sorted(scores)


def test_open_sample_lists_each_raters_class(class_ds):
    ds = class_ds
    sample = ds.skip(12).first()
    _, data, _ = _panel(ds, "on_load", current_sample=sample.id)
    md = data["labels_md"]
    labels = {r: sample[r].label for r in RATERS if sample[r] is not None}
    for r, c in labels.items():
        others = [c2 for r2, c2 in labels.items() if r2 != r]
        status = (f"differs from {sum(o != c for o in others)} of {len(others)} other raters"
                  if any(o != c for o in others) else "all raters agree")
        assert f"| {r} | {c} | {status} |" in md


def test_tag_runs_show_alpha_per_tag(fo, make_dataset):
    import fiftyone.operators as foo

    rng = np.random.default_rng(0)
    tags = ["indoor", "people", "night"]
    samples = [fo.Sample(filepath=f"/t/{i}.jpg", **{
        r: fo.Classifications(classifications=[fo.Classification(label=t) for t in tags if rng.random() < 0.5])
        for r in RATERS[:3]}) for i in range(20)]
    ds = make_dataset(samples)
    r = foo.execute_operator("@iaa/agreement/compute_class_agreement",
                             ctx={"view": ds.view(), "params": {"fields": RATERS[:3], "key": "tags"}})
    assert r.error is None, r.error
    _state, data, requests = _panel(ds, "on_load")
    plots = _plots(_output(requests))
    per_tag = [p for p in plots.values() if "α per tag" in p["layout"]["title"]["text"]]
    assert per_tag and set(per_tag[0]["data"][0]["x"]) <= set(tags)
    assert sum(data["histogram"][0]["y"]) == ds.count("tags_agreement")


# ---------------------------------------------------------------------------- class consensus
@pytest.fixture
def class_consensus_ds(class_ds):
    pytest.importorskip("agreement.methods.consensus.class_labels",
                        reason="the class consensus kernel (agreement/methods/consensus/class_labels.py) is absent")
    import fiftyone.operators as foo

    r = foo.execute_operator("@iaa/agreement/compute_consensus",
                             ctx={"view": class_ds.view(), "params": {"fields": RATERS, "key": "vote", "method": "majority",
                                                                         "review_band": [0.2, 0.95]}})
    assert r.error is None, r.error
    return class_ds


def _queue(ds):
    from agreement.fo.methods.consensus import review_view

    return review_view(ds, "vote")


@pytest.mark.parametrize("method", ["em", "majority"])
def test_class_consensus_shows_the_least_competent_raters_confusion(class_consensus_ds, method):
    import fiftyone.operators as foo

    ds = class_consensus_ds
    if method == "em":  # Dawid-Skene: its own competences (the newest run: the panel opens on it)
        r = foo.execute_operator("@iaa/agreement/compute_consensus",
                                 ctx={"view": ds.view(), "params": {"fields": RATERS, "key": "vote", "overwrite": True,
                                                                      "review_band": [0.2, 0.9999]}})
        assert r.error is None, r.error
    report = _results(ds, "vote")["detail"]["rater_report"]
    least = min(report, key=lambda r: (report[r]["competence"], r))
    assert least != RATERS[0]
    state, data, requests = _panel(ds, "on_load")
    assert state["run_key"] == "vote"
    output = _output(requests)
    plots = _plots(output)
    assert f"Class confusion of rater {least}" in plots["confusion"]["layout"]["title"]["text"]
    heat = plots["confusion"]["data"][0]
    conf = report[least]["confusion"]
    for i, y in enumerate(heat["y"]):
        for j, c in enumerate(heat["x"]):
            assert heat["z"][i][j] == pytest.approx(conf[y].get(c, 0.0))
    assert "| rater | competence |" in data["rater_table_md"].replace("**competence**", "competence")
    assert "same-object threshold" not in data["summary_md"]
    n_flagged = len(_queue(ds))
    assert (f"Review queue: the {n_flagged} flagged samples" if n_flagged
            else "Review queue (no sample in view is flagged)") in str(output)
    assert n_flagged or method == "em"  # Dawid-Skene is sure of every class here (r1 is never wrong)
    state, data, requests = _panel(ds, "on_change_consensus_rater", state, value="r2")
    assert "Class confusion of rater r2" in _plots(_output(requests))["confusion"]["layout"]["title"]["text"]


def test_class_review_queue_is_the_flagged_samples_and_the_panel_reviews_them(class_consensus_ds):
    ds = class_consensus_ds
    state, data, requests = _panel(ds, "on_load")
    state, data, requests = _panel(ds, "on_review_queue", state)
    view, _ = _built(ds, requests)
    expected = _queue(ds)
    assert not view._is_patches and view.values("id") == expected.values("id")
    flagged = {sid for sid, flag in zip(*ds.values(["id", "vote_consensus.vote_review"])) if flag}
    assert set(view.values("id")) == flagged
    conf = view.values("vote_consensus.confidence")
    assert conf == sorted(conf)
    assert f"{len(flagged)} flagged samples" in data["drill_md"]
    # a sample of the queue opened: Accept tags its consensus label and nothing else, then opens the next
    first = view.first()
    state, data, requests = _panel(ds, "on_change_current_sample", state, view=view, current_sample=first.id)
    md = data["review_state_md"]
    assert "review_accept" in str(_output(requests)) and f"| **{first.vote_consensus.label}** |" in md
    whole = ds[first.id]
    assert "**Item 1 of" in md and all(f"| {r} | {whole[r].label} |" in md for r in RATERS if whole[r])
    state, data, requests = _panel(ds, "on_review_accept", state, view=view, current_sample=first.id)
    tagged = {sid: lab.tags for sid, lab in zip(*ds.values(["id", "vote_consensus"])) if lab and lab.tags}
    assert tagged == {first.id: ["accepted"]}
    assert not any(lab.tags for r in RATERS for lab in ds.values(r) if lab)
    opened = [p for uri, p in requests if uri == "open_sample"]
    assert opened and opened[-1]["id"] == view.values("id")[1]


def test_review_operator_on_selected_samples_of_the_class_queue(class_consensus_ds):
    import fiftyone.operators as foo

    ds = class_consensus_ds
    queue = _queue(ds)
    sid = queue.values("id")[2]
    r = foo.execute_operator("@iaa/agreement/review_consensus_labels",
                             ctx={"view": queue, "selected": [sid], "params": {"key": "vote", "decision": "reject"}})
    assert r.error is None, r.error
    assert r.result["tagged"] == 1 and r.result["rejected"] == 1
    tagged = {s: lab.tags for s, lab in zip(*ds.values(["id", "vote_consensus"])) if lab and lab.tags}
    assert tagged == {sid: ["rejected"]}


def test_confusion_of_a_rater_without_usable_labels_is_empty_not_a_crash():
    """A worker whose every judgement was dropped keeps a rater report row of None: the panel shows an
    empty matrix (every row 'no object'), where it raised float(None) before."""
    from agreement.reporting.figures.method_figures import confusion_figure, confusion_matrix

    none_rows = {y: dict.fromkeys("GPRX") for y in "GPRX"}
    results = {"detail": {"classes": list("GPRX"), "rater_report": {
        "w1": {"labels": 0, "confusion": none_rows},
        "w2": {"labels": 3, "confusion": {"G": {"G": 0.5, "P": 0.5}, "P": None, "X": {"X": 1.0}}}}}}
    cm = confusion_matrix(results, "w1")
    assert cm["z"] == [[None] * 4] * 4
    assert confusion_figure(cm)["traces"][0]["text"] == [[""] * 4] * 4
    cm = confusion_matrix(results, "w2")
    assert cm["classes"] == ["G", "P", "X"]
    assert cm["z"] == [[0.5, 0.5, 0.0], [None] * 3, [0.0, 0.0, 1.0]]
