"""The CVAT typing of per-label conflicts (agreement.reporting.conflicts): pure, on hand-built cases where every
conflict is known."""

from __future__ import annotations

import pytest

from agreement.reporting.conflicts import Label, conflict_type, group_conflicts, label_iou, ot_conflicts


def _kinds(conflicts) -> list[tuple]:
    return sorted((c.type, c.rater_a, c.rater_b, c.label_a.id if c.label_a else None, c.label_b.id if c.label_b else None)
                  for c in conflicts)


@pytest.mark.parametrize("args, expected", [
    (dict(class_a="cat", class_b=None, present_b=False), "missing"),
    (dict(class_a=None, class_b="cat", present_a=False), "extra"),
    (dict(class_a="cat", class_b="dog", iou=0.9), "label differs"),
    (dict(class_a="cat", class_b="cat", iou=0.9, reason="label differs"), "label differs"),
    (dict(class_a="cat", class_b="dog", iou=0.1, reason="too far"), "low overlap"),  # localisation first
    (dict(class_a="cat", class_b="cat", iou=0.3), "low overlap"),
    (dict(class_a="cat", class_b="cat", iou=0.3, low_overlap_iou=0.2), None),
    (dict(class_a="cat", class_b="cat", iou=0.9), None),
    (dict(class_a="cat", class_b="cat", iou=None), None),
])
def test_conflict_type_rule(args, expected):
    assert conflict_type(**args) == expected


def test_conflict_type_refuses_nothing_on_both_sides_and_a_bad_threshold():
    with pytest.raises(ValueError, match="at least one side"):
        conflict_type(None, None, present_a=False, present_b=False)
    with pytest.raises(ValueError, match="low_overlap_iou"):
        conflict_type("a", "a", iou=0.5, low_overlap_iou=1.5)


def test_label_iou():
    a = Label("1", "r", "x", (0.0, 0.0, 0.2, 0.2))
    b = Label("2", "s", "x", (0.1, 0.0, 0.2, 0.2))
    assert label_iou(a, b) == pytest.approx(0.02 / 0.06)
    assert label_iou(a, Label("3", "s", "x")) is None


def test_ot_conflicts_on_a_sample_where_every_conflict_is_known():
    box = (0.1, 0.1, 0.2, 0.2)
    labels = [
        # a1 <-> b1 matched, same class, identical boxes: no conflict
        Label("a1", "a", "cat", box, match="b1"), Label("b1", "b", "cat", box, match="a1"),
        # a2 <-> b2 matched but classes differ
        Label("a2", "a", "cat", (0.5, 0.5, 0.2, 0.2), match="b2"), Label("b2", "b", "dog", (0.5, 0.5, 0.2, 0.2), match="a2"),
        # a3 matched to b3 with low IoU (1/3)
        Label("a3", "a", "cat", (0.0, 0.7, 0.2, 0.2), match="b3"), Label("b3", "b", "cat", (0.1, 0.7, 0.2, 0.2)),
        # b4 unmatched, its nearest a4 too far (stored on both: one conflict)
        Label("b4", "b", "car", (0.7, 0.0, 0.1, 0.1), reason="too far", nearest="a4"),
        Label("a4", "a", "car", (0.75, 0.05, 0.1, 0.1), reason="too far", nearest="b4"),
        # b5: a second box where a's one box already matched: extra for b against a
        Label("b5", "b", "cat", box, reason="counterpart taken", nearest="a1"),
        # a6: the label differs from its nearest b6 (both unmatched)
        Label("a6", "a", "cat", (0.3, 0.3, 0.1, 0.1), reason="label differs", nearest="b6"),
        Label("b6", "b", "bus", (0.3, 0.3, 0.1, 0.1), reason="label differs", nearest="a6"),
    ]
    got = ot_conflicts(labels, ["a", "b"])
    assert _kinds(got) == sorted([
        ("label differs", "a", "b", "a2", "b2"),
        ("low overlap", "a", "b", "a3", "b3"),
        ("low overlap", "a", "b", "a4", "b4"),
        ("extra", "a", "b", None, "b5"),
        ("label differs", "a", "b", "a6", "b6"),
    ])
    low = next(c for c in got if c.label_a.id == "a3")
    assert low.iou == pytest.approx(1 / 3) and low.reason == ""
    assert next(c for c in got if c.label_a and c.label_a.id == "a4").reason == "too far"
    # the same labels with the rater order reversed: b is the reference, so b5 is now missing for a
    assert ("missing", "b", "a", "b5", None) in _kinds(ot_conflicts(labels, ["a", "b"], order=["b", "a"]))


