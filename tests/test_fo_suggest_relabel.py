"""``suggest_relabel`` through its operator on real datasets: the ranking is the pure rule's on the run's data, the
priority field belongs to the run (filterable, deleted and renamed with it, overwritten by a rerun), every bad
request is refused with nothing written, and the App is shown the ranked suggestions."""

from __future__ import annotations

import numpy as np
import pytest

from label_kinds import class_crowd_samples

pytestmark = pytest.mark.fiftyone

RATERS = ("r1", "r2", "r3", "r4")
CLASSES = ("1", "2", "3", "4")
OP = "@iaa/agreement/suggest_relabel"


def _codes(S: int = 48, seed: int = 5) -> np.ndarray:
    """A noisy crowd: a true class per sample, raters right with probability .7, some not assigned; three samples
    nobody rated and three rated once (coverage)."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 4, S)
    codes = np.where(rng.random((S, 4)) < 0.7, truth[:, None], rng.integers(0, 4, (S, 4)))
    codes[rng.random((S, 4)) < 0.2] = -1
    codes[:3] = -1
    codes[3:6, 1:] = -1
    codes[3:6, 0] = 0
    return codes


@pytest.fixture
def class_ds(fo, make_dataset):
    codes = _codes()
    ds = make_dataset(class_crowd_samples(fo, codes, RATERS, CLASSES, "/nonexistent/relabel{:03d}.jpg"))
    for r in RATERS:  # every rater field declared, also where a rater labelled nothing
        if r not in ds.get_field_schema():
            ds.add_sample_field(r, fo.EmbeddedDocumentField, embedded_doc_type=fo.Classification)
    return ds, codes


def _suggest(samples, **params):
    import fiftyone.operators as foo

    return foo.get_operator(OP)(samples, **params)


def _reference(ds, codes: np.ndarray, method: str, rule: str, agreement=None, seed: int = 0):
    """The pure rule on the fixture's own codes (rows in dataset order), items in sample-id order; the consensus
    fitted with seed 0 (the run's, and the call's default), ``seed`` the rule's."""
    from agreement.methods.classes.diagnostics import sample_observed_agreement
    from agreement.methods.consensus.class_labels import class_consensus
    from agreement.methods.planning.relabel import class_relabel_priority

    ids = ds.values("id")
    fit = class_consensus(codes, len(CLASSES), method=method, seed=0, orientation="units_by_raters")
    if agreement is None:
        agreement = sample_observed_agreement(codes, n_classes=len(CLASSES), orientation="units_by_raters")
    order = np.argsort(np.asarray(ids, dtype=str), kind="stable")
    rated = codes >= 0
    pr = class_relabel_priority(fit.posterior[order], fit.rater_confusion, rated.sum(axis=1)[order],
                                class_prior=fit.class_prior, rater_weights=rated.sum(axis=0).astype(float),
                                rule=rule, agreement=np.asarray(agreement, dtype=float)[order], seed=seed,
                                codes=codes[order], labels=fit.labels[order], fit_prior=True)
    return [ids[i] for i in order], pr


