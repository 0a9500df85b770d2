"""How many raters a task needs (:mod:`agreement.methods.planning.raters`): the rater curve against the
``krippendorff`` package, its seeding, the Spearman–Brown projection and the raters it recommends."""

from __future__ import annotations

import json
import math

import krippendorff
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from agreement.methods.consensus.class_labels import class_consensus
from agreement.methods.planning import (
    RaterCurve,
    alpha_statistic,
    consensus_reliability,
    rater_curve,
    raters_needed,
)
from agreement.methods.planning.consensus_accuracy import (
    consensus_accuracy_statistic,
    consensus_confidence_statistic,
    crowd_reference,
)


def _crowd(n_items: int = 60, accuracy: np.ndarray | None = None, *, n_classes: int = 3, missing: float = 0.0,
           seed: int = 1) -> np.ndarray:
    """``(items, raters)`` labels of simulated raters: rater ``j`` gives the true class with probability
    ``accuracy[j]``, else a class drawn uniformly; a share ``missing`` of the cells is NaN."""
    rng = np.random.default_rng(seed)
    acc = np.linspace(0.55, 0.9, 12) if accuracy is None else np.asarray(accuracy)
    truth = rng.integers(0, n_classes, n_items)
    noise = rng.integers(0, n_classes, (n_items, acc.size))
    data = np.where(rng.random((n_items, acc.size)) < acc, truth[:, None], noise).astype(np.float64)
    data[rng.random(data.shape) < missing] = np.nan
    return data


# ---------------------------------------------------------------------------------------------- the curve
@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval"])
def test_the_curve_at_every_rater_equals_alpha_on_all_the_data(level):
    """On complete data with one draw, the curve at k = every rater is α of the data (oracle: krippendorff)."""
    data = _crowd(accuracy=np.linspace(0.5, 0.9, 5), n_classes=4)
    curve = rater_curve(data, statistic=alpha_statistic(level=level), repeats=1)
    expected = krippendorff.alpha(reliability_data=data.T, level_of_measurement=level)
    assert curve.ks == (2, 3, 4, 5) and curve.n_items == (60,) * 4
    assert curve.mean[-1] == pytest.approx(expected, abs=1e-12)
    assert curve.low[-1] == pytest.approx(expected, abs=1e-12) and curve.high[-1] == pytest.approx(expected, abs=1e-12)
    assert curve.labels == (120, 180, 240, 300) and curve.statistic == f"alpha_{level}"


def test_alpha_statistic_with_missing_values_matches_krippendorff():
    """α of data with NaN cells and non-integer interval values equals the package's."""
    data = _crowd(missing=0.3) * 0.5 + 0.25
    for level in ("nominal", "interval", "ratio"):
        expected = krippendorff.alpha(reliability_data=data.T, level_of_measurement=level)
        assert alpha_statistic(level=level)(data) == pytest.approx(expected, abs=1e-12)


def test_the_same_seed_gives_the_same_curve_and_another_seed_other_draws():
    data = _crowd(missing=0.1)
    stat = alpha_statistic(level="nominal")
    a = rater_curve(data, statistic=stat, repeats=20, seed=3)
    b = rater_curve(data, statistic=stat, repeats=20, seed=3)
    c = rater_curve(data, statistic=stat, repeats=20, seed=4)
    assert a.as_dict() == b.as_dict()
    assert a.mean[:5] != c.mean[:5]
    # the draws of one k do not depend on the other ks asked for
    only = rater_curve(data, statistic=stat, ks=[5], repeats=20, seed=3)
    assert only.ks == (5,) and only.mean[0] == a.mean[a.ks.index(5)] and only.low[0] == a.low[a.ks.index(5)]


