"""Tests of agreement.methods.consensus.staple: binary STAPLE, majority vote, Dice, instance unions.

Oracles: SimpleITK's ``STAPLEImageFilter`` (test-only dependency) with the
same iteration limit, on random and structured masks; a plain per-pixel EM
written here (no pattern grouping) for missing data and many raters.
A constructed case shows STAPLE beating majority vote when two careful
raters are outvoted by three noisy ones. These tests do not import FiftyOne.
"""

from __future__ import annotations

import doctest
import inspect

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import agreement.methods.consensus.staple as staple_module
from agreement.methods.consensus.staple import (
    InsufficientRatersError,
    dice,
    mask_majority_vote,
    staple,
    union_of_instances,
)

sitk = pytest.importorskip("SimpleITK")


def itk_staple(masks: np.ndarray, max_iter: int, confidence_weight: float = 1.0):
    """SimpleITK's STAPLE on (R, ...) binary masks: (sensitivity, specificity, probability, elapsed)."""
    images = [sitk.GetImageFromArray(np.ascontiguousarray(m, dtype=np.uint8)) for m in masks]
    f = sitk.STAPLEImageFilter()
    f.SetForegroundValue(1.0)
    f.SetMaximumIterations(max_iter)
    f.SetConfidenceWeight(confidence_weight)
    out = f.Execute(images)
    return (
        np.array(f.GetSensitivity()),
        np.array(f.GetSpecificity()),
        sitk.GetArrayFromImage(out),
        f.GetElapsedIterations(),
    )


def assert_matches_itk(masks: np.ndarray, max_iter: int = 2000, **kwargs) -> None:
    ours = staple(masks, max_iter=max_iter, **kwargs)
    weight = kwargs.get("prior", None)
    cw = 1.0 if weight is None else weight / masks.mean()
    sens, spec, prob, elapsed = itk_staple(masks, max_iter, cw)
    np.testing.assert_allclose(ours.sensitivity, sens, atol=1e-4)
    np.testing.assert_allclose(ours.specificity, spec, atol=1e-4)
    np.testing.assert_allclose(ours.probability, prob, atol=1e-4)
    assert np.array_equal(ours.probability > 0.5, prob > 0.5)
    # Same stopping rule: ITK reports one iteration fewer when it converges.
    assert ours.n_iter == (elapsed + 1 if ours.converged else elapsed)


def noisy_raters(truth: np.ndarray, flips, rng) -> np.ndarray:
    return np.array([truth ^ (rng.random(truth.shape) < f) for f in flips])


def test_doctests():
    failures, _ = doctest.testmod(staple_module)
    assert failures == 0


# --------------------------------------------------------------------------
# Agreement with SimpleITK
# --------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(25))
def test_matches_simpleitk_on_random_masks(seed):
    rng = np.random.default_rng(seed)
    R = int(rng.integers(2, 8))
    shape = tuple(int(v) for v in rng.integers(3, 40, 2))
    truth = rng.random(shape) < rng.uniform(0.05, 0.9)
    masks = noisy_raters(truth, rng.uniform(0, 0.4, R), rng)
    if not masks.any() or masks.all():
        pytest.skip("degenerate draw")
    assert_matches_itk(masks)


def disk(shape, centre, radius) -> np.ndarray:
    yy, xx = np.indices(shape)
    return (yy - centre[0]) ** 2 + (xx - centre[1]) ** 2 <= radius**2


def test_matches_simpleitk_on_structured_masks():
    shape = (64, 80)
    # Raters who draw the same object shifted, larger or smaller, plus one with holes.
    masks = np.array(
        [
            disk(shape, (32, 40), 15),
            disk(shape, (33, 41), 16),
            disk(shape, (30, 38), 13),
            disk(shape, (32, 44), 15) | disk(shape, (10, 10), 4),
            disk(shape, (32, 40), 15) & ~disk(shape, (32, 40), 5),
        ]
    )
    assert_matches_itk(masks)
    # Two objects, raters missing one of them.
    two = np.array(
        [
            disk(shape, (20, 20), 8) | disk(shape, (44, 60), 10),
            disk(shape, (20, 21), 8),
            disk(shape, (44, 59), 11),
            disk(shape, (21, 20), 7) | disk(shape, (44, 60), 9),
        ]
    )
    assert_matches_itk(two)


