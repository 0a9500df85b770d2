"""compute_consensus on a view larger than its fit window: fitted on the first ``fit_samples`` samples (sample-id
order), the rest streamed shard by shard with that fit fixed, every sample read once.

The window's samples get exactly what a whole fit of those samples gives; the streamed samples do not depend
on the shard size; a view of at most ``fit_samples`` samples is fitted whole (today's numbers); raters without
a sample in the window get pooled parameters and the run names them.
"""

from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.fiftyone

N, WINDOW = 60, 24


@pytest.fixture
def crowd(fo, make_dataset):
    """60 samples, 5 raters (all assigned), one rater field each."""
    from agreement.fo.importers.build import samples_from_corpus
    from agreement.simulate.synthetic.crowd import CrowdNoise, crowd_corpus

    corpus, _ = crowd_corpus(N, 5, raters_per_sample=5, min_objects=1, max_objects=5, seed=11,
                             noise=CrowdNoise(miss=0.1, false_positive=0.1))
    samples = samples_from_corpus(corpus, [f"/c/{i:03d}.jpg" for i in range(N)], layout="fields", raters_field=None)
    return make_dataset(samples), sorted(corpus.raters)


def _canonical(ds) -> list[str]:
    from agreement.fo.runs.engine import canonical_ids

    return canonical_ids(ds)


def _stored(ds, key: str, raters: list[str], ids=None) -> dict:
    """Per sample: its consensus labels (ids as their position), n_review, min_confidence, and per rater label
    its consensus label's position and agrees flag."""
    out = {}
    paths = ["id", f"{key}_consensus", f"{key}_n_review", f"{key}_min_confidence"] + [f"{r}.detections" for r in raters]
    for sid, cons, n_review, low, *per_rater in zip(*ds.values(paths), strict=True):
        if ids is not None and sid not in ids:
            continue
        labels = cons.detections if cons is not None else []
        pos = {d.id: k for k, d in enumerate(labels)}
        docs = [{k.replace(f"{key}_", "", 1): v for k, v in d.to_dict().items() if k != "_id"} for d in labels]
        links = [[(pos.get(d.get_field(f"{key}_consensus_id") if d.has_field(f"{key}_consensus_id") else None),
                   d.get_field(f"{key}_agrees") if d.has_field(f"{key}_agrees") else None) for d in (dets or [])]
                 for dets in per_rater]
        out[sid] = (docs, n_review, low, links)
    return out


def test_a_view_larger_than_the_window_is_fitted_on_it_and_streamed_in_shards(crowd, monkeypatch):
    """Fitted on the first 24 samples, the other 36 in shards of 10: every sample read once (the window, then
    shards of at most 10 samples: the memory of a shard), every sample written, the fit recorded."""
    import agreement.fo.runs.engine as engine
    from agreement.fo.methods.consensus import compute_consensus
    from agreement.fo.runs import load_agreement_results

    ds, raters = crowd
    reads, real = [], engine.read_planned
    monkeypatch.setattr(engine, "read_planned", lambda samples, ids, *a: reads.append(list(ids)) or real(samples, ids, *a))
    res = compute_consensus(ds, "win", fields=raters, fit_samples=WINDOW, shard_size=10)
    ids = _canonical(ds)
    assert [len(r) for r in reads] == [WINDOW, 10, 10, 10, 6]
    assert [i for r in reads for i in r] == ids  # each sample read once, in the canonical order
    detail = load_agreement_results(ds, "win")["detail"]
    assert detail["fit_window"] == {"n_fitted": WINDOW, "n_samples": N, "pooled_raters": [], "shard_warnings": []}
    assert detail["shards"]["n_shards"] == 4 and detail["shards"]["fit_samples"] == WINDOW
    assert res["n_fitted"] == WINDOW and res["n_samples"] == N and res["n_consensus"] > 0
    stored = _stored(ds, "win", raters)
    assert all(v[1] is not None for v in stored.values())  # every sample written
    assert sum(len(v[0]) for v in stored.values()) == res["n_consensus"]
    report = detail["rater_report"]
    assert set(report) == set(raters) and all(0 < report[r]["sensitivity"] <= 1 for r in raters)
    assert sum(report[r]["n_labels"] for r in raters) == sum(len(d) for v in stored.values() for d in v[3])


def test_the_window_gets_exactly_a_whole_fit_of_its_samples(crowd):
    """The first 24 samples of a streamed run store bit for bit what a whole fit of a view of just those 24
    samples stores (the same raters and classes): the window is fitted as a view of its own would be."""
    from agreement.fo.methods.consensus import compute_consensus
    from agreement.fo.runs import load_agreement_results

    ds, raters = crowd
    window = _canonical(ds)[:WINDOW]
    compute_consensus(ds, "streamed", fields=raters, fit_samples=WINDOW, shard_size=10)
    compute_consensus(ds.select(window, ordered=True), "alone", fields=raters)
    a, b = _stored(ds, "streamed", raters, set(window)), _stored(ds, "alone", raters, set(window))
    assert a.keys() == b.keys() == set(window)
    for sid in window:
        assert a[sid] == b[sid]
    alone = load_agreement_results(ds, "alone")["detail"]
    streamed = load_agreement_results(ds, "streamed")["detail"]
    assert streamed["tau"] == alone["tau"] and streamed["n_iter"] == alone["n_iter"]
    for r in raters:  # the fitted parameters are the window's
        for k in ("sensitivity", "false_positive_rate", "localisation_noise", "confusion"):
            assert streamed["rater_report"][r][k] == alone["rater_report"][r][k]


