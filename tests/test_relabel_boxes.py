"""The box relabel rule (agreement.methods.planning.relabel_boxes) by hand and by property, and its run hook
(agreement.fo.planning.box_relabel) on a real dataset."""

from itertools import product

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from agreement.methods.planning.relabel_boxes import (
    BoxUnits,
    TypicalRater,
    _class_gain,
    _existence_errors,
    box_relabel_priority,
    consensus_box_relabel,
    vote_posterior,
)


def _units(p=(), c1=None, c2=None, unit_sample=None, missed=(0.0,), n=(2,)):
    p = np.asarray(p, dtype=float)
    return BoxUnits(unit_sample=np.zeros(len(p), int) if unit_sample is None else np.asarray(unit_sample),
                    existence=p, class_probability=np.ones(len(p)) if c1 is None else np.asarray(c1, float),
                    second_probability=np.zeros(len(p)) if c2 is None else np.asarray(c2, float),
                    missed=np.asarray(missed, float), n_ratings=np.asarray(n))


RATER = TypicalRater(recall=0.8, false_positive_rate=0.1, coincidence=0.01, object_rate=2.0)


def test_existence_one_step_by_hand():
    f = RATER.false_unit_rate
    assert f == pytest.approx(1 - np.exp(-0.1 * 0.01))
    out = box_relabel_priority(_units([0.5]), RATER, lookahead=1)
    # yes: 0.5*0.8 real vs 0.5 f spurious -> kept, error 0.5 f; no: 0.1 real vs 0.5 (1 - f) -> dropped, error 0.1
    assert out.error_now[0] == pytest.approx(0.5)
    assert out.error_after[0] == pytest.approx(0.5 * f + 0.1)
    assert out.priority[0] == pytest.approx(0.5 - 0.5 * f - 0.1)


def test_existence_lookahead_matches_enumeration():
    """e_m equals the expected error of the thresholded decision over every sequence of m votes."""
    p = np.array([0.05, 0.3, 0.5, 0.7, 0.97])
    r, f = RATER.recall, RATER.false_unit_rate
    for m, t in product((1, 2, 3), (0.5, 0.8)):
        brute = np.zeros_like(p)
        for votes in product((0, 1), repeat=m):
            k = sum(votes)
            real = p * r ** k * (1 - r) ** (m - k)
            spur = (1 - p) * f ** k * (1 - f) ** (m - k)
            q = real / (real + spur)
            brute += (real + spur) * np.where(q >= t, 1 - q, q)
        assert np.allclose(_existence_errors(p, RATER, m, t), brute)


def test_coverage_of_a_sample_without_raters():
    # nobody labelled it: mu = 2 objects all missed; one rater finds 1.6 and adds 0.1 spurious, both kept
    out = box_relabel_priority(_units(missed=[1.0], n=[0]), RATER, lookahead=1)
    assert out.error_now[0] == pytest.approx(2.0)
    assert out.error_after[0] == pytest.approx(0.1 + 2.0 * 0.2)
    assert out.priority[0] == pytest.approx(1.5)
    # spurious labels more frequent than found objects: a lone new label is dropped, nothing gained
    noisy = TypicalRater(recall=0.8, false_positive_rate=5.0, coincidence=0.01, object_rate=2.0)
    out = box_relabel_priority(_units(missed=[1.0], n=[0]), noisy, lookahead=1)
    assert out.error_after[0] == pytest.approx(2.0) and out.priority[0] == 0.0


def test_coverage_two_raters_by_hand():
    # m = 2 new raters on an unrated sample: j = 1: real 2*2*0.8*0.2 = 0.64 vs spur 2*0.1 -> kept (0.2);
    # j = 2: real 2*0.64 = 1.28 vs spur 0.01*0.01 -> kept; still missed 2*0.04 = 0.08
    rater = TypicalRater(recall=0.8, false_positive_rate=0.1, coincidence=0.01, object_rate=2.0)
    out = box_relabel_priority(_units(missed=[1.0], n=[0]), rater, lookahead=2)
    e2 = 0.2 + 0.1 ** 2 * 0.01 + 0.08
    assert out.priority[0] == pytest.approx(max(1.5, (2.0 - e2) / 2))


