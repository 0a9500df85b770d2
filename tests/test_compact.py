"""Compact storage of large result tables (agreement.fo.storage.compact): exact round trips, plain values back."""

import json
import math

import numpy as np
from hypothesis import given, settings, strategies as st

from agreement.fo.storage.compact import MIN_PACKED, columns_to_nested, nested_to_columns, pack, unpack

finite_or_none = st.one_of(st.none(), st.floats(allow_nan=False, allow_infinity=False))


@settings(max_examples=60, deadline=None)
@given(floats=st.lists(finite_or_none, min_size=0, max_size=3 * MIN_PACKED),
       ints=st.lists(st.integers(-2**62, 2**62), max_size=3 * MIN_PACKED),
       strings=st.lists(st.text(max_size=5), max_size=80))
def test_round_trip_is_exact_and_plain(floats, ints, strings):
    table = {"f": floats, "i": ints, "s": strings, "n": {"deep": [1.5, None, 2]}}
    back = unpack(pack(table))
    assert back["i"] == ints and all(type(v) is int for v in back["i"])
    assert back["s"] == strings
    assert back["n"] == {"deep": [1.5, None, 2]}
    if any(v is not None for v in floats):
        assert back["f"] == [None if v is None else float(v) for v in floats]
    else:
        assert back["f"] == floats


def test_long_numeric_columns_are_packed_short_ones_stay_readable():
    long = np.linspace(0, 1, MIN_PACKED).tolist()
    stored = json.loads(pack({"long": long, "short": [0.25, 0.5], "ints": list(range(MIN_PACKED))}))
    assert set(stored["long"]) == {"__f8__"} and set(stored["ints"]) == {"__i__"}
    assert stored["ints"]["__i__"][0] == "|u1"  # the narrowest type that holds 0 .. 63
    assert stored["short"] == [0.25, 0.5]


def test_nan_inf_and_numpy_values_are_stored_as_none_and_python_scalars():
    arr = np.array([1.0, np.nan, np.inf] + [0.5] * MIN_PACKED)
    back = unpack(pack({"a": arr, "x": np.float32(0.5), "k": np.int64(3), "b": np.bool_(True), "z": float("nan")}))
    assert back["a"][:3] == [1.0, None, None] and back["a"][3] == 0.5
    assert back["x"] == 0.5 and back["k"] == 3 and back["b"] is True and back["z"] is None
    assert all(v is None or math.isfinite(v) for v in back["a"])


def test_nested_maps_round_trip_through_columns():
    nested = {"a|b": {"s1": 0.5, "s2": None}, "a|c": {"s1": 1.0}}
    assert columns_to_nested(unpack(pack(nested_to_columns(nested)))) == nested
    assert columns_to_nested(nested_to_columns({})) == {}


def test_long_record_tables_are_stored_as_packed_columns_and_read_back_as_records():
    """Rater-pair records go through records_to_columns (how runs store them): numeric columns packed, exact back."""
    from agreement.core.rater_pairs import columns_to_records, records_to_columns

    rng = np.random.default_rng(0)
    rows = [{"rater_a": f"w{i}", "rater_b": f"w{i + 1}", "alpha": None if i % 7 == 0 else float(rng.random()),
             "n": int(i), "classes": ["car", "dog"][: i % 3]} for i in range(2 * MIN_PACKED)]
    stored = json.loads(pack({"pairs": records_to_columns(rows), "short": rows[:3], "empty": [{}] * MIN_PACKED}))
    assert set(stored["pairs"]["alpha"]) == {"__f8__"} and set(stored["pairs"]["n"]) == {"__i__"}
    assert isinstance(stored["pairs"]["classes"], list)  # lists of lists are not coded
    assert stored["short"] == rows[:3]  # a short table stays readable records
    back = unpack(pack({"pairs": records_to_columns(rows), "short": rows[:3], "empty": [{}] * MIN_PACKED}))
    assert columns_to_records(back["pairs"]) == rows and back["short"] == rows[:3]
    assert back["empty"] == [{}] * MIN_PACKED
    mixed = rows[:MIN_PACKED] + [{"other": 1}]  # records of different keys stay records
    assert unpack(pack(mixed)) == mixed