@pytest.mark.parametrize("rule", ["expected_error_reduction", "lowest_agreement", "fewest_raters", "random"])
def test_consensus_ranking_is_the_pure_rules_and_the_field_is_the_runs(class_ds, rule):
    from fiftyone import ViewField as F

    from agreement.fo.methods.consensus import compute_consensus
    from agreement.fo.planning.relabel import suggested_view
    from agreement.fo.runs import get_agreement_run_info

    ds, codes = class_ds
    compute_consensus(ds, "cc", fields=list(RATERS))
    out = _suggest(ds, key="cc", budget=7, rule=rule, seed=3)
    ids, pr = _reference(ds, codes, "mace", rule, seed=3)  # the consensus is the run's; the call's seed: random's
    assert out["rule"] == rule and out["budget"] == 7 and out["field"] == "cc_relabel_priority"
    assert out["sample_ids"] == [ids[i] for i in pr.order[:7]]
    stored = dict(zip(*ds.values(["id", "cc_relabel_priority"])))
    assert all(isinstance(stored[i], float) for i in ids)  # every sample of the run, rated or not
    assert [stored[i] for i in ids] == pytest.approx(pr.priority.tolist(), abs=1e-12)
    assert out["expected_errors_now"] == pytest.approx(float(pr.error_now.sum()), abs=1e-9)
    top = pr.order[:7]
    gain = float((pr.error_now[top] - pr.error_after[top]).sum())
    assert out["expected_errors_after"] == pytest.approx(out["expected_errors_now"] - gain, abs=1e-9)
    assert "cc_relabel_priority" in get_agreement_run_info(ds, "cc")["sample_fields"]
    cut = sorted(stored.values())[len(ids) // 2]
    assert len(ds.match(F("cc_relabel_priority") >= cut)) == sum(v >= cut for v in stored.values())
    view = suggested_view(ds, "cc", 7)
    assert view.values("cc_relabel_priority") == sorted(stored.values(), reverse=True)[:7]
    assert view.values("id") == out["sample_ids"]  # the stored rank gives the suggestion's own order
    ranks = dict(zip(*ds.values(["id", "cc_relabel_rank"])))
    assert sorted(ranks.values()) == list(range(1, len(ranks) + 1))
    assert [ranks[i] for i in out["sample_ids"]] == list(range(1, 8))


def test_agreement_run_fits_mace_and_ranks_lowest_agreement_by_the_runs_field(class_ds):
    from agreement.fo.methods.class_agreement import compute_class_agreement

    ds, codes = class_ds
    # computed on a view in another order than the samples' ids: the ranking does not depend on it
    compute_class_agreement(ds.sort_by("filepath", reverse=True), "ca", field="crowd", raters_field="assigned",
                            bootstrap=0)
    out = _suggest(ds, key="ca", budget=5)
    ids, pr = _reference(ds, codes, "mace", "expected_error_reduction")
    assert out["sample_ids"] == [ids[i] for i in pr.order[:5]]
    assert any("MACE" in n and "no consensus" in n for n in out["notes"])
    stored = [None if v is None else v for v in ds.values("ca_agreement")]
    low = _suggest(ds, key="ca", budget=5, rule="lowest_agreement")
    ids, pr = _reference(ds, codes, "mace", "lowest_agreement",
                         agreement=[np.nan if v is None else v for v in stored])
    assert low["sample_ids"] == [ids[i] for i in pr.order[:5]]
    by_id = dict(zip(ds.values("id"), ds.values("ca_relabel_priority")))  # the rerun overwrote the field
    assert [by_id[i] for i in ids] == pytest.approx(pr.priority.tolist(), abs=1e-12)
    unrated = [sid for sid, row in zip(ds.values("id"), codes) if (row < 0).all()]
    assert set(unrated) <= set(low["sample_ids"])  # coverage: samples nobody rated come first here


def test_rename_and_delete_take_the_field_along(class_ds):
    from agreement.fo.methods.consensus import compute_consensus
    from agreement.fo.runs import delete_agreement_run, rename_agreement_run

    ds, _ = class_ds
    compute_consensus(ds, "cc", fields=list(RATERS), method="em")
    before = ds.values("id")
    out = _suggest(ds.skip(10), key="cc", budget=3)  # chosen among a view; every run sample gets its priority
    assert set(out["sample_ids"]) <= set(ds.skip(10).values("id"))
    values = ds.values("cc_relabel_priority")
    assert len(values) == len(before) and None not in values
    rename_agreement_run(ds, "cc", "dd")
    schema = ds.get_field_schema()
    assert "cc_relabel_priority" not in schema and ds.values("dd_relabel_priority") == values
    delete_agreement_run(ds, "dd")
    assert not [f for f in ds.get_field_schema() if f.startswith("dd_")]


def test_refusals_write_nothing(fo, class_ds):
    from agreement.fo.methods.consensus import compute_consensus
    from agreement.fo.planning.relabel import suggest_relabel
    from agreement.fo.runs import RunError, get_agreement_run_info

    ds, _ = class_ds
    compute_consensus(ds, "cc", fields=list(RATERS), method="em")
    with pytest.raises(ValueError, match="'nope' is not a valid value of parameter 'key' .* valid values are 'cc'"):
        _suggest(ds, key="nope", budget=3)
    with pytest.raises(RunError, match="has no agreement run 'nope'; its agreement runs are: \\['cc'\\]"):
        suggest_relabel(ds, "nope", budget=3)
    with pytest.raises(ValueError, match="budget must be a positive"):
        _suggest(ds, key="cc", budget=0)
    with pytest.raises(ValueError, match=f"budget {len(ds) + 1} is larger than the {len(ds)} samples"):
        _suggest(ds, key="cc", budget=len(ds) + 1)
    with pytest.raises(ValueError, match="budget 9 is larger than the 8 samples"):
        _suggest(ds.limit(8), key="cc", budget=9)
    with pytest.raises(ValueError, match="'cheapest' is not a valid value of parameter 'rule'"):
        _suggest(ds, key="cc", budget=3, rule="cheapest")
    with pytest.raises(ValueError, match="unknown rule 'cheapest'"):
        suggest_relabel(ds, "cc", budget=3, rule="cheapest")
    assert "cc_relabel_priority" not in ds.get_field_schema()
    # a field of the name that the run does not own
    ds.add_sample_field("cc_relabel_priority", fo.FloatField)
    with pytest.raises(RunError, match="'cc_relabel_priority' already exists .* does not belong to run 'cc'"):
        _suggest(ds, key="cc", budget=3)
    assert set(ds.values("cc_relabel_priority")) == {None}
    ds.delete_sample_field("cc_relabel_priority")
    # the raters' classes changed since the run: its consensus cannot be replayed
    sample = ds.exists("r1").first()
    sample["r1"] = fo.Classification(label="4" if sample["r1"].label != "4" else "1")
    sample.save()
    with pytest.raises(RunError, match="the data changed since the run. Rerun it"):
        _suggest(ds, key="cc", budget=3)
    assert "cc_relabel_priority" not in ds.get_field_schema()
    assert "cc_relabel_priority" not in get_agreement_run_info(ds, "cc")["sample_fields"]


def test_a_method_without_the_hook_is_refused(fo, make_dataset):
    from agreement.fo.methods.geometry_agreement import compute_geometry_agreement
    from agreement.fo.runs import RunError

    samples = []
    for i in range(6):
        box = [0.1 + 0.01 * i, 0.1, 0.3, 0.3]
        sample = fo.Sample(filepath=f"/nonexistent/box{i}.jpg")
        sample["a"] = fo.Detections(detections=[fo.Detection(label="x", bounding_box=box)])
        sample["b"] = fo.Detections(detections=[fo.Detection(label="x", bounding_box=[box[0] + 0.02, *box[1:]])])
        samples.append(sample)
    ds = make_dataset(samples)
    compute_geometry_agreement(ds, "geo", fields=["a", "b"], bootstrap=None)
    with pytest.raises(RunError, match="'geo' is a iaa.geometry_agreement run, which cannot say .* suggest_relabel "
                                       "takes the runs of .*compute_class_agreement"):
        _suggest(ds, key="geo", budget=2)
    assert "geo_relabel_priority" not in ds.get_field_schema()


def test_the_app_is_shown_the_ranked_suggestions(class_ds):
    import fiftyone.operators as foo
    from fiftyone.core.view import DatasetView

    from agreement.fo.methods.consensus import compute_consensus

    ds, _ = class_ds
    compute_consensus(ds, "cc", fields=list(RATERS), method="em")
    res = foo.execute_operator(OP, ctx=dict(view=ds.view(), params={"key": "cc", "budget": 6}))
    assert res.error is None
    stages = [q["params"]["view"] for q in res.executor.to_json()["requests"] if q["operator_uri"] == "set_view"]
    assert len(stages) == 1
    shown = DatasetView._build(ds, stages[0])
    assert shown.values("id") == res.result["sample_ids"] and len(shown) == 6
    assert res.result["expected_errors_after"] <= res.result["expected_errors_now"]


def test_a_box_consensus_goes_to_the_instance_hook(make_dataset):
    """A consensus run's label kind holds instances: the dispatcher gives it to the box hook, whose ranking the
    operator returns and writes."""
    from agreement.fo.importers.build import samples_from_corpus
    from agreement.fo.methods.consensus import compute_consensus
    from agreement.fo.planning.box_relabel import box_relabel
    from agreement.fo.runs import get_agreement_run_info
    from agreement.simulate.synthetic.crowd import CrowdNoise, crowd_corpus

    corpus, _ = crowd_corpus(16, 3, raters_per_sample=3, min_objects=1, max_objects=3, seed=2,
                             noise=CrowdNoise(miss=0.2, false_positive=0.1))
    ds = make_dataset(samples_from_corpus(corpus, [f"/b/{i}.jpg" for i in range(16)], layout="fields",
                                          raters_field=None))
    compute_consensus(ds, "bc", fields=list(corpus.raters))
    out = _suggest(ds, key="bc", budget=4)
    ids, pr = box_relabel(ds, get_agreement_run_info(ds, "bc"), {"rule": "expected_error_reduction", "seed": 0})
    assert out["sample_ids"] == [ids[i] for i in pr.order[:4]]
    stored = dict(zip(*ds.values(["id", "bc_relabel_priority"])))
    assert [stored[i] for i in ids] == pytest.approx(pr.priority.tolist(), abs=1e-12)


def test_a_rater_who_labels_nothing_and_raters_who_never_meet(fo, make_dataset):
    """Two pairs of raters on disjoint halves (they never meet) and a fifth declared rater with no label: both
    layouts replay the run's raters (the recorded ``raters_field`` too) and give the pure rule's ranking."""
    from agreement.fo.methods.consensus import compute_consensus

    rng = np.random.default_rng(11)
    truth = rng.integers(0, 4, 40)
    codes = np.where(rng.random((40, 5)) < 0.75, truth[:, None], rng.integers(0, 4, (40, 5)))
    codes[:20, 2:] = -1  # r1, r2 on the first half
    codes[20:, :2] = -1  # r3, r4 on the second
    codes[:, 4] = -1  # r5 labels nothing
    raters = (*RATERS, "r5")
    ds = make_dataset(class_crowd_samples(fo, codes, raters, CLASSES, "/nonexistent/apart{:03d}.jpg"))
    ds.add_sample_field("r5", fo.EmbeddedDocumentField, embedded_doc_type=fo.Classification)
    compute_consensus(ds, "cf", fields=list(raters))
    compute_consensus(ds, "ca", field="crowd", raters_field="assigned")
    for key in ("cf", "ca"):
        out = _suggest(ds, key=key, budget=6)
        kept = codes if key == "cf" else codes[:, :4]  # the attribute layout knows only the raters who labelled
        ids, pr = _reference(ds, kept, "mace", "expected_error_reduction")
        assert out["sample_ids"] == [ids[i] for i in pr.order[:6]]
        assert np.isfinite(ds.values(f"{key}_relabel_priority")).all()
