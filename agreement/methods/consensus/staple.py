r"""Binary STAPLE: consensus masks with per-rater sensitivity and specificity.

STAPLE (Simultaneous Truth And Performance Level Estimation, Warfield, Zou &
Wells 2004) treats the true mask :math:`T` as hidden and each rater :math:`r`
as a noisy binary classifier with sensitivity :math:`p_r = P(D_r = 1 \mid T
= 1)` and specificity :math:`q_r = P(D_r = 0 \mid T = 0)`, independent given
the truth. Expectation-maximisation alternates

* **M-step** (performance from the current truth estimate :math:`W`):

  .. math::

      p_r = \frac{\sum_x W_x\,[D_{rx} = 1]}{\sum_x W_x}, \qquad
      q_r = \frac{\sum_x (1 - W_x)\,[D_{rx} = 0]}{\sum_x (1 - W_x)}

* **E-step** (posterior probability of foreground per pixel, prior :math:`g`):

  .. math::

      a_x = g \prod_r p_r^{D_{rx}} (1 - p_r)^{1 - D_{rx}}, \quad
      b_x = (1 - g) \prod_r (1 - q_r)^{D_{rx}} q_r^{1 - D_{rx}}, \quad
      W_x = \frac{a_x}{a_x + b_x}

  (evaluated as a logistic function of :math:`\log a_x - \log b_x`, which
  cannot underflow with many raters).

Conventions, chosen to reproduce ITK's ``STAPLEImageFilter`` (used through
SimpleITK) and checked against it in the tests:

* **Initialisation**: :math:`W` starts as the fraction of raters marking each
  pixel (the vote share), and the first step is an M-step. (The paper
  suggests starting from :math:`p_r = q_r` close to 1 instead; ITK does not,
  and neither do we.)
* **Prior**: a single number, by default the mean foreground fraction over
  raters and pixels, :math:`g = \frac{1}{RN}\sum_{r,x} D_{rx}`
  (ITK's ``ConfidenceWeight`` of 1); ``prior=`` overrides it.
* **Convergence**: stop after the first iteration in which no rater's
  sensitivity or specificity moved by more than ``tol`` (default ``1e-7``,
  ITK's "seven digits"). ``n_iter`` counts the EM iterations performed;
  ITK's ``GetElapsedIterations()`` reports one fewer when it converges.

Pixels are grouped by their pattern of rater decisions before iterating (at
most :math:`3^R` patterns), which makes each iteration cost
:math:`O(\text{patterns} \times R)` instead of :math:`O(N R)` and gives the
same numbers up to summation order.

Missing data: a rater may be absent from a sample (``None`` in the list of
masks) or may have labelled only part of it (``observed``). An unobserved
decision contributes to neither step; an absent rater gets NaN sensitivity
and specificity. At least two raters with data are needed
(:class:`InsufficientRatersError` otherwise), as agreement needs two
opinions.

Degenerate inputs: when no rater marks any (observed) pixel, there is no
foreground to detect: sensitivities are NaN, specificities 1 and the
consensus is empty; when every rater marks every pixel, symmetrically. The
result's ``reason`` says so.

References:
    .. [Warfield2004] S. K. Warfield, K. H. Zou and W. M. Wells, "Simultaneous
       Truth and Performance Level Estimation (STAPLE): An Algorithm for the
       Validation of Image Segmentation", IEEE Transactions on Medical Imaging
       23(7), 903-921, 2004.
    .. [Landman2012] B. A. Landman et al., "Robust Statistical Fusion of Image
       Labels", IEEE TMI 31(2), 512-522, 2012 (raters who did not label every
       pixel).
    .. [ITK] ``itk::STAPLEImageFilter``, Insight Toolkit, exposed as
       ``SimpleITK.STAPLEImageFilter``.
    .. [Dice1945] L. R. Dice, "Measures of the Amount of Ecologic Association
       Between Species", Ecology 26(3), 297-302, 1945.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence, cast

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import expit

__all__ = [
    "InsufficientRatersError",
    "StapleResult",
    "staple",
    "staple_em",
    "union_of_instances",
    "mask_majority_vote",
    "dice",
]


class InsufficientRatersError(ValueError):
    """Fewer than two raters with a mask: consensus and agreement are undefined.

    Callers that process many samples catch this to count and skip the
    sample (never to drop it silently).
    """


@dataclass(frozen=True)
class StapleResult:
    r"""Result of :func:`staple`.

    Attributes:
        sensitivity: ``(R,)`` estimated :math:`p_r = P(\text{rater marks} \mid \text{foreground})`
            in ``[0, 1]``; NaN for an absent rater or when there is no foreground.
        specificity: ``(R,)`` estimated :math:`q_r = P(\text{rater leaves} \mid \text{background})`
            in ``[0, 1]``; NaN for an absent rater or when there is no background.
        probability: float64 posterior probability of foreground per pixel, in ``[0, 1]``, of the
            masks' pixel shape (``(H, W)`` for ``(R, H, W)`` input).
        prior: the prior foreground probability :math:`g` used, in ``(0, 1)``.
        n_iter: EM iterations performed (0 for a degenerate input).
        converged: whether the change fell within ``tol`` before ``max_iter``.
        reason: why some numbers are NaN, or ``None`` when all are defined.
    """

    sensitivity: np.ndarray
    specificity: np.ndarray
    probability: np.ndarray
    prior: float
    n_iter: int
    converged: bool
    reason: str | None = None

    def consensus(self, threshold: float = 0.5) -> np.ndarray:
        """The consensus mask ``probability > threshold``.

        Args:
            threshold: the posterior above which a pixel is foreground (0.5: the maximum a posteriori mask).

        Returns:
            bool, of the masks' pixel shape.
        """
        return self.probability > threshold


# --------------------------------------------------------------------------
# Input handling
# --------------------------------------------------------------------------


def _stack(
    masks: ArrayLike | Sequence[ArrayLike | None], observed: ArrayLike | Sequence[ArrayLike | None] | None
) -> tuple[np.ndarray, np.ndarray, tuple[int, ...]]:
    """Decisions ``(R, N)`` bool, observed ``(R, N)`` bool and the pixel shape."""
    if isinstance(masks, np.ndarray):
        if masks.ndim < 2:
            raise ValueError(f"masks must have shape (R, H, W) or (R, N); got {masks.shape}")
        items: list = list(masks)
    else:  # a sequence (or any iterable) of masks; anything else raises TypeError here
        items = list(cast(Iterable[Any], masks))
    present = [m for m in items if m is not None]
    if not present:
        raise InsufficientRatersError("no rater has a mask; STAPLE needs at least two raters")
    shape = np.asarray(present[0]).shape
    for k, m in enumerate(items):
        if m is not None and np.asarray(m).shape != shape:
            raise ValueError(f"all masks must have the same shape; rater 0 has {shape}, rater {k} has {np.asarray(m).shape}")
    R, N = len(items), int(np.prod(shape, dtype=np.int64))
    D = np.zeros((R, N), dtype=bool)
    obs = np.zeros((R, N), dtype=bool)
    for k, m in enumerate(items):
        if m is None:
            continue
        arr = np.asarray(m)
        if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
            raise ValueError(f"rater {k}'s mask has NaN or infinite values")
        D[k] = arr.reshape(-1) != 0
        obs[k] = True
    if observed is not None:
        o_items = list(cast(Iterable[Any], observed))
        if len(o_items) != R:
            raise ValueError(f"observed must have one entry per rater ({R}); got {len(o_items)}")
        for k, o in enumerate(o_items):
            if o is None or items[k] is None:
                continue
            o = np.asarray(o, dtype=bool)
            if o.shape != shape:
                raise ValueError(f"observed[{k}] has shape {o.shape}, the masks {shape}")
            obs[k] &= o.reshape(-1)
    D &= obs
    return D, obs, tuple(shape)


def _patterns(D: np.ndarray, obs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Unique per-pixel decision patterns.

    Returns ``(ones, seen, counts, inverse)``: ``ones``/``seen`` are
    ``(U, R)`` bool (rater marks / rater observed), ``counts`` ``(U,)`` pixels
    per pattern and ``inverse`` ``(N,)`` the pattern of each pixel.
    """
    R = D.shape[0]
    state = D.astype(np.int64) + 2 * (~obs)  # 0 background, 1 foreground, 2 unobserved
    if R <= 39:  # 3**39 < 2**63
        code = (3 ** np.arange(R, dtype=np.int64)) @ state
        _, first, inverse, counts = np.unique(code, return_index=True, return_inverse=True, return_counts=True)
        rows = state[:, first].T
    else:
        rows, inverse, counts = np.unique(state.T, axis=0, return_inverse=True, return_counts=True)
    return rows == 1, rows != 2, counts.astype(np.float64), inverse.reshape(-1)


