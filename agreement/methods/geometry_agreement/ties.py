"""Content keys of annotations, for results that must not depend on the order of labels, samples or raters.

* :func:`row_content_keys`: a 64-bit key per annotation row from its relative geometry alone (boxes,
  keypoints, cuboids, 3D points, polygons, 3D polylines, point-cloud segments; an instance mask by its
  box, so that the image resolution changes nothing; never its class or its rater, so that renaming
  either changes nothing). Equal geometry gives equal keys; different
  geometry gives different keys up to a 2⁻⁶⁴ collision.
* :func:`set_content_keys`: the key of each (sample, rater) set: the wrapping sum of its rows' keys
  (independent of the order of its labels), mixed with its size.
* :func:`pair_tiebreak`: a number in ``[0, 1)`` per pair of rows, symmetric in the two rows,
  that the threshold matching adds, scaled by :data:`TIE_EPS`, to break ties between matchings of
  equal total similarity by content rather than by input order
  (:func:`agreement.methods.geometry_agreement.matching.match_entries`).

Keys are deterministic (splitmix64, Steele, Lea & Flood 2014; BLAKE2b for ragged geometry) and do not
depend on the process, the seed or the order of the corpus.

This module does not import FiftyOne.
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

from agreement.methods.ot.strata import GOLDEN, mix64

__all__ = ["TIE_EPS", "row_content_keys", "set_content_keys", "pair_tiebreak"]

#: Scale of the tie-break added to a similarity in the matching: far above the resolution of
#: ``K + s`` in double precision (``K`` up to 10⁴: about 2·10⁻¹²) and far below any difference of
#: similarity that means something, so it only decides between matchings whose totals are equal
#: to within ``min(n, m) · TIE_EPS``.
TIE_EPS = 1e-9

def _keyed_columns() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``(arrays, lists)``: the geometry hashed into a row's key, as the columns' declarations say
    (:attr:`agreement.core.kinds.ColumnKind.content_key`): the boxes and the array columns, hashed as float
    words; the ragged columns, hashed per row. Masks are not: their pixels change with the image resolution,
    and a key must not (a mask is keyed by its relative box)."""
    from agreement.core.kinds import column_kinds

    keyed = [k for k in column_kinds() if k.per == "row" and k.content_key]
    return ("boxes", *(k.name for k in keyed if k.container == "array")), tuple(
        k.name for k in keyed if k.container == "list")


def _float_words(values: np.ndarray) -> np.ndarray:
    """``(n, k)`` uint64 bit patterns of float rows, with NaN as 0 and -0.0 as 0.0 (so that equal
    geometry always has equal bits)."""
    v = np.nan_to_num(np.asarray(values, dtype=np.float64).reshape(len(values), -1), nan=0.0) + 0.0
    return np.ascontiguousarray(v).view(np.uint64)


def _ragged_word(item: Any) -> int:
    """A 64-bit BLAKE2b digest of one ragged geometry (array, or nested lists of arrays)."""
    h = hashlib.blake2b(digest_size=8)
    stack = [item]
    while stack:
        x = stack.pop()
        if isinstance(x, (list, tuple)):
            h.update(b"[%d" % len(x))
            stack.extend(reversed(x))
        elif x is None:
            h.update(b"N")
        else:
            a = np.asarray(x)
            h.update(str(a.shape).encode())
            h.update(np.ascontiguousarray(a.astype(np.float64) + 0.0 if a.dtype.kind == "f" else a).tobytes())
    return int.from_bytes(h.digest(), "little")


def row_content_keys(data: Any, *, rows: np.ndarray | None = None) -> np.ndarray:
    """A uint64 key per annotation row of ``data`` (all rows, or ``rows``) from its geometry only.

    Args:
        data: a :class:`~agreement.core.data.MultiRaterAnnotations`.
        rows: row indices (default: every row).

    Returns:
        ``(len(rows),)`` uint64: equal for rows of equal geometry, whatever their class, rater,
        sample or position.
    """
    rows = np.arange(len(data)) if rows is None else np.asarray(rows, dtype=np.intp)
    key = np.full(len(rows), GOLDEN, dtype=np.uint64)
    array_fields, list_fields = _keyed_columns()
    for name in array_fields:
        values = getattr(data, name, None)
        if values is None or not len(rows):
            continue
        for col in _float_words(np.asarray(values)[rows]).T:
            key = mix64(key ^ col) + GOLDEN
    for name in list_fields:
        values = getattr(data, name, None)
        if values is None:
            continue
        words = np.fromiter((_ragged_word(values[r]) for r in rows.tolist()), np.uint64, len(rows))
        key = mix64(key ^ words) + GOLDEN
    return mix64(key)


def set_content_keys(data: Any) -> np.ndarray:
    """``(S, R)`` uint64: the key of every (sample, rater) set, independent of the order of its labels
    (the wrapping sum of its rows' keys, mixed with its size); equal for sets of equal geometry."""
    S, R = data.num_samples, data.num_raters
    n = np.diff(data.offsets).astype(np.int64)  # rows per (sample, rater) cell, cell s * R + r
    keys = row_content_keys(data)
    total = np.zeros(S * R, dtype=np.uint64)
    if len(keys):
        cell = np.repeat(np.arange(S * R), n)
        np.add.at(total, cell, keys)  # uint64 addition wraps: an order-free sum
    return mix64(total ^ mix64(n.astype(np.uint64) + GOLDEN)).reshape(S, R)


def pair_tiebreak(key_a: np.ndarray, key_b: np.ndarray) -> np.ndarray:
    """A number in ``[0, 1)`` per pair of row keys, the same for ``(a, b)`` and ``(b, a)``."""
    a = np.asarray(key_a, dtype=np.uint64)
    b = np.asarray(key_b, dtype=np.uint64)
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    z = mix64(mix64(lo + GOLDEN) ^ hi)
    out: np.ndarray = (z >> np.uint64(11)).astype(np.float64) * (1.0 / (1 << 53))
    return out
