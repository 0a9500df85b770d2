r"""Simulated raters of image-level classes: noisy raters, spammers, swappers and mixed crowds.

Every simulated rater is a confusion matrix ``π[y, c] = P(says c | true class
y)`` (rows sum to 1); the builders below make the usual kinds:

* :func:`noisy_confusion`: right with probability ``accuracy``, otherwise one
  of the other ``K - 1`` classes uniformly (symmetric noise);
* :func:`uniform_spammer`: a random class whatever the truth (``π = 1/K``);
* :func:`constant_spammer`: always the same class;
* :func:`swapper_confusion`: a rater who systematically exchanges two classes
  (optionally with symmetric noise on top);
* :func:`mixed_crowd`: several raters of different accuracies, e.g. a few good
  raters and many poor ones.

:func:`simulate_class_raters` draws the ``(S, R)`` reliability matrix of class
codes from a true label vector and a stack of confusion matrices, with an
optional assignment (each sample rated by ``m`` of the ``R`` raters; ``-1`` for
the others, implicit absence).

Drawing and coupling. For sample ``s`` and rater ``r`` two uniforms
``u, v`` are drawn: the rater answers the truth ``y`` when
``u < π_r[y, y]``, otherwise the class at ``v`` in the inverse CDF of the
off-diagonal row ``π_r[y, c≠y] / (1 - π_r[y, y])``. With one ``seed`` the
uniforms do not depend on the confusion matrices, so the ratings that are
right at accuracy ``a`` stay right at every ``a' > a`` (noise levels are
coupled, as in :mod:`agreement.simulate.noise.perturbations`), and the
assignment does not depend on them either. The uniforms are drawn from
``numpy.random.default_rng(seed)`` in fixed shapes ``(S, R)``: the same seed
gives the same matrix.

References: the confusion-matrix rater model of A. P. Dawid and A. M. Skene
(J. R. Stat. Soc. C 28(1), 1979); spammers and a competence per rater as in
D. Hovy et al., "Learning Whom to Trust with MACE" (NAACL-HLT 2013); simulated
crowds of mixed reliability as in V. S. Sheng, F. Provost and P. G.
Ipeirotis, "Get Another Label?" (KDD 2008).

This module does not import FiftyOne.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

__all__ = ["noisy_confusion", "uniform_spammer", "constant_spammer", "swapper_confusion", "mixed_crowd",
           "random_truth", "simulate_class_raters"]


def _check_k(n_classes: int) -> int:
    if int(n_classes) != n_classes or n_classes < 1:
        raise ValueError(f"n_classes must be a positive integer, got {n_classes!r}")
    return int(n_classes)


def noisy_confusion(n_classes: int, accuracy: float) -> np.ndarray:
    r"""Symmetric noise at a given accuracy.

    ``π[y, y] = accuracy`` and ``π[y, c] = (1 - accuracy) / (K - 1)`` for
    ``c ≠ y``. ``accuracy ∈ [0, 1]``; ``1/K`` is a uniform spammer, below
    ``1/K`` an adversarial rater. With ``K = 1`` the matrix is ``[[1]]``.

    Returns:
        ``(K, K)`` float64, rows summing to 1.
    """
    K = _check_k(n_classes)
    if not 0.0 <= accuracy <= 1.0:
        raise ValueError(f"accuracy must be in [0, 1], got {accuracy!r}")
    if K == 1:
        return np.ones((1, 1))
    off = (1.0 - accuracy) / (K - 1)
    return np.full((K, K), off) + (accuracy - off) * np.eye(K)


def uniform_spammer(n_classes: int) -> np.ndarray:
    """A rater who answers uniformly at random: ``π[y, c] = 1 / K`` (``(K, K)``)."""
    K = _check_k(n_classes)
    return np.full((K, K), 1.0 / K)


def constant_spammer(n_classes: int, *, cls: int = 0) -> np.ndarray:
    """A rater who always answers ``cls``: ``π[y, c] = [c = cls]`` (``(K, K)``)."""
    K = _check_k(n_classes)
    if not 0 <= cls < K:
        raise ValueError(f"cls must be in [0, {K - 1}], got {cls!r}")
    out = np.zeros((K, K))
    out[:, cls] = 1.0
    return out


def swapper_confusion(n_classes: int, a: int, b: int, *, accuracy: float = 1.0) -> np.ndarray:
    """A rater who exchanges classes ``a`` and ``b``: rows ``a`` and ``b`` of
    :func:`noisy_confusion` at ``accuracy`` swapped, so ``π[a, b] = π[b, a] = accuracy``
    (with ``accuracy = 1``: always ``b`` for ``a`` and ``a`` for ``b``, right elsewhere).

    Returns:
        ``(K, K)`` float64, rows summing to 1.
    """
    K = _check_k(n_classes)
    if not (0 <= a < K and 0 <= b < K) or a == b:
        raise ValueError(f"a and b must be two different classes in [0, {K - 1}], got {a!r}, {b!r}")
    out = noisy_confusion(K, accuracy)
    out[[a, b]] = out[[b, a]]
    return out


def mixed_crowd(n_classes: int, *, accuracies: Sequence[float] = (), n_uniform_spammers: int = 0,
                constant_spammers: Sequence[int] = (), swaps: Sequence[tuple[int, int]] = ()) -> np.ndarray:
    """The confusion matrices of a crowd, in this order: one noisy rater per accuracy
    (:func:`noisy_confusion`), ``n_uniform_spammers`` uniform spammers, one constant
    spammer per class in ``constant_spammers`` and one perfect swapper per pair in ``swaps``.

    Example: three good raters and four spammers,
    ``mixed_crowd(4, [0.9, 0.85, 0.8], n_uniform_spammers=2, constant_spammers=[0, 1])``.

    Returns:
        ``(R, K, K)`` float64.
    """
    K = _check_k(n_classes)
    mats = [noisy_confusion(K, a) for a in accuracies]
    mats += [uniform_spammer(K)] * int(n_uniform_spammers)
    mats += [constant_spammer(K, cls=c) for c in constant_spammers]
    mats += [swapper_confusion(K, a, b) for a, b in swaps]
    if not mats:
        raise ValueError("the crowd has no rater")
    return np.stack(mats)


def random_truth(n_samples: int, n_classes: int, *, prior: Sequence[float] | None = None, seed: int = 0) -> np.ndarray:
    """``n_samples`` true classes drawn from ``prior`` (default uniform) with ``default_rng(seed)``.

    Returns:
        ``(S,)`` int64 codes in ``[0, K - 1]``.
    """
    K = _check_k(n_classes)
    p = np.full(K, 1.0 / K) if prior is None else np.asarray(prior, dtype=np.float64)
    if p.shape != (K,) or (p < 0).any() or not np.isclose(p.sum(), 1.0):
        raise ValueError(f"prior must be {K} non-negative numbers summing to 1")
    return np.random.default_rng(seed).choice(K, size=int(n_samples), p=p).astype(np.int64)


def _check_confusions(confusions: np.ndarray) -> np.ndarray:
    conf = np.asarray(confusions, dtype=np.float64)
    if conf.ndim == 2:
        conf = conf[None]
    if conf.ndim != 3 or conf.shape[1] != conf.shape[2] or conf.shape[0] < 1:
        raise ValueError(f"confusions must be (R, K, K), got shape {np.shape(confusions)}")
    if not np.isfinite(conf).all() or (conf < 0).any() or not np.allclose(conf.sum(axis=2), 1.0):
        raise ValueError("every confusion row must be non-negative and sum to 1")
    return conf


def simulate_class_raters(truth: np.ndarray, confusions: np.ndarray, *, seed: int = 0,
                          per_sample: int | None = None) -> np.ndarray:
    r"""Class codes of ``R`` simulated raters for the true labels ``truth``.

    Rater ``r`` says ``c`` for a sample of true class ``y`` with probability
    ``confusions[r, y, c]`` (drawn as the module docstring says, coupled
    across confusion matrices for one seed). With ``per_sample = m`` every
    sample is rated by ``m`` of the ``R`` raters, chosen uniformly without
    replacement per sample; the others get ``-1`` (not assigned).

    Args:
        truth: ``(S,)`` true class codes in ``[0, K - 1]``.
        confusions: ``(R, K, K)`` (or one ``(K, K)`` matrix), rows summing to 1.
        seed: seed of ``numpy.random.default_rng``.
        per_sample: ``m ∈ [1, R]`` raters per sample, or None for every rater on every sample.

    Returns:
        ``(S, R)`` int64 codes, ``-1`` where a rater was not assigned.
    """
    conf = _check_confusions(confusions)
    R, K, _ = conf.shape
    y = np.asarray(truth)
    if y.ndim != 1 or (y.size and (not np.issubdtype(y.dtype, np.integer) or y.min() < 0 or y.max() >= K)):
        raise ValueError(f"truth must be a 1-d array of class codes in [0, {K - 1}]")
    y = y.astype(np.int64)
    S = len(y)
    if per_sample is not None and not 1 <= per_sample <= R:
        raise ValueError(f"per_sample must be in [1, {R}], got {per_sample!r}")
    rng = np.random.default_rng(seed)
    u, v, order_keys = rng.random((S, R)), rng.random((S, R)), rng.random((S, R))
    rows = conf[np.arange(R)[None, :], y[:, None]]  # (S, R, K): each rater's row for the sample's truth
    p_right = np.take_along_axis(rows, y[:, None, None].repeat(R, axis=1), axis=2)[..., 0]
    wrong = rows.copy()
    np.put_along_axis(wrong, y[:, None, None].repeat(R, axis=1), 0.0, axis=2)
    cdf = np.cumsum(wrong, axis=2)
    total = cdf[..., -1:]
    with np.errstate(invalid="ignore", divide="ignore"):
        cdf = np.where(total > 0, cdf / total, 1.0)
    other = np.minimum((v[..., None] >= cdf).sum(axis=2), K - 1)
    codes = np.where(u < p_right, y[:, None], other).astype(np.int64)
    if per_sample is not None and per_sample < R:
        rank = np.argsort(np.argsort(order_keys, axis=1), axis=1)
        codes[rank >= per_sample] = -1
    return codes
