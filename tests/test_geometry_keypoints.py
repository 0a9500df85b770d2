"""Tests of agreement.geometry.keypoints: OKS against COCO's formula, missing points, properties.

Oracle: a direct per-pair transcription of pycocotools' ``COCOeval.computeOks``
(written here, not imported), which our symmetric OKS must equal whenever
both annotations label every point and have the same area; and a per-pair
loop of the documented symmetric rule for missing points.
"""

from __future__ import annotations

import doctest
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import agreement.geometry.keypoints as keypoints_module
from agreement.geometry.keypoints import COCO_PERSON_KEYPOINTS, COCO_PERSON_SIGMAS, keypoint_scales, pairwise_oks


def coco_compute_oks(gt_xyv, gt_area, dt_xy, sigmas):
    """pycocotools' computeOks for one (ground truth, detection) pair, in pixels.

    Transcribed from ``COCOeval.computeOks`` (case k1 > 0: the ground truth
    has labelled points; detections are complete).
    """
    vars_ = (sigmas * 2) ** 2
    xg, yg, vg = gt_xyv[:, 0], gt_xyv[:, 1], gt_xyv[:, 2]
    k1 = np.count_nonzero(vg > 0)
    assert k1 > 0
    xd, yd = dt_xy[:, 0], dt_xy[:, 1]
    dx, dy = xd - xg, yd - yg
    e = (dx**2 + dy**2) / vars_ / (gt_area + np.spacing(1)) / 2
    e = e[vg > 0]
    return np.sum(np.exp(-e)) / e.shape[0]


def symmetric_oks_loop(a, b, sa, sb, sigmas, W, H):
    """The documented symmetric rule, one pair at a time in plain Python."""
    total, union = 0.0, 0
    s = 0.5 * (sa + sb) + np.spacing(1)
    for k in range(len(sigmas)):
        la, lb = not np.isnan(a[k]).any(), not np.isnan(b[k]).any()
        if la or lb:
            union += 1
        if la and lb:
            d2 = ((a[k, 0] - b[k, 0]) * W) ** 2 + ((a[k, 1] - b[k, 1]) * H) ** 2
            total += math.exp(-d2 / (2 * s * (2 * sigmas[k]) ** 2))
    return total / union


def random_people(rng, n, K=17, missing=0.0):
    centre = rng.random((n, 1, 2)) * 0.6 + 0.2
    kps = centre + rng.normal(scale=0.08, size=(n, K, 2))
    if missing:
        drop = rng.random((n, K)) < missing
        drop[np.arange(n), rng.integers(0, K, n)] = False  # at least one labelled point
        kps[drop] = np.nan
    return kps


def test_doctests():
    assert doctest.testmod(keypoints_module).failed == 0


def test_coco_constants():
    assert len(COCO_PERSON_SIGMAS) == len(COCO_PERSON_KEYPOINTS) == 17
    assert COCO_PERSON_SIGMAS[0] == pytest.approx(0.026) and COCO_PERSON_SIGMAS[-1] == pytest.approx(0.089)
    assert not COCO_PERSON_SIGMAS.flags.writeable


def test_equals_coco_compute_oks_for_complete_annotations():
    rng = np.random.default_rng(0)
    W, H = 640, 480
    a, b = random_people(rng, 6), random_people(rng, 5)
    b[0] = a[0] + rng.normal(scale=0.005, size=(17, 2))  # a close pair
    area = 3000.0
    oks = pairwise_oks(a, b, np.full(6, area), np.full(5, area), image_size=(W, H))
    for i in range(6):
        for j in range(5):
            gt = np.c_[a[i] * [W, H], np.full(17, 2)]
            expected = coco_compute_oks(gt, area, b[j] * [W, H], COCO_PERSON_SIGMAS)
            assert oks[i, j] == pytest.approx(expected, abs=1e-12)
    assert oks[0, 0] > 0.5


def test_equals_the_symmetric_rule_with_missing_points_and_boxes():
    rng = np.random.default_rng(1)
    W, H = 320, 200
    a, b = random_people(rng, 7, missing=0.4), random_people(rng, 6, missing=0.4)
    boxes_a = np.c_[rng.random((7, 2)) * 0.5, 0.1 + rng.random((7, 2)) * 0.4]
    boxes_b = np.c_[rng.random((6, 2)) * 0.5, 0.1 + rng.random((6, 2)) * 0.4]
    oks = pairwise_oks(a, b, boxes_a, boxes_b, image_size=(W, H))
    sa, sb = keypoint_scales(boxes_a, 7, image_size=(W, H)), keypoint_scales(boxes_b, 6, image_size=(W, H))
    np.testing.assert_allclose(sa, boxes_a[:, 2] * W * boxes_a[:, 3] * H)
    for i in range(7):
        for j in range(6):
            expected = symmetric_oks_loop(a[i], b[j], sa[i], sb[j], COCO_PERSON_SIGMAS, W, H)
            assert oks[i, j] == pytest.approx(expected, abs=1e-12)