def test_streamed_results_do_not_depend_on_the_shard_size(crowd):
    from agreement.fo.methods.consensus import compute_consensus

    ds, raters = crowd
    a = compute_consensus(ds, "s7", fields=raters, fit_samples=WINDOW, shard_size=7)
    b = compute_consensus(ds, "s50", fields=raters, fit_samples=WINDOW, shard_size=50)
    assert _stored(ds, "s7", raters) == _stored(ds, "s50", raters)
    assert {k: v for k, v in a.items() if k != "warnings"} == {k: v for k, v in b.items() if k != "warnings"}


def test_at_or_below_the_window_the_view_is_fitted_whole(crowd):
    """fit_samples equal to the view (or larger, the default) fits the whole view: the same numbers."""
    from agreement.fo.methods.consensus import compute_consensus
    from agreement.fo.runs import load_agreement_results

    ds, raters = crowd
    a = compute_consensus(ds, "default", fields=raters)
    b = compute_consensus(ds, "exact", fields=raters, fit_samples=N)
    assert _stored(ds, "default", raters) == _stored(ds, "exact", raters)
    assert {k: v for k, v in a.items() if k != "warnings"} == {k: v for k, v in b.items() if k != "warnings"}
    detail = load_agreement_results(ds, "exact")["detail"]
    assert "fit_window" not in detail and "n_fitted" not in a


def test_a_rater_without_a_sample_in_the_window_gets_pooled_parameters_and_a_warning(crowd):
    """A rater who labels only samples after the window is not fitted: it gets the fitted raters' median rates
    and noise and the pooled class confusion, the run warns naming it, and its labels are still fused."""
    from agreement.fo.methods.consensus import compute_consensus
    from agreement.fo.runs import load_agreement_results

    ds, raters = crowd
    late = raters[-1]
    window = set(_canonical(ds)[:WINDOW])
    ds.set_values(late, [None if s in window else v for s, v in zip(*ds.values(["id", late]), strict=True)])
    res = compute_consensus(ds, "pooled", fields=raters, fit_samples=WINDOW, shard_size=20)
    (warning,) = [w for w in res["warnings"] if "fit_samples" in w]
    assert repr(late) in warning and f"first {WINDOW:,} samples" in warning
    detail = load_agreement_results(ds, "pooled")["detail"]
    assert detail["fit_window"]["pooled_raters"] == [late]
    report = detail["rater_report"]
    fitted = [report[r]["sensitivity"] for r in raters[:-1]]
    assert report[late]["sensitivity"] == pytest.approx(float(np.median(fitted)))
    assert report[late]["n_labels"] > 0 and 0 <= report[late]["agreement"] <= 1


@pytest.mark.parametrize("method", ["em", "majority", "wbf"])
def test_one_part_merges_to_its_own_summary_and_rater_report(method):
    """The merge of the pure library (agreement.methods.consensus.merge) on a corpus of one part gives what the
    consensus of that corpus reports: its summary and its rater report."""
    from agreement.methods.consensus import consensus
    from agreement.methods.consensus.merge import merged_report, merged_summary, part_stats
    from agreement.simulate.synthetic.crowd import crowd_corpus

    data, _ = crowd_corpus(40, 6, raters_per_sample=3, seed=3)
    res = consensus(data, method=method)
    part = part_stats(res, data, fitted=True)
    merged, whole = merged_summary([part]), res.summary()
    assert merged.keys() == whole.keys()
    for k, v in whole.items():
        assert merged[k] == (pytest.approx(v, nan_ok=True, rel=1e-12) if isinstance(v, float) else v), k
    report, expected = merged_report([part], res.rater_meets), res.report
    for k in ("sensitivity", "false_positive_rate", "precision", "localisation_error", "localisation_noise",
              "agreement", "confusion", "n_labels", "n_samples"):
        np.testing.assert_allclose(getattr(report, k), getattr(expected, k), rtol=1e-12, equal_nan=True, err_msg=k)


def test_a_view_fitted_whole_despite_fit_samples_says_so(fo, make_dataset):
    """A class consensus (Dawid-Skene, MACE: every sample's classes at once) cannot be fitted on a window: a
    view larger than ``fit_samples`` is fitted whole, and the run warns that ``fit_samples`` was not used and why
    (never an option accepted and silently ignored)."""
    from agreement.fo.methods.consensus import compute_consensus

    rng = np.random.default_rng(3)
    samples = [fo.Sample(filepath=f"/k/{i:02d}.jpg", **{r: fo.Classification(label=str(rng.choice(["a", "b"])))
                                                         for r in ("r1", "r2", "r3")}) for i in range(12)]
    ds = make_dataset(samples)
    res = compute_consensus(ds, "classes", fields=["r1", "r2", "r3"], fit_samples=5)
    (warning,) = [w for w in res["warnings"] if "fit_samples" in w]
    assert "fit_samples=5 was not used" in warning and "class consensus" in warning and "all 12 samples" in warning
    plain = compute_consensus(ds, "plain", fields=["r1", "r2", "r3"])
    assert not [w for w in plain["warnings"] if "fit_samples" in w]
