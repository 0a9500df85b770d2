"""Compact storage of the large tables in run results: one string each, numeric columns packed in binary.

FiftyOne serialises run results by walking every element in Python, and JSON
spends most of its time writing floats. A crowd run has tables of ~10^5 rows
(rater pairs, per-(sample, rater pair) scores), so each large table is stored
as one string (:func:`pack`): JSON in which every list of at least
:data:`MIN_PACKED` values is replaced by a binary or coded form:

* floats: ``{"__f8__": <base64 of float64>}`` (``None`` stored as NaN);
  floats that are all whole numbers (counts, 0/1 flags) as
  ``{"__fi__": [dtype, <base64>]}`` in the narrowest integer type that holds
  them;
* integers: ``{"__i__": [dtype, <base64>]}``, the narrowest of ``u1 .. u4``,
  ``i1 .. i8`` that holds them (``{"__i8__": ...}`` in runs stored before);
* strings (and ``None``) with few distinct values (rater names, reasons):
  ``{"__cat__": [distinct values, codes]}``, the codes packed as integers.

The stored size (and with it FiftyOne's time to encode and store the results)
is what this saves: on the crowd benchmark (64,000 rater pairs) OT's results
went from 12.6 to 7.9 MB (saving them 0.10 -> 0.06 s) and KαLOS's from 3.7 to
1.3 MB (0.04 -> 0.01 s). :func:`unpack` gives back the same plain values
(``None`` for NaN, Python ``int``/``float``/``str``), so readers never see the
encoding. Tables of records (the rater pairs) are stored as columns by their
producers (:func:`agreement.core.rater_pairs.records_to_columns`).

The nested ``{"a|b": {sample_id: score}}`` map of per-(sample, rater pair)
scores is stored as dictionary-coded parallel columns
(:func:`nested_to_columns`: each key string once, integer codes) and rebuilt
on reading (:func:`columns_to_nested`).
"""

from __future__ import annotations

import base64
import json
import math
from typing import Any, Mapping

import numpy as np

from agreement.fo.storage.stored_values import db_value

__all__ = ["pack", "unpack", "nested_to_columns", "columns_to_nested", "is_nested_columns", "MIN_PACKED"]

#: Numeric lists shorter than this stay plain JSON (readable in the database).
MIN_PACKED = 64


def pack(obj: Any) -> str:
    """``obj`` (dicts, lists, plain scalars, numpy arrays) as a compact JSON string; inverse :func:`unpack`."""
    return json.dumps(_encode(obj), allow_nan=False, separators=(",", ":"))


def unpack(text: str) -> Any:
    """The value stored by :func:`pack`: numeric columns as lists of ``int``/``float`` (NaN as ``None``)."""
    return json.loads(text, object_hook=_decode)


def _encode(obj: Any) -> Any:
    if isinstance(obj, Mapping):
        return {str(k): _encode(v) for k, v in obj.items()}
    if isinstance(obj, np.ndarray):
        packed = _packed_array(obj)
        if packed is not None:
            return packed
        obj = obj.tolist()
    if isinstance(obj, (list, tuple)):
        kinds = set(map(type, obj))  # one C-level pass types the whole list
        packed = _packed_column(obj, kinds)
        if packed is not None:
            return packed
        if kinds <= _PLAIN:
            return list(obj)
        return [_encode(v) for v in obj]
    value = db_value(obj)  # numpy scalars as Python ones, NaN as None
    return None if isinstance(value, float) and not math.isfinite(value) else value


_PLAIN = frozenset({str, int, bool, type(None)})


def _packed_column(values: list | tuple, kinds: set) -> dict | None:
    """A long list of ints, of floats and ``None``, or of few distinct strings and ``None`` (``kinds``: the
    types of its values) in its packed form (module docstring); ``None`` for anything else."""
    if len(values) < MIN_PACKED:
        return None
    if kinds <= {int, np.int64}:
        return _packed_ints(np.asarray(values, dtype=np.int64))
    if kinds <= {float, int, type(None), np.float64} and kinds & {float, np.float64}:
        arr = np.array([np.nan if v is None else v for v in values] if type(None) in kinds else values, dtype="<f8")
        return _packed_floats(arr)
    if kinds <= {str, type(None)} and str in kinds:
        distinct = list(dict.fromkeys(values))
        if len(distinct) * MIN_DISTINCT_RATIO <= len(values):
            code = {v: k for k, v in enumerate(distinct)}
            return {"__cat__": [distinct, _packed_ints(np.fromiter(map(code.__getitem__, values), np.int64,
                                                                   len(values)))]}
    return None


#: A long string column is stored dictionary-coded when it has at most one distinct value per this many.
MIN_DISTINCT_RATIO = 4


