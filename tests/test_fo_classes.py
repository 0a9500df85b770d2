"""Image-level classes and tags on a real FiftyOne dataset: agreement and consensus through the operators and the
Python call, in both rater layouts, the bad inputs refused before anything is written, FiftyOne's own run
commands."""

from __future__ import annotations

import numpy as np
import pytest

from label_kinds import class_crowd_samples

pytestmark = pytest.mark.fiftyone

krippendorff = pytest.importorskip("krippendorff")

RATERS = ("r1", "r2", "r3", "r4")
CLASSES = ("1", "2", "3", "4")


def _codes(S: int = 60, seed: int = 3) -> np.ndarray:
    """A noisy crowd: per sample a true class, each rater right with probability .7, a few not assigned."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 4, S)
    codes = np.where(rng.random((S, 4)) < 0.7, truth[:, None], rng.integers(0, 4, (S, 4)))
    codes[rng.random((S, 4)) < 0.15] = -1
    codes[:3, 2:] = -1  # two raters on the first samples
    return codes


@pytest.fixture
def class_ds(fo, make_dataset):
    codes = _codes()
    ds = make_dataset(class_crowd_samples(fo, codes, RATERS, CLASSES, "/nonexistent/item{:03d}"))
    return ds, codes


def _oracle(codes: np.ndarray, level: str) -> float:
    data = np.where(codes.T >= 0, codes.T.astype(float) + 1, np.nan)  # class "1".."4" as numbers
    return krippendorff.alpha(reliability_data=data, level_of_measurement=level)


def _op(ds, name: str, **params):
    import fiftyone.operators as foo

    return foo.execute_operator(f"@iaa/agreement/{name}", ctx=dict(view=ds.view(), params=params)).result


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval", "ratio"])
def test_alpha_equals_krippendorff_in_both_layouts(class_ds, level):
    from agreement.fo.methods.class_agreement import compute_class_agreement

    ds, codes = class_ds
    want = _oracle(codes, level)
    by_fields = compute_class_agreement(ds, f"f_{level}", fields=list(RATERS), level=level, bootstrap=200)
    by_attr = _op(ds, "compute_class_agreement", key=f"a_{level}", field="crowd", raters_field="assigned",
                  level=level, bootstrap=200)
    assert by_fields["alpha"] == pytest.approx(want, abs=1e-12)
    assert by_attr["alpha"] == pytest.approx(want, abs=1e-12)
    assert by_fields["read_as"] == by_attr["read_as"] == "classes"
    assert by_fields["alpha_low"] <= by_fields["alpha"] <= by_fields["alpha_high"]


def test_per_sample_agreement_is_a_sortable_field_and_the_run_is_fiftyones(class_ds):
    from agreement.fo.methods.class_agreement import compute_class_agreement

    ds, codes = class_ds
    compute_class_agreement(ds, "cls", fields=list(RATERS), bootstrap=0)
    ids = ds.values("id")
    got = dict(zip(ids, ds.values("cls_agreement")))
    for sid, row in zip(ids, codes):
        v = row[row >= 0]
        pairs = [(a, b) for i, a in enumerate(v) for b in v[i + 1:]]
        want = None if len(v) < 2 else np.mean([a == b for a, b in pairs])
        assert (got[sid] is None) if want is None else got[sid] == pytest.approx(want)
    assert ds.values("cls_n_ratings") == [int((row >= 0).sum()) for row in codes]
    worst = ds.exists("cls_agreement").sort_by("cls_agreement").first()
    assert worst.cls_agreement == min(v for v in got.values() if v is not None)
    results = ds.load_run_results("cls")
    assert results.summary["alpha"] == pytest.approx(_oracle(codes, "nominal"), abs=1e-12)
    pairs = results.detail["rater_pairs"]
    assert {(p["rater_a"], p["rater_b"]) for p in pairs} == {(a, b) for i, a in enumerate(RATERS) for b in RATERS[i + 1:]}
    from agreement.methods.classes import agreement_with_others_majority

    majority = results.detail["rater_majority"]  # each rater against the majority of the others
    assert majority["raters"] == list(RATERS)
    assert np.allclose(majority["agreement"], agreement_with_others_majority(codes)[0], equal_nan=True)
    ds.delete_run("cls")  # FiftyOne's own command removes what the run wrote
    assert "cls_agreement" not in ds.get_field_schema() and "cls_n_ratings" not in ds.get_field_schema()


def test_tags_per_rater_are_read_as_sets(fo, make_dataset):
    from agreement.fo.methods.class_agreement import compute_class_agreement

    rng = np.random.default_rng(0)
    samples = []
    for s in range(30):
        sample = fo.Sample(filepath=f"/nonexistent/t{s}")
        base = {t for t in "abc" if rng.random() < 0.5}
        for r in ("u1", "u2", "u3"):
            tags = base ^ ({str(rng.choice(list("abc")))} if rng.random() < 0.3 else set())
            sample[r] = fo.Classifications(classifications=[fo.Classification(label=t) for t in sorted(tags)])
        samples.append(sample)
    ds = make_dataset(samples)
    res = compute_class_agreement(ds, "tags", fields=["u1", "u2", "u3"])
    assert res["read_as"] == "tags" and -1 <= res["alpha"] <= 1
    detail = ds.load_run_results("tags").detail
    assert detail["tag_alpha"]["classes"] == ["a", "b", "c"]
    with pytest.raises(ValueError, match="MASI"):
        compute_class_agreement(ds, "tags2", fields=["u1", "u2", "u3"], level="ordinal")


def test_bad_inputs_are_refused_before_anything_is_written(fo, class_ds):
    from agreement.fo.methods.class_agreement import compute_class_agreement
    from agreement.fo.methods.kalos import compute_kalos

    ds, _ = class_ds
    before = set(ds.get_field_schema())
    ds.set_values("word", [fo.Classification(label=w) for w in np.resize(["cat", "dog"], len(ds))])
    with pytest.raises(ValueError, match="interval.*numeric.*'cat'|numeric classes"):
        compute_class_agreement(ds, "bad", fields=["word", "r1"], level="interval")
    with pytest.raises(ValueError, match="order of the classes"):
        compute_class_agreement(ds, "bad", fields=["word", "r1"], level="ordinal")
    ds.add_sample_field("silent", fo.EmbeddedDocumentField, embedded_doc_type=fo.Classification)
    with pytest.raises(ValueError, match=r"\['silent'\] gave no label"):
        compute_class_agreement(ds, "bad", fields=["r1", "silent"])
    ds.set_values("boxes", [fo.Detections() for _ in range(len(ds))])
    with pytest.raises(Exception, match="same label type"):
        compute_class_agreement(ds, "bad", fields=["r1", "boxes"])
    with pytest.raises(ValueError, match="compute_kalos does not apply to Classification.*compute_class_agreement"):
        compute_kalos(ds, "bad", fields=["r1", "r2"])
    with pytest.raises(Exception, match="one label per sample"):
        compute_class_agreement(ds, "bad", field="r1")
    assert set(ds.get_field_schema()) - before == {"word", "silent", "boxes"}
    assert "bad" not in ds.list_runs()


LAYOUTS = {"fields": dict(fields=list(RATERS)), "attribute": dict(field="crowd", raters_field="assigned")}


@pytest.mark.parametrize("method,layout", [("em", "fields"), ("mace", "attribute"), ("majority", "fields"),
                                           ("em", "attribute")])
def test_consensus_of_classes_review_and_finalize(class_ds, method, layout):
    from agreement.fo.methods.consensus import compute_consensus, finalize_consensus, review_view
    from agreement.fo.views.review import review_labels, review_progress

    ds, codes = class_ds
    res = _op(ds, "compute_consensus", key="cc", method=method, **LAYOUTS[layout])
    assert res["n_consensus"] == int((codes >= 0).any(axis=1).sum())
    labels = ds.values("cc_consensus")
    assert all(lab is None or lab.label in CLASSES for lab in labels)
    conf = [lab.confidence for lab in labels if lab is not None]
    assert all(0 < c <= 1 for c in conf)
    queue = review_view(ds, "cc")
    flagged = queue.values("cc_consensus.confidence")
    assert len(queue) == res["n_review"] and flagged == sorted(flagged) and all(c < 0.8 for c in flagged)
    if len(queue):
        first = queue.first().cc_consensus.id
        review_labels(queue, "cc", [first], "rejected")
        assert review_progress(ds, "cc")["rejected"] == 1
        with pytest.raises(ValueError, match="not consensus labels"):
            review_labels(ds, "cc", [ds.first().r1.id], "accepted")
        counts = finalize_consensus(ds, "cc")
        assert counts["rejected"] == 1 and counts["kept"] == res["n_consensus"] - 1
    report = ds.load_run_results("cc").detail["rater_report"]
    assert set(report) == set(RATERS)
    rows = [row for r in report.values() for row in r["confusion"].values() if None not in row.values()]
    assert rows and all(abs(sum(row.values()) - 1) < 1e-5 for row in rows)
    ds.delete_run("cc")
    assert not any(f.startswith("cc_") for f in ds.get_field_schema())
    assert compute_consensus  # the Python call is the same function the operator runs


def test_consensus_of_classes_equals_majority_where_raters_agree(class_ds):
    from agreement.fo.methods.consensus import compute_consensus

    ds, codes = class_ds
    compute_consensus(ds, "mv", fields=list(RATERS), method="majority")
    for row, lab in zip(codes, ds.values("mv_consensus")):
        v = row[row >= 0]
        if len(v) and (v == v[0]).all():
            assert lab.label == CLASSES[v[0]] and lab.confidence == pytest.approx(1.0)