# --------------------------------------------------------------------------
# STAPLE
# --------------------------------------------------------------------------


def staple(
    masks: ArrayLike | Sequence[ArrayLike | None],
    *,
    max_iter: int = 10_000,
    tol: float = 1e-7,
    prior: float | None = None,
    observed: ArrayLike | Sequence[ArrayLike | None] | None = None,
) -> StapleResult:
    r"""Binary STAPLE consensus and per-rater performance by EM.

    See the module docstring for the model, the EM updates and the
    conventions (initialisation, prior and stopping rule as ITK's
    ``STAPLEImageFilter``).

    Args:
        masks: ``(R, H, W)`` or ``(R, N)`` array-like, or a sequence of R masks: one binary mask per
            rater (any non-zero value is foreground), all of the same shape (any number of pixel
            dimensions). In a sequence, ``None`` marks a rater who did not label this sample (missing
            data, not an empty mask). An annotator's several instances of one class should first be
            merged with :func:`union_of_instances`.
        max_iter: maximum number of EM iterations; at least 1.
        tol: stop when :math:`\max_r \max(|\Delta p_r|, |\Delta q_r|) \le` ``tol``.
        prior: prior probability of foreground :math:`g \in (0, 1)`; default the mean foreground
            fraction over the raters' observed decisions.
        observed: boolean masks of the pixels each rater labelled, in the layout of ``masks``; other
            pixels are missing for that rater. Default: every pixel of every present rater.

    Returns:
        A :class:`StapleResult`: ``sensitivity`` and ``specificity`` ``(R,)`` in ``[0, 1]`` (NaN when
        undefined, with ``reason``), the consensus ``probability`` map in ``[0, 1]`` of the masks' pixel
        shape, ``prior``, ``n_iter`` and ``converged``.

    Raises:
        InsufficientRatersError: If fewer than two raters have a mask (``ValueError`` subclass).
        ValueError: on masks of different shapes, a bad ``prior``, ``max_iter`` or ``tol``.

    References:
        .. [1] S. K. Warfield, K. H. Zou and W. M. Wells, "Simultaneous Truth and
           Performance Level Estimation (STAPLE): An Algorithm for the Validation
           of Image Segmentation", IEEE TMI 23(7), 903-921, 2004.
        .. [2] ITK ``STAPLEImageFilter`` (SimpleITK), the reference implementation
           these numbers are checked against.

    Examples:
        >>> truth = np.zeros((8, 8), bool); truth[2:6, 2:6] = True
        >>> noisy = truth.copy(); noisy[0, 0] = True
        >>> r = staple([truth, truth, noisy])
        >>> bool((r.consensus() == truth).all()), r.converged
        (True, True)
        >>> r.sensitivity.round(3).tolist(), r.specificity.round(3).tolist()
        ([1.0, 1.0, 1.0], [1.0, 1.0, 0.979])
    """
    _check_em_params(max_iter, tol, prior)
    D, obs, shape = _stack(masks, observed)
    R = D.shape[0]
    with_data = np.asarray(obs.any(axis=1))
    if with_data.sum() < 2:
        raise InsufficientRatersError(
            f"STAPLE needs at least two raters with a mask; got {int(with_data.sum())} of {R}"
        )

    n_obs, n_fg = obs.sum(), D.sum()
    if n_fg == 0 or n_fg == n_obs:
        return _one_class_result(n_fg == 0, with_data, shape, prior)
    g = float(n_fg / n_obs) if prior is None else float(prior)

    ones, seen, counts, inverse = _patterns(D, obs)
    p, q, W, n_iter, converged = _em(ones=ones, seen=seen, counts=counts, g=g, R=R, max_iter=max_iter, tol=tol)

    missing = ~with_data
    p = np.where(missing, np.nan, p)
    q = np.where(missing, np.nan, q)
    return StapleResult(
        sensitivity=p,
        specificity=q,
        probability=W[inverse].reshape(shape),
        prior=g,
        n_iter=n_iter,
        converged=converged,
        reason=_undefined_rates_reason(missing, p, q),
    )


