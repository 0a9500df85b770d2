"""αOT: a hand-computed corpus, a plain-loop reference, Monte-Carlo behaviour,
determinism and order invariance, and undefined cases."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from agreement.core.data import AnnotationSet, MultiRaterAnnotations
from agreement.methods.ot import ot_score, sample_ot_scores
from agreement.methods.ot.alpha_ot import alpha_ot, canonical_sample_order


def _set(boxes, labels, prefix="x"):
    boxes = np.asarray(boxes, dtype=float).reshape(-1, 4)
    return AnnotationSet(boxes, labels, [f"{prefix}{k}" for k in range(len(boxes))])


def _random_corpus(seed, S=7, raters=("r1", "r2", "r3"), p_assign=0.75, max_boxes=4, noise=0.03):
    """Raters annotate a shared scene per sample with jitter, misses and label flips."""
    rng = np.random.default_rng(seed)
    sets = []
    for s in range(S):
        k = int(rng.integers(0, max_boxes + 1))
        xy = rng.uniform(0, 0.7, size=(k, 2))
        wh = rng.uniform(0.05, 0.3, size=(k, 2))
        truth = np.hstack([xy, wh])
        labels = rng.choice(["cat", "dog", "car"], size=k)
        mapping = {}
        for r in raters:
            if rng.random() > p_assign:
                continue
            keep = rng.random(k) > 0.15
            bx = truth[keep] + rng.normal(0, noise, size=(keep.sum(), 4)) * [1, 1, 0.5, 0.5]
            bx[:, 2:] = np.abs(bx[:, 2:]) + 0.01
            lb = [l if rng.random() > 0.1 else "bird" for l in labels[keep]]
            mapping[r] = _set(bx, lb, f"{s}{r}")
        sets.append(mapping)
    return MultiRaterAnnotations.from_sets([f"img{s:02d}" for s in range(S)], list(raters), sets, box_policy="clip")


def reference_alpha(data, lam, beta, norm="paper"):
    """Plain loops over ot_score: D_o over (sample, rater pair), D_e over cross pairs."""
    obs, exp = [], []
    R = data.num_raters
    for a, b in itertools.combinations(range(R), 2):
        for i in range(data.num_samples):
            for j in range(data.num_samples):
                if not (data.assigned[i, a] and data.assigned[j, b]):
                    continue
                A, B = data.get(i, a), data.get(j, b)
                c = 1 - ot_score(A.boxes, A.labels, B.boxes, B.labels, lam=lam, beta=beta, normalization=norm)
                (obs if i == j else exp).append(c)
    return 1 - np.mean(obs) / np.mean(exp), np.mean(obs), np.mean(exp), len(obs), len(exp)


def test_hand_computed_two_samples():
    # Two samples, two raters. Sample 0: identical single boxes (cost 0).
    # Sample 1: both raters drew nothing (cost 0). Cross pairs: (r1 on s0, r2 on s1)
    # and (r1 on s1, r2 on s0): one box against nothing, cost beta each.
    box = [[0.1, 0.1, 0.2, 0.2]]
    sets = [
        {"r1": _set(box, ["cat"]), "r2": _set(box, ["cat"])},
        {"r1": AnnotationSet.empty(), "r2": AnnotationSet.empty()},
    ]
    data = MultiRaterAnnotations.from_sets(["s0", "s1"], ["r1", "r2"], sets)
    res = alpha_ot(data, beta=0.4)
    assert res.observed == 0.0 and res.expected == pytest.approx(0.4)
    assert res.alpha == pytest.approx(1.0)
    assert (res.n_observed, res.n_cross_pairs, res.n_expected) == (2, 2, 2)
    assert res.exact and res.expected_se == 0.0 and res.reason == ""
    # Now rater 2 misses the box on sample 0: D_o = (0.4 + 0) / 2, D_e = (0.4 + 0) / 2.
    sets[0]["r2"] = AnnotationSet.empty()
    res2 = alpha_ot(MultiRaterAnnotations.from_sets(["s0", "s1"], ["r1", "r2"], sets), beta=0.4)
    assert res2.observed == pytest.approx(0.2) and res2.expected == pytest.approx(0.2)
    assert res2.alpha == pytest.approx(0.0)


@pytest.mark.parametrize("norm", ["paper", "oc_cost"])
def test_exact_equals_plain_loop(norm):
    data = _random_corpus(1)
    lam, beta = 0.5, 0.45
    res = alpha_ot(data, lam=lam, beta=beta, normalization=norm, max_pairs=10**6)
    alpha, d_o, d_e, n_o, n_e = reference_alpha(data, lam, beta, norm)
    assert res.exact
    assert res.observed == pytest.approx(d_o, abs=1e-12)
    assert res.expected == pytest.approx(d_e, abs=1e-12)
    assert res.alpha == pytest.approx(alpha, abs=1e-12)
    assert (res.n_observed, res.n_cross_pairs, res.n_expected) == (n_o, n_e, n_e)
    # Per rater pair: one table row per pair that shares a sample.
    t = res.pairs
    assert len(t) == 3
    for p in range(len(t)):
        sub = data
        a, b = int(t.a[p]), int(t.b[p])
        obs = [1 - ot_score(*_ab(sub, i, i, a, b), lam=lam, beta=beta, normalization=norm)
               for i in range(sub.num_samples) if sub.assigned[i, a] and sub.assigned[i, b]]
        exp = [1 - ot_score(*_ab(sub, i, j, a, b), lam=lam, beta=beta, normalization=norm)
               for i in range(sub.num_samples) for j in range(sub.num_samples)
               if i != j and sub.assigned[i, a] and sub.assigned[j, b]]
        assert t.values["alpha_ot"][p] == pytest.approx(1 - np.mean(obs) / np.mean(exp), abs=1e-12)
        assert t.values["observed_cost"][p] == pytest.approx(np.mean(obs), abs=1e-12)
        assert t.values["expected_cost"][p] == pytest.approx(np.mean(exp), abs=1e-12)
        assert t.values["n_cross_pairs"][p] == len(exp) and t.n_shared[p] == len(obs)
        assert t.values["exact"][p] == 1.0 and t.values["alpha_ot_se"][p] == 0.0
    # D_o is the mean of the per-sample pair costs.
    scores = sample_ot_scores(data, lam=lam, beta=beta, normalization=norm)
    assert res.observed == pytest.approx(scores.pair_cost.mean(), abs=1e-12)
    assert t.to_records() and {"alpha_ot", "expected_cost", "exact"} <= set(t.to_records()[0])


def _ab(data, i, j, a, b):
    A, B = data.get(i, a), data.get(j, b)
    return A.boxes, A.labels, B.boxes, B.labels


def test_monte_carlo_estimate_se_and_determinism():
    data = _random_corpus(2, S=14)
    exact = alpha_ot(data, max_pairs=10**6)
    mc = alpha_ot(data, max_pairs=150, seed=3)
    assert exact.exact and not mc.exact
    assert mc.n_cross_pairs == exact.n_cross_pairs > 150
    assert 150 <= mc.n_expected <= 150 + len(mc.pairs)
    assert mc.expected_se > 0 and mc.alpha_se > 0
    assert abs(mc.expected - exact.expected) < 5 * mc.expected_se
    assert mc.observed == pytest.approx(exact.observed)  # D_o is always exact
    again = alpha_ot(data, max_pairs=150, seed=3)
    assert again == mc
    other_seed = alpha_ot(data, max_pairs=150, seed=4)
    assert other_seed.expected != mc.expected


def _permuted(data, rng, rename=None):
    """The same corpus with samples, raters' names order and boxes shuffled."""
    order = rng.permutation(data.num_samples)
    sets = []
    for s in order:
        mapping = {}
        for r, aset in data.sets(s).items():
            p = rng.permutation(len(aset))
            mapping[rename.get(r, r) if rename else r] = AnnotationSet(aset.boxes[p], aset.labels[p], aset.ids[p])
        sets.append(mapping)
    raters = [rename.get(r, r) if rename else r for r in data.raters][::-1]
    return MultiRaterAnnotations.from_sets(data.sample_ids[order], raters, sets)


