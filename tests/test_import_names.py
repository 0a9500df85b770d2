"""The name rule that matches images across exports (agreement/io/image_names.py)."""

from __future__ import annotations

import json
from collections import Counter

import pytest

pytestmark = pytest.mark.fiftyone


def test_the_upload_id_is_exactly_8_lowercase_hex_digits_and_a_hyphen():
    from agreement.io.image_names import name_rule

    rule = name_rule()
    assert rule.key("/data/upload/7/01b89637-pexels-photo.jpg") == ("pexels-photo.jpg", "upload_id")
    for name in ("01B89637-a.jpg", "1b89637-a.jpg", "01b896370-a.jpg", "01b89637_a.jpg", "g1b89637-a.jpg",
                 "01b89637-"):
        assert rule.key(name) == (name, "file name"), name
    assert name_rule(upload_ids=False).key("01b89637-a.jpg") == ("01b89637-a.jpg", "file name")


def test_rules_apply_in_order_map_then_prefix_then_upload_id(tmp_path):
    from agreement.io.image_names import name_rule

    rule = name_rule(name_map={"frame_1.jpg": "sub/a.jpg", "/data/upload/7/x.jpg": "b.jpg"}, strip_prefix=r"task\d+_")
    assert rule.key("some/dir/frame_1.jpg") == ("a.jpg", "name_map")
    assert rule.key("/data/upload/7/x.jpg") == ("b.jpg", "name_map")
    assert rule.key("task12_01b89637-c.jpg") == ("01b89637-c.jpg", "strip_prefix")
    assert rule.key("01b89637-c.jpg") == ("c.jpg", "upload_id")
    assert rule.key("task12_") == ("task12_", "file name")  # a rule never leaves an empty name
    assert rule.stem_key("frame_1") == ("a", "name_map") and rule.stem_key("01b89637-c") == ("c", "upload_id")
    assert "name map (2 names" in rule.describe() and "strip_prefix='task\\\\d+_'" in rule.describe()


def test_name_map_files_csv_with_or_without_header_and_json(tmp_path):
    from agreement.io.image_names import NameMatchError, load_name_map

    (tmp_path / "h.csv").write_text("export_name,image_name\nx.jpg,a.jpg\n\ny.jpg, b.jpg\n")
    (tmp_path / "n.csv").write_text("x.jpg,a.jpg\n")
    (tmp_path / "m.json").write_text(json.dumps({"x.jpg": "a.jpg"}))
    assert load_name_map(tmp_path / "h.csv")[0] == {"x.jpg": "a.jpg", "y.jpg": "b.jpg"}
    assert load_name_map(tmp_path / "n.csv")[0] == {"x.jpg": "a.jpg"}
    assert load_name_map(tmp_path / "m.json") == ({"x.jpg": "a.jpg"}, str(tmp_path / "m.json"))
    (tmp_path / "bad.csv").write_text("x.jpg,a.jpg,extra\n")
    with pytest.raises(NameMatchError, match="line 1: expected two columns"):
        load_name_map(tmp_path / "bad.csv")
    (tmp_path / "twice.csv").write_text("x.jpg,a.jpg\nx.jpg,b.jpg\n")
    with pytest.raises(NameMatchError, match="'x.jpg' is mapped twice"):
        load_name_map(tmp_path / "twice.csv")
    (tmp_path / "list.json").write_text("[1, 2]")
    with pytest.raises(NameMatchError, match="JSON object"):
        load_name_map(tmp_path / "list.json")
    with pytest.raises(NameMatchError, match="is not a file"):
        load_name_map(tmp_path / "missing.csv")
    for empty in ("", "export_name,image_name\n", "\n\n"):
        (tmp_path / "empty.csv").write_text(empty)
        with pytest.raises(NameMatchError, match="empty.csv' holds no entries"):
            load_name_map(tmp_path / "empty.csv")


def test_two_names_with_one_key_are_refused_and_the_report_counts(tmp_path):
    from agreement.io.image_names import NameMatchError, keys_of, match_report, name_rule

    rule = name_rule()
    with pytest.raises(NameMatchError, match=r"'a.jpg' and '0123abcd-a.jpg', both match the name 'a.jpg'.*upload_ids"):
        keys_of(["a.jpg", "0123abcd-a.jpg"], rule, "rater 'x'")
    keys, rules = keys_of(["0123abcd-a.jpg", "b.jpg"], rule, "x")
    assert keys == ["a.jpg", "b.jpg"] and rules == Counter({"upload_id": 1, "file name": 1})
    rep = match_report({"x": {"a.jpg": "0123abcd-a.jpg", "b.jpg": "b.jpg"}, "y": {"a.jpg": "a.jpg"}},
                       {"x": rules, "y": Counter({"file name": 1})}, rule)
    assert rep["per_rater"]["x"] == {"images": 2, "matched": 1, "unmatched": 1, "unmatched_examples": ["b.jpg"],
                                     "renamed_by": {"upload_id": 1, "file name": 1}}
    assert rep["per_rater"]["y"]["matched"] == 1 and rep["rule"]["upload_ids"] is True
