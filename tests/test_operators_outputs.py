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


def test_empty_lists_and_tables_show_no_line():
    shown = result_property([("warnings", "Warnings", "lines")], {"warnings": [], "key": "k", "table": {}}).type
    assert list(shown.properties) == ["key"]  # not "No warnings added yet" under a "Warnings" title


def test_long_rater_lists_and_tables_are_summarised_for_the_app_only():
    from operators.outputs import LONG, SHOWN, shown_result

    declared = [("raters", "Raters", "raters"), ("per_rater", "Labels per rater", "per_rater"),
                ("fields", "Fields written", "list"), ("warnings", "Warnings", "lines")]
    crowd = [f"w{i}" for i in range(196)]
    result = {"raters": crowd, "per_rater": {w: 3 for w in crowd}, "fields": [f"f{i}" for i in range(40)],
              "warnings": ["a sentence"] * 40, "n": 1}
    shown = shown_result(declared, result)
    assert shown["raters"] == "196 raters: " + ", ".join(crowd[:SHOWN]) + ", … and 186 more"
    assert list(shown["per_rater"])[:SHOWN] == crowd[:SHOWN] and len(shown["per_rater"]) == SHOWN + 1
    assert "186 more raters" in shown["per_rater"]["…"]
    assert shown["fields"] == result["fields"] and shown["warnings"] == result["warnings"] and shown["n"] == 1
    assert len(result["raters"]) == 196 and len(result["per_rater"]) == 196  # the result itself is unchanged
    props = result_property(declared, shown).type.properties
    assert type(props["raters"].type).__name__ == "String"  # the sentence, shown as text (not chips)
    few = {"raters": crowd[:LONG], "per_rater": {w: 3 for w in crowd[:LONG]}}
    assert shown_result(declared, few) == few  # a crowd of up to LONG is shown whole
    assert type(result_property(declared, few).type.properties["raters"].type).__name__ == "List"


def test_a_refusal_is_shown_as_an_error_notice_with_its_whole_message():
    from operators.errors import REFUSED
    from operators.outputs import refusal_property

    message = "classes ['mid'] are labelled but not in the order given ['low', 'high']; list every class"
    shown = result_property([("alpha", "α", "float")], {REFUSED: message}).to_json()
    assert shown == refusal_property(message).to_json()
    notice = shown["type"]["properties"]["refusal"]["view"]
    assert notice["name"] == "Error" and notice["description"] == message
    assert "alpha" not in shown["type"]["properties"]  # no "No value provided" for what was not computed
