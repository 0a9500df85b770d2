"""agreement.core.arrays.unique_sorted against np.unique (the oracle)."""

import numpy as np
from hypothesis import given, settings, strategies as st
from hypothesis.extra.numpy import arrays

from agreement.core.arrays import unique_sorted


@settings(max_examples=200, deadline=None)
@given(arrays(np.int64, st.integers(0, 300), elements=st.integers(-50, 50)))
def test_integers_equal_np_unique(x):
    np.testing.assert_array_equal(unique_sorted(x), np.unique(x))


@settings(max_examples=200, deadline=None)
@given(arrays(np.float64, st.integers(0, 300), elements=st.sampled_from([0.0, -0.0, 1.5, -2.0, np.nan, np.inf])))
def test_floats_with_nan_equal_np_unique(x):
    np.testing.assert_array_equal(unique_sorted(x), np.unique(x))


def test_objects_and_empty():
    np.testing.assert_array_equal(unique_sorted(np.array(["b", "a", "b"], dtype=object)), ["a", "b"])
    assert unique_sorted(np.zeros(0, np.int64)).dtype == np.int64 and len(unique_sorted([])) == 0