def _check_em_params(max_iter: int, tol: float, prior: float | None) -> None:
    """``ValueError`` unless ``max_iter`` is a positive integer, ``tol`` a non-negative finite number
    and ``prior`` None or a probability strictly between 0 and 1."""
    if isinstance(max_iter, bool) or not isinstance(max_iter, (int, np.integer)) or max_iter < 1:
        raise ValueError(f"max_iter must be a positive integer, got {max_iter!r}")
    if not (np.isfinite(tol) and tol >= 0):
        raise ValueError(f"tol must be a non-negative finite number, got {tol!r}")
    if prior is not None and not (np.isfinite(prior) and 0 < prior < 1):
        raise ValueError(f"prior must be a probability strictly between 0 and 1, got {prior!r}")


def _undefined_rates_reason(missing: np.ndarray, p: np.ndarray, q: np.ndarray) -> str | None:
    """Why some raters' sensitivity or specificity is NaN (None when every rate is defined)."""
    if missing.any():
        return (
            f"raters {np.flatnonzero(missing).tolist()} have no mask (or no observed pixel): "
            "their performance is undefined"
        )
    if np.isnan(p).any() or np.isnan(q).any():
        return "some raters labelled only pixels of one class: their other rate is undefined"
    return None


def _one_class_result(empty: bool, with_data: np.ndarray, shape: tuple, prior: float | None) -> StapleResult:
    """The result when the raters' observed pixels are all background (``empty``) or all
    foreground: no EM; the rate of the absent class is undefined (NaN, with the reason)."""
    nan = np.full(len(with_data), np.nan)
    probability = np.full(shape, 0.0 if empty else 1.0)
    one = np.where(with_data, 1.0, np.nan)
    return StapleResult(
        sensitivity=nan if empty else one,
        specificity=one if empty else nan,
        probability=probability,
        prior=float(prior) if prior is not None else (0.0 if empty else 1.0),
        n_iter=0,
        converged=True,
        reason=(
            "no rater marked any pixel: there is no foreground, so sensitivity is undefined"
            if empty
            else "every rater marked every pixel: there is no background, so specificity is undefined"
        ),
    )