def test_missing_point_semantics():
    a = np.full((1, 17, 2), 0.5)
    both_missing = a.copy()
    both_missing[0, :2] = np.nan
    # A point missing in both is ignored: identical otherwise -> 1.
    assert pairwise_oks(both_missing, both_missing, [100.0], [100.0])[0, 0] == pytest.approx(1.0)
    # A point labelled by one only counts as 0 over the union of labelled points.
    assert pairwise_oks(a, both_missing, [100.0], [100.0])[0, 0] == pytest.approx(15 / 17)
    # No point in common: 0.
    only_first, only_last = np.full((1, 17, 2), np.nan), np.full((1, 17, 2), np.nan)
    only_first[0, 0], only_last[0, -1] = 0.5, 0.5
    assert pairwise_oks(only_first, only_last, [100.0], [100.0])[0, 0] == 0.0
    # One NaN coordinate makes the point missing.
    half = a.copy()
    half[0, 3, 0] = np.nan
    assert pairwise_oks(a, half, [100.0], [100.0])[0, 0] == pytest.approx(16 / 17)


def test_scale_and_image_size():
    rng = np.random.default_rng(2)
    a, b = random_people(rng, 3), random_people(rng, 4)
    # Scaling both axes by the same factor (areas by its square) changes nothing.
    o1 = pairwise_oks(a, b, np.full(3, 500.0), np.full(4, 800.0), image_size=(100, 100))
    o2 = pairwise_oks(a, b, np.full(3, 2000.0), np.full(4, 3200.0), image_size=(200, 200))
    np.testing.assert_allclose(o1, o2, atol=1e-12)
    # Unknown size: a unit square, relative coordinates and areas.
    o3 = pairwise_oks(a, b, np.full(3, 0.05), np.full(4, 0.08))
    np.testing.assert_allclose(o3, o1, atol=1e-12)
    # Larger objects are more lenient.
    assert np.all(pairwise_oks(a, b, np.full(3, 5000.0), np.full(4, 8000.0), image_size=(100, 100)) >= o1)
    # Zero area: only exact matches count (pycocotools' epsilon).
    assert pairwise_oks(a, a, np.zeros(3), np.zeros(3))[0, 0] == 1.0
    assert pairwise_oks(a, b, np.zeros(3), np.zeros(4)).max() == 0.0


def test_custom_sigmas_and_shapes():
    rng = np.random.default_rng(3)
    a, b = random_people(rng, 2, K=5), random_people(rng, 3, K=5)
    sig = np.full(5, 0.05)
    oks = pairwise_oks(a, b, np.ones(2), np.ones(3), sigmas=sig, image_size=(50, 50))
    assert oks.shape == (2, 3)
    with pytest.raises(ValueError, match="K = 5"):
        pairwise_oks(a, b, np.ones(2), np.ones(3))
    with pytest.raises(ValueError, match="sigmas"):
        pairwise_oks(a, b, np.ones(2), np.ones(3), sigmas=np.full(4, 0.05))
    with pytest.raises(ValueError, match="sigmas"):
        pairwise_oks(a, b, np.ones(2), np.ones(3), sigmas=np.zeros(5))
    with pytest.raises(ValueError, match="keypoints per object"):
        pairwise_oks(a, random_people(rng, 2), np.ones(2), np.ones(2), sigmas=sig)
    with pytest.raises(ValueError, match=r"\(n, K, 2\)"):
        pairwise_oks(a[:, :, 0], b, np.ones(2), np.ones(3), sigmas=sig)
    with pytest.raises(ValueError, match="areas"):
        pairwise_oks(a, b, np.ones(3), np.ones(3), sigmas=sig)
    with pytest.raises(ValueError, match="non-negative"):
        pairwise_oks(a, b, -np.ones(2), np.ones(3), sigmas=sig)
    assert pairwise_oks(a[:0], b, np.ones(0), np.ones(3), sigmas=sig).shape == (0, 3)


def test_all_missing_and_infinite_points_are_errors():
    a = np.full((2, 17, 2), 0.5)
    a[1] = np.nan
    with pytest.raises(ValueError, match=r"kps_a: annotations \[1\] have no labelled keypoint"):
        pairwise_oks(a, a[:1], np.ones(2), np.ones(1))
    bad = a[:1].copy()
    bad[0, 0, 0] = np.inf
    with pytest.raises(ValueError, match="infinite"):
        pairwise_oks(bad, a[:1], np.ones(1), np.ones(1))


@st.composite
def people(draw):
    seed = draw(st.integers(0, 2**32 - 1))
    n = draw(st.integers(1, 5))
    rng = np.random.default_rng(seed)
    kps = random_people(rng, n, missing=draw(st.sampled_from([0.0, 0.3, 0.9])))
    areas = rng.uniform(0, 5000, n)
    return kps, areas


@settings(max_examples=50, deadline=None)
@given(people(), people())
def test_properties(a, b):
    size = (640, 480)
    oks = pairwise_oks(a[0], b[0], a[1], b[1], image_size=size)
    assert np.all((oks >= 0) & (oks <= 1))
    np.testing.assert_allclose(pairwise_oks(b[0], a[0], b[1], a[1], image_size=size), oks.T, atol=1e-15)
    np.testing.assert_allclose(np.diag(pairwise_oks(a[0], a[0], a[1], a[1], image_size=size)), 1.0)