def test_matches_simpleitk_on_volumes_and_with_a_prior():
    rng = np.random.default_rng(11)
    truth = np.zeros((6, 20, 24), bool)
    truth[1:5, 4:15, 6:20] = True
    masks = noisy_raters(truth, [0.05, 0.1, 0.2, 0.3], rng)
    assert_matches_itk(masks)
    # ITK's ConfidenceWeight w scales the default prior g to g w.
    assert_matches_itk(masks, prior=0.5 * float(masks.mean()))


def test_matches_simpleitk_when_stopped_early():
    rng = np.random.default_rng(5)
    truth = disk((40, 40), (20, 20), 12)
    masks = noisy_raters(truth, [0.3, 0.35, 0.4], rng)
    for max_iter in (1, 2, 7):
        r = staple(masks, max_iter=max_iter)
        assert not r.converged and r.n_iter == max_iter
        assert_matches_itk(masks, max_iter=max_iter)


# --------------------------------------------------------------------------
# STAPLE beats majority vote when careful raters are outvoted
# --------------------------------------------------------------------------


def test_staple_beats_majority_vote_when_two_careful_raters_are_outvoted():
    # An ellipse; two careful raters flip 2% of the pixels, three noisy raters
    # 30% (independently). Where the three noisy raters err together they
    # outvote the careful pair under majority vote; STAPLE learns each
    # rater's sensitivity and specificity and weights the careful pair more.
    rng = np.random.default_rng(2004)
    yy, xx = np.indices((128, 128))
    truth = ((xx - 64) / 40.0) ** 2 + ((yy - 60) / 28.0) ** 2 <= 1
    masks = noisy_raters(truth, [0.02, 0.02, 0.30, 0.30, 0.30], rng)
    result = staple(masks)
    d_staple = dice(result.consensus(), truth)
    d_vote = dice(mask_majority_vote(masks), truth)
    d_raters = [round(dice(m, truth), 4) for m in masks]
    report = (
        f"Dice against the truth: STAPLE {d_staple:.4f}, majority vote {d_vote:.4f}; "
        f"single raters {d_raters}; STAPLE sensitivity {result.sensitivity.round(3).tolist()}, "
        f"specificity {result.specificity.round(3).tolist()}, {result.n_iter} iterations"
    )
    print(report)
    assert result.converged, report
    assert d_staple > d_vote + 0.03, report
    # The careful raters are recognised as better.
    assert result.sensitivity[:2].min() > result.sensitivity[2:].max(), report
    assert result.specificity[:2].min() > result.specificity[2:].max(), report


# --------------------------------------------------------------------------
# Edge cases
# --------------------------------------------------------------------------


def test_identical_raters():
    mask = disk((20, 20), (10, 10), 5)
    r = staple([mask, mask, mask])
    np.testing.assert_array_equal(r.sensitivity, 1.0)
    np.testing.assert_array_equal(r.specificity, 1.0)
    np.testing.assert_array_equal(r.probability, mask.astype(float))
    assert r.converged and r.reason is None


def test_all_empty_masks_give_nan_sensitivity_with_a_reason():
    r = staple(np.zeros((3, 5, 5), bool))
    assert np.all(np.isnan(r.sensitivity))
    np.testing.assert_array_equal(r.specificity, 1.0)
    np.testing.assert_array_equal(r.probability, 0.0)
    assert r.probability.shape == (5, 5)
    assert "no foreground" in r.reason and "sensitivity is undefined" in r.reason


def test_all_full_masks_give_nan_specificity_with_a_reason():
    r = staple(np.ones((2, 4), bool))
    assert np.all(np.isnan(r.specificity))
    np.testing.assert_array_equal(r.sensitivity, 1.0)
    np.testing.assert_array_equal(r.probability, 1.0)
    assert "specificity is undefined" in r.reason


