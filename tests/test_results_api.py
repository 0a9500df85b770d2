"""Run results as Python users expect them (``dataset.load_run_results(key)``): a report whose counts are
integers, that says "exact chance baseline" where the baseline is exact and gives each undefined count its
reason; ``figures()`` naming what ``plot()`` draws; the headline numbers as attributes listed by ``dir()``;
the rater, pair and sample tables as DataFrames."""

from __future__ import annotations

import math
import re

import pytest

from test_panel_classes import RATERS as CLASS_RATERS, _class_samples
from test_panel_masks import RATERS as MASK_RATERS, TARGETS, _rater_masks

pytestmark = pytest.mark.fiftyone

OP = "@iaa/agreement/{}"
#: run key -> dataset name of the module's runs
BOX_RUNS = ("ot", "kal", "geo", "cal", "cons", "sim", "ot_u", "kal_u")
CLASS_RUNS = ("cls", "vote", "em")
MASK_RUNS = ("seg", "staple")
ONE_RATER = "only one rater is assigned to this sample: agreement needs at least two"  # KαLOS's reason


def _op(ds, op: str, **params) -> dict:
    import fiftyone.operators as foo

    r = foo.execute_operator(OP.format(op), ctx=dict(view=ds.view(), params=params))
    assert r.error is None, r.error
    return r.result


def _box_dataset(fo):
    """12 samples of a simulated crowd of 3 raters; a copy where raters w001 and w002 skip samples 0-3
    (KαLOS and OT leave those undefined: one rater)."""
    from agreement.fo.importers.build import samples_from_corpus
    from agreement.simulate.synthetic.crowd import crowd_corpus

    corpus, _ = crowd_corpus(12, 3, raters_per_sample=3, seed=2)
    ds = fo.Dataset()
    ds.add_samples(samples_from_corpus(corpus, [f"/data/{i:03d}.jpg" for i in range(12)]), progress=False)
    fields = list(corpus.raters)
    for op, key, extra in (("compute_ot_agreement", "ot", {}), ("compute_kalos", "kal", {}),
                           ("compute_geometry_agreement", "geo", {}), ("calibrate_agreement", "cal", {}),
                           ("compute_consensus", "cons", {"method": "majority"})):
        _op(ds, op, fields=fields, key=key, **extra)
    _op(ds, "simulate_raters", key="sim", field=fields[0], num_raters=2, magnitude=0.5)
    for s in ds.select(ds.values("id")[:4]).iter_samples(autosave=True):
        s[fields[1]] = None
        s[fields[2]] = None
    _op(ds, "compute_ot_agreement", fields=fields, key="ot_u")
    _op(ds, "compute_kalos", fields=fields, key="kal_u")
    return ds


@pytest.fixture(scope="module")
def runs(fo):
    """``{key: (dataset, results)}`` of a run of every image method, on three small datasets."""
    boxes = _box_dataset(fo)
    classes = fo.Dataset()
    classes.add_samples(_class_samples(fo), progress=False)
    _op(classes, "compute_class_agreement", fields=CLASS_RATERS, key="cls", bootstrap=50)
    _op(classes, "compute_consensus", fields=CLASS_RATERS, key="vote", method="majority")
    _op(classes, "compute_consensus", fields=CLASS_RATERS, key="em", method="em")
    masks = fo.Dataset()
    for i, per in enumerate(_rater_masks()):
        s = fo.Sample(filepath=f"/masks/{i:02d}.png")
        for r, m in per.items():
            s[r] = fo.Segmentation(mask=m) if m is not None else None
        masks.add_sample(s)
    masks.default_mask_targets = TARGETS
    masks.save()
    _op(masks, "compute_mask_agreement", fields=MASK_RATERS, key="seg", n_pixels=0)
    _op(masks, "compute_mask_consensus", fields=MASK_RATERS, key="staple")
    out = {k: (ds, ds.load_run_results(k, cache=False))
           for ds, keys in ((boxes, BOX_RUNS), (classes, CLASS_RUNS), (masks, MASK_RUNS)) for k in keys}
    yield out
    for ds in (boxes, classes, masks):
        ds.delete()