def test_items_are_kept_by_their_number_of_ratings_and_raters_keep_their_columns():
    """An item counts at k only with >= k ratings; a draw keeps k of the item's own rated raters."""
    data = _crowd(n_items=8, accuracy=np.full(4, 0.8))
    data[0, 1:] = np.nan        # one rating: never kept
    data[1, 2:] = np.nan        # two ratings
    data[2, 3] = np.nan         # three ratings
    seen: list[np.ndarray] = []

    def stat(draw: np.ndarray) -> float:
        seen.append(draw.copy())
        return float(np.nanmean(draw))

    curve = rater_curve(data, statistic=stat, repeats=5)
    assert curve.ks == (2, 3, 4) and curve.n_items == (7, 6, 5)
    assert curve.labels == (14, 18, 20) and curve.n_items_total == 8 and curve.n_raters == 4
    for draw in seen:
        k = int((~np.isnan(draw)).sum(axis=1)[0])
        assert ((~np.isnan(draw)).sum(axis=1) == k).all()
        rows = [i for i in range(8) if (~np.isnan(data[i])).sum() >= k]
        kept = data[rows]
        assert np.array_equal(np.isnan(draw) | ~np.isnan(kept), np.ones_like(kept, dtype=bool))
        assert np.array_equal(draw[~np.isnan(draw)], kept[~np.isnan(draw)])


def test_undefined_draws_are_counted_and_never_averaged():
    data = _crowd(n_items=10, accuracy=np.full(3, 0.8))
    curve = rater_curve(data, statistic=lambda d: float("nan"), repeats=4)
    assert curve.n_undefined == (4, 4) and all(math.isnan(x) for x in curve.mean + curve.low + curve.high)
    needed = raters_needed(curve, target=0.8)
    assert needed.k is None and "undefined" in needed.reason


def test_resampling_items_widens_the_interval_where_every_rater_is_kept():
    data = _crowd(accuracy=np.linspace(0.5, 0.9, 4))
    stat = alpha_statistic(level="nominal")
    fixed = rater_curve(data, statistic=stat, repeats=30)
    boot = rater_curve(data, statistic=stat, repeats=30, resample_items=True)
    assert fixed.high[-1] - fixed.low[-1] == 0.0
    assert boot.high[-1] - boot.low[-1] > 0.02 and boot.resample_items


def test_results_are_plain_for_json():
    curve = rater_curve(_crowd(n_items=20, accuracy=np.full(4, 0.8)), statistic=alpha_statistic(), repeats=3)
    out = json.loads(json.dumps(curve.as_dict()))
    assert out["ks"] == [2, 3, 4] and out["max_k"] == 4 and out["statistic"] == "alpha_nominal"
    assert set(curve.consensus()) == {"mean", "low", "high"}
    assert json.loads(json.dumps(raters_needed(curve, target=0.9).as_dict()))["target"] == 0.9


# ------------------------------------------------------------------------------------------ Spearman–Brown
@settings(max_examples=200, deadline=None)
@given(r=st.floats(min_value=1e-6, max_value=1 - 1e-6), k=st.integers(min_value=1, max_value=10_000))
def test_spearman_brown_is_a_reliability_rising_with_k(r, k):
    rho, nxt = consensus_reliability(r, k), consensus_reliability(r, k + 1)
    assert 0.0 < rho <= 1.0 and rho <= nxt + 1e-15 and rho >= r * (1 - 1e-12)
    assert consensus_reliability(r, 1) == r


def test_spearman_brown_is_vectorised_and_keeps_undefined():
    out = consensus_reliability(np.array([0.2, 0.5, np.nan]), np.array([[1], [4]]))
    assert out.shape == (2, 3) and np.isnan(out[:, 2]).all()
    assert out[1, :2] == pytest.approx([0.5, 0.8])
    assert consensus_reliability(0.0, 5) == 0.0 and consensus_reliability(1.0, 5) == 1.0
    assert math.isnan(consensus_reliability(-1.0, 2))  # 1 + (k - 1) r = 0: no reliability


# -------------------------------------------------------------------------------------- raters needed
def _bound(curve: RaterCurve, k: int) -> float:
    """The projected lower bound at ``k`` as documented: the curve's low at the largest measured k' <= k."""
    at = max([i for i, kk in enumerate(curve.ks) if kk <= k], default=0)
    return float(consensus_reliability(curve.low[at], k))