@pytest.mark.parametrize("masks", [np.zeros((1, 4, 4)), [np.zeros((4, 4)), None], [None, None]])
def test_fewer_than_two_raters_is_a_clear_error(masks):
    with pytest.raises(InsufficientRatersError, match="at least two raters"):
        staple(masks)
    assert issubclass(InsufficientRatersError, ValueError)


def test_bad_arguments():
    m = np.zeros((2, 3, 3))
    with pytest.raises(ValueError, match="same shape"):
        staple([np.zeros((3, 3)), np.zeros((3, 4))])
    with pytest.raises(ValueError, match="prior"):
        staple(m, prior=1.0)
    with pytest.raises(ValueError, match="max_iter"):
        staple(m, max_iter=0)
    with pytest.raises(ValueError, match="tol"):
        staple(m, tol=-1.0)
    with pytest.raises(ValueError, match=r"\(R, H, W\)"):
        staple(np.zeros(5))
    with pytest.raises(ValueError, match="NaN"):
        staple(np.array([[0.0, np.nan], [1.0, 0.0]]))


# --------------------------------------------------------------------------
# Missing data and many raters, against a plain per-pixel EM
# --------------------------------------------------------------------------


def reference_staple(D: np.ndarray, obs: np.ndarray, max_iter: int, tol: float = 1e-7):
    """Per-pixel EM over (R, N) decisions with an observed mask; ITK's init and stopping rule."""
    D = D.astype(float)
    obs = obs.astype(float)
    g = (D * obs).sum() / obs.sum()
    n = obs.sum(axis=0)
    W = np.where(n > 0, (D * obs).sum(axis=0) / np.maximum(n, 1), g)
    last = np.full(2 * len(D), -10.0)
    for it in range(1, max_iter + 1):
        p = (D * obs) @ W / (obs @ W)
        q = ((1 - D) * obs) @ (1 - W) / (obs @ (1 - W))
        log_a = np.log(g) + (obs * (D * np.log(p)[:, None] + (1 - D) * np.log1p(-p)[:, None])).sum(0)
        log_b = np.log1p(-g) + (obs * (D * np.log1p(-q)[:, None] + (1 - D) * np.log(q)[:, None])).sum(0)
        W = 1 / (1 + np.exp(log_b - log_a))
        now = np.r_[p, q]
        if np.abs(now - last).max() <= tol:
            return p, q, W, it
        last = now
    return p, q, W, max_iter


def test_partially_observed_raters_match_the_reference_em():
    rng = np.random.default_rng(8)
    truth = disk((30, 30), (15, 15), 9)
    masks = noisy_raters(truth, [0.05, 0.1, 0.15, 0.25], rng)
    observed = rng.random(masks.shape) < 0.7
    r = staple(masks, observed=list(observed), max_iter=500)
    p, q, W, it = reference_staple(masks.reshape(4, -1), observed.reshape(4, -1), 500)
    np.testing.assert_allclose(r.sensitivity, p, atol=1e-10)
    np.testing.assert_allclose(r.specificity, q, atol=1e-10)
    np.testing.assert_allclose(r.probability.reshape(-1), W, atol=1e-10)
    assert r.n_iter == it


def test_an_absent_rater_gets_nan_and_changes_nothing_else():
    rng = np.random.default_rng(9)
    truth = disk((25, 25), (12, 12), 7)
    masks = noisy_raters(truth, [0.05, 0.1, 0.2], rng)
    with_absent = staple([masks[0], None, masks[1], masks[2]])
    without = staple(masks)
    assert np.isnan(with_absent.sensitivity[1]) and np.isnan(with_absent.specificity[1])
    assert "[1]" in with_absent.reason
    np.testing.assert_allclose(with_absent.sensitivity[[0, 2, 3]], without.sensitivity, atol=1e-12)
    np.testing.assert_allclose(with_absent.probability, without.probability, atol=1e-12)


