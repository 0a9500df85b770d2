"""The coincidence matrix of a reliability matrix: the one construction behind every Krippendorff's α.

A reliability matrix has raters as rows and units as columns (Krippendorff 2011; the ``krippendorff``
package's ``reliability_data``), each cell a category code ``>= 0`` or missing. This is the one orientation
of the library; a ``(units, raters)`` layout (:class:`agreement.core.ratings.ClassRatings`) passes its
transpose. With ``n_uc`` the number of values ``c`` in unit ``u`` and ``m_u = sum_c n_uc``, only units with
``m_u >= 2`` are pairable, and the coincidence matrix is

``o_ck = sum_u (n_uc n_uk - [c = k] n_uc) / (m_u - 1)``,

symmetric, its row sums ``n_c`` the pairable values of each code and its total ``n`` the pairable values.
It is built sparse (:func:`unit_counts`, :func:`coincidence_sparse`): integer products are summed exactly
within groups of units with equal ``m_u`` and divided once per group, in time and memory linear in the
number of values. :mod:`agreement.core.krippendorff` turns it into α at every level.

Reference: K. Krippendorff, "Computing Krippendorff's Alpha-Reliability",
University of Pennsylvania, 2011 (https://repository.upenn.edu/asc_papers/43).

This module does not import FiftyOne.
"""

from __future__ import annotations

from typing import Hashable, Sequence

import numpy as np
import scipy.sparse as sp

__all__ = [
    "encode_values",
    "as_codes",
    "unit_counts",
    "pairable_counts",
    "unit_products",
    "coincidence_sparse",
    "unit_coincidences",
    "coincidence_matrix",
]


def encode_values(
    values: np.ndarray | Sequence, *, missing: Sequence[Hashable] = (None,)
) -> tuple[np.ndarray, list]:
    """Turns an array of hashable category values into integer codes.

    Args:
        values: array of any shape of hashable values (class names, ints, ...).
        missing: values that mean "no value" (coded ``-1``). Float NaN is always
            missing.

    Returns:
        ``(codes, categories)``: an int64 array of the same shape, ``-1`` where
        missing, otherwise the index into ``categories`` (sorted by ``str``
        for a deterministic order independent of input order).
    """
    arr = np.asarray(values, dtype=object)
    flat = arr.reshape(-1)
    missing_set = set(m for m in missing if m is not None)
    none_missing = any(m is None for m in missing)

    def is_missing(v: object) -> bool:
        if v is None:
            return none_missing
        if isinstance(v, float) and np.isnan(v):
            return True
        try:
            return v in missing_set
        except TypeError:
            return False

    present = [not is_missing(v) for v in flat]
    cats = sorted({v for v, p in zip(flat, present, strict=True) if p}, key=lambda v: (str(type(v).__name__), str(v)))
    index = {v: i for i, v in enumerate(cats)}
    codes = np.fromiter(
        (index[v] if p else -1 for v, p in zip(flat, present, strict=True)), dtype=np.int64, count=len(flat)
    )
    return codes.reshape(arr.shape), cats


def as_codes(reliability: np.ndarray, *, missing: int = -1) -> np.ndarray:
    """Validates a raters x units matrix of codes and returns it as int64 with ``-1`` missing.

    Args:
        reliability: ``(raters, units)`` integer codes ``>= 0``; ``missing`` or NaN (float input) missing.
        missing: the code for a missing value.

    Returns:
        ``(raters, units)`` int64 codes, ``-1`` where missing.

    Raises:
        ValueError: not two-dimensional, infinite, non-integer or negative codes.
        TypeError: labels (object dtype) or another unsupported dtype.
    """
    rel = np.asarray(reliability)
    if rel.ndim != 2:
        raise ValueError(f"reliability must be a 2-D raters x units array, got shape {rel.shape}")
    if rel.dtype == object:
        raise TypeError("reliability must hold numeric codes; use encode_values() for labels")
    if np.issubdtype(rel.dtype, np.floating):
        miss = np.isnan(rel) | (rel == missing)
        if np.any(np.isinf(rel)):
            raise ValueError("reliability contains infinite values")
        vals = rel[~miss]
        if vals.size and np.any(vals != np.round(vals)):
            raise ValueError("reliability codes must be integers (or NaN for missing)")
        codes = np.where(miss, -1, np.nan_to_num(rel, nan=-1)).astype(np.int64)
    elif np.issubdtype(rel.dtype, np.integer) or rel.dtype == bool:
        codes = rel.astype(np.int64)
        codes = np.where(codes == missing, -1, codes)
    else:
        raise TypeError(f"unsupported dtype {rel.dtype} for reliability codes")
    if np.any(codes < -1):
        raise ValueError(f"category codes must be >= 0 (missing is {missing} or NaN)")
    return codes


def unit_counts(reliability: np.ndarray, *, n_categories: int | None = None, missing: int = -1) -> sp.csr_matrix:
    """``n_uc``: the number of values of each code in each unit, as a sparse ``(units, K)`` matrix.

    Args:
        reliability: ``(raters, units)`` integer codes ``>= 0``; ``missing`` or NaN (float input) missing.
        n_categories: ``K`` (default: the largest code + 1).
        missing: the code for a missing value.

    Returns:
        ``(units, K)`` float64 CSR counts; row ``u`` sums to ``m_u``, the values of unit ``u``.

    Raises:
        ValueError: a code below 0 (other than ``missing``) or at least ``n_categories``.
    """
    codes = as_codes(reliability, missing=missing)
    C = int(codes.max()) + 1 if codes.size and codes.max() >= 0 else 0
    if n_categories is not None:
        if n_categories < C:
            raise ValueError(f"n_categories={n_categories} but the largest code is {C - 1}")
        C = int(n_categories)
    r, u = np.nonzero(codes >= 0)
    out = sp.csr_matrix((np.ones(len(u), dtype=np.float64), (u, codes[r, u])), shape=(codes.shape[1], C))
    out.sum_duplicates()
    return out