def staple_em(m_step: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]],
              e_step: Callable[[np.ndarray, np.ndarray], np.ndarray], W: np.ndarray, g: float, n_raters: int,
              *, max_iter: int = 10_000, tol: float = 1e-7) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, bool]:
    r"""The binary STAPLE EM loop: the one loop behind :func:`staple` and the corpus-level pixel fusion.

    Alternates the M-step ``p_r = sum_x W_x D_rx / sum_x W_x``, ``q_r = sum_x (1 - W_x)(1 - D_rx) /
    sum_x (1 - W_x)`` over each rater's observed decisions and the E-step
    ``logit W_x = logit g + sum_{r observes x} [D_rx log(p_r / (1 - q_r)) + (1 - D_rx) log((1 - p_r) / q_r)]``
    (Warfield, Zou & Wells 2004), starting with an M-step from the given ``W`` and stopping after the first
    iteration in which no ``p_r`` or ``q_r`` moved by more than ``tol`` (ITK's rule, module docstring). A NaN
    ``p_r`` or ``q_r`` (no mass to estimate it from) leaves that rater's term out; a NaN posterior falls back
    to ``g``. The data layout (dense patterns, or grouped (entry, rater) pairs) is the callers': they give the
    two sums.

    Args:
        m_step: ``W -> (p, q)``, the raters' sensitivity and specificity ``(R,)`` from the posteriors.
        e_step: ``(a, b) -> s``: per entry, the sum over its observed decisions of ``a_r`` (marked) or ``b_r``
            (left), NaN terms counted as 0, with ``a = log p - log(1 - q)`` and ``b = log(1 - p) - log q``.
        W: the initial posterior of each entry (pixel or pattern), in ``[0, 1]`` (usually the vote share).
        g: the prior foreground probability, in ``(0, 1)``.
        n_raters: ``R``.
        max_iter: at most this many iterations (at least 1).
        tol: the stopping tolerance on ``p`` and ``q``.

    Returns:
        ``(W, p, q, n_iter, converged)``: the posteriors in ``[0, 1]``, the rates ``(R,)`` in ``[0, 1]`` (NaN
        where undefined), the iterations performed and whether the change fell within ``tol``.

    Reference:
        S. K. Warfield, K. H. Zou and W. M. Wells, "Simultaneous Truth and Performance Level Estimation
        (STAPLE)", IEEE TMI 23(7), 903-921, 2004.
    """
    logit_g = np.log(g) - np.log1p(-g)
    last_p = np.full(n_raters, -10.0)
    last_q = np.full(n_raters, -10.0)
    p = q = last_p
    converged, n_iter = False, 0
    with np.errstate(divide="ignore", invalid="ignore"):
        while n_iter < max_iter:
            n_iter += 1
            p, q = m_step(W)
            lp, l1p = np.log(p), np.log1p(-p)
            lq, l1q = np.log(q), np.log1p(-q)
            W = expit(logit_g + e_step(lp - l1q, l1p - lq))
            # +inf and -inf together (two raters each certain of the opposite)
            # cannot arise from estimates fitted to one W; guard anyway.
            W = np.where(np.isnan(W), g, W)
            change = np.nanmax(np.abs(np.concatenate([p - last_p, q - last_q])), initial=0.0)
            last_p, last_q = p, q
            if change <= tol:
                converged = True
                break
    return W, p, q, n_iter, converged


