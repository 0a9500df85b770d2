"""Tests of agreement.geometry.boxes: defined cases, oracles, properties, shapes.

Oracles: a per-pair brute force in plain Python, and shapely's polygon
areas. Properties (Hypothesis): ranges, symmetry, identity, invariance to a
common translation and scaling. These tests do not import FiftyOne.
"""

from __future__ import annotations

import doctest
import math

import numpy as np
import pytest
import shapely
from hypothesis import given, settings, strategies as st

import agreement.geometry.boxes as boxes_module
from agreement.geometry import (
    box_area,
    giou_to_similarity,
    pairwise_centroid_closeness,
    pairwise_centroid_distance,
    pairwise_giou,
    pairwise_iou,
    xywh_to_xyxy,
)

PAIRWISE = [pairwise_iou, pairwise_giou, pairwise_centroid_distance, pairwise_centroid_closeness]


def one(f, p, q, **kwargs) -> float:
    """The value of a pairwise function for a single pair of boxes."""
    r = f(np.array([p], dtype=float), np.array([q], dtype=float), **kwargs)
    assert r.shape == (1, 1)
    return float(r[0, 0])


def random_boxes(rng: np.random.Generator, n: int) -> np.ndarray:
    """Random boxes in the unit square with many degenerate ones.

    Half the coordinates are continuous, half are on a coarse grid (so that
    boxes touch, nest and coincide); about a fifth of the widths and heights
    are zero.
    """
    xy = rng.random((n, 2))
    wh = rng.random((n, 2)) * 0.5
    grid = rng.random((n, 4)) < 0.5
    coarse = np.hstack([rng.integers(0, 8, (n, 2)) / 8, rng.integers(0, 5, (n, 2)) / 8])
    boxes = np.where(grid, coarse, np.hstack([xy, wh]))
    boxes[:, 2:][rng.random((n, 2)) < 0.2] = 0.0
    return boxes


