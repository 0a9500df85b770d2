"""Tests of agreement.methods.semantic.staple: multi-label STAPLE against SimpleITK.

Oracle: SimpleITK's ``MultiLabelSTAPLEImageFilter`` (test-only dependency) on
random and structured masks (3-5 raters, 3-4 labels, 64x64), with its default
stopping rule and with fixed iteration counts (0 = the initial matrices).
Observed agreement: label maps identical on every pixel (undecided ties
included) and confusion matrices within 1e-12 (both compute in double; the
difference is summation order, about 1e-15). ITK's matrices are
``[observed][true]`` with one extra row; ours are ``[true][observed]``.
These tests do not import FiftyOne.
"""

from __future__ import annotations

import doctest

import numpy as np
import pytest

import agreement.methods.semantic.staple as staple_module
from agreement.methods.semantic.staple import InsufficientRatersError, label_patterns, multilabel_staple

sitk = pytest.importorskip("SimpleITK")

CM_TOL = 1e-12


def itk_staple(masks, max_iter=None, prior=None, undecided=None):
    """SimpleITK's multi-label STAPLE: (label map, confusion (R, L, L) as [true, observed])."""
    f = sitk.MultiLabelSTAPLEImageFilter()
    if max_iter is not None:
        f.SetMaximumNumberOfIterations(max_iter)
    if prior is not None:
        f.SetPriorProbabilities([float(p) for p in prior])
    if undecided is not None:
        f.SetLabelForUndecidedPixels(undecided)
    out = f.Execute([sitk.GetImageFromArray(np.ascontiguousarray(m, dtype=np.uint8)) for m in masks])
    L = int(max(m.max() for m in masks)) + 1
    cms = np.array([np.array(f.GetConfusionMatrix(i)).reshape(L + 1, L) for i in range(len(masks))])
    assert np.all(cms[:, L] == 0) or max_iter == 0
    return sitk.GetArrayFromImage(out).astype(np.int64), cms[:, :L, :].transpose(0, 2, 1)


def assert_matches_itk(masks, **kwargs):
    itk_kwargs = {"max_iter": kwargs.get("max_iter"), "prior": kwargs.get("prior"),
                  "undecided": kwargs.get("label_undecided")}
    labels, cms = itk_staple(masks, **itk_kwargs)
    ours = multilabel_staple(masks, **kwargs)
    assert np.array_equal(ours.consensus, labels), f"{(ours.consensus != labels).sum()} pixels differ"
    defined = ~np.isnan(ours.confusion)
    # Rows of labels with no estimated pixel are NaN here (ITK: zeros or the stale initial row).
    assert np.all(defined[:, ours.truth_mass > 0, :])
    np.testing.assert_allclose(ours.confusion[defined], cms[defined], atol=CM_TOL, rtol=0)
    return ours


def noisy(truth, rates, L, rng):
    return [np.where(rng.random(truth.shape) < q, rng.integers(0, L, truth.shape), truth) for q in rates]


def test_doctests():
    failures, _ = doctest.testmod(staple_module)
    assert failures == 0


@pytest.mark.parametrize("seed", range(12))
def test_random_masks_match_simpleitk(seed):
    rng = np.random.default_rng(seed)
    R, L = int(rng.integers(3, 6)), int(rng.integers(3, 5))
    truth = rng.integers(0, L, (64, 64))
    for max_iter in (None, 0, 1, 4):
        assert_matches_itk(noisy(truth, rng.uniform(0.05, 0.6, R), L, rng), max_iter=max_iter)


