"""What an operator shows when it ends: every value it returned, and no blank line for an empty one."""

from __future__ import annotations

import pytest

pytest.importorskip("fiftyone")

from operators.outputs import result_property  # noqa: E402


def test_result_property_shows_every_value_and_leaves_out_empty_ones():
    declared = [("alpha", "α", "float"), ("reason", "Why α is undefined", "str")]
    shown = result_property(declared, {"alpha": 0.5, "reason": "", "global_reason": None, "n_units": 3}).type
    assert list(shown.properties) == ["alpha", "n_units"]  # no "Why α is undefined:" followed by nothing
    shown = result_property(declared, {"alpha": None, "reason": "fewer than two raters"}).type
    assert list(shown.properties) == ["reason"]
    assert list(result_property(declared).type.properties) == ["alpha", "reason"]  # the form, before a result