def pairable_counts(counts: sp.csr_matrix) -> tuple[sp.csr_matrix, np.ndarray, np.ndarray]:
    """The rows of the pairable units (``m_u >= 2``) of ``(units, K)`` counts, their ``m_u`` and their indices.

    Args:
        counts: ``(units, K)`` sparse counts ``n_uc`` (:func:`unit_counts`).

    Returns:
        ``(counts[keep], m, keep)``: the pairable units' rows, their ``m_u = sum_c n_uc >= 2`` and their
        indices ``keep``.
    """
    m = np.asarray(counts.sum(axis=1)).reshape(-1)
    keep = np.flatnonzero(m >= 2)
    return counts[keep], m[keep], keep


def unit_products(counts: sp.csr_matrix) -> tuple[sp.csr_matrix, np.ndarray, np.ndarray]:
    """Per pairable unit, ``n_u n_u^T - diag n_u`` flattened (index ``c * K + k``), with ``m_u`` and the unit indices.

    Args:
        counts: ``(units, K)`` sparse counts (:func:`unit_counts`).

    Returns:
        ``(U0, m, keep)``: ``U0`` a ``(pairable units, K * K)`` CSR matrix of integer-valued products, ``m``
        the pairable units' ``m_u`` and ``keep`` their indices.
    """
    N, m, keep = pairable_counts(counts)
    N = sp.csr_matrix(N)
    N.sum_duplicates()
    N.sort_indices()
    K = N.shape[1]
    k = np.diff(N.indptr)
    reps = k * k
    row = np.repeat(np.arange(len(k)), reps)
    off = np.arange(int(reps.sum())) - np.repeat(np.cumsum(reps) - reps, reps)
    kk = np.maximum(np.repeat(k, reps), 1)
    i = N.indptr[row] + off // kk
    j = N.indptr[row] + off % kk
    ci, cj = N.indices[i].astype(np.int64), N.indices[j].astype(np.int64)
    val = N.data[i] * N.data[j] - np.where(ci == cj, N.data[i], 0.0)
    U0 = sp.csr_matrix((val, (row, ci * K + cj)), shape=(len(k), K * K))
    return U0, m, keep


def coincidence_sparse(counts: sp.csr_matrix) -> sp.csr_matrix:
    """The coincidence matrix of ``(units, K)`` counts as a sparse ``(K, K)`` matrix: the one construction.

    ``o_ck = sum_u (n_uc n_uk - [c = k] n_uc) / (m_u - 1)`` over the pairable units. The integer products
    are summed exactly within groups of units with the same ``m_u`` and divided by ``m_u - 1`` once per
    group, so the result does not drift with the number of units; time and memory are linear in the
    number of values.

    Args:
        counts: ``(units, K)`` sparse counts (:func:`unit_counts`).

    Returns:
        ``(K, K)`` CSR, symmetric, its total the number of pairable values ``n``.
    """
    K = counts.shape[1]
    U0, m, _ = unit_products(counts)
    groups, g = np.unique(m, return_inverse=True)
    G = sp.csr_matrix((np.ones(len(m)), (g.reshape(-1), np.arange(len(m)))), shape=(len(groups), len(m))) @ U0
    flat = sp.csr_matrix(1.0 / (groups - 1.0)) @ G if len(groups) else sp.csr_matrix((1, K * K))
    flat = sp.coo_matrix(flat)
    return sp.csr_matrix((flat.data, (flat.col // max(K, 1), flat.col % max(K, 1))), shape=(K, K))


def unit_coincidences(counts: sp.csr_matrix) -> tuple[sp.csr_matrix, np.ndarray]:
    """Each pairable unit's contribution to the coincidence matrix, one sparse row per unit.

    Row ``u`` holds ``(n_u n_u^T - diag n_u) / (m_u - 1)`` flattened to ``K * K`` (index ``c * K + k``);
    the rows sum to :func:`coincidence_matrix` (weights on the rows give a resampled one).

    Args:
        counts: ``(units, K)`` sparse counts (:func:`unit_counts`).

    Returns:
        ``(U, keep)``: ``U`` a ``(pairable units, K * K)`` CSR matrix and ``keep`` the pairable units' indices.
    """
    U0, m, keep = unit_products(counts)
    return sp.csr_matrix(sp.diags(1.0 / (m - 1.0)) @ U0), keep


def coincidence_matrix(
    reliability: np.ndarray, *, missing: int = -1, n_categories: int | None = None
) -> np.ndarray:
    """The coincidence matrix of a raters x units reliability matrix.

    ``o_ck = sum_u (n_uc * n_uk - [c == k] * n_uc) / (m_u - 1)`` over units with
    ``m_u >= 2`` values, where ``n_uc`` counts the values ``c`` in unit ``u``
    (Krippendorff 2011, section B). The matrix is symmetric and its total is the
    number of pairable values ``n`` (:func:`coincidence_sparse` of :func:`unit_counts`).

    Args:
        reliability: ``(raters, units)`` integer codes ``>= 0``; ``missing`` (default
            ``-1``) or NaN (float input) marks a missing value.
        missing: the code for a missing value.
        n_categories: size of the returned matrix (default ``max code + 1``).

    Returns:
        ``(C, C)`` float64 coincidence matrix indexed by code.
    """
    counts = unit_counts(reliability, n_categories=n_categories, missing=missing)
    return np.asarray(coincidence_sparse(counts).todense(), dtype=np.float64)