def test_class_gain_by_hand_and_by_brute_force():
    two = TypicalRater(recall=1.0, false_positive_rate=0.1, coincidence=0.01, object_rate=1.0,
                       class_accuracy=0.9, n_classes=2)
    assert _class_gain(np.array([0.6]), np.array([0.4]), two)[0] == pytest.approx(0.3)
    out = box_relabel_priority(_units([1.0], c1=[0.6], c2=[0.4]), two, lookahead=1)
    assert out.error_now[0] == pytest.approx(0.4) and out.error_after[0] == pytest.approx(0.1)
    rng = np.random.default_rng(0)
    for K in (3, 4, 7):
        a = rng.uniform(0.3, 1.0)
        b = (1 - a) / (K - 1)
        L = np.full((K, K), b) + np.eye(K) * (a - b)  # L[y, v] = P(says v | true y)
        for _ in range(20):
            c1 = rng.uniform(1.0 / K, 1.0)
            c2 = rng.uniform(max(0.0, (1 - c1) / (K - 1)), min(c1, 1 - c1))
            post = np.r_[c1, c2, np.full(K - 2, (1 - c1 - c2) / (K - 2))]
            brute = (post[:, None] * L).max(axis=0).sum() - c1
            rater = TypicalRater(recall=1.0, false_positive_rate=0.1, coincidence=0.01, object_rate=1.0,
                                 class_accuracy=a, n_classes=K)
            assert _class_gain(np.array([c1]), np.array([c2]), rater)[0] == pytest.approx(max(brute, 0.0))


def test_vote_posterior_by_hand():
    # one rater of one drew it: odds = mu r / lambda = 2 * 0.8 / 0.1 = 16
    assert vote_posterior(np.array([1]), np.array([1]), RATER)[0] == pytest.approx(16 / 17)
    # two of two: odds = mu r^2 / (lambda^2 rho) = 2 * 0.64 / (0.01 * 0.01)
    odds = 2 * 0.64 / (0.01 * 0.01)
    assert vote_posterior(np.array([2]), np.array([2]), RATER)[0] == pytest.approx(odds / (1 + odds))
    assert vote_posterior(np.array([1]), np.array([3]), RATER)[0] < vote_posterior(np.array([1]), np.array([2]), RATER)[0]


def test_simple_rules_and_errors():
    u = _units([0.5, 0.99, 0.4], unit_sample=[0, 1, 2], missed=[0.0, 0.0, 0.1], n=[2, 3, 1])
    few = box_relabel_priority(u, RATER, rule="fewest_raters")
    assert few.order.tolist() == [2, 0, 1] and np.allclose(few.priority, [1 / 3, 1 / 4, 1 / 2])
    r1, r2 = (box_relabel_priority(u, RATER, rule="random", seed=3) for _ in range(2))
    assert np.array_equal(r1.priority, r2.priority)
    low = box_relabel_priority(u, RATER, rule="lowest_agreement", agreement=np.array([0.5, 1.0, np.nan]))
    assert low.order.tolist() == [2, 0, 1]
    with pytest.raises(ValueError, match="needs agreement"):
        box_relabel_priority(u, RATER, rule="lowest_agreement")
    with pytest.raises(ValueError, match="rule must be one of"):
        box_relabel_priority(u, RATER, rule="loudest")
    for bad, match in ((_units([1.2]), "existence of unit 0"), (_units([0.5], unit_sample=[3]), "unit_sample"),
                       (_units([0.5], missed=[2.0]), "missed")):
        with pytest.raises(ValueError, match=match):
            box_relabel_priority(bad, RATER)
    with pytest.raises(ValueError, match="recall"):
        TypicalRater(recall=1.5, false_positive_rate=0.1, coincidence=0.01, object_rate=1.0)
    with pytest.raises(ValueError, match="threshold"):
        box_relabel_priority(u, RATER, threshold=0.0)


@st.composite
def _problems(draw):
    S = draw(st.integers(1, 6))
    U = draw(st.integers(0, 12))
    prob = st.floats(0, 1, allow_nan=False)
    us = draw(st.lists(st.integers(0, S - 1), min_size=U, max_size=U))
    p = draw(st.lists(prob, min_size=U, max_size=U))
    c1 = draw(st.lists(st.floats(0.34, 1), min_size=U, max_size=U))
    frac = draw(st.lists(prob, min_size=U, max_size=U))
    c2 = [min(c, (1 - c) * f) for c, f in zip(c1, frac, strict=True)]
    missed = draw(st.lists(prob, min_size=S, max_size=S))
    n = draw(st.lists(st.integers(0, 5), min_size=S, max_size=S))
    rater = TypicalRater(recall=draw(prob), false_positive_rate=draw(st.floats(0, 3)),
                         coincidence=draw(st.floats(1e-4, 0.5)), object_rate=draw(st.floats(0, 10)),
                         class_accuracy=draw(prob), n_classes=draw(st.integers(1, 5)))
    units = BoxUnits(unit_sample=np.array(us, int), existence=np.array(p), class_probability=np.array(c1),
                     second_probability=np.array(c2), missed=np.array(missed), n_ratings=np.array(n))
    return units, rater, draw(st.integers(0, 10 ** 6))