def _em(ones: np.ndarray, seen: np.ndarray, counts: np.ndarray, g: float, R: int, max_iter: int,
        tol: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, bool]:
    """:func:`staple_em` on the distinct rating patterns (``ones``: marked, ``seen``: observed, ``counts``:
    pixels per pattern) with prior ``g``: ``(p, q, W, n_iter, converged)``, ``W`` per pattern."""
    zeros = seen & ~ones
    n_seen = seen.sum(axis=1)
    onesf, zerosf, seenf = ones.astype(np.float64), zeros.astype(np.float64), seen.astype(np.float64)

    def m_step(W: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        cw, cv = counts * W, counts * (1.0 - W)
        return (cw @ onesf) / (cw @ seenf), (cv @ zerosf) / (cv @ seenf)

    def e_step(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        fg = np.where(ones, a, 0.0) + np.where(zeros, b, 0.0)
        total: np.ndarray = np.where(np.isnan(fg), 0.0, fg).sum(axis=1)
        return total

    # Initial truth estimate: the share of (observed) raters marking the pixel.
    W0 = np.where(n_seen > 0, ones.sum(axis=1) / np.maximum(n_seen, 1), g)
    W, p, q, n_iter, converged = staple_em(m_step=m_step, e_step=e_step, W=W0, g=g, n_raters=R, max_iter=max_iter,
                                           tol=tol)
    return p, q, W, n_iter, converged


# --------------------------------------------------------------------------
# Helpers and baselines
# --------------------------------------------------------------------------


def union_of_instances(masks_by_instance: Sequence[ArrayLike], *, shape: tuple[int, ...] | None = None) -> np.ndarray:
    r"""One annotator's mask for a class: the union of their instance masks.

    .. math:: M = \bigcup_k M_k

    An annotator who draws an object in several pieces, or several objects of
    the class, marks every pixel of any of them; STAPLE compares such
    per-annotator class masks.

    Args:
        masks_by_instance: full-frame masks of one shape (any non-zero value is foreground).
            Instance masks stored inside their bounding box must first be pasted into the frame.
        shape: the frame shape; required when there is no instance (the result is then an empty
            mask: the annotator looked and found nothing, which is different from a rater who did not
            label the sample).

    Returns:
        The union, a boolean array of the masks' shape.

    Raises:
        ValueError: On masks of different shapes, or no mask and no ``shape``.

    Examples:
        >>> union_of_instances([[[1, 0], [0, 0]], [[0, 0], [0, 1]]]).astype(int).tolist()
        [[1, 0], [0, 1]]
    """
    items = [np.asarray(m) for m in masks_by_instance]
    if not items:
        if shape is None:
            raise ValueError("no instance masks: pass shape= to get an empty mask of the frame size")
        return np.zeros(shape, dtype=bool)
    first = items[0].shape
    if shape is not None and tuple(shape) != first:
        raise ValueError(f"instance masks have shape {first}, expected {tuple(shape)}")
    out = np.zeros(first, dtype=bool)
    for k, m in enumerate(items):
        if m.shape != first:
            raise ValueError(f"instance mask {k} has shape {m.shape}, instance 0 has {first}")
        out |= m != 0
    return out


def mask_majority_vote(masks: ArrayLike | Sequence[ArrayLike | None]) -> np.ndarray:
    r"""Pixel-wise strict majority of the raters' masks.

    .. math:: M_x = \Bigl[\sum_r D_{rx} > \tfrac{R'}{2}\Bigr]

    with :math:`R'` the number of raters with a mask (``None`` entries are
    absent raters and do not vote). A tie (possible with an even number of
    raters) goes to background.

    Args:
        masks: ``(R, ...)`` array-like, or a sequence of R masks (``None``: the rater did not label the
            sample, and does not vote).

    Returns:
        The majority mask, a boolean array of the masks' pixel shape.

    Raises:
        InsufficientRatersError: If no rater has a mask.

    Examples:
        >>> mask_majority_vote([[1, 1, 0], [1, 0, 0], [0, 1, 0]]).tolist()
        [True, True, False]
    """
    D, obs, shape = _stack(masks, None)
    n = int(obs.any(axis=1).sum())  # raters with a mask
    majority: np.ndarray = (2 * D.sum(axis=0) > n).reshape(shape)
    return majority


def dice(a: ArrayLike, b: ArrayLike, *, empty: float = np.nan) -> float:
    r"""Dice coefficient (F1) of two binary masks.

    .. math:: \mathrm{Dice}(A, B) = \frac{2 |A \cap B|}{|A| + |B|}

    Args:
        a: a binary mask (any non-zero value is foreground).
        b: a binary mask of the same shape.
        empty: the value when both masks are empty (``0 / 0``); NaN by default, because two empty
            masks say nothing about overlap.

    Returns:
        In ``[0, 1]``: 1 for equal non-empty masks, 0 for disjoint ones. Symmetric. Equals
        :math:`2 J / (1 + J)` for the Jaccard index :math:`J`.

    Raises:
        ValueError: If the shapes differ.

    References:
        .. [1] L. R. Dice, "Measures of the Amount of Ecologic Association Between
           Species", Ecology 26(3), 297-302, 1945.

    Examples:
        >>> dice([1, 1, 0, 0], [1, 0, 1, 0])
        0.5
    """
    fa, fb = np.asarray(a) != 0, np.asarray(b) != 0
    if fa.shape != fb.shape:
        raise ValueError(f"masks must have the same shape; got {fa.shape} and {fb.shape}")
    total = int(fa.sum()) + int(fb.sum())
    if total == 0:
        return float(empty)
    return 2.0 * int(np.logical_and(fa, fb).sum()) / total