# ---------------------------------------------------------------------------- print_report
def test_report_counts_are_integers_and_flags_yes_or_no(runs):
    counts = 0
    for key, (_, res) in runs.items():
        text = res.report()
        assert not re.search(r"\s\d\d+\.0(\s|$)", text), (key, text)  # no "n_samples 20.0"
        if "converged" in res.summary:
            assert re.search(r"converged\s+(yes|no)$", text, re.M), text
        view = res._view()
        for card in (view.get("cards") or []) + (view.get("report_cards") or []):
            value = res.summary.get(card["key"])
            if (card.get("integer") or type(value) is int) and value is not None:
                assert re.search(rf"^  {re.escape(card['label'])}\s+{int(value):,}( \(.*\))?$", text, re.M), \
                    (key, card, text)
                counts += 1
    assert counts > 20
    cons = runs["cons"][1]
    text = cons.report()
    assert re.search(rf"consensus labels\s+{cons.summary['n_consensus']:,}$", text, re.M), text
    assert re.search(r"^  samples\s+12$", text, re.M) and re.search(r"^  raters\s+3$", text, re.M), text
    assert re.search(r"iterations\s+88$", runs["em"][1].report(), re.M), runs["em"][1].report()


def test_counts_get_thousands_separators_and_undefined_numbers_their_reason():
    from agreement.reporting.run_text import card_text

    count = {"key": "n", "label": "n", "integer": True}
    assert card_text({"n": 12345.0}, {}, count) == "12,345"
    assert card_text({"n_units": 2000}, {}, {"key": "n_units", "label": "units"}) == "2,000"
    assert card_text({"a": None, "why": "no pairs"}, {}, {"key": "a", "label": "a", "reason": "why"}) \
        == "undefined (no pairs)"
    listed = {"key": "n", "label": "n", "integer": True, "reasons": "undefined_samples"}
    detail = {"undefined_samples": {"s1": "one rater", "s2": "one rater", "s3": "no labels"}}
    assert card_text({"n": 3}, detail, listed) == "3 (2: one rater; 1: no labels)"
    assert card_text({"n": 5}, detail, listed) == "5 (2: one rater; 1: no labels; 2 more not listed)"
    se = {"key": "a", "label": "a", "se": "a_se", "exact": "a_exact"}
    assert card_text({"a": 0.5, "a_se": 0.01, "a_exact": False}, {}, se) == "0.500 ± 0.0100 (s.e.)"
    assert card_text({"a": 0.5, "a_se": 0.0, "a_exact": True}, {}, se) == "0.500 (exact chance baseline)"


def test_ot_report_says_exact_chance_baseline_not_plus_minus_zero(runs):
    res = runs["ot"][1]
    assert res.summary["alpha_ot_exact"] and res.summary["alpha_ot_se"] == 0
    text = res.report()
    assert re.search(r"αOT\s+\S+ \(exact chance baseline\)$", text, re.M), text
    assert "± 0" not in text and "(s.e.)" not in text


def test_every_undefined_count_says_its_reason(runs):
    for key in ("kal_u", "ot_u"):
        res = runs[key][1]
        n = res.summary["n_undefined"]
        listed = list(res.detail["undefined_samples"].values())
        assert n >= 4 and sum(r.startswith("only one rater") for r in listed) == 4, (n, listed)
        line = next(x for x in res.report().splitlines() if re.search(r"undefined|without a score", x))
        assert re.search(rf"\s{n} \(.+\)$", line), line
        assert all(reason in line for reason in set(listed)), line  # each reason, with its count when several
        assert len(set(listed)) == 1 or all(f"{listed.count(r)}: {r}" in line for r in set(listed)), line
    for key, (_, res) in runs.items():
        for line in res.report().split("Warnings:")[0].splitlines():
            if re.search(r"undefined|skipped|without a score", line) and not re.search(r"\s0$", line):
                assert re.search(r"\(.+\)$", line), (key, line)


# ---------------------------------------------------------------------------- figures and plot
def test_figures_are_the_names_plot_draws(runs):
    import plotly.graph_objects as go

    for key, (_, res) in runs.items():
        names = res.figures()
        assert all(isinstance(n, str) for n in names) and len(set(names)) == len(names), (key, names)
        for name in names:
            assert isinstance(res.plot(name), go.Figure) and res.figure(name)["name"] == name
        assert [f["name"] for f in res.figure_dicts()] == names
        with pytest.raises(ValueError) as err:
            res.plot("nope")
        message = str(err.value)
        assert "\n" not in message and len(message) < 200 and "no figure 'nope'" in message, message
        assert all(n in message for n in names), message
    assert {"pair_matrix", "vitality", "alpha_tau"} <= set(runs["kal"][1].figures())