@pytest.fixture(scope="module")
def task_curve() -> RaterCurve:
    """60 items, 12 raters of accuracy 0.55 .. 0.9, every item rated by all, 200 draws per k."""
    return rater_curve(_crowd(), statistic=alpha_statistic(level="nominal"), repeats=200, seed=0)


@pytest.mark.parametrize("target", [0.6, 0.8, 0.9, 0.97])
def test_a_simulated_task_narrows_with_k_and_gets_the_smallest_k(task_curve, target):
    """60 items, 12 raters of known accuracy, every item rated by all: the items stay fixed, the interval
    narrows with k, and the recommended k reaches the target while k - 1 does not."""
    curve = task_curve
    assert curve.n_items == (60,) * 11
    width = np.subtract(curve.high, curve.low)
    assert width[0] > width[4] > width[9] > width[10] == 0.0
    needed = raters_needed(curve, target=target)
    assert needed.k is not None and needed.labels_per_item == needed.k and needed.labels == needed.k * 60
    assert needed.reliability >= target and _bound(curve, needed.k) >= target
    assert needed.k == 1 or _bound(curve, needed.k - 1) < target
    assert needed.measured == (needed.k <= curve.max_k) and needed.confidence == 0.9


def test_beyond_the_curve_the_projection_continues_from_its_last_lower_bound():
    curve = rater_curve(_crowd(accuracy=np.full(4, 0.6)), statistic=alpha_statistic(), repeats=50)
    needed = raters_needed(curve, target=0.95, confidence=0.9)
    r = curve.low[-1]
    assert needed.k is not None and needed.k > curve.max_k and not needed.measured and needed.single_rater == r
    assert consensus_reliability(r, needed.k) >= 0.95 > consensus_reliability(r, needed.k - 1)


@settings(max_examples=200, deadline=None)
@given(r=st.floats(min_value=1e-3, max_value=1.0), target=st.floats(min_value=1e-3, max_value=0.999))
def test_from_one_alpha_the_k_is_the_smallest(r, target):
    needed = raters_needed(r, target=target)
    assert needed.k is not None and needed.confidence is None and needed.labels is None
    assert consensus_reliability(r, needed.k) >= target
    assert needed.k == 1 or consensus_reliability(r, needed.k - 1) < target


def test_spearman_brown_exact_boundary():
    assert raters_needed(0.5, target=0.9).k == 9  # 9 * 0.5 / (1 + 8 * 0.5) = 0.9 exactly


def test_no_k_when_alpha_is_at_or_below_chance():
    assert raters_needed(-0.1, target=0.5).k is None and "<= 0" in raters_needed(0.0, target=0.5).reason
    apart = np.array([np.roll([0.0, 1.0, 2.0], i) for i in range(12)])  # the three raters never agree: α < 0
    needed = raters_needed(rater_curve(apart, statistic=alpha_statistic(), repeats=30), target=0.5)
    assert needed.k is None and "<= 0" in needed.reason and math.isnan(needed.reliability)


# ---------------------------------------------------------------------------------------------- bad input
_STAT = alpha_statistic()
_OK = _crowd(n_items=10, accuracy=np.full(3, 0.8))