def _packed_array(arr: np.ndarray) -> dict | None:
    """A long 1-D numeric numpy column packed by its values (the same encoding as :func:`_packed_column`
    gives the equal list, without a pass over Python objects); ``None`` for anything else."""
    if arr.ndim != 1 or len(arr) < MIN_PACKED:
        return None
    if arr.dtype.kind in "iu" and (arr.dtype.itemsize < 8 or arr.dtype.kind == "i" or arr.max() < 2**63):
        return _packed_ints(arr)
    if arr.dtype.kind == "f":
        return _packed_floats(arr)
    return None


def _packed_ints(arr: np.ndarray) -> dict:
    """Integers in the narrowest little-endian type that holds them."""
    return {"__i__": _narrow(arr)}


def _packed_floats(arr: np.ndarray) -> dict:
    """Floats (non-finite stored as NaN): whole numbers (no ``-0.0``) as narrow integers, else float64."""
    out = arr.astype("<f8")  # a copy: the caller's array is not changed
    finite = np.isfinite(out)
    if finite.all() and np.abs(out).max() < 2**53 and np.all(out == np.trunc(out)) \
            and not (np.signbit(out) & (out == 0)).any():
        return {"__fi__": _narrow(out.astype(np.int64))}
    out[~finite] = np.nan
    return {"__f8__": _b64(out)}


_NARROW = [np.dtype(t) for t in ("<u1", "<u2", "<u4", "<i1", "<i2", "<i4", "<i8")]


def _narrow(arr: np.ndarray) -> list:
    """``[dtype, base64]`` of integers in the first of :data:`_NARROW` that holds their range."""
    lo, hi = (int(arr.min()), int(arr.max())) if len(arr) else (0, 0)
    dt = next(t for t in _NARROW if np.iinfo(t).min <= lo and hi <= np.iinfo(t).max)
    return [dt.str, _b64(arr.astype(dt))]


def _b64(arr: np.ndarray) -> str:
    return base64.b64encode(arr.tobytes()).decode("ascii")


def _decode(obj: dict) -> Any:
    if len(obj) == 1:
        if "__f8__" in obj:
            arr = np.frombuffer(base64.b64decode(obj["__f8__"]), dtype="<f8")
            return [None if v != v else v for v in arr.tolist()]
        if "__i__" in obj:
            return _unnarrow(obj["__i__"]).tolist()
        if "__fi__" in obj:
            return _unnarrow(obj["__fi__"]).astype(np.float64).tolist()
        if "__cat__" in obj:
            distinct, codes = obj["__cat__"]  # the codes were decoded first (innermost object)
            return [distinct[c] for c in codes]
        if "__i8__" in obj:  # runs stored before the narrow types
            return np.frombuffer(base64.b64decode(obj["__i8__"]), dtype="<i8").tolist()
    return obj


def _unnarrow(stored: list) -> np.ndarray:
    dtype, data = stored
    return np.frombuffer(base64.b64decode(data), dtype=np.dtype(dtype)).astype(np.int64)


def nested_to_columns(nested: Mapping[str, Mapping[str, Any]]) -> dict[str, list]:
    """``{outer: {inner: value}}`` as dictionary-coded columns (inverse :func:`columns_to_nested`).

    ``{"outer_keys": [distinct outer keys], "outer": [code per entry],
    "inner_keys": [distinct inner keys], "inner": [code per entry], "value": [...]}``:
    each key string is stored once, the codes pack as integers.
    """
    outer_keys = list(nested)
    inner_index: dict[str, int] = {}
    outer: list[int] = []
    inner: list[int] = []
    values: list[Any] = []
    for code, m in enumerate(nested.values()):
        outer.extend([code] * len(m))
        inner.extend(inner_index.setdefault(k, len(inner_index)) for k in m)
        values.extend(m.values())
    return {"outer_keys": outer_keys, "outer": outer, "inner_keys": list(inner_index), "inner": inner,
            "value": values}


#: The keys of the plain (uncoded) column form, as runs before the coded form stored it.
_PLAIN_COLUMNS = frozenset({"outer", "inner", "value"})
_CODED_COLUMNS = frozenset({"outer_keys", "outer", "inner_keys", "inner", "value"})


def is_nested_columns(value: Any) -> bool:
    """Whether ``value`` is the column form of :func:`nested_to_columns` (coded, or plain as older runs stored)."""
    return isinstance(value, Mapping) and set(value) in (_PLAIN_COLUMNS, _CODED_COLUMNS)


def columns_to_nested(columns: Mapping[str, list]) -> dict[str, dict[str, Any]]:
    """The inverse of :func:`nested_to_columns` (also reads the plain form of older runs)."""
    outer, inner = columns["outer"], columns["inner"]
    if "outer_keys" in columns:
        ok, ik = columns["outer_keys"], columns["inner_keys"]
        outer, inner = [ok[c] for c in outer], [ik[c] for c in inner]
    out: dict[str, dict[str, Any]] = {}
    for o, i, v in zip(outer, inner, columns["value"], strict=False):
        out.setdefault(o, {})[i] = v
    return out
