"""The box consensus EM on sparse crowds: many raters, a few per sample, each rater on one or two samples.

On the crowd export's design (40 images, 200 raters, 9 per image: each rater sees ~1.8 images) the EM
used to keep no label at all and stop unconverged after 200 iterations: a rater with no object on its
samples has no sensitivity (NaN), and ``0 · log(1 - NaN)`` in the M-step's ``P_0`` made every parameter
NaN (:mod:`agreement.methods.consensus.em`, "Sparse crowds"). Pinned here: the cause (NaN rates of
raters without data, maximum-likelihood rates of 0 and 1 from one sample), the fix (the fit on sparse
designs, the rates' prior), and the safety net (a degenerate fit is replaced by majority vote, with a
warning).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from agreement.core.data import encode_classes
from agreement.methods.consensus import consensus
from agreement.methods.consensus.api import em_degeneracy
from agreement.methods.consensus.em import RATE_PRIOR, EMSettings, _problem, _rates, fit_em
from agreement.methods.consensus.units import build_units, estimate_coincidence
from agreement.methods.ot.baselines import f1_at_iou
from agreement.simulate.synthetic.crowd import CrowdNoise, crowd_corpus
from agreement.simulate.synthetic.crowd_export import EXPORT_NOISE

#: The noise of the crowd export (:func:`agreement.simulate.synthetic.crowd_export.write_crowd_export`).
assert EXPORT_NOISE == CrowdNoise(miss=0.5, jitter=0.1, confusion=0.3, false_positive=0.3)


def _recall_precision(res, truth) -> tuple[float, float]:
    """Recall and precision of the consensus labels against the simulated truth: the largest one-to-one
    matching per sample of boxes with IoU >= 0.5 and the same class."""
    mine = res.to_annotations()
    tp = sum(f1_at_iou(mine.boxes[mine.rows(s, 0)], mine.labels[mine.rows(s, 0)], truth.boxes[truth.rows(s, 0)],
                       truth.labels[truth.rows(s, 0)]).n_matched for s in range(truth.num_samples))
    return tp / max(len(truth), 1), tp / max(len(mine), 1)


def _fit_parts(data, tau: float = 0.5):
    """Units, class codes and classes of ``data`` at ``tau``, and its coincidence ``ρ`` (the EM's inputs)."""
    codes, classes = encode_classes(data)
    units = build_units(data, codes, "iou", tau, solver="greedy", cost="soft")
    return units, codes, classes, estimate_coincidence(data, "boxes", tau)


# ------------------------------------------------------------------ (1) the export's design


@pytest.mark.parametrize("seed", [0, 1])
def test_the_sparse_crowd_export_design_gives_labels_close_to_the_truth(seed):
    """40 images × 200 raters, 9 per image (seed 0 is the crowd export's corpus): the EM converges, keeps
    about as many labels as there are objects and beats majority voting, whose quorum misses half of
    them (each rater misses half the objects)."""
    data, truth = crowd_corpus(40, 200, raters_per_sample=9, seed=seed, noise=EXPORT_NOISE)
    assert (data.assigned.sum(axis=0) <= 2).mean() > 0.6  # most raters see one or two images
    res, vote = consensus(data), consensus(data, method="majority")
    assert res.method == "em" and res.warning == "" and res.converged and res.n_iter < 60
    assert np.isfinite(res.confidence).all()
    recall, precision = _recall_precision(res, truth)
    vote_recall, vote_precision = _recall_precision(vote, truth)
    assert recall >= 0.85 and precision >= 0.85, (recall, precision)
    assert recall >= vote_recall + 0.3 and precision >= vote_precision - 0.1
    assert 0.9 * len(truth) <= res.n_consensus <= 1.1 * len(truth)


# ------------------------------------------------------------------ (2) sparse designs never collapse


@settings(max_examples=25, deadline=None)
@given(samples=st.integers(20, 80), raters=st.integers(50, 300), per_sample=st.integers(5, 9),
       miss=st.floats(0.05, 0.5), false_positive=st.floats(0.0, 0.3), confusion=st.floats(0.0, 0.3),
       seed=st.integers(0, 10_000))
def test_the_em_never_keeps_far_fewer_labels_than_majority_voting_on_sparse_crowds(
        samples, raters, per_sample, miss, false_positive, confusion, seed):
    """The EM itself (no fallback) keeps at least as many labels as majority voting, up to a small margin,
    and its posteriors are finite, whatever the sparse design."""
    noise = CrowdNoise(miss=miss, jitter=0.08, confusion=confusion, false_positive=false_positive)
    data, _ = crowd_corpus(samples, raters, raters_per_sample=per_sample, noise=noise, seed=seed)
    res, vote = consensus(data), consensus(data, method="majority")
    assert res.method == "em" and res.warning == ""
    assert np.isfinite(res.confidence).all() and np.isfinite(res.model.object_rate)
    assert res.n_consensus >= 0.8 * vote.n_consensus, (res.n_consensus, vote.n_consensus)


# ------------------------------------------------------------------ (3) the cause


def test_a_rater_without_data_no_longer_makes_every_parameter_nan():
    """The cause: raters never assigned (or with no object on their samples) have no sensitivity; the
    M-step's ``P_0 = exp(A @ log(1 - se))`` turned their NaN into NaN for every sample (``0 · NaN``). Without
    the rates' prior (``rate_prior=0``, maximum likelihood) the fit is now finite and keeps labels."""
    data, _ = crowd_corpus(20, 50, raters_per_sample=5, seed=0, noise=EXPORT_NOISE)
    idle = ~data.assigned.any(axis=0)
    assert idle.any()  # the design has raters never assigned
    units, codes, classes, rho = _fit_parts(data)
    fit = fit_em(data, units, codes, classes, "boxes", rho, settings=EMSettings(rate_prior=0.0))
    m = fit.model
    assert np.isfinite(fit.existence).all() and np.isfinite(m.object_rate) and (fit.existence >= 0.5).any()
    assert np.isnan(m.sensitivity[idle]).all() and np.isnan(m.false_positive_rate[idle]).all()  # no data: NaN
    assert np.isfinite(m.sensitivity[~idle]).any()
    # the M-step itself: a NaN sensitivity of the previous step leaves the others' rates and μ finite
    pb = _problem(data, units, codes, classes, "boxes")
    se_prev = np.where(idle, np.nan, 0.5)
    se, fp, mu = _rates(pb, fit.existence, se_prev, 0.0)
    assert np.isfinite(mu) and np.array_equal(np.isfinite(se), np.isfinite(m.sensitivity))
    assert np.array_equal(np.isfinite(fp), ~idle)


def test_the_smallest_failing_design_one_image_two_of_three_raters():
    """The smallest design that kept no label: one image, two of three raters assigned (the third never is).
    Its sensitivity is NaN, and so were μ and every posterior after the second M-step."""
    data, _ = crowd_corpus(1, 3, raters_per_sample=2, min_objects=1, seed=0)
    assert (~data.assigned.any(axis=0)).sum() == 1
    for prior in (0.0, RATE_PRIOR):
        res, vote = consensus(data, rate_prior=prior), consensus(data, method="majority")
        assert res.method == "em" and res.warning == "" and res.converged
        assert np.isfinite(res.confidence).all() and res.n_consensus >= vote.n_consensus > 0


def test_the_rates_prior_keeps_a_one_sample_rater_off_zero_and_one_and_leaves_dense_raters_alone():
    """Maximum likelihood gives a rater seen once a sensitivity of 0 or 1 and a false-positive rate of 0
    (then one of its labels outweighs the eight other raters); the prior worth :data:`RATE_PRIOR` samples
    keeps every rater between the extremes, and moves a rater with 300 samples by less than 0.01."""
    data, _ = crowd_corpus(40, 200, raters_per_sample=9, seed=0, noise=EXPORT_NOISE)
    units, codes, classes, rho = _fit_parts(data)
    ml = fit_em(data, units, codes, classes, "boxes", rho, settings=EMSettings(rate_prior=0.0)).model
    eb = fit_em(data, units, codes, classes, "boxes", rho).model
    assert eb.rate_prior == RATE_PRIOR > 0 and ml.rate_prior == 0
    ok = np.isfinite(ml.sensitivity)
    assert ((ml.sensitivity[ok] < 0.01) | (ml.sensitivity[ok] > 0.99)).sum() >= 10
    assert (np.nan_to_num(ml.false_positive_rate, nan=1.0) < 1e-3).sum() >= 10
    assert np.nanmin(eb.sensitivity) > 0.15 and np.nanmax(eb.sensitivity) < 0.85
    assert np.nanmin(eb.false_positive_rate) > 0.05
    dense, _ = crowd_corpus(300, 4, raters_per_sample=4, seed=1)
    units, codes, classes, rho = _fit_parts(dense)
    a = fit_em(dense, units, codes, classes, "boxes", rho, settings=EMSettings(rate_prior=0.0)).model
    b = fit_em(dense, units, codes, classes, "boxes", rho).model
    np.testing.assert_allclose(b.sensitivity, a.sensitivity, atol=0.01)
    np.testing.assert_allclose(b.false_positive_rate, a.false_positive_rate, atol=0.01)


# ------------------------------------------------------------------ the safety net


def test_a_degenerate_em_fit_is_replaced_by_majority_vote_with_a_warning():
    """A fit that judges every unit absent (here a fixed model of raters who almost never draw a real
    object) is not returned as an empty label set: the result is majority vote's, says so, and the
    summary carries the warning."""
    data, _ = crowd_corpus(40, 12, raters_per_sample=5, seed=2)
    fitted = consensus(data)
    assert fitted.warning == "" and fitted.params["requested_method"] == "em"
    blind = dataclasses.replace(fitted.model, sensitivity=np.full(data.num_raters, 1e-6))
    res, vote = consensus(data, model=blind), consensus(data, method="majority", tau=fitted.params["tau"])
    assert res.method == "majority" and res.params["requested_method"] == "em"
    assert "degenerated" in res.warning and "majority" in res.warning
    assert res.summary()["warning"] == res.warning and res.summary()["method"] == "majority"
    assert res.n_consensus == vote.n_consensus > 0
    np.testing.assert_array_equal(res.boxes, vote.boxes)


def test_em_degeneracy_names_non_finite_posteriors_and_rejected_majorities():
    data, _ = crowd_corpus(30, 10, raters_per_sample=5, seed=4)
    units, *_ = _fit_parts(data)
    k = data.assigned.sum(axis=1)[units.unit_sample]
    majority = 2 * units.size > k
    assert majority.any()
    assert em_degeneracy(data, units, np.ones(units.n_units)) == ""
    assert "not finite" in em_degeneracy(data, units, np.full(units.n_units, np.nan))
    assert "judges 0 of" in em_degeneracy(data, units, np.zeros(units.n_units))
    # rejecting the minority units (one rater of five) is what the EM is for: no degeneracy
    assert em_degeneracy(data, units, majority.astype(float)) == ""


# ------------------------------------------------------------------ the FiftyOne run of the bug report


@pytest.mark.fiftyone
def test_the_crowd_export_with_40_images_gets_consensus_labels_through_the_operator(fo, tmp_path):
    import fiftyone.operators as foo

    from agreement.fo.importers.coco import import_multi_rater_coco
    from agreement.simulate.synthetic.crowd_export import write_crowd_export

    export = write_crowd_export(tmp_path, num_samples=40, num_raters=200, raters_per_sample=9)
    ds = import_multi_rater_coco(export, dataset_name="sparse-crowd-40", layout="attribute", overwrite=True)
    try:
        r = foo.execute_operator("@iaa/agreement/compute_consensus", ctx=dict(view=ds.view(), params=dict(
            key="cons", field="ground_truth", rater_attr="annotator"))).result
        assert r["converged"] and r["method"] == "em" and not r.get("warning")
        assert 140 <= r["n_consensus"] <= 170 and r["agreement"] > 0.5  # 155 true objects
        assert ds.count("cons_consensus.detections") == r["n_consensus"]
    finally:
        ds.delete()


def test_the_coincidence_estimate_does_not_depend_on_the_order_of_the_corpus():
    """``ρ`` is estimated from a subsample of rows when the corpus has more than 1,000: drawn from a
    canonical order, a shuffled copy gets the same ``ρ`` (the EM's confidences moved by ~1e-4 with it)."""
    data, _ = crowd_corpus(150, 20, raters_per_sample=5, seed=3)
    assert len(data) > 1000
    shuffled = data.select_samples(np.random.default_rng(0).permutation(data.num_samples))
    assert estimate_coincidence(shuffled, "boxes", 0.4) == estimate_coincidence(data, "boxes", 0.4)