def test_nested_maps_are_stored_dictionary_coded_and_older_plain_columns_still_read():
    nested = {f"r{i}|r{i + 1}": {f"s{j}": 0.5 * j for j in range(2 * MIN_PACKED)} for i in range(3)}
    stored = json.loads(pack(nested_to_columns(nested)))
    assert stored["outer_keys"] == list(nested) and len(stored["inner_keys"]) == 2 * MIN_PACKED
    assert set(stored["outer"]) == {"__i__"} and set(stored["inner"]) == {"__i__"}
    assert columns_to_nested(unpack(pack(nested_to_columns(nested)))) == nested
    plain = {"outer": ["a|b", "a|b", "a|c"], "inner": ["s1", "s2", "s1"], "value": [0.5, None, 1.0]}
    assert columns_to_nested(plain) == {"a|b": {"s1": 0.5, "s2": None}, "a|c": {"s1": 1.0}}


@settings(max_examples=60, deadline=None)
@given(ints=st.lists(st.integers(-2**63, 2**63 - 1), min_size=MIN_PACKED, max_size=2 * MIN_PACKED),
       whole=st.lists(st.integers(-2**53 + 1, 2**53 - 1), min_size=MIN_PACKED, max_size=2 * MIN_PACKED),
       names=st.lists(st.one_of(st.none(), st.sampled_from(["w1", "w2", "no counterpart", ""])),
                      min_size=MIN_PACKED, max_size=2 * MIN_PACKED))
def test_narrow_and_coded_forms_round_trip_exactly(ints, whole, names):
    """Integers of any 64-bit range, whole-number floats and few distinct strings come back equal and of
    their type (floats stay floats), from lists and from numpy arrays alike."""
    floats = [float(v) for v in whole]
    back = unpack(pack({"i": ints, "ia": np.array(ints, dtype=np.int64), "f": floats,
                        "fa": np.array(floats), "s": names}))
    assert back["i"] == ints and back["ia"] == ints and all(type(v) is int for v in back["i"] + back["ia"])
    assert back["f"] == floats and back["fa"] == floats and all(type(v) is float for v in back["f"] + back["fa"])
    assert back["s"] == names


def test_the_packed_forms_are_narrow_and_keep_what_must_stay_float():
    n = 4 * MIN_PACKED
    stored = json.loads(pack({
        "count": np.arange(n) % 7, "big": np.arange(n) * 100_000, "neg": -np.arange(n),
        "flags": np.array([0.0, 1.0] * (n // 2)), "halves": np.arange(n) / 2,
        "negzero": [-0.0] * n, "nan": [1.0, None] * (n // 2),
        "reasons": [None, "no counterpart", "label differs"] * MIN_PACKED, "names": [f"w{i}" for i in range(n)],
    }))
    assert stored["count"]["__i__"][0] == "|u1" and stored["big"]["__i__"][0] == "<u4"
    assert stored["neg"]["__i__"][0] == "<i2"
    assert stored["flags"]["__fi__"][0] == "|u1"  # 0/1 as float: one byte each, read back as floats
    assert set(stored["halves"]) == set(stored["negzero"]) == set(stored["nan"]) == {"__f8__"}
    assert stored["reasons"]["__cat__"][0] == [None, "no counterpart", "label differs"]
    assert isinstance(stored["names"], list)  # all distinct: stays a plain list
    back = unpack(json.dumps(stored))
    assert back["flags"] == [0.0, 1.0] * (n // 2) and all(type(v) is float for v in back["flags"])
    assert all(math.copysign(1, v) == -1 for v in back["negzero"])  # -0.0 is not stored as the integer 0
    assert back["reasons"] == [None, "no counterpart", "label differs"] * MIN_PACKED


def test_results_stored_before_the_narrow_forms_still_read():
    import base64

    old = {"__i8__": base64.b64encode(np.arange(MIN_PACKED, dtype="<i8").tobytes()).decode()}
    assert unpack(json.dumps({"n": old})) == {"n": list(range(MIN_PACKED))}
