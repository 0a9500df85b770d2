"""Box validation: errors name the box; clipping is a reported repair."""

import numpy as np
import pytest

from agreement.core.validation import AnnotationError, RepairReport, check_boxes, validate_boxes

WHERE = ["sample 'a.jpg', field 'r1', label 0", "sample 'b.jpg', field 'r2', label 1"]


@pytest.mark.parametrize(
    "box, message",
    [
        ([np.nan, 0.1, 0.2, 0.2], "NaN or infinite"),
        ([0.1, np.inf, 0.2, 0.2], "NaN or infinite"),
        ([0.1, 0.1, -0.2, 0.2], "negative width or height"),
    ],
)
def test_bad_boxes_are_errors_naming_sample_and_field(box, message):
    boxes = np.array([[0.1, 0.1, 0.2, 0.2], box])
    with pytest.raises(AnnotationError, match=message) as err:
        validate_boxes(boxes, WHERE)
    assert "b.jpg" in str(err.value) and "'r2'" in str(err.value)


def test_boxes_past_the_border_are_clipped_and_reported():
    report = RepairReport()
    out = validate_boxes(np.array([[0.9, 0.9, 0.2, 0.3], [0.1, 0.1, 0.1, 0.1]]), WHERE, report=report)
    np.testing.assert_allclose(out[0], [0.9, 0.9, 0.1, 0.1])
    np.testing.assert_allclose(out[1], [0.1, 0.1, 0.1, 0.1])
    assert report.clipped_boxes == 1 and "a.jpg" in report.examples[0]


def test_error_policy_refuses_boxes_past_the_border():
    with pytest.raises(AnnotationError, match="extends outside"):
        validate_boxes(np.array([[0.9, 0.9, 0.2, 0.3]]), WHERE, policy="error")


@pytest.mark.parametrize("policy", ["clip", "drop", "error"])
def test_float_noise_at_the_border_is_tolerated_and_zero_area_is_valid(policy):
    """Coordinates past either border by float noise (within the tolerance) and a zero-area box are kept as
    they are under every policy: nothing repaired, dropped or refused, no value changed."""
    boxes = np.array([[0.0, 0.0, 1.0 + 1e-9, 1.0], [0.5, 0.5, 0.0, 0.0], [-1e-9, 0.2, 0.3, 0.3],
                      [0.2, -1e-9, 0.3, 1.0 + 1e-9]])
    report = RepairReport()
    out, keep = check_boxes(boxes, WHERE * 2, policy=policy, report=report, raters=["ann", "bob"] * 2)
    np.testing.assert_array_equal(out, boxes)
    assert keep.tolist() == [True] * 4
    assert not report and report.counts() == {"clipped_boxes": 0, "outside_boxes": 0, "dropped_boxes": 0,
                                              "resized_masks": 0} and report.per_rater == {}
    if policy != "drop":
        np.testing.assert_array_equal(validate_boxes(boxes, WHERE * 2, policy=policy), boxes)


def test_just_past_the_tolerance_is_outside():
    report = RepairReport()
    out = validate_boxes(np.array([[0.0, 0.0, 1.0 + 1e-3, 1.0], [-1e-3, 0.2, 0.3, 0.3]]), WHERE, report=report)
    np.testing.assert_allclose(out, [[0.0, 0.0, 1.0, 1.0], [0.0, 0.2, 0.3 - 1e-3, 0.3]])
    assert report.clipped_boxes == 2


def test_entirely_outside_is_an_error_only_under_the_error_policy():
    with pytest.raises(AnnotationError, match="entirely outside") as err:
        validate_boxes(np.array([[0.1, 0.1, 0.2, 0.2], [1.5, 0.1, 0.2, 0.2]]), WHERE, policy="error")
    assert "b.jpg" in str(err.value) and "box_policy='drop'" in str(err.value)


def test_clip_turns_a_box_entirely_outside_into_a_zero_area_box_on_the_border():
    report = RepairReport()
    boxes = np.array([[1.5, 0.1, 0.2, 0.2], [-0.5, -0.4, 0.2, 0.1], [0.9, 0.2, 0.3, 0.1], [0.2, 0.2, 0.1, 0.1]])
    out, keep = check_boxes(boxes, WHERE * 2, report=report, raters=["ann", "bob", "ann", "bob"])
    assert keep.all()
    np.testing.assert_allclose(out[0], [1.0, 0.1, 0.0, 0.2])
    np.testing.assert_allclose(out[1], [0.0, 0.0, 0.0, 0.0])
    np.testing.assert_allclose(out[2], [0.9, 0.2, 0.1, 0.1])
    np.testing.assert_allclose(out[3], boxes[3])
    assert (report.clipped_boxes, report.outside_boxes, report.dropped_boxes) == (1, 2, 0)
    assert report.per_rater == {
        "ann": {"clipped_boxes": 1, "outside_boxes": 1, "dropped_boxes": 0},
        "bob": {"clipped_boxes": 0, "outside_boxes": 1, "dropped_boxes": 0},
    }
    assert "zero-area" in " ".join(report.examples)


def test_drop_policy_marks_boxes_past_the_border_and_counts_them_per_rater():
    report = RepairReport()
    boxes = np.array([[1.5, 0.1, 0.2, 0.2], [0.9, 0.2, 0.3, 0.1], [0.2, 0.2, 0.1, 0.1]])
    out, keep = check_boxes(boxes, WHERE + WHERE[:1], policy="drop", report=report, raters=["ann", "bob", "bob"])
    assert keep.tolist() == [False, False, True]
    np.testing.assert_array_equal(out, boxes)
    assert report.dropped_boxes == 2 and report.counts()["clipped_boxes"] == 0
    assert report.as_dict()["per_rater"]["bob"]["dropped_boxes"] == 1


def test_unknown_box_policy_is_refused():
    with pytest.raises(ValueError, match="box_policy must be one of"):
        check_boxes(np.zeros((1, 4)), WHERE[:1], policy="ignore")