@pytest.mark.parametrize(("call", "message"), [
    (lambda: rater_curve(np.empty((0, 3)), statistic=_STAT), "empty"),
    (lambda: rater_curve(np.ones(5), statistic=_STAT), "2-D"),
    (lambda: rater_curve(np.ones((5, 1)), statistic=_STAT), "at least 2"),
    (lambda: rater_curve(np.where(np.eye(3) == 1, 1.0, np.nan), statistic=_STAT), "no item has ratings from 2"),
    (lambda: rater_curve(np.array([[1.0, np.inf]]), statistic=_STAT), "infinite value at item 0, rater 1"),
    (lambda: rater_curve([["a", "b"]], statistic=_STAT), "numeric"),
    (lambda: rater_curve(_OK, statistic=_STAT, repeats=0), "repeats"),
    (lambda: rater_curve(_OK, statistic=_STAT, confidence=1.0), "confidence"),
    (lambda: rater_curve(_OK, statistic=_STAT, confidence=0.0), "confidence"),
    (lambda: rater_curve(_OK, statistic=_STAT, ks=[4]), "outside 2 .. 3"),
    (lambda: rater_curve(_OK, statistic=_STAT, ks=[]), "ks is empty"),
    (lambda: rater_curve(_OK, statistic="alpha"), "callable"),
    (lambda: alpha_statistic(level="cardinal"), "level"),
    (lambda: consensus_reliability(1.5, 2), "alpha_1"),
    (lambda: consensus_reliability(0.5, 0.5), "k must be"),
    (lambda: consensus_reliability(0.5, np.inf), "k must be"),
    (lambda: raters_needed(0.5, target=1.0), "target"),
    (lambda: raters_needed(0.5, target=0.0), "target"),
    (lambda: raters_needed(1.5, target=0.5), "alpha"),
    (lambda: raters_needed("x", target=0.5), "RaterCurve or a number"),
    (lambda: raters_needed(0.5, target=0.5, confidence=0.9), "needs an interval"),
    (lambda: raters_needed(rater_curve(_OK, statistic=_STAT, repeats=2), target=0.5, confidence=0.95),
     "confidence 0.9, not 0.95"),
])
def test_bad_input_is_refused_by_name(call, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(".", r"\.")):
        call()


def test_the_examples_in_the_docstrings_run():
    import doctest

    from agreement.methods.planning import raters as module

    assert doctest.testmod(module, optionflags=doctest.ELLIPSIS).failed == 0


# ------------------------------------------------------------------ statistics of one rater: consensus accuracy
def _truth_crowd(n_items: int = 80, n_raters: int = 7, accuracy: float = 0.7, missing: float = 0.0, seed: int = 2):
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 3, n_items)
    data = np.where(rng.random((n_items, n_raters)) < accuracy, truth[:, None],
                    rng.integers(0, 3, (n_items, n_raters))).astype(np.float64)
    data[rng.random(data.shape) < missing] = np.nan
    return data, truth


def _vote_oracle(row: np.ndarray, ref: int) -> float:
    """Brute force: the share of the tied top classes that is the reference."""
    votes = {c: int((row == c).sum()) for c in set(row[~np.isnan(row)].astype(int).tolist())}
    top = max(votes.values())
    tied = [c for c, v in votes.items() if v == top]
    return (ref in tied) / len(tied)


def test_majority_accuracy_counts_ties_by_their_share_and_matches_brute_force():
    data, truth = _truth_crowd(n_items=40, n_raters=4, missing=0.3)
    data[np.isnan(data).all(axis=1), 0] = 1.0
    stat = consensus_accuracy_statistic(truth, n_classes=3)
    want = np.mean([_vote_oracle(row, t) for row, t in zip(data, truth, strict=True)])
    assert stat(data) == pytest.approx(want, abs=1e-12)
    assert stat.min_k == 1 and stat.needs_items and stat.__name__ == "consensus_accuracy_majority"


def test_a_statistic_of_one_rater_starts_the_curve_at_k_1_and_alpha_still_cannot():
    data, truth = _truth_crowd(accuracy=0.7)
    curve = rater_curve(data, statistic=consensus_accuracy_statistic(truth, n_classes=3), repeats=30)
    assert curve.ks == tuple(range(1, 8))
    # one rater right with probability .7 + .3/3 = .8: the k = 1 accuracy is about .8, and it grows with k
    assert curve.mean[0] == pytest.approx(0.8, abs=0.04)
    assert curve.mean[-1] > curve.mean[2] > curve.mean[0]
    with pytest.raises(ValueError, match=r"outside 2 \.\. 7"):
        rater_curve(data, statistic=alpha_statistic(), ks=[1])