@pytest.mark.parametrize("max_pairs", [10**6, 120])
def test_invariant_to_sample_rater_and_label_order(max_pairs):
    data = _random_corpus(3, S=12)
    rng = np.random.default_rng(0)
    base = alpha_ot(data, max_pairs=max_pairs, seed=1)
    shuffled = alpha_ot(_permuted(data, rng), max_pairs=max_pairs, seed=1)
    assert shuffled.alpha == pytest.approx(base.alpha, abs=1e-12)
    assert shuffled.expected == pytest.approx(base.expected, abs=1e-12)
    assert shuffled.exact == base.exact


def test_canonical_sample_order():
    assert canonical_sample_order(np.array(["b", "a", "c"], dtype=object)).tolist() == [1, 0, 2]


def test_perfect_agreement_is_one_and_rater_pair_without_shared_sample():
    rng = np.random.default_rng(9)
    sets = []
    for _ in range(5):
        k = int(rng.integers(1, 4))
        bx = np.hstack([rng.uniform(0, 0.6, (k, 2)), rng.uniform(0.1, 0.3, (k, 2))])
        lb = list(rng.choice(["a", "b"], k))
        sets.append({"r1": _set(bx, lb), "r2": _set(bx, lb)})
    # r3 only labels a sixth sample, with r1.
    sets.append({"r1": _set([[0.1, 0.1, 0.1, 0.1]], ["a"]), "r3": _set([[0.1, 0.1, 0.1, 0.1]], ["a"])})
    data = MultiRaterAnnotations.from_sets([f"s{i}" for i in range(6)], ["r1", "r2", "r3"], sets)
    res = alpha_ot(data)
    assert res.alpha == pytest.approx(1.0)
    recs = {(r["rater_a"], r["rater_b"]): r for r in res.pairs.to_records()}
    assert recs[("r1", "r2")]["alpha_ot"] == pytest.approx(1.0)
    # r2 and r3 never share a sample: absent (no data), not NaN or 0.
    assert set(recs) == {("r1", "r2"), ("r1", "r3")}
    # r1 and r3 share one sample; their chance baseline is still defined (5 cross pairs).
    assert recs[("r1", "r3")]["n_shared_samples"] == 1 and recs[("r1", "r3")]["n_cross_pairs"] == 5
    assert recs[("r1", "r3")]["alpha_ot"] == pytest.approx(1.0)