def random_pair_sets(seed: int, n: int = 40, m: int = 35) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    a, b = random_boxes(rng, n), random_boxes(rng, m)
    # Some boxes of a also occur in b (identical pairs, zero-area ones included).
    b[: m // 4] = a[rng.choice(n, m // 4, replace=False)]
    b[0] = [0.5, 0.5, 0.0, 0.0]
    a[0] = [0.5, 0.5, 0.0, 0.0]
    return a, b


# --------------------------------------------------------------------------
# Brute force: one pair at a time, plain Python floats
# --------------------------------------------------------------------------


def _corners(p):
    x, y, w, h = (float(v) for v in p)
    return x, y, x + w, y + h


def brute_iou(p, q) -> float:
    ax1, ay1, ax2, ay2 = _corners(p)
    bx1, by1, bx2, by2 = _corners(q)
    if (ax1, ay1, ax2, ay2) == (bx1, by1, bx2, by2):
        return 1.0
    iw = max(0.0, min(ax2, bx2) - max(ax1, bx1))
    ih = max(0.0, min(ay2, by2) - max(ay1, by1))
    inter = iw * ih
    union = (ax2 - ax1) * (ay2 - ay1) + (bx2 - bx1) * (by2 - by1) - inter
    return 0.0 if union == 0 else inter / union


def brute_giou(p, q) -> float:
    ax1, ay1, ax2, ay2 = _corners(p)
    bx1, by1, bx2, by2 = _corners(q)
    if (ax1, ay1, ax2, ay2) == (bx1, by1, bx2, by2):
        return 1.0
    iw = max(0.0, min(ax2, bx2) - max(ax1, bx1))
    ih = max(0.0, min(ay2, by2) - max(ay1, by1))
    inter = iw * ih
    union = (ax2 - ax1) * (ay2 - ay1) + (bx2 - bx1) * (by2 - by1) - inter
    if union == 0:  # two different zero-area boxes
        return -1.0
    hull = (max(ax2, bx2) - min(ax1, bx1)) * (max(ay2, by2) - min(ay1, by1))
    return inter / union - (hull - union) / hull


def brute_distance(p, q, image_size=None) -> float:
    width, height = image_size if image_size is not None else (1.0, 1.0)
    dx = (p[0] + p[2] / 2 - q[0] - q[2] / 2) * width
    dy = (p[1] + p[3] / 2 - q[1] - q[3] / 2) * height
    return math.hypot(dx, dy) / math.hypot(width, height)


def brute_matrix(f, a, b, **kwargs) -> np.ndarray:
    out = np.empty((len(a), len(b)))
    for i in range(len(a)):
        for j in range(len(b)):
            out[i, j] = f(a[i], b[j], **kwargs)
    return out


# --------------------------------------------------------------------------
# Conversions
# --------------------------------------------------------------------------


def test_xywh_to_xyxy_and_area():
    boxes = np.array([[0.1, 0.2, 0.3, 0.4], [0.5, 0.5, 0.0, 0.25]])
    before = boxes.copy()
    np.testing.assert_allclose(xywh_to_xyxy(boxes), [[0.1, 0.2, 0.4, 0.6], [0.5, 0.5, 0.5, 0.75]])
    np.testing.assert_allclose(box_area(boxes), [0.12, 0.0])
    np.testing.assert_array_equal(boxes, before)  # inputs are not modified
    assert xywh_to_xyxy(boxes) is not boxes
    assert xywh_to_xyxy(np.zeros((0, 4))).shape == (0, 4)
    assert box_area([]).shape == (0,)


# --------------------------------------------------------------------------
# Defined values of the degenerate cases
# --------------------------------------------------------------------------

IDENTICAL = [
    [0.1, 0.2, 0.3, 0.4],  # ordinary box
    [0.0, 0.0, 1.0, 1.0],  # the whole image
    [0.3, 0.3, 0.0, 0.0],  # a point
    [0.3, 0.3, 0.2, 0.0],  # a horizontal segment
    [0.3, 0.3, 0.0, 0.2],  # a vertical segment
    [0.1, 0.7, 1e-9, 1e-9],  # a tiny box
]


@pytest.mark.parametrize("box", IDENTICAL)
def test_identical_boxes(box):
    with np.errstate(divide="raise", invalid="raise", over="raise"):  # no 0 / 0 anywhere
        assert one(pairwise_iou, box, box) == 1.0
        assert one(pairwise_giou, box, box) == 1.0
        assert one(pairwise_centroid_distance, box, box) == 0.0
        assert one(pairwise_centroid_closeness, box, box) == 1.0


def test_identity_diagonal_with_many_boxes():
    a = np.array(IDENTICAL * 3)
    with np.errstate(divide="raise", invalid="raise", over="raise"):
        np.testing.assert_array_equal(np.diag(pairwise_iou(a, a)), 1.0)
        np.testing.assert_array_equal(np.diag(pairwise_giou(a, a)), 1.0)
        np.testing.assert_array_equal(np.diag(pairwise_centroid_distance(a, a)), 0.0)


@pytest.mark.parametrize(
    "zero, other, giou",
    [
        ([0.5, 0.5, 0.0, 0.0], [0.25, 0.25, 0.5, 0.5], 0.0),  # point inside a box: C is the box
        ([0.25, 0.5, 0.5, 0.0], [0.25, 0.25, 0.5, 0.5], 0.0),  # segment across a box
        ([0.25, 0.25, 0.0, 0.0], [0.25, 0.25, 0.5, 0.5], 0.0),  # point on a corner
        ([0.0, 0.0, 0.0, 0.0], [0.5, 0.5, 0.5, 0.5], 0.25 - 1.0),  # point outside: C = 1, U = 1/4
        ([0.0, 0.0, 0.0, 0.5], [0.5, 0.0, 0.5, 0.5], 0.5 - 1.0),  # segment at a distance: C = 1/2, U = 1/4
    ],
)
def test_zero_area_against_a_box(zero, other, giou):
    with np.errstate(divide="raise", invalid="raise", over="raise"):
        for p, q in [(zero, other), (other, zero)]:
            assert one(pairwise_iou, p, q) == 0.0
            assert one(pairwise_giou, p, q) == pytest.approx(giou, abs=1e-15)


@pytest.mark.parametrize(
    "p, q",
    [
        ([0.1, 0.1, 0.0, 0.0], [0.9, 0.8, 0.0, 0.0]),  # two points, C has positive area
        ([0.1, 0.5, 0.0, 0.0], [0.9, 0.5, 0.0, 0.0]),  # two points on a horizontal line: |C| = 0
        ([0.5, 0.1, 0.0, 0.0], [0.5, 0.9, 0.0, 0.0]),  # on a vertical line: |C| = 0
        ([0.1, 0.5, 0.4, 0.0], [0.3, 0.5, 0.4, 0.0]),  # overlapping collinear segments: |C| = 0
        ([0.1, 0.5, 0.4, 0.0], [0.3, 0.5, 0.0, 0.0]),  # a point on a segment: |C| = 0
        ([0.1, 0.5, 0.4, 0.0], [0.1, 0.5, 0.0, 0.2]),  # perpendicular segments from one corner
        ([0.1, 0.5, 0.4, 0.0], [0.1, 0.5, 0.2, 0.0]),  # nested collinear segments, same start
    ],
)
def test_two_different_zero_area_boxes(p, q):
    with np.errstate(divide="raise", invalid="raise", over="raise"):
        for s, t in [(p, q), (q, p)]:
            assert one(pairwise_iou, s, t) == 0.0
            assert one(pairwise_giou, s, t) == -1.0


@pytest.mark.parametrize(
    "p, q",
    [
        ([0.0, 0.0, 0.5, 0.5], [0.5, 0.0, 0.5, 0.5]),  # side by side
        ([0.2, 0.1, 0.3, 0.25], [0.2, 0.35, 0.3, 0.6]),  # one above the other
        ([0.125, 0.25, 0.25, 0.5], [0.375, 0.25, 0.5, 0.5]),  # different widths, same height
    ],
)
def test_touching_along_an_edge(p, q):
    for s, t in [(p, q), (q, p)]:
        assert one(pairwise_iou, s, t) == 0.0
        assert one(pairwise_giou, s, t) == pytest.approx(0.0, abs=1e-15)


def test_touching_at_a_corner_or_part_of_an_edge():
    # Corner: C = 1, U = 1/2.
    assert one(pairwise_iou, [0, 0, 0.5, 0.5], [0.5, 0.5, 0.5, 0.5]) == 0.0
    assert one(pairwise_giou, [0, 0, 0.5, 0.5], [0.5, 0.5, 0.5, 0.5]) == pytest.approx(-0.5)
    # Half an edge: C = 3/4, U = 1/2.
    assert one(pairwise_giou, [0, 0, 0.5, 0.5], [0.5, 0.25, 0.5, 0.5]) == pytest.approx(0.5 / 0.75 - 1)


def test_far_apart_tends_to_minus_one():
    # Two s-by-s squares a gap g*s apart: GIoU = -g / (2 + g).
    s = 1e-3
    gaps = np.array([0.0, 0.5, 1.0, 10.0, 100.0, 998.0])
    a = np.array([[0.0, 0.0, s, s]])
    b = np.column_stack([s + gaps * s, np.zeros_like(gaps), np.full_like(gaps, s), np.full_like(gaps, s)])
    giou = pairwise_giou(a, b)[0]
    np.testing.assert_allclose(giou, -gaps / (2 + gaps), atol=1e-12)
    assert np.all(np.diff(giou) < 0)
    assert giou[-1] == pytest.approx(-0.998)
    np.testing.assert_array_equal(pairwise_iou(a, b), 0.0)


def test_known_iou_and_giou_values():
    a = [[0.0, 0.0, 0.5, 0.5]]
    b = [[0.25, 0.0, 0.5, 0.5], [0.25, 0.25, 0.5, 0.5], [0.0, 0.0, 0.25, 0.25], [0.0, 0.0, 1.0, 1.0]]
    np.testing.assert_allclose(pairwise_iou(a, b), [[1 / 3, 1 / 7, 1 / 4, 1 / 4]])
    # GIoU: C is [0, 0.75]x[0, 0.5], [0, 0.75]^2, a itself, the whole image.
    np.testing.assert_allclose(pairwise_giou(a, b), [[1 / 3, 1 / 7 - (0.5625 - 0.4375) / 0.5625, 1 / 4, 1 / 4]])


def test_centroid_distance_values():
    corner = [[0.0, 0.0, 0.0, 0.0]]
    b = [[1.0, 1.0, 0.0, 0.0], [0.5, 0.0, 0.0, 0.0], [0.0, 0.5, 0.0, 0.0], [0.0, 0.0, 1.0, 1.0]]
    np.testing.assert_allclose(pairwise_centroid_distance(corner, b), [[1.0, 0.5 / 2**0.5, 0.5 / 2**0.5, 0.5]])
    # Aspect ratio counts: a horizontal move is longer in a wide image.
    d = pairwise_centroid_distance(corner, b, image_size=(1920, 1080))
    np.testing.assert_allclose(d, [[1.0, 960 / math.hypot(1920, 1080), 540 / math.hypot(1920, 1080), 0.5]])
    # Opposite corners are at distance 1 whatever the image.
    assert d[0, 0] == pytest.approx(1.0)
    # A square image of any size is the unit square.
    np.testing.assert_allclose(pairwise_centroid_distance(corner, b, image_size=(640, 640)),
                               pairwise_centroid_distance(corner, b), rtol=1e-15)
    # Only centres count: nested boxes with a common centre are at distance 0.
    assert one(pairwise_centroid_distance, [0.25, 0.25, 0.5, 0.5], [0.5, 0.5, 0.0, 0.0]) == 0.0


def test_centroid_closeness():
    rng = np.random.default_rng(3)
    a, b = random_boxes(rng, 7), random_boxes(rng, 5)
    for size in (None, (1920, 1080), (100, 3000)):
        np.testing.assert_allclose(
            pairwise_centroid_closeness(a, b, image_size=size), 1.0 - pairwise_centroid_distance(a, b, image_size=size), rtol=1e-15
        )
    # Centres outside the image (not valid input) are clipped to closeness 0.
    assert one(pairwise_centroid_closeness, [-1.0, -1.0, 0.0, 0.0], [1.0, 1.0, 0.0, 0.0]) == 0.0


def test_giou_to_similarity():
    g = np.array([[1.0, 0.0], [-1.0, 0.5]])
    np.testing.assert_array_equal(giou_to_similarity(g), [[1.0, 0.5], [0.0, 0.75]])
    np.testing.assert_array_equal(g, [[1.0, 0.0], [-1.0, 0.5]])  # not modified
    assert giou_to_similarity(-1.0) == 0.0


# --------------------------------------------------------------------------
# Oracles: brute force and shapely
# --------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(5))
def test_agrees_with_brute_force(seed):
    a, b = random_pair_sets(seed)
    with np.errstate(divide="raise", invalid="raise", over="raise"):
        iou, giou = pairwise_iou(a, b), pairwise_giou(a, b)
        dist = pairwise_centroid_distance(a, b)
        dist_wide = pairwise_centroid_distance(a, b, image_size=(1920, 1080))
    np.testing.assert_allclose(iou, brute_matrix(brute_iou, a, b), rtol=0, atol=1e-12)
    np.testing.assert_allclose(giou, brute_matrix(brute_giou, a, b), rtol=0, atol=1e-12)
    np.testing.assert_allclose(dist, brute_matrix(brute_distance, a, b), rtol=0, atol=1e-12)
    np.testing.assert_allclose(
        dist_wide, brute_matrix(brute_distance, a, b, image_size=(1920, 1080)), rtol=0, atol=1e-12
    )
    # The defined values are exact, not approximately right.
    identical = np.all(xywh_to_xyxy(a)[:, None] == xywh_to_xyxy(b)[None], axis=-1)
    assert identical.any()
    assert np.all(iou[identical] == 1.0) and np.all(giou[identical] == 1.0)
    zero = (box_area(a)[:, None] == 0) | (box_area(b)[None, :] == 0)
    assert np.all(iou[zero & ~identical] == 0.0)


@pytest.mark.parametrize("seed", range(5))
def test_agrees_with_shapely(seed):
    rng = np.random.default_rng(100 + seed)
    a = np.hstack([rng.random((30, 2)), rng.random((30, 2)) * 0.6])
    b = np.hstack([rng.random((25, 2)), rng.random((25, 2)) * 0.6])
    b[:5] = a[:5] + rng.normal(scale=0.02, size=(5, 4))  # some heavy overlap
    b[:, 2:] = np.abs(b[:, 2:])
    xa, xb = xywh_to_xyxy(a), xywh_to_xyxy(b)
    ga = shapely.box(xa[:, 0], xa[:, 1], xa[:, 2], xa[:, 3])[:, None]
    gb = shapely.box(xb[:, 0], xb[:, 1], xb[:, 2], xb[:, 3])[None, :]
    inter = shapely.area(shapely.intersection(ga, gb))
    merged = shapely.union(ga, gb)
    union = shapely.area(merged)
    hull = shapely.area(shapely.envelope(merged))
    iou = inter / union
    np.testing.assert_allclose(pairwise_iou(a, b), iou, rtol=0, atol=1e-12)
    np.testing.assert_allclose(pairwise_giou(a, b), iou - (hull - union) / hull, rtol=0, atol=1e-12)
    assert (inter > 0).any() and (inter == 0).any()  # both overlapping and disjoint pairs were tested


def test_shapely_on_grid_boxes_with_zero_area_ones():
    # Grid boxes: touching, nested and zero-area ones. Where shapely's union
    # has positive area its IoU/GIoU must match; elsewhere our defined values.
    a, b = random_pair_sets(7, n=30, m=30)
    xa, xb = xywh_to_xyxy(a), xywh_to_xyxy(b)
    ga = shapely.box(xa[:, 0], xa[:, 1], xa[:, 2], xa[:, 3])[:, None]
    gb = shapely.box(xb[:, 0], xb[:, 1], xb[:, 2], xb[:, 3])[None, :]
    inter = shapely.area(shapely.intersection(ga, gb))
    union = shapely.area(shapely.union(ga, gb))
    hull = shapely.area(shapely.envelope(shapely.union(ga, gb)))
    ok = union > 0
    iou, giou = pairwise_iou(a, b), pairwise_giou(a, b)
    np.testing.assert_allclose(iou[ok], inter[ok] / union[ok], rtol=0, atol=1e-12)
    np.testing.assert_allclose(giou[ok], inter[ok] / union[ok] - (hull[ok] - union[ok]) / hull[ok], rtol=0, atol=1e-12)
    assert (~ok).any()
    identical = np.all(xa[:, None] == xb[None], axis=-1)
    np.testing.assert_array_equal(iou[~ok], identical[~ok].astype(float))
    np.testing.assert_array_equal(giou[~ok], np.where(identical[~ok], 1.0, -1.0))


def test_blocking_does_not_change_results(monkeypatch):
    # Zero-area pairs are patched block by block: use blocks of a few rows so
    # that they straddle block boundaries, and compare with one block.
    a, b = random_pair_sets(11, n=53, m=17)
    expected = [f(a, b) for f in PAIRWISE]
    monkeypatch.setattr(boxes_module, "_BLOCK_ELEMENTS", 3 * 17 + 5)
    for f, e in zip(PAIRWISE, expected):
        np.testing.assert_array_equal(f(a, b), e)
    monkeypatch.setattr(boxes_module, "_BLOCK_ELEMENTS", 1)  # one row per block
    for f, e in zip(PAIRWISE, expected):
        np.testing.assert_array_equal(f(a, b), e)


# --------------------------------------------------------------------------
# Properties (Hypothesis)
# --------------------------------------------------------------------------

# Any non-negative floats, subnormals included: the ranges must always hold.
_any_coord = st.floats(0.0, 1.0, allow_nan=False, allow_infinity=False)
_any_box = st.tuples(_any_coord, _any_coord, _any_coord, _any_coord)
# Coordinates on a 1/64 grid (with zero sizes): exact touching, nesting and
# coincidence; distinct values stay distinct under a translation or scaling.
_grid_coord = st.integers(0, 64).map(lambda k: k / 64)
_grid_box = st.tuples(_grid_coord, _grid_coord, _grid_coord, _grid_coord)
_box = st.one_of(_any_box, _grid_box)


def box_sets(box=_box, min_size=0, max_size=8):
    return st.lists(box, min_size=min_size, max_size=max_size).map(
        lambda rows: np.array(rows, dtype=np.float64).reshape(-1, 4)
    )


_settings = settings(max_examples=150, deadline=None)


@_settings
@given(box_sets(), box_sets())
def test_property_ranges(a, b):
    with np.errstate(divide="raise", invalid="raise", over="raise"):
        iou, giou = pairwise_iou(a, b), pairwise_giou(a, b)
        dist = pairwise_centroid_distance(a, b)
        close = pairwise_centroid_closeness(a, b)
    for r in (iou, giou, dist, close):
        assert r.shape == (len(a), len(b)) and r.dtype == np.float64
        assert not np.isnan(r).any()
    assert np.all((iou >= 0) & (iou <= 1))
    assert np.all((giou >= -1) & (giou <= 1))
    assert np.all(giou <= iou)  # the GIoU penalty is non-negative
    assert np.all((close >= 0) & (close <= 1))
    assert np.all(dist >= 0)


@_settings
@given(box_sets(), box_sets(), st.sampled_from([None, (1920, 1080), (480, 640), (1, 1)]))
def test_property_distance_range_for_boxes_inside_the_image(a, b, size):
    # Keep the boxes inside the unit square: their centres are in the image.
    a, b = a.copy(), b.copy()
    for s in (a, b):
        s[:, 2:] = np.minimum(s[:, 2:], 1.0 - s[:, :2])
    d = pairwise_centroid_distance(a, b, image_size=size)
    assert np.all((d >= 0) & (d <= 1 + 1e-15))


@_settings
@given(box_sets(), box_sets())
def test_property_symmetry(a, b):
    for f in PAIRWISE:
        np.testing.assert_allclose(f(a, b), f(b, a).T, rtol=0, atol=1e-12)
    np.testing.assert_allclose(
        pairwise_centroid_distance(a, b, image_size=(1920, 1080)), pairwise_centroid_distance(b, a, image_size=(1920, 1080)).T,
        rtol=0, atol=1e-12,
    )


@_settings
@given(box_sets())
def test_property_identity(a):
    np.testing.assert_array_equal(np.diag(pairwise_iou(a, a)), 1.0)
    np.testing.assert_array_equal(np.diag(pairwise_giou(a, a)), 1.0)
    np.testing.assert_array_equal(np.diag(pairwise_centroid_distance(a, a)), 0.0)
    np.testing.assert_array_equal(np.diag(pairwise_centroid_closeness(a, a)), 1.0)


@_settings
@given(
    box_sets(_grid_box),
    box_sets(_grid_box),
    st.floats(-10, 10, allow_nan=False),
    st.floats(-10, 10, allow_nan=False),
)
def test_property_translation_invariance(a, b, tx, ty):
    shift = np.array([tx, ty, 0.0, 0.0])
    for f in (pairwise_iou, pairwise_giou, pairwise_centroid_distance):
        np.testing.assert_allclose(f(a + shift, b + shift), f(a, b), rtol=0, atol=1e-9)


@_settings
@given(box_sets(_grid_box), box_sets(_grid_box), st.floats(1e-3, 1e3, allow_nan=False))
def test_property_scale_invariance(a, b, scale):
    for f in (pairwise_iou, pairwise_giou):
        np.testing.assert_allclose(f(a * scale, b * scale), f(a, b), rtol=0, atol=1e-9)
    # The distance scales with the boxes (the image stays the unit square).
    np.testing.assert_allclose(
        pairwise_centroid_distance(a * scale, b * scale), scale * pairwise_centroid_distance(a, b),
        rtol=1e-9, atol=1e-12,
    )


# --------------------------------------------------------------------------
# Shapes, input types, errors
# --------------------------------------------------------------------------


@pytest.mark.parametrize("f", PAIRWISE)
@pytest.mark.parametrize("n, m", [(0, 0), (0, 3), (3, 0), (1, 1), (2, 5)])
def test_output_shapes(f, n, m):
    rng = np.random.default_rng(n * 10 + m)
    r = f(random_boxes(rng, n), random_boxes(rng, m))
    assert r.shape == (n, m) and r.dtype == np.float64


@pytest.mark.parametrize("f", PAIRWISE)
def test_empty_lists_are_empty_sets(f):
    assert f([], [[0.1, 0.1, 0.2, 0.2]]).shape == (0, 1)
    assert f([[0.1, 0.1, 0.2, 0.2]] * 2, []).shape == (2, 0)


@pytest.mark.parametrize("f", PAIRWISE)
def test_input_types(f):
    rng = np.random.default_rng(5)
    a64, b64 = random_boxes(rng, 6), random_boxes(rng, 4)
    expected = f(a64, b64)
    # Lists, and a non-contiguous view, give the same result.
    np.testing.assert_array_equal(f(a64.tolist(), b64.tolist()), expected)
    wide = np.zeros((6, 8))
    wide[:, ::2] = a64
    np.testing.assert_array_equal(f(wide[:, ::2], b64), expected)
    # float32 and int inputs are computed in float64.
    assert f(a64.astype(np.float32), b64).dtype == np.float64
    assert f(np.array([[0, 0, 1, 1]]), np.array([[0, 0, 1, 1]])).dtype == np.float64
    # Inputs are not modified.
    a_copy = a64.copy()
    f(a64, b64)
    np.testing.assert_array_equal(a64, a_copy)


@pytest.mark.parametrize("f", PAIRWISE + [lambda a, b: box_area(a), lambda a, b: xywh_to_xyxy(a)])
@pytest.mark.parametrize("bad", [np.zeros(4), np.zeros((3, 3)), np.zeros((2, 4, 1)), np.zeros((2, 5)), 0.5])
def test_wrong_shapes_raise(f, bad):
    ok = np.zeros((2, 4))
    with pytest.raises(ValueError, match=r"\(n, 4\) array of \[x, y, w, h\] boxes"):
        f(bad, ok)


@pytest.mark.parametrize("f", PAIRWISE)
def test_wrong_shape_of_second_argument_names_it(f):
    with pytest.raises(ValueError, match=r"^b must be .* shape \(3,\)"):
        f(np.zeros((2, 4)), np.zeros(3))


@pytest.mark.parametrize("f", [pairwise_centroid_distance, pairwise_centroid_closeness])
@pytest.mark.parametrize("size", [(0, 100), (100,), (100, 100, 3), (-1, 5), (float("nan"), 10), (np.inf, 5)])
def test_bad_image_size_raises(f, size):
    with pytest.raises(ValueError, match="image_size"):
        f(np.zeros((1, 4)), np.zeros((1, 4)), image_size=size)


def test_docstring_examples():
    result = doctest.testmod(boxes_module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0
    assert result.failed == 0