def test_items_reach_the_statistic_aligned_with_their_reference_also_when_resampled():
    data, truth = _truth_crowd(n_items=12, n_raters=4)
    data[0, 1:] = np.nan
    data[1, 2:] = np.nan
    calls: list[tuple[np.ndarray, np.ndarray]] = []

    class Recorder:
        min_k = 1
        needs_items = True
        __name__ = "recorder"

        def __call__(self, values, items=None):
            calls.append((values.copy(), np.asarray(items).copy()))
            return 0.5

    for resample in (False, True):
        calls.clear()
        rater_curve(data, statistic=Recorder(), repeats=3, resample_items=resample)
        for draw, items in calls:
            assert draw.shape[0] == items.size
            rated = ~np.isnan(draw)
            assert np.array_equal(draw[rated], data[items][rated])
            k = int(rated.sum(axis=1).max())
            assert ((~np.isnan(data[items])).sum(axis=1) >= k).all()


def test_the_items_left_out_at_a_k_do_not_shift_the_reference():
    """At k = 2 the item with one rating is left out: each kept item is still scored against its own class."""
    data = np.array([[2.0, np.nan], [0.0, 0.0], [1.0, 1.0], [2.0, 2.0]])
    stat = consensus_accuracy_statistic([2, 0, 1, 2], n_classes=3)
    curve = rater_curve(data, statistic=stat, repeats=3)
    assert curve.ks == (1, 2) and curve.n_items == (4, 3) and curve.mean == (1.0, 1.0)
    boot = rater_curve(data, statistic=stat, repeats=5, resample_items=True)
    assert boot.mean == (1.0, 1.0)


def test_the_consensus_of_every_rater_is_the_crowd_reference():
    data, _ = _truth_crowd(n_items=60, n_raters=5, accuracy=0.6)
    for method in ("mace", "dawid_skene", "majority"):
        ref = crowd_reference(data, method=method, n_classes=3)
        want = class_consensus(data.astype(int), 3, method=method, orientation="units_by_raters").labels
        assert np.array_equal(ref, want)
        if method != "majority":  # the same rule on all the raters gives the reference back
            stat = consensus_accuracy_statistic(ref, method=method, n_classes=3)
            assert rater_curve(data, statistic=stat, ks=[5], repeats=2).mean == (1.0,)


def test_gold_classes_no_rater_gave_and_items_without_a_reference():
    data = np.array([[0.0, 0.0], [1.0, 1.0], [0.0, 1.0]])
    assert consensus_accuracy_statistic([0, 5, np.nan], n_classes=2)(data) == 0.5  # item 2: no reference
    assert math.isnan(consensus_accuracy_statistic([np.nan, np.nan, 0], n_classes=2)(data[:2], items=np.array([0, 1])))


def test_consensus_confidence_is_the_mean_posterior_of_the_chosen_class():
    data, _ = _truth_crowd(n_items=50, n_raters=5, missing=0.2)
    for method in ("majority", "mace"):
        stat = consensus_confidence_statistic(method=method, n_classes=3)
        res = class_consensus(np.where(np.isnan(data), -1, data).astype(int), 3, method=method,
                              orientation="units_by_raters")
        assert stat(data) == pytest.approx(float(np.mean(res.confidence)), abs=1e-12)
        assert stat.min_k == 1 and 1 / 3 <= stat(data) <= 1
    vote = rater_curve(data, statistic=consensus_confidence_statistic(method="majority", n_classes=3), repeats=5)
    assert vote.ks[0] == 1 and vote.mean[0] == 1.0
    with pytest.raises(ValueError, match="method must be one of"):
        consensus_confidence_statistic(method="vote", n_classes=3)