def test_undefined_cases():
    box = [[0.1, 0.1, 0.2, 0.2]]
    # A single sample: no cross pair.
    one = MultiRaterAnnotations.from_sets(["s"], ["a", "b"], [{"a": _set(box, ["x"]), "b": _set(box, ["x"])}])
    r = alpha_ot(one)
    assert np.isnan(r.alpha) and "cross" in r.reason and r.observed == 0.0
    # No sample with two raters.
    solo = MultiRaterAnnotations.from_sets(["s", "t"], ["a", "b"], [{"a": _set(box, ["x"])}, {"b": _set(box, ["x"])}])
    r = alpha_ot(solo)
    assert np.isnan(r.alpha) and "D_o undefined" in r.reason
    # Every set empty: D_e = 0.
    empty = MultiRaterAnnotations.from_sets(
        ["s", "t"], ["a", "b"], [{"a": AnnotationSet.empty(), "b": AnnotationSet.empty()}] * 2)
    r = alpha_ot(empty)
    assert np.isnan(r.alpha) and "D_e = 0" in r.reason
    # A single rater.
    single = MultiRaterAnnotations.from_sets(["s", "t"], ["a"], [{"a": _set(box, ["x"])}] * 2)
    r = alpha_ot(single)
    assert np.isnan(r.alpha) and "fewer than two raters" in r.reason and len(r.pairs) == 0


def test_bad_parameters():
    data = _random_corpus(4, S=3)
    with pytest.raises(ValueError):
        alpha_ot(data, lam=1.2)
    with pytest.raises(ValueError):
        alpha_ot(data, beta=0)
    with pytest.raises(ValueError):
        alpha_ot(data, normalization="emd")
    with pytest.raises(ValueError):
        alpha_ot(data, max_pairs=0)