@given(_problems(), st.sampled_from([0.5, 0.3, 0.9]), st.integers(1, 3))
@settings(max_examples=150, deadline=None)
def test_ranges_and_sample_order_invariance(problem, t, lookahead):
    units, rater, seed = problem
    out = box_relabel_priority(units, rater, threshold=t, lookahead=lookahead)
    assert np.isfinite(out.priority).all() and (out.priority >= 0).all()
    assert (out.error_now >= 0).all() and (out.error_after >= 0).all()
    assert np.isfinite(out.error_now).all() and np.isfinite(out.error_after).all()
    if t == 0.5:  # the Bayes decision: one more rater never raises the expected errors
        assert (out.error_after <= out.error_now + 1e-9).all()
        assert np.allclose(np.maximum(out.error_now - out.error_after, 0) if lookahead == 1 else 0,
                           out.priority if lookahead == 1 else 0, atol=1e-9)
    S = units.n_samples
    perm = np.random.default_rng(seed).permutation(S)  # new sample i is old sample perm[i]
    inv = np.argsort(perm)
    shuffled = BoxUnits(unit_sample=inv[units.unit_sample], existence=units.existence,
                        class_probability=units.class_probability, second_probability=units.second_probability,
                        missed=units.missed[perm], n_ratings=units.n_ratings[perm])
    again = box_relabel_priority(shuffled, rater, threshold=t, lookahead=lookahead)
    assert np.allclose(again.priority, out.priority[perm])
    assert np.allclose(again.error_now, out.error_now[perm])


def test_consensus_rule_puts_unrated_samples_first():
    from agreement.core.data import MultiRaterAnnotations
    from agreement.methods.consensus import consensus
    from agreement.simulate.synthetic.crowd import crowd_corpus

    data, _ = crowd_corpus(60, 6, raters_per_sample=2, min_objects=1, max_objects=4, seed=1)
    A = data.assigned.copy()
    A[5] = False  # sample 5: nobody; sample 7: one rater
    A[7, np.flatnonzero(A[7])[0]] = False
    keep = A[data.sample_index, data.rater_index]
    cut = MultiRaterAnnotations(sample_ids=data.sample_ids, raters=data.raters, assigned=A, boxes=data.boxes[keep],
                                labels=data.labels[keep], label_ids=data.label_ids[keep],
                                sample_index=data.sample_index[keep], rater_index=data.rater_index[keep],
                                image_sizes=data.image_sizes)
    res = consensus(cut)
    out = consensus_box_relabel(res, cut)
    assert out.order[0] == 5 and out.n_ratings[5] == 0
    assert out.priority[7] > np.median(out.priority)
    assert (out.priority >= 0).all() and out.rule == "expected_error_reduction"
    assert out.error_now.sum() > out.error_after.sum()
    low = consensus_box_relabel(res, cut, rule="lowest_agreement")
    assert set(low.order[:2].tolist()) == {5, 7}  # fewer than two raters: no agreement, first
    for method in ("majority", "wbf"):  # no existence posteriors: the typical rater's vote posteriors stand in
        other = consensus_box_relabel(consensus(cut, method=method), cut)
        assert any("vote posterior" in n for n in other.notes) and other.order[0] == 5
        assert np.isfinite(other.priority).all() and (other.priority >= 0).all()


# ---------------------------------------------------------------------------------------------------------------
# the run hook, on a real dataset


def _crowd_dataset(fo, make_dataset):
    from agreement.simulate.synthetic.crowd import crowd_corpus

    data, _ = crowd_corpus(24, 4, raters_per_sample=2, min_objects=1, max_objects=4, seed=3)
    samples = []
    for s in range(data.num_samples):
        kw = {}
        for r, name in enumerate(data.raters):
            rows = np.flatnonzero((data.sample_index == s) & (data.rater_index == r))
            kw[name] = fo.Detections(detections=[
                fo.Detection(label=str(data.labels[i]), bounding_box=data.boxes[i].tolist()) for i in rows]) \
                if data.assigned[s, r] else None
        samples.append(fo.Sample(filepath=f"/crowd/{s}.png", **kw))
    return make_dataset(samples), list(data.raters)


