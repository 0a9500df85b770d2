"""Box validation: errors name the box; clipping is a reported repair."""

import numpy as np
import pytest

from agreement.validation import AnnotationError, RepairReport, validate_boxes

WHERE = ["sample 'a.jpg', field 'r1', label 0", "sample 'b.jpg', field 'r2', label 1"]


@pytest.mark.parametrize(
    "box, message",
    [
        ([np.nan, 0.1, 0.2, 0.2], "NaN or infinite"),
        ([0.1, np.inf, 0.2, 0.2], "NaN or infinite"),
        ([0.1, 0.1, -0.2, 0.2], "negative width or height"),
        ([1.5, 0.1, 0.2, 0.2], "entirely outside"),
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


def test_float_noise_at_the_border_is_tolerated_and_zero_area_is_valid():
    boxes = np.array([[0.0, 0.0, 1.0 + 1e-9, 1.0], [0.5, 0.5, 0.0, 0.0]])
    report = RepairReport()
    out = validate_boxes(boxes, WHERE, report=report)
    assert not report and out is not None