def test_pair_with_no_cross_sample_pair_is_nan_with_reason():
    # r3 and r4 labelled exactly one sample, together: they share it (D_o) but have no
    # cross pair (N_ab = 1 * 1 - 1 = 0), so their own alpha is undefined.
    box = [[0.1, 0.1, 0.2, 0.2]]
    sets = [{"r1": _set(box, ["x"]), "r2": _set(box, ["x"])},
            {"r1": _set(box, ["x"]), "r2": AnnotationSet.empty()},
            {"r3": _set(box, ["x"]), "r4": _set([[0.5, 0.5, 0.2, 0.2]], ["x"])}]
    data = MultiRaterAnnotations.from_sets(["s0", "s1", "s2"], ["r1", "r2", "r3", "r4"], sets)
    res = alpha_ot(data)
    recs = {(r["rater_a"], r["rater_b"]): r for r in res.pairs.to_records()}
    assert set(recs) == {("r1", "r2"), ("r3", "r4")}
    r34 = recs[("r3", "r4")]
    assert r34["alpha_ot"] is None and "no cross-sample pair" in r34["alpha_ot_reason"]
    assert r34["n_cross_pairs"] == 0 and 0 < r34["observed_cost"] < 0.5  # the far same-label pair matches
    assert recs[("r1", "r2")]["alpha_ot"] is not None and "alpha_ot_reason" not in recs[("r1", "r2")]
    # The corpus: D_o over all 3 (sample, pair) units; D_e over the 2 cross pairs of r1/r2.
    assert res.n_observed == 3 and res.n_cross_pairs == 2 and res.exact


def _crowd(seed, S=20, R=12, k=3):
    rng = np.random.default_rng(seed)
    raters = [f"c{r:02d}" for r in range(R)]
    sets = []
    for s in range(S):
        n = int(rng.integers(0, 4))
        truth = np.hstack([rng.uniform(0, 0.7, (n, 2)), rng.uniform(0.05, 0.3, (n, 2))])
        labels = rng.choice(["cat", "dog"], n)
        mapping = {}
        for r in rng.choice(raters, k, replace=False):
            keep = rng.random(n) > 0.2
            bx = truth[keep] + rng.normal(0, 0.02, (keep.sum(), 4)) * [1, 1, 0, 0]
            mapping[str(r)] = _set(bx, list(labels[keep]), f"{s}{r}")
        sets.append(mapping)
    return MultiRaterAnnotations.from_sets([f"s{s:02d}" for s in range(S)], raters, sets, box_policy="clip")


def test_crowd_exact_equals_plain_loop_over_pairs_that_met():
    data = _crowd(5)
    res = alpha_ot(data, max_pairs=10**6)
    met = sorted({(a, b) for s in range(data.num_samples) for a, b in data.iter_rater_pairs(s)})
    assert list(zip(res.pairs.a.tolist(), res.pairs.b.tolist())) == met
    obs, exp = [], []
    for a, b in met:
        for i in range(data.num_samples):
            for j in range(data.num_samples):
                if data.assigned[i, a] and data.assigned[j, b]:
                    (obs if i == j else exp).append(1 - ot_score(*_ab(data, i, j, a, b), lam=0.5, beta=0.5))
    assert res.exact and res.n_cross_pairs == len(exp) and res.n_observed == len(obs)
    assert res.observed == pytest.approx(np.mean(obs), abs=1e-12)
    assert res.expected == pytest.approx(np.mean(exp), abs=1e-12)
    assert res.alpha == pytest.approx(1 - np.mean(obs) / np.mean(exp), abs=1e-12)


def test_crowd_monte_carlo_is_order_invariant_and_near_exact():
    data = _crowd(6, S=40, R=15)
    exact = alpha_ot(data, max_pairs=10**6)
    mc = alpha_ot(data, max_pairs=300, seed=2)
    assert not mc.exact and mc.expected_se > 0
    assert abs(mc.expected - exact.expected) < 5 * mc.expected_se
    # Every pair that met has a defined chance baseline (>= 2 draws or exact).
    assert np.all(mc.pairs.values["n_expected"] >= np.minimum(2, mc.pairs.values["n_cross_pairs"]))
    shuffled = alpha_ot(_permuted(data, np.random.default_rng(1)), max_pairs=300, seed=2)
    assert shuffled.expected == pytest.approx(mc.expected, abs=1e-12)
    key = lambda recs: {(r["rater_a"], r["rater_b"]): r["expected_cost"] for r in recs}  # noqa: E731
    got, want = key(shuffled.pairs.to_records()), key(mc.pairs.to_records())
    assert got.keys() == want.keys() and all(got[k] == pytest.approx(want[k], abs=1e-12) for k in want)