@pytest.mark.parametrize("seed", range(6))
def test_structured_masks_match_simpleitk(seed):
    rng = np.random.default_rng(100 + seed)
    L = 3 + seed % 2
    yy, xx = np.mgrid[:64, :64]
    truth = (xx // 16 + yy // 21) % L
    masks = [np.roll(truth, (int(rng.integers(-3, 4)), int(rng.integers(-3, 4))), (0, 1)) for _ in range(3 + seed % 3)]
    ours = assert_matches_itk(masks)
    assert ours.converged and ours.n_iter >= 1


def _tie_cases():
    yy, xx = np.mgrid[:64, :64]
    t = (xx // 16) % 3
    a = np.zeros((64, 64), int)
    a[10:40, 10:40] = 1
    b = np.zeros((64, 64), int)
    b[20:50, 20:50] = 2
    rng = np.random.default_rng(5)
    return {
        "two equal pairs (half undecided)": [t, t, (t + 1) % 3, (t + 1) % 3],
        "three-way split (all undecided)": [t, (t + 1) % 3, (t + 2) % 3],
        "overlapping squares": [a, b, np.maximum(a, b), np.where(b > 0, b, a), a],
        "unused label 1": [a * 2, np.roll(a * 2, 3, 0), np.roll(a * 2, 5, 1)],
        "a rater never uses label 2": [t, t, np.minimum(t, 1), np.where(rng.random(t.shape) < 0.2, 0, t)],
    }


@pytest.mark.parametrize("name", list(_tie_cases()))
def test_ties_unused_labels_and_undecided_match_simpleitk(name):
    masks = _tie_cases()[name]
    for max_iter in (None, 0, 2):
        ours = assert_matches_itk(masks, max_iter=max_iter)
    L = int(max(m.max() for m in masks)) + 1
    assert ours.label_undecided == L
    assert ours.n_undecided == int((ours.consensus == L).sum())
    if name.startswith("three-way"):
        assert ours.n_undecided == 64 * 64


def test_prior_and_undecided_label_match_simpleitk():
    rng = np.random.default_rng(3)
    truth = rng.integers(0, 4, (64, 64))
    masks = noisy(truth, [0.2, 0.4, 0.5, 0.6], 4, rng)
    assert_matches_itk(masks, prior=[0.1, 0.2, 0.3, 0.4])
    two = _tie_cases()["two equal pairs (half undecided)"]
    ours = assert_matches_itk(two, label_undecided=255)
    assert ours.n_undecided > 0 and set(np.unique(ours.consensus)) <= {0, 1, 2, 255}


def test_sensitivity_and_specificity_from_the_confusion_matrices():
    rng = np.random.default_rng(8)
    truth = rng.integers(0, 3, (64, 64))
    r = multilabel_staple(noisy(truth, [0.1, 0.3, 0.5], 3, rng))
    np.testing.assert_allclose(r.confusion.sum(axis=2), 1.0, atol=1e-12)
    np.testing.assert_allclose(r.sensitivity, np.einsum("rii->ri", r.confusion))
    m = r.truth_mass
    for k in range(3):
        for c in range(3):
            others = [i for i in range(3) if i != c]
            expected = sum(m[i] * (1 - r.confusion[k, i, c]) for i in others) / m[others].sum()
            assert r.specificity[k, c] == pytest.approx(expected, abs=1e-12)
    assert np.all((r.sensitivity >= 0) & (r.sensitivity <= 1) & (r.specificity >= 0) & (r.specificity <= 1))
    assert m.sum() == pytest.approx(64 * 64)
    # the least noisy rater is the most sensitive
    assert np.all(r.sensitivity[0] > r.sensitivity[2])


def test_absent_rater_is_left_out():
    rng = np.random.default_rng(9)
    truth = rng.integers(0, 3, (32, 32))
    masks = noisy(truth, [0.1, 0.3, 0.4], 3, rng)
    with_none = multilabel_staple([masks[0], None, masks[1], masks[2]])
    without = multilabel_staple(masks)
    assert np.array_equal(with_none.consensus, without.consensus)
    assert np.all(np.isnan(with_none.confusion[1])) and np.all(np.isnan(with_none.specificity[1]))
    np.testing.assert_allclose(with_none.confusion[[0, 2, 3]], without.confusion)
    assert "raters [1]" in with_none.reason


def test_textbook_initialisation_recovers_a_clean_truth():
    yy, xx = np.mgrid[:64, :64]
    truth = (xx // 16 + yy // 16) % 4
    rng = np.random.default_rng(11)
    masks = [truth, truth] + noisy(truth, [0.5], 4, rng)
    for init in ("itk", "vote"):
        r = multilabel_staple(masks, init=init)
        assert np.array_equal(r.consensus, truth) and r.converged


def test_label_patterns_match_unique():
    rng = np.random.default_rng(2)
    D = rng.integers(0, 5, (3, 1000))
    rows, counts, inverse = label_patterns(D, 5)
    np.testing.assert_array_equal(rows[inverse].T, D)
    u, c = np.unique(D.T, axis=0, return_counts=True)
    assert len(rows) == len(u) and counts.sum() == 1000
    big = rng.integers(0, 300, (4, 500))  # 300**4 > the dense limit: np.unique path
    rows, counts, inverse = label_patterns(big, 300)
    np.testing.assert_array_equal(rows[inverse].T, big)


def test_bad_inputs():
    a = np.zeros((4, 4), int)
    with pytest.raises(InsufficientRatersError, match="at least two raters"):
        multilabel_staple([a, None])
    with pytest.raises(ValueError, match="same shape"):
        multilabel_staple([a, np.zeros((4, 5), int)])
    with pytest.raises(ValueError, match="dtype float64"):
        multilabel_staple([a, a.astype(float)])
    with pytest.raises(ValueError, match="negative"):
        multilabel_staple([a, a - 1])
    with pytest.raises(ValueError, match="max_iter"):
        multilabel_staple([a, a], max_iter=-1)
    with pytest.raises(ValueError, match="init"):
        multilabel_staple([a, a], init="random")
    with pytest.raises(ValueError, match="prior"):
        multilabel_staple([a, a + 1], prior=[0.5])