@pytest.mark.fiftyone
def test_hook_equals_the_pure_rule(fo, make_dataset):
    from agreement.fo.methods.consensus import compute_consensus
    from agreement.fo.methods.kalos import HOOKS as KALOS_HOOKS, compute_kalos
    from agreement.fo.planning.box_relabel import box_relabel
    from agreement.fo.runs.store import get_agreement_run_info
    from agreement.fo.storage.reading import read_annotations
    from agreement.methods.consensus import consensus

    ds, raters = _crowd_dataset(fo, make_dataset)
    compute_consensus(ds, "cons", fields=raters)
    ids, pr = box_relabel(ds, get_agreement_run_info(ds, "cons"), {})
    data = read_annotations(ds, fields=raters, image_sizes=True, masks=True).annotations
    pure = consensus_box_relabel(consensus(data, method="em", tau="auto", min_confidence=0.5), data)
    by_id = dict(zip(map(str, data.sample_ids), pure.priority, strict=True))
    assert sorted(ids) == sorted(by_id) and len(ids) == len(ds)
    assert np.allclose(pr.priority, [by_id[i] for i in ids])
    assert pr.rule == "expected_error_reduction" and (pr.priority > 0).any()
    # the same through KαLOS runs' hooks, and the simple rules through options
    compute_kalos(ds, "kal", fields=raters)
    assert KALOS_HOOKS.relabel is box_relabel
    kids, kpr = box_relabel(ds, get_agreement_run_info(ds, "kal"), {"rule": "fewest_raters"})
    assert kpr.rule == "fewest_raters" and any("no consensus" in n for n in kpr.notes)
    # asked from a view: every sample of the run, scored by the run's consensus over all of them
    vids, vpr = box_relabel(ds.skip(5).limit(10), get_agreement_run_info(ds, "cons"), {})
    assert vids == ids and np.array_equal(vpr.priority, pr.priority)
    with pytest.raises(ValueError, match="rule must be one of"):
        box_relabel(ds, get_agreement_run_info(ds, "cons"), {"rule": "loudest"})
    # labels changed since the run: refused, naming the run
    sample = ds.first()
    field = next(f for f in raters if sample[f] is not None)
    sample[field] = fo.Detections(detections=[fo.Detection(label="c0", bounding_box=[0.1 * k, 0.1, 0.05, 0.05])
                                              for k in range(1, 8)])
    sample.save()
    with pytest.raises(Exception, match="changed since the run"):
        box_relabel(ds, get_agreement_run_info(ds, "cons"), {})


@pytest.mark.fiftyone
def test_hook_refuses_class_runs(fo, make_dataset):
    from agreement.fo.planning.box_relabel import box_relabel

    C = fo.Classification
    ds = make_dataset([fo.Sample(filepath=f"/c/{i}.png", a=C(label="x"), b=C(label="y" if i % 2 else "x"))
                       for i in range(4)])
    from agreement.fo.methods.consensus import compute_consensus
    from agreement.fo.runs.store import get_agreement_run_info

    compute_consensus(ds, "cc", fields=["a", "b"])
    with pytest.raises(ValueError, match="instance labels"):
        box_relabel(ds, get_agreement_run_info(ds, "cc"), {})


@pytest.mark.fiftyone
def test_hook_replays_the_runs_raters_field(fo, make_dataset):
    """One label field with the raters assigned to each sample recorded: a rater assigned who drew nothing found
    no object there (not "did not look"); the hook reads the run's raters_field as the run did."""
    from agreement.fo.importers.build import samples_from_corpus
    from agreement.fo.methods.consensus import compute_consensus
    from agreement.fo.planning.box_relabel import box_relabel
    from agreement.fo.runs.store import get_agreement_run_info
    from agreement.fo.storage.reading import read_annotations
    from agreement.methods.consensus import consensus
    from agreement.simulate.synthetic.crowd import CrowdNoise, crowd_corpus

    corpus, _ = crowd_corpus(20, 4, raters_per_sample=2, min_objects=1, max_objects=2, seed=4,
                             noise=CrowdNoise(miss=0.5, false_positive=0.0))
    ds = make_dataset(samples_from_corpus(corpus, [f"/rf/{i}.jpg" for i in range(20)], layout="attribute",
                                          field="crowd", raters_field="assigned"))
    data = read_annotations(ds, field="crowd", raters_field="assigned", image_sizes=True, masks=True).annotations
    assert (data.assigned & (np.bincount(data.sample_index * data.num_raters + data.rater_index,
                                         minlength=data.assigned.size).reshape(data.assigned.shape) == 0)).any()
    compute_consensus(ds, "ra", field="crowd", raters_field="assigned")
    ids, pr = box_relabel(ds, get_agreement_run_info(ds, "ra"), {})
    pure = consensus_box_relabel(consensus(data, method="em", tau="auto", min_confidence=0.5), data)
    by_id = dict(zip(map(str, data.sample_ids), pure.priority, strict=True))
    assert np.allclose(pr.priority, [by_id[i] for i in ids])