@pytest.mark.parametrize("norm", ["paper", "oc_cost"])
def test_observed_costs_from_sample_ot_scores_give_the_same_result(norm):
    """The FiftyOne run passes sample_ot_scores' pair costs instead of solving them twice: same αOT, bit for bit."""
    data = _random_corpus(5, S=9)
    scores = sample_ot_scores(data, lam=0.4, beta=0.6, normalization=norm)
    own = alpha_ot(data, lam=0.4, beta=0.6, normalization=norm)
    given = alpha_ot(data, lam=0.4, beta=0.6, normalization=norm, observed_costs=scores.pair_cost)
    assert given.alpha == own.alpha and given.observed == own.observed and given.expected == own.expected
    for k, v in own.pairs.values.items():
        np.testing.assert_array_equal(given.pairs.values[k], v)
    with pytest.raises(ValueError, match="observed_costs has 2 values"):
        alpha_ot(data, observed_costs=np.zeros(2))


# ---------------------------------------------------------------------------
# Shards: the chance sample planned from the assignment, sets collected per shard
# ---------------------------------------------------------------------------


def _cut(data, bounds):
    import dataclasses

    from agreement.core.data import class_order

    vocab = class_order(data.labels.tolist())
    return [dataclasses.replace(data.select_samples(np.arange(lo, hi)), classes=vocab)
            for lo, hi in zip(bounds[:-1], bounds[1:])]


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000), cuts=st.lists(st.integers(1, 49), max_size=5, unique=True),
       max_pairs=st.sampled_from([50, 2_000, 1_000_000]))
def test_alpha_ot_from_shards_equals_the_whole_corpus(seed, cuts, max_pairs):
    from agreement.methods.ot import sample_ot_scores
    from agreement.methods.ot.alpha_ot import CellSets, finish_alpha_ot, plan_chance
    from agreement.simulate.synthetic.crowd import crowd_corpus

    data, _ = crowd_corpus(50, 9, raters_per_sample=3, min_objects=0, max_objects=5, seed=seed)
    whole = alpha_ot(data, max_pairs=max_pairs, seed=seed)
    cs, cr = np.nonzero(data.assigned)
    plan = plan_chance(data.sample_ids, cs, cr, data.raters, max_pairs=max_pairs, seed=seed)
    bounds = [0, *sorted(cuts), 50]
    sets, costs, codes = [], [], []
    for lo, part in zip(bounds, _cut(data, bounds)):
        sets.append(CellSets.of(part, plan.cells_of_samples(lo, lo + part.num_samples), sample_offset=lo))
        sc = sample_ot_scores(part)
        costs.append(sc.pair_cost)
        codes.append(np.asarray(sc.pair_rater_a, np.int64) * data.num_raters + sc.pair_rater_b)
    merged = finish_alpha_ot(plan, CellSets.concat(sets[::-1]), np.concatenate(costs), np.concatenate(codes))
    assert merged == whole  # every number, bit for bit, and the per-pair table


def test_chance_plan_depends_on_the_assignment_only():
    from agreement.methods.ot.alpha_ot import plan_chance
    from agreement.simulate.synthetic.crowd import crowd_corpus

    data, _ = crowd_corpus(40, 6, raters_per_sample=3, seed=2)
    cs, cr = np.nonzero(data.assigned)
    a = plan_chance(data.sample_ids, cs, cr, data.raters, max_pairs=300, seed=7)
    perm = np.random.default_rng(0).permutation(40)  # the same samples in another order
    inv = np.argsort(perm)
    cs2, cr2 = inv[cs], cr
    o = np.lexsort((cr2, cs2))
    b = plan_chance(data.sample_ids[perm], cs2[o], cr2[o], data.raters, max_pairs=300, seed=7)
    ids_a = data.sample_ids[a.cell_key // 6]
    ids_b = data.sample_ids[perm][b.cell_key // 6]
    assert sorted(zip(ids_a.tolist(), (a.cell_key % 6).tolist())) == sorted(zip(ids_b.tolist(),
                                                                             (b.cell_key % 6).tolist()))
    assert np.array_equal(a.stratum, b.stratum)


def test_cell_sets_that_miss_a_cell_are_refused():
    from agreement.methods.ot.alpha_ot import CellSets, finish_alpha_ot, plan_chance
    from agreement.simulate.synthetic.crowd import crowd_corpus

    data, _ = crowd_corpus(20, 4, raters_per_sample=3, seed=1)
    cs, cr = np.nonzero(data.assigned)
    plan = plan_chance(data.sample_ids, cs, cr, data.raters, max_pairs=100, seed=0)
    partial = CellSets.of(data, plan.cell_key[:-1])
    with pytest.raises(ValueError, match="do not hold the cells"):
        finish_alpha_ot(plan, partial, np.zeros(0), np.zeros(0, np.int64))
