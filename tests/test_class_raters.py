"""Simulated class raters (agreement.simulate.noise.class_raters)."""

from __future__ import annotations

import numpy as np
import pytest

from agreement.simulate.noise.class_raters import (
    constant_spammer,
    mixed_crowd,
    noisy_confusion,
    random_truth,
    simulate_class_raters,
    swapper_confusion,
    uniform_spammer,
)


def test_confusion_builders():
    np.testing.assert_allclose(noisy_confusion(3, 0.7), [[0.7, 0.15, 0.15], [0.15, 0.7, 0.15], [0.15, 0.15, 0.7]])
    np.testing.assert_allclose(uniform_spammer(4), 0.25)
    np.testing.assert_allclose(constant_spammer(3, cls=2), [[0, 0, 1]] * 3)
    sw = swapper_confusion(3, 0, 2)
    np.testing.assert_allclose(sw, [[0, 0, 1], [0, 1, 0], [1, 0, 0]])
    assert noisy_confusion(1, 0.3).tolist() == [[1.0]]
    crowd = mixed_crowd(4, accuracies=[0.9, 0.8], n_uniform_spammers=2, constant_spammers=[1], swaps=[(0, 1)])
    assert crowd.shape == (6, 4, 4)
    np.testing.assert_allclose(crowd.sum(axis=2), 1.0)


@pytest.mark.parametrize("call", [
    lambda: noisy_confusion(3, 1.2), lambda: constant_spammer(3, cls=3), lambda: swapper_confusion(3, 1, 1),
    lambda: mixed_crowd(3), lambda: random_truth(5, 3, prior=[0.5, 0.5]), lambda: noisy_confusion(0, 0.5),
    lambda: simulate_class_raters(np.array([0, 3]), noisy_confusion(3, 0.9)),
    lambda: simulate_class_raters(np.array([0, 1]), np.full((1, 3, 3), 0.5)),
    lambda: simulate_class_raters(np.array([0, 1]), mixed_crowd(3, accuracies=[0.9, 0.8]), per_sample=3),
])
def test_bad_arguments(call):
    with pytest.raises(ValueError):
        call()


def test_accuracy_and_confusion_are_reproduced():
    truth = random_truth(20000, 4, seed=0)
    conf = mixed_crowd(4, accuracies=[0.9, 0.6], n_uniform_spammers=1, constant_spammers=[3], swaps=[(0, 1)])
    codes = simulate_class_raters(truth, conf, seed=1)
    assert codes.shape == (20000, 5) and codes.min() >= 0 and codes.max() <= 3
    for r in range(5):
        emp = np.array([np.bincount(codes[truth == y, r], minlength=4) / (truth == y).sum() for y in range(4)])
        np.testing.assert_allclose(emp, conf[r], atol=0.03)


def test_seeded_and_coupled_across_accuracies():
    truth = random_truth(500, 3, seed=2)
    lo = simulate_class_raters(truth, mixed_crowd(3, accuracies=[0.5, 0.6]), seed=3)
    hi = simulate_class_raters(truth, mixed_crowd(3, accuracies=[0.8, 0.9]), seed=3)
    np.testing.assert_array_equal(lo, simulate_class_raters(truth, mixed_crowd(3, accuracies=[0.5, 0.6]), seed=3))
    assert not np.array_equal(lo, simulate_class_raters(truth, mixed_crowd(3, accuracies=[0.5, 0.6]), seed=4))
    right_lo, right_hi = lo == truth[:, None], hi == truth[:, None]
    assert (right_hi | ~right_lo).all()  # right at a lower accuracy: right at a higher one


def test_assignment_m_of_r():
    truth = random_truth(300, 4, seed=5)
    conf = mixed_crowd(4, accuracies=[0.9] * 6)
    codes = simulate_class_raters(truth, conf, seed=6, per_sample=2)
    assert ((codes >= 0).sum(axis=1) == 2).all()
    load = (codes >= 0).sum(axis=0)
    assert load.min() > 60 and load.max() < 140  # about 300 * 2 / 6 = 100 each
    full = simulate_class_raters(truth, conf, seed=6)
    kept = codes >= 0
    np.testing.assert_array_equal(codes[kept], full[kept])  # the assignment does not change the answers


def test_random_truth_prior():
    t = random_truth(10000, 3, prior=[0.7, 0.2, 0.1], seed=0)
    np.testing.assert_allclose(np.bincount(t) / len(t), [0.7, 0.2, 0.1], atol=0.02)
    np.testing.assert_array_equal(t, random_truth(10000, 3, prior=[0.7, 0.2, 0.1], seed=0))