def test_ot_no_counterpart_is_missing_or_extra_against_every_other_assigned_rater():
    labels = [Label("b1", "b", "cat", reason="no counterpart")]
    assert _kinds(ot_conflicts(labels, ["a", "b", "c"])) == [("extra", "a", "b", None, "b1"),
                                                             ("missing", "b", "c", "b1", None)]
    assert ot_conflicts(labels, ["b"]) == []  # nobody else assigned: nothing to disagree with


def test_group_conflicts_pairs_and_reference():
    units = [
        [Label("a1", "a", "cat", (0, 0, 0.2, 0.2)), Label("b1", "b", "cat", (0, 0, 0.2, 0.2))],  # agree
        [Label("a2", "a", "cat", (0.5, 0.5, 0.2, 0.2)), Label("c2", "c", "dog", (0.5, 0.5, 0.2, 0.2))],
        [Label("c3", "c", "cat")],
    ]
    assert _kinds(group_conflicts(units, ["a", "b", "c"])) == sorted([
        ("missing", "a", "b", "a2", None), ("label differs", "a", "c", "a2", "c2"), ("extra", "b", "c", None, "c2"),
        ("extra", "a", "c", None, "c3"), ("extra", "b", "c", None, "c3"),
        ("missing", "a", "c", "a1", None), ("missing", "b", "c", "b1", None),  # c drew nothing in unit 1
    ])
    fused = [[Label("k1", "consensus", "cat"), Label("a1", "a", "cat"), Label("b1", "b", "dog")],
             [Label("k2", "consensus", "cat"), Label("a2", "a", "cat")], [Label("b3", "b", "cat")]]
    assert _kinds(group_conflicts(fused, ["a", "b"], reference="consensus")) == sorted([
        ("label differs", "consensus", "b", "k1", "b1"), ("missing", "consensus", "b", "k2", None),
        ("extra", "consensus", "b", None, "b3"),
    ])


def test_ot_labels_that_do_not_overlap_are_not_counterparts():
    labels = [Label("a1", "a", "cat", (0.0, 0.0, 0.1, 0.1), reason="label differs", nearest="b1"),
              Label("b1", "b", "dog", (0.5, 0.5, 0.1, 0.1), reason="label differs", nearest="a1")]
    assert _kinds(ot_conflicts(labels, ["a", "b"])) == [("extra", "a", "b", None, "b1"), ("missing", "a", "b", "a1", None)]


def test_group_counterparts_of_one_class_that_overlap_little_are_low_overlap():
    """A KαLOS unit or a consensus label whose members share a class but overlap below the threshold: one
    ``low overlap`` conflict with their IoU (1/3 here), in both modes (rater pairs, and against a reference);
    above the threshold, none."""
    units = [[Label("a1", "a", "cat", (0.0, 0.0, 0.2, 0.2)), Label("b1", "b", "cat", (0.1, 0.0, 0.2, 0.2))],
             [Label("a2", "a", "dog", (0.5, 0.5, 0.2, 0.2)), Label("b2", "b", "dog", (0.52, 0.5, 0.2, 0.2))]]
    got = group_conflicts(units, ["a", "b"])
    assert _kinds(got) == [("low overlap", "a", "b", "a1", "b1")]
    assert got[0].iou == pytest.approx(1 / 3) and got[0].reason == ""
    assert group_conflicts(units, ["a", "b"], low_overlap_iou=0.3) == []
    fused = [[Label("k1", "consensus", "cat", (0.05, 0.0, 0.2, 0.2)), Label("a1", "a", "cat", (0.0, 0.0, 0.2, 0.2)),
              Label("b1", "b", "cat", (0.2, 0.0, 0.2, 0.2))]]
    got = group_conflicts(fused, ["a", "b"], reference="consensus")
    assert _kinds(got) == [("low overlap", "consensus", "b", "k1", "b1")]  # a's IoU 0.6: no conflict
    assert got[0].iou == pytest.approx(0.01 / 0.07)


def test_every_pair_of_a_unit_is_typed_once_with_three_raters():
    """One unit, three raters: a and b agree, c drew another class with a small box: a-c and b-c
    ``label differs`` (the class decides before the overlap), nothing for a-b."""
    unit = [Label("a1", "a", "cat", (0.0, 0.0, 0.4, 0.4)), Label("b1", "b", "cat", (0.0, 0.0, 0.4, 0.4)),
            Label("c1", "c", "dog", (0.0, 0.0, 0.1, 0.1))]
    got = group_conflicts([unit], ["a", "b", "c"])
    assert _kinds(got) == [("label differs", "a", "c", "a1", "c1"), ("label differs", "b", "c", "b1", "c1")]
    assert [c.iou for c in got] == pytest.approx([0.0625, 0.0625])