# ---------------------------------------------------------------------------- headline numbers
def test_headline_numbers_are_attributes_listed_by_dir(runs):
    from agreement.fo.runs.results import AgreementResults

    expected = {"ot": {"alpha_ot", "mean_ot", "f1", "n_undefined"}, "kal": {"global_alpha", "mean_alpha", "tau"},
                "geo": {"sigma", "distance_alpha", "ks"}, "cls": {"alpha", "alpha_low", "mean_agreement"},
                "cons": {"n_consensus", "n_review", "mean_confidence"}, "seg": {"alpha", "dice", "iou"},
                "staple": {"mean_sensitivity", "n_skipped"}, "cal": {"ks", "tau_star", "beta_star"}}
    for key, names in expected.items():
        res = runs[key][1]
        listed = dir(res)
        assert names <= set(res.headline_names()) <= set(listed), (key, res.headline_names())
        for name in res.headline_names():
            assert not hasattr(AgreementResults, name) and name not in vars(res), name  # shadows nothing
            assert getattr(res, name) == res.summary[name]
            with pytest.raises(AttributeError, match="read-only"):
                setattr(res, name, 0.5)
    assert "method" not in runs["cons"][1].headline_names()  # the run's marker stays the attribute
    assert runs["cons"][1].method.startswith("iaa.")


# ---------------------------------------------------------------------------- to_pandas
def _same(a, b) -> bool:
    if a is None or (isinstance(a, float) and math.isnan(a)):
        return b is None or (isinstance(b, float) and math.isnan(b))
    return a == b


def test_to_pandas_gives_the_rater_pair_and_sample_tables(runs):
    raters = {"ot": (3, "pair_alpha_ot"), "kal": (3, "vitality"), "geo": (3, None), "cls": (4, "pair_kappa")}
    pairs = {"ot": (3, "alpha_ot"), "kal": (3, "alpha"), "geo": (0, None), "cls": (6, "kappa")}
    fields = {"ot": "ot_ot", "kal": "kal_alpha", "geo": "geo_distance", "cls": "cls_agreement"}
    for key, (ds, res) in ((k, runs[k]) for k in fields):
        df = res.to_pandas("raters")
        n, column = raters[key]
        assert len(df) == n and df.columns[0] == "rater" and set(df["rater"]) == set(res.detail["raters"]), key
        assert column is None or column in df.columns, (key, list(df.columns))
        assert {"labels", "samples"} <= set(df.columns) or key in ("geo",), (key, list(df.columns))
        df = res.to_pandas("pairs")
        n, column = pairs[key]
        assert len(df) == n and (n == 0 or {"rater_a", "rater_b", column} <= set(df.columns)), (key, df.columns)
        df = res.to_pandas("samples")
        assert list(df.columns[:2]) == ["sample_id", "filepath"] and df.columns[-1] == "reason", key
        assert list(df["sample_id"]) == ds.values("id"), key
        assert all(_same(a, b) for a, b in zip(df[fields[key]].tolist(), ds.values(fields[key]), strict=True)), key
    df = runs["kal_u"][1].to_pandas("samples")
    assert (df["reason"] == ONE_RATER).sum() == 4 and df["kal_u_alpha"].isna().sum() >= 4
    with pytest.raises(ValueError, match="'raters', 'pairs', 'samples'"):
        runs["ot"][1].to_pandas("rater")


def test_to_pandas_reads_each_sample_field_with_one_values_call(runs, monkeypatch):
    ds, res = runs["ot"]
    calls = []
    original = type(ds).values

    def counting(self, *args, **kwargs):
        calls.append(args[0])
        return original(self, *args, **kwargs)

    monkeypatch.setattr(type(ds), "values", counting)
    res.to_pandas("samples")
    fields = [f for f in res.config.sample_fields if f in ds.get_field_schema()]
    assert sorted(map(str, calls)) == sorted(map(str, [["id", "filepath"], *fields])), calls