def test_an_accuracy_is_read_at_the_measured_k_only():
    data, truth = _truth_crowd(accuracy=0.7)
    curve = rater_curve(data, statistic=consensus_accuracy_statistic(truth, n_classes=3), repeats=40)
    needed = raters_needed(curve, target=0.85, projection="none")
    first = next(k for k, lo in zip(curve.ks, curve.low) if lo >= 0.85)
    assert needed.k == first and needed.measured and needed.projection == "none"
    assert needed.reliability == curve.low[curve.ks.index(first)] and needed.labels == first * 80
    out = raters_needed(curve, target=0.999, projection="none")
    assert out.k is None and "no projection" in out.reason and not out.measured


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), perm=st.permutations([0, 1, 2]))
def test_accuracy_is_in_0_1_and_ignores_rater_order_and_class_names(seed, perm):
    data, truth = _truth_crowd(n_items=25, n_raters=5, missing=0.3, seed=seed)
    stat = consensus_accuracy_statistic(truth, n_classes=3)
    value = stat(data)
    assert 0.0 <= value <= 1.0 or math.isnan(value)
    cols = np.random.default_rng(seed).permutation(5)
    assert stat(data[:, cols]) == pytest.approx(value, nan_ok=True)
    p = np.asarray(perm, dtype=float)
    renamed = np.where(np.isnan(data), np.nan, p[np.nan_to_num(data).astype(int)])
    assert consensus_accuracy_statistic(p[truth], n_classes=3)(renamed) == pytest.approx(value, nan_ok=True)


@pytest.mark.parametrize(("call", "message"), [
    (lambda: consensus_accuracy_statistic([0, 1], method="vote", n_classes=2), "method must be one of"),
    (lambda: consensus_accuracy_statistic([0, 1], n_classes=1), "n_classes"),
    (lambda: consensus_accuracy_statistic([np.nan, -1], n_classes=2), "no item with a class"),
    (lambda: consensus_accuracy_statistic([[0, 1]], n_classes=2), "one class code per item"),
    (lambda: consensus_accuracy_statistic([0.5, 1], n_classes=2), "integer class codes"),
    (lambda: consensus_accuracy_statistic([0, 1], n_classes=2)(np.array([[0.0, 2.0], [1.0, 1.0]])), "class codes 0 .. 1"),
    (lambda: consensus_accuracy_statistic([0, 1], n_classes=2)(np.zeros((3, 2))), "pass items="),
    (lambda: raters_needed(0.5, target=0.5, projection="none"), "pass a RaterCurve"),
    (lambda: raters_needed(0.5, target=0.5, projection="linear"), "projection must be one of"),
])
def test_bad_input_to_the_accuracy_is_refused_by_name(call, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(".", r"\.")):
        call()


def test_the_examples_of_the_accuracy_run():
    import doctest

    from agreement.methods.planning import consensus_accuracy as module

    assert doctest.testmod(module, optionflags=doctest.ELLIPSIS).failed == 0


def test_the_fitted_model_consensus_is_bayes_rule_and_matches_a_refit_at_every_rater():
    """method="fitted": P(y | c) ∝ prior[y] Π_r π_r[y, c_r] by hand; at every rater of an item the fitted
    model's consensus is the fit's own (accuracy 1 against it); no EM per draw."""
    from agreement.methods.consensus.class_labels import class_consensus
    from agreement.methods.planning.consensus_accuracy import FittedModel, consensus_accuracy_statistic

    prior = np.array([0.7, 0.3])
    conf = np.array([[[0.9, 0.1], [0.2, 0.8]], [[0.6, 0.4], [0.4, 0.6]]])
    model = FittedModel(prior, conf)
    post = model.posterior(np.array([[0, 1], [-1, -1], [1, -1]]))
    a = prior * conf[0][:, 0] * conf[1][:, 1]
    b = prior * conf[0][:, 1]
    np.testing.assert_allclose(post, [a / a.sum(), prior, b / b.sum()])

    rng = np.random.default_rng(3)
    truth = rng.integers(0, 3, 60)
    codes = np.where(rng.random((60, 6)) < 0.8, truth[:, None], rng.integers(0, 3, (60, 6)))
    fit = class_consensus(codes, 3, method="dawid_skene", orientation="units_by_raters")
    stat = consensus_accuracy_statistic(fit.labels, method="fitted", n_classes=3,
                                        model=FittedModel(fit.class_prior, fit.rater_confusion))
    assert stat(codes.astype(float)) == 1.0
    one = stat(np.where(np.arange(6) == 0, codes, np.nan))  # one rater per item: below the crowd
    assert 0.5 < one < 1.0
    with pytest.raises(ValueError, match="needs model="):
        consensus_accuracy_statistic(fit.labels, method="fitted", n_classes=3)
