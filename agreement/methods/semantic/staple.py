r"""Multi-label STAPLE: a consensus label map and per-rater confusion matrices.

Multi-label STAPLE (Rohlfing, Russakoff & Maurer 2004; the multi-class
generalisation of Warfield, Zou & Wells 2004) treats the true label
:math:`T_x \in \{0, \dots, L-1\}` of every pixel as hidden and each rater
:math:`r` as a noisy classifier with a confusion matrix
:math:`\theta_r[i, j] = P(D_{rx} = j \mid T_x = i)`, raters independent given
the truth. Expectation-maximisation alternates

* **E-step** (posterior of the true label per pixel, prior :math:`\pi`):

  .. math::

      W_x(i) = \frac{\pi_i \prod_r \theta_r[i, D_{rx}]}
                    {\sum_{i'} \pi_{i'} \prod_r \theta_r[i', D_{rx}]}

  (a pixel whose numerators are all zero gets :math:`W_x = 0` and adds
  nothing to the M-step);
* **M-step** (confusion matrices from the posteriors):

  .. math::

      \theta_r[i, j] = \frac{\sum_x W_x(i)\,[D_{rx} = j]}{\sum_x W_x(i)}.

The consensus label of a pixel is :math:`\arg\max_i W_x(i)`; a pixel whose
maximum is not unique is *undecided* and gets ``label_undecided``.

Conventions, chosen to reproduce ITK's ``MultiLabelSTAPLEImageFilter`` (through
SimpleITK's ``MultiLabelSTAPLE``) and checked against it in the tests:

* **Labels** are the mask values themselves, ``0 .. max`` over all masks
  (``L = max + 1``); a label no mask uses has prior 0 and is never chosen; its
  row of the confusion matrices is NaN here (ITK reports zeros).
* **Undecided label**: default ``max + 1`` (ITK's ``LabelForUndecidedPixels``).
* **Prior** :math:`\pi`: default the relative frequency of each label over all
  raters' pixels (ITK's default ``PriorProbabilities``).
* **Initialisation** (``init="itk"``): from a plurality vote (ties undecided,
  ITK's ``LabelVotingImageFilter``), ITK counts each rater's (own label, voted
  label) pairs into an array laid out as ``(L + 1) x L`` while the voted label
  runs over ``L + 1`` values (the undecided one included), so the count of
  undecided votes for own label ``a`` lands in the cell (``a + 1``, 0); it
  then normalises each row (own label) to 1, and reads the result as
  :math:`\theta_r` with the *own* label as the observed one. We reproduce this
  exactly, because EM's fixed point depends on its start. ``init="vote"`` is
  the textbook start instead: :math:`\theta_r[i, j]` = the share of pixels
  voted ``i`` that rater ``r`` labelled ``j`` (undecided votes left out).
* **Stopping**: after the first iteration (E-step then M-step) in which no
  entry of any confusion matrix moved by ``tol`` or more (ITK's
  ``TerminationUpdateThreshold``, default ``1e-5``), or after ``max_iter``
  iterations (ITK's ``MaximumNumberOfIterations``, default unlimited). The
  label map comes from one more E-step with the final matrices.

SimpleITK computes in double precision, as this module does: in the tests the
label maps are identical and the confusion matrices agree to about ``1e-14``
(summation order). SimpleITK stores ``TerminationUpdateThreshold`` as a
single-precision number (``1e-5`` becomes ``9.99999975e-06``); a run whose
last change falls between the two may stop one iteration apart.

Pixels are grouped by their pattern of rater labels first (at most
:math:`L^R` patterns, counted with one ``np.bincount``), so each EM
iteration costs :math:`O(\text{patterns} \cdot R \cdot L)`, independent of the
image size.

Per class :math:`c`, a rater's **sensitivity** is :math:`\theta_r[c, c]` and
its **specificity** :math:`P(D_r \ne c \mid T \ne c) = \sum_{i \ne c} m_i
(1 - \theta_r[i, c]) / \sum_{i \ne c} m_i` with :math:`m_i = \sum_x W_x(i)` the
estimated number of pixels of true class :math:`i`; both in ``[0, 1]``, NaN
when undefined (no pixel estimated in class ``c``, or in any other class).

This module does not import FiftyOne.

References:
    .. [Warfield2004] S. K. Warfield, K. H. Zou and W. M. Wells, "Simultaneous
       Truth and Performance Level Estimation (STAPLE): An Algorithm for the
       Validation of Image Segmentation", IEEE TMI 23(7), 903-921, 2004.
    .. [Rohlfing2004] T. Rohlfing, D. B. Russakoff and C. R. Maurer, Jr.,
       "Performance-based classifier combination in atlas-based image
       segmentation using expectation-maximization parameter estimation",
       IEEE TMI 23(8), 983-994, 2004.
    .. [ITK] ``itk::MultiLabelSTAPLEImageFilter``, Insight Toolkit, exposed as
       ``SimpleITK.MultiLabelSTAPLEImageFilter``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import cv2
import numpy as np

from agreement.methods.consensus.staple import InsufficientRatersError

__all__ = ["MultiLabelStapleResult", "multilabel_staple", "label_patterns", "value_histogram",
           "InsufficientRatersError"]

#: Largest ``L ** R`` counted with ``np.bincount``; beyond it patterns are found with ``np.unique``.
_MAX_DENSE_PATTERNS = 1 << 22


@dataclass(frozen=True)
class MultiLabelStapleResult:
    r"""Result of :func:`multilabel_staple`.

    Attributes:
        consensus: ndarray of int64, the masks' shape. The consensus label per pixel, ``label_undecided`` where undecided.
        confusion: ndarray of shape (R, L, L). ``confusion[r, i, j]`` = :math:`P(\text{rater } r \text{ says } j \mid
            \text{truth } i)`, rows summing to 1 (rows true, columns predicted, as
            ``sklearn.metrics.confusion_matrix``; ITK's ``GetConfusionMatrix`` is
            the transpose, with one extra all-zero row). NaN for an absent rater
            and in the row of a label no pixel is estimated to have.
        sensitivity: ndarray of shape (R, L). Per rater and class, in ``[0, 1]``, NaN when undefined (module
            docstring).
        specificity: ndarray of shape (R, L). Per rater and class, in ``[0, 1]``, NaN when undefined (module
            docstring).
        prior: ndarray of shape (L,). The prior :math:`\pi` used.
        truth_mass: ndarray of shape (L,). :math:`m_i = \sum_x W_x(i)`: the estimated number of pixels of each
            true label.
        label_undecided: int. The label given to undecided pixels.
        n_undecided: int. The number of undecided pixels.
        n_iter: int. EM iterations performed.
        converged: bool. Whether the change fell below ``tol`` within ``max_iter``.
        reason: str or None. Why some numbers are NaN, or ``None``.
    """

    consensus: np.ndarray
    confusion: np.ndarray
    sensitivity: np.ndarray
    specificity: np.ndarray
    prior: np.ndarray
    truth_mass: np.ndarray
    label_undecided: int
    n_undecided: int
    n_iter: int
    converged: bool
    reason: str | None = None

    @property
    def labels(self) -> np.ndarray:
        """The label values ``0 .. L-1`` indexing the confusion matrices."""
        return np.arange(self.confusion.shape[1])


def _stack_labels(masks: Sequence[np.ndarray | None]) -> tuple[list[np.ndarray], np.ndarray, tuple[int, ...]]:
    """``(D, present, shape)``: the present raters' labels as flat integer arrays, which raters are
    present ``(R,)`` and the pixel shape; ``ValueError`` on bad masks."""
    items = list(masks)
    present = np.array([m is not None for m in items], dtype=bool)
    if present.sum() < 2:
        raise InsufficientRatersError(
            f"multi-label STAPLE needs at least two raters with a mask; got {int(present.sum())} of {len(items)}"
        )
    ids = np.flatnonzero(present)
    arrays = [np.asarray(items[k]) for k in ids]
    shape = arrays[0].shape
    rows = []
    for k, arr in zip(ids, arrays, strict=True):
        if arr.shape != shape:
            raise ValueError(
                f"all masks must have the same shape; rater {ids[0]} has {shape}, rater {k} has {arr.shape}"
            )
        if arr.dtype == bool:
            arr = arr.astype(np.uint8)
        if not np.issubdtype(arr.dtype, np.integer):
            raise ValueError(f"rater {k}'s mask has dtype {arr.dtype}; label maps must hold integers")
        if not arr.size:
            raise ValueError("masks have no pixels")
        if arr.min() < 0:
            raise ValueError(f"rater {k}'s mask has negative labels (min {arr.min()}); labels must be >= 0")
        rows.append(arr.reshape(-1))
    return rows, present, tuple(shape)


#: Pixels below which OpenCV's histogram of a uint8 array is exact (it counts in float32).
_EXACT_HISTOGRAM_PIXELS = 1 << 24


def value_histogram(a: np.ndarray, *, minlength: int = 0) -> np.ndarray:
    """``np.bincount(a.ravel(), minlength=minlength)`` of a non-negative integer array: the pixels of each
    value ``0 .. max(a)`` (int64), by OpenCV's ``calcHist`` (about three times faster) for a uint8 array of
    fewer than 2^24 pixels, where its float32 counts are exact."""
    if a.dtype != np.uint8 or a.size >= _EXACT_HISTOGRAM_PIXELS or a.size == 0:
        return np.bincount(a.reshape(-1), minlength=minlength)
    hist = cv2.calcHist([np.ascontiguousarray(a).reshape(-1, 1)], [0], None, [256], [0, 256]).reshape(-1)
    n = max(int(np.flatnonzero(hist)[-1]) + 1, minlength)
    out: np.ndarray = np.zeros(n, np.int64)
    k = min(n, 256)
    out[:k] = hist[:k]
    return out


def label_patterns(D: np.ndarray | Sequence[np.ndarray], L: int,
                   *,
                   inverse: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Distinct per-pixel label patterns of a raters x pixels matrix ``D`` of labels ``0 .. L-1``.

    ``D`` is an ``(R, N)`` array or a sequence of ``R`` arrays of ``N`` labels
    (any integer dtype). Returns ``(rows, counts, inverse)``: ``rows`` ``(P, R)``
    int64 the patterns, ``counts`` ``(P,)`` float64 the pixels of each,
    ``inverse`` ``(N,)`` the pattern of each pixel (None unless ``inverse``).
    One ``np.bincount`` of the codes ``sum_r D_r L**r`` when ``L**R`` is small,
    ``np.unique`` otherwise.
    """
    D = [np.asarray(d).reshape(-1) for d in D]
    R = len(D)
    if R * np.log2(max(L, 2)) >= 62:  # codes would overflow int64
        rows, inv_u, counts = np.unique(np.stack(D, axis=1), axis=0, return_inverse=True, return_counts=True)
        return rows.astype(np.int64), counts.astype(np.float64), inv_u.reshape(-1) if inverse else None
    small = L**R <= 256 and all(d.dtype == np.uint8 for d in D)  # codes fit in uint8: OpenCV's histogram
    code = D[R - 1].astype(np.uint8 if small else np.int32 if L**R < 2**31 else np.int64)
    for r in range(R - 2, -1, -1):
        code *= L
        code += D[r]
    if L**R <= _MAX_DENSE_PATTERNS:
        dense = value_histogram(code, minlength=L**R)
        used = np.flatnonzero(dense)
        counts = dense[used]
        inv: np.ndarray | None = None
        if inverse:
            lut = np.zeros(L**R, dtype=np.int64)
            lut[used] = np.arange(used.size)
            inv = lut[code]
    else:
        used, inv, counts = np.unique(code, return_inverse=True, return_counts=True)
    rows = (used.astype(np.int64)[:, None] // (L ** np.arange(R, dtype=np.int64))[None, :]) % L
    return rows, counts.astype(np.float64), inv.reshape(-1) if inverse and inv is not None else None


def _vote(rows: np.ndarray, L: int) -> np.ndarray:
    """Plurality vote per pattern, ``L`` (undecided) when the largest count is shared."""
    votes = np.zeros((rows.shape[0], L), dtype=np.int64)
    for r in range(rows.shape[1]):
        votes[np.arange(rows.shape[0]), rows[:, r]] += 1
    top = votes.max(axis=1)
    winner = votes.argmax(axis=1)
    return np.where((votes == top[:, None]).sum(axis=1) > 1, L, winner)


def _init_confusion(rows: np.ndarray, counts: np.ndarray, L: int, init: str) -> tuple[np.ndarray, np.ndarray]:
    """Initial ``theta`` ``(R, L, L)`` [true, observed] and ITK's extra row ``(R, L)`` (only for the first change)."""
    R = rows.shape[1]
    vote = _vote(rows, L)
    theta = np.zeros((R, L, L))
    extra = np.zeros((R, L))
    for r in range(R):
        if init == "itk":
            # ITK's (L + 1) x L buffer indexed [own][vote] with vote in 0..L (see the module docstring).
            flat = np.bincount(rows[:, r] * L + vote, weights=counts, minlength=(L + 1) * L).reshape(L + 1, L)
            s = flat.sum(axis=1, keepdims=True)
            flat = np.divide(flat, s, out=np.zeros_like(flat), where=s > 0)
            theta[r], extra[r] = flat[:L].T, flat[L]
        else:
            ok = vote < L
            m = np.bincount(vote[ok] * L + rows[ok, r], weights=counts[ok], minlength=L * L).reshape(L, L)
            s = m.sum(axis=1, keepdims=True)
            theta[r] = np.divide(m, s, out=np.zeros_like(m), where=s > 0)
    return theta, extra


def _posterior(rows: np.ndarray, theta: np.ndarray, log_prior: np.ndarray) -> np.ndarray:
    """E-step per pattern: ``W`` ``(P, L)``, rows summing to 1, or all 0 where every numerator is 0."""
    with np.errstate(divide="ignore"):
        log_w = np.broadcast_to(log_prior, (rows.shape[0], log_prior.size)).copy()
        for r in range(rows.shape[1]):
            log_w += np.log(theta[r][:, rows[:, r]].T)
    top = log_w.max(axis=1, keepdims=True)
    finite = np.isfinite(top)
    w = np.exp(log_w - np.where(finite, top, 0.0))
    w[~finite[:, 0]] = 0.0
    s = w.sum(axis=1, keepdims=True)
    posterior: np.ndarray = np.divide(w, s, out=np.zeros_like(w), where=s > 0)
    return posterior


def _m_step(rows: np.ndarray, counts: np.ndarray, W: np.ndarray, L: int) -> np.ndarray:
    """M-step: ``theta[r, i, j] = sum_x W_x(i) [D_rx = j] / sum_x W_x(i)`` (rows with no mass stay 0)."""
    cw = counts[:, None] * W
    theta = np.zeros((rows.shape[1], L, L))
    for r in range(rows.shape[1]):
        onehot = np.zeros((rows.shape[0], L))
        onehot[np.arange(rows.shape[0]), rows[:, r]] = 1.0
        theta[r] = cw.T @ onehot
    s = theta.sum(axis=2, keepdims=True)
    theta_rows: np.ndarray = np.divide(theta, s, out=np.zeros_like(theta), where=s > 0)
    return theta_rows


def _check_params(max_iter: int | None, tol: float, init: str, prior: Sequence[float] | np.ndarray | None,
                  L: int) -> np.ndarray | None:
    """Validates the EM parameters; returns the prior as an ``(L,)`` array or None."""
    if max_iter is not None and (isinstance(max_iter, bool) or not isinstance(max_iter, (int, np.integer))
                                 or max_iter < 0):
        raise ValueError(f"max_iter must be None or a non-negative integer, got {max_iter!r}")
    if not (np.isfinite(tol) and tol >= 0):
        raise ValueError(f"tol must be a non-negative finite number, got {tol!r}")
    if init not in ("itk", "vote"):
        raise ValueError(f"init must be 'itk' or 'vote', got {init!r}")
    if prior is None:
        return None
    p = np.asarray(prior, dtype=np.float64).reshape(-1)
    if p.size < L or not np.all(np.isfinite(p)) or np.any(p < 0) or p[:L].sum() <= 0:
        raise ValueError(f"prior must hold {L} non-negative finite probabilities (labels 0..{L - 1}), got {prior!r}")
    return p[:L]


def multilabel_staple(
    masks: Sequence[np.ndarray | None],
    *,
    label_undecided: int | None = None,
    max_iter: int | None = None,
    tol: float = 1e-5,
    prior: Sequence[float] | np.ndarray | None = None,
    init: str = "itk",
) -> MultiLabelStapleResult:
    r"""Multi-label STAPLE consensus label map and per-rater confusion matrices, by EM.

    See the module docstring for the model, the updates and the conventions
    (labels, undecided pixels, prior, initialisation and stopping rule as
    ITK's ``MultiLabelSTAPLEImageFilter``).

    Args:
        masks: sequence of R integer label maps of one shape, or None. One label map per rater (values ``>= 0``; bool is labels 0/1). ``None``
            marks a rater who did not label this sample: left out of the
            estimation, with NaN confusion, sensitivity and specificity.
        label_undecided: int, optional. The label of pixels whose largest posterior is shared by several
            labels; default ``max label + 1``.
        max_iter: int, optional. Maximum number of EM iterations (``0``: the label map of the initial
            matrices); default unlimited.
        tol: float, default=1e-5. Stop when no confusion-matrix entry moved by ``tol`` or more.
        prior: array-like of shape (L,), optional. Prior probability of each label ``0 .. L-1``; default the labels'
            relative frequency over all raters' pixels.
        init: {"itk", "vote"}, default="itk". The initial confusion matrices: ITK's (reproduced, quirks included) or
            the textbook one from the plurality vote (module docstring).

    Returns:
        MultiLabelStapleResult: ``consensus`` label map, ``confusion`` ``(R, L, L)`` (rows true label,
            columns the rater's label), ``sensitivity`` and ``specificity``
            ``(R, L)`` in ``[0, 1]``, ``prior``, ``truth_mass``, ``n_undecided``,
            ``n_iter``, ``converged``, ``reason``.

    Raises:
        InsufficientRatersError: If fewer than two raters have a mask (a ``ValueError``).
        ValueError: On masks of different shapes, non-integer or negative labels, or bad
            parameters.

    References:
        .. [1] T. Rohlfing, D. B. Russakoff and C. R. Maurer, Jr., IEEE TMI 23(8),
           983-994, 2004.
        .. [2] S. K. Warfield, K. H. Zou and W. M. Wells, IEEE TMI 23(7), 903-921, 2004.

    Examples:
        >>> a = np.array([[0, 1], [2, 2]]); b = np.array([[0, 1], [2, 1]])
        >>> multilabel_staple([a, a, b]).consensus.tolist()
        [[0, 1], [2, 2]]
    """
    D, present, shape = _stack_labels(masks)
    L = int(max(d.max() for d in D)) + 1
    p = _check_params(max_iter, tol, init, prior, L)
    if label_undecided is None:
        label_undecided = L
    rows, counts, inverse = label_patterns(D, L)
    if p is None:
        p = np.bincount(rows.reshape(-1), weights=np.repeat(counts, rows.shape[1]), minlength=L)
        p = p / p.sum()
    with np.errstate(divide="ignore"):
        log_prior = np.log(p)
    theta, extra = _init_confusion(rows, counts, L, init)
    n_iter, converged = 0, False
    limit = np.inf if max_iter is None else max_iter
    while n_iter < limit:
        new = _m_step(rows, counts, _posterior(rows, theta, log_prior), L)
        change = np.max(np.abs(new - theta), initial=0.0)
        if n_iter == 0:
            change = max(change, np.max(np.abs(extra), initial=0.0))
        theta, n_iter = new, n_iter + 1
        if change < tol:
            converged = True
            break
    fit = _StapleFit(theta=theta, log_prior=log_prior, prior=p, n_iter=n_iter, converged=converged)
    return _finish((rows, counts, inverse), fit, present, shape, label_undecided)


@dataclass(frozen=True)
class _StapleFit:
    """The end of the multi-label STAPLE EM: the confusion matrices ``theta`` of the raters with a mask,
    the label prior (and its log), the iterations and whether the tolerance was met."""

    theta: np.ndarray
    log_prior: np.ndarray
    prior: np.ndarray
    n_iter: int
    converged: bool


def _finish(patterns: tuple, fit: _StapleFit, present: np.ndarray, shape: tuple,
            label_undecided: int) -> MultiLabelStapleResult:
    """The label map, rates and NaN bookkeeping from the final confusion matrices (``patterns``: the
    ``(rows, counts, inverse)`` of :func:`label_patterns`)."""
    rows, counts, inverse = patterns
    theta, p, n_iter, converged = fit.theta, fit.prior, fit.n_iter, fit.converged
    W = _posterior(rows, theta, fit.log_prior)
    top = W.max(axis=1, keepdims=True)
    tied = ((W == top) & (top > 0)).sum(axis=1) != 1
    label = np.where(tied, label_undecided, W.argmax(axis=1)).astype(np.int64)
    consensus = label[inverse].reshape(shape)
    mass = counts @ W
    R, L = present.size, theta.shape[1]
    conf = np.full((R, L, L), np.nan)
    conf[present] = np.where((mass > 0)[None, :, None], theta, np.nan)
    sens = np.einsum("rii->ri", conf)
    others = mass.sum() - mass  # sum_{i != c} m_i
    with np.errstate(invalid="ignore", divide="ignore"):
        # sum_{i != c} m_i (1 - theta[i, c]) = others_c - (sum_i m_i theta[i, c] - m_c theta[c, c])
        said = np.einsum("i,ric->rc", mass, np.nan_to_num(conf)) - mass * np.nan_to_num(sens)
        spec = np.where(others > 0, (others - said) / others, np.nan)
    spec[~present] = np.nan
    reasons = []
    if (~present).any():
        reasons.append(f"raters {np.flatnonzero(~present).tolist()} have no mask: their rates are undefined")
    if (mass <= 0).any():
        reasons.append(f"labels {np.flatnonzero(mass <= 0).tolist()} have no estimated pixel: their "
                       "confusion rows and sensitivity are undefined")
    if (others <= 0).any():
        reasons.append(f"only label {int(np.argmax(mass))} has estimated pixels: specificity is undefined")
    return MultiLabelStapleResult(
        consensus=consensus, confusion=conf, sensitivity=sens, specificity=spec, prior=p, truth_mass=mass,
        label_undecided=int(label_undecided), n_undecided=int(counts[tied].sum()), n_iter=n_iter,
        converged=converged, reason="; ".join(reasons) or None,
    )