def test_many_raters_do_not_underflow_and_use_the_generic_grouping():
    rng = np.random.default_rng(10)
    truth = rng.random(300) < 0.4
    masks = noisy_raters(truth, rng.uniform(0.05, 0.3, 45), rng)  # > 39 raters: np.unique rows
    r = staple(masks, max_iter=300)
    assert np.all(np.isfinite(r.probability))
    p, q, W, it = reference_staple(masks, np.ones_like(masks), 300)
    np.testing.assert_allclose(r.sensitivity, p, atol=1e-9)
    np.testing.assert_allclose(r.probability, W, atol=1e-9)
    # With 200 raters the plain product a_x of the E-step underflows; the
    # log-odds form does not.
    many = noisy_raters(truth, np.full(200, 0.3), rng)
    r = staple(many, max_iter=50)
    assert np.all(np.isfinite(r.probability)) and dice(r.consensus(), truth) > 0.99


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1), st.permutations(range(4)))
def test_permuting_raters_permutes_the_estimates(seed, order):
    rng = np.random.default_rng(seed)
    truth = rng.random((12, 12)) < 0.4
    masks = noisy_raters(truth, [0.05, 0.1, 0.2, 0.3], rng)
    if not masks.any() or masks.all():
        return
    a = staple(masks, max_iter=300)
    b = staple(masks[list(order)], max_iter=300)
    np.testing.assert_allclose(b.sensitivity, a.sensitivity[list(order)], atol=1e-9)
    np.testing.assert_allclose(b.probability, a.probability, atol=1e-9)


# --------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------


def test_union_of_instances():
    a = np.zeros((4, 4), bool)
    a[0, 0] = True
    b = np.zeros((4, 4), np.uint8)
    b[3, 3] = 255
    u = union_of_instances([a, b])
    assert u.dtype == bool and u.sum() == 2 and u[0, 0] and u[3, 3]
    assert union_of_instances([], shape=(2, 3)).shape == (2, 3)
    with pytest.raises(ValueError, match="shape="):
        union_of_instances([])
    with pytest.raises(ValueError, match="instance mask 1"):
        union_of_instances([a, np.zeros((3, 3))])


def test_mask_majority_vote_ties_and_absent_raters():
    masks = [[1, 1, 0, 1], [1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 0, 1]]
    assert mask_majority_vote(masks).tolist() == [False, False, False, False]  # 2 of 4 is a tie
    assert mask_majority_vote(masks[:3]).tolist() == [True, True, False, False]
    assert mask_majority_vote([[1, 0], None, [1, 1]]).tolist() == [True, False]  # 1 of 2 ties
    assert mask_majority_vote(np.ones((3, 2, 2))).shape == (2, 2)


def test_dice():
    assert dice([1, 1, 0, 0], [1, 0, 1, 0]) == 0.5
    assert dice([1, 1], [1, 1]) == 1.0
    assert dice([1, 0], [0, 1]) == 0.0
    assert np.isnan(dice([0, 0], [0, 0]))
    assert dice([0, 0], [0, 0], empty=1.0) == 1.0
    with pytest.raises(ValueError, match="same shape"):
        dice([1, 0], [1, 0, 0])


def test_one_staple_em_loop_serves_the_dense_and_the_grouped_layouts(monkeypatch):
    import agreement.methods.consensus.pixels as pixels
    import agreement.methods.consensus.staple as staple_module

    calls = []
    real = staple_module.staple_em

    def spy(*args, **kwargs):
        calls.append(inspect.signature(real).bind(*args, **kwargs).arguments["g"])  # the prior g
        return real(*args, **kwargs)

    monkeypatch.setattr(staple_module, "staple_em", spy)
    monkeypatch.setattr(pixels, "staple_em", spy)
    truth = np.zeros((6, 6), bool)
    truth[1:4, 1:5] = True
    noisy = truth.copy()
    noisy[0, 0] = True
    staple([truth, truth, noisy])
    W, p, q, n_iter, converged = pixels.pattern_staple(
        np.array([3.0, 2.0, 5.0]), np.array([0, 0, 1, 1, 2, 2]), np.array([0, 1, 0, 1, 0, 1]),
        np.array([True, True, True, False, False, False]), 2)
    assert len(calls) == 2 and converged and W.shape == (3,) and p.shape == q.shape == (2,)
