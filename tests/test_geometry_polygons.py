"""Tests of agreement.geometry.polygons: hand cases, oracles, properties, bad input.

Oracles: box IoU for axis-aligned rectangles, and shapely per pair (union of
rings, intersection, union, convex hull) as brute force. Properties
(Hypothesis): ranges, symmetry, identity, GIoU <= IoU, affine invariance.
"""

from __future__ import annotations

import doctest

import numpy as np
import pytest
import shapely
from hypothesis import given, settings, strategies as st

import agreement.geometry.polygons as polygons_module
from agreement.core.validation import AnnotationError
from agreement.geometry.boxes import pairwise_giou, pairwise_iou
from agreement.geometry.polygons import (
    pairwise_polygon_giou,
    pairwise_polygon_iou,
    polygon_boxes,
    validate_polygons,
)


def rect(x, y, w, h):
    return [np.array([[x, y], [x + w, y], [x + w, y + h], [x, y + h]], dtype=float)]


def star(rng: np.random.Generator, centre=None, radius=None) -> list[np.ndarray]:
    """A random simple (star-shaped) polygon of 3 to 12 points, in the unit square."""
    k = int(rng.integers(3, 13))
    c = rng.random(2) * 0.6 + 0.2 if centre is None else np.asarray(centre)
    r = (0.03 + 0.17 * rng.random()) if radius is None else radius
    t = np.sort(rng.random(k)) * 2 * np.pi
    rr = r * (0.3 + 0.7 * rng.random(k))
    return [np.c_[c[0] + rr * np.cos(t), c[1] + rr * np.sin(t)]]


def brute(a_rings, b_rings):
    """Per-pair shapely: (IoU, GIoU) with the convex hull of the union."""
    A = shapely.union_all([shapely.Polygon(r) for r in a_rings])
    B = shapely.union_all([shapely.Polygon(r) for r in b_rings])
    inter, union = A.intersection(B).area, A.union(B).area
    hull = A.union(B).convex_hull.area
    iou = inter / union
    return iou, iou - (hull - union) / hull


def test_doctests():
    assert doctest.testmod(polygons_module).failed == 0


def test_hand_cases():
    a = [rect(0, 0, 0.5, 0.5)]
    b = [rect(0, 0, 0.5, 0.5), rect(0.25, 0, 0.5, 0.5), rect(0.5, 0, 0.5, 0.5), rect(0.75, 0.75, 0.25, 0.25)]
    np.testing.assert_allclose(pairwise_polygon_iou(a, b), [[1, 1 / 3, 0, 0]], atol=1e-12)
    # Touching along a whole edge: GIoU 0; apart diagonally: hull, not box.
    g = pairwise_polygon_giou(a, b)
    np.testing.assert_allclose(g[0, :3], [1, 1 / 3, 0], atol=1e-12)
    A, B = shapely.box(0, 0, 0.5, 0.5), shapely.box(0.75, 0.75, 1, 1)
    hull = A.union(B).convex_hull.area
    assert g[0, 3] == pytest.approx(-(hull - A.area - B.area) / hull, abs=1e-12)
    # Triangle inside a square.
    tri = [[np.array([[0.1, 0.1], [0.3, 0.1], [0.1, 0.3]])]]
    assert pairwise_polygon_iou(tri, a)[0, 0] == pytest.approx(0.02 / 0.25)


def test_identical_non_convex_polygon_giou_is_area_over_hull():
    ell = [np.array([[0, 0], [0.4, 0], [0.4, 0.1], [0.1, 0.1], [0.1, 0.4], [0, 0.4]])]
    square = rect(0.5, 0.5, 0.2, 0.2)
    g = pairwise_polygon_giou([ell, square], [ell, square])
    area, hull = 0.07, 0.4 * 0.4 - 0.5 * 0.3 * 0.3
    assert g[0, 0] == pytest.approx(area / hull)
    assert g[1, 1] == pytest.approx(1.0)
    assert pairwise_polygon_iou([ell], [ell])[0, 0] == pytest.approx(1.0)


def test_empty_inputs():
    assert pairwise_polygon_iou([], [rect(0, 0, 1, 1)]).shape == (0, 1)
    assert pairwise_polygon_giou([rect(0, 0, 1, 1)], []).shape == (1, 0)


def test_rectangles_equal_box_iou():
    rng = np.random.default_rng(0)
    boxes = np.c_[rng.random((40, 2)) * 0.6, 0.02 + rng.random((40, 2)) * 0.4]
    boxes[::5, 2:] = boxes[1::5, 2:]  # some equal sizes
    boxes[::7] = boxes[3::7][: len(boxes[::7])]  # some identical boxes
    polys = [rect(*b) for b in boxes]
    np.testing.assert_allclose(pairwise_polygon_iou(polys, polys), pairwise_iou(boxes, boxes), atol=1e-12)


def test_rectangle_giou_vs_box_giou():
    rng = np.random.default_rng(1)
    boxes = np.c_[rng.random((30, 2)) * 0.6, 0.02 + rng.random((30, 2)) * 0.4]
    polys = [rect(*b) for b in boxes]
    gp, gb = pairwise_polygon_giou(polys, polys), pairwise_giou(boxes, boxes)
    # The convex hull lies inside the enclosing box: polygon GIoU >= box GIoU.
    assert np.all(gp >= gb - 1e-12)
    # Equal when the hull is the enclosing box: boxes sharing their y-range.
    row = np.c_[rng.random(10) * 0.8, np.full(10, 0.3), 0.01 + rng.random(10) * 0.2, np.full(10, 0.4)]
    rp = [rect(*b) for b in row]
    np.testing.assert_allclose(pairwise_polygon_giou(rp, rp), pairwise_giou(row, row), atol=1e-12)


def test_against_shapely_brute_force_with_multi_ring_annotations():
    rng = np.random.default_rng(2)
    a = [star(rng) for _ in range(12)]
    b = [star(rng) for _ in range(9)]
    # Multi-ring annotations: overlapping rings unite, a ring inside a ring adds nothing.
    a[0] = star(rng, centre=(0.4, 0.4), radius=0.2) + star(rng, centre=(0.45, 0.4), radius=0.2)
    a[1] = rect(0.1, 0.1, 0.5, 0.5) + rect(0.2, 0.2, 0.1, 0.1)
    b[0] = star(rng, centre=(0.3, 0.3), radius=0.1) + star(rng, centre=(0.7, 0.7), radius=0.1)
    iou, giou = pairwise_polygon_iou(a, b), pairwise_polygon_giou(a, b)
    for i in range(len(a)):
        for j in range(len(b)):
            ei, eg = brute(a[i], b[j])
            assert iou[i, j] == pytest.approx(ei, abs=1e-12)
            assert giou[i, j] == pytest.approx(eg, abs=1e-12)
    geoms, n = validate_polygons([a[1]])
    assert geoms[0].area == pytest.approx(0.25) and n == 0


def test_image_size_changes_only_rounding():
    rng = np.random.default_rng(3)
    a = [star(rng) for _ in range(8)]
    for f in (pairwise_polygon_iou, pairwise_polygon_giou):
        np.testing.assert_allclose(f(a, a, image_size=(1920, 1080)), f(a, a), atol=1e-12)


def test_accepts_validated_geometries():
    rng = np.random.default_rng(4)
    a = [star(rng) for _ in range(5)]
    geoms, _ = validate_polygons(a)
    np.testing.assert_array_equal(pairwise_polygon_iou(geoms, geoms), pairwise_polygon_iou(a, a))
    np.testing.assert_allclose(
        pairwise_polygon_giou(geoms, geoms, image_size=(640, 480)), pairwise_polygon_giou(a, a), atol=1e-12
    )


def test_polygon_boxes():
    b = polygon_boxes([rect(0.1, 0.2, 0.3, 0.4) + rect(0.5, 0.5, 0.1, 0.1), None, []])
    np.testing.assert_allclose(b[0], [0.1, 0.2, 0.5, 0.4])
    assert np.isnan(b[1:]).all()


# -------------------------------------------------------------- bad input


def test_bowtie_is_repaired_keeping_both_lobes():
    bowtie = [np.array([[0, 0], [1, 1], [1, 0], [0, 1]], dtype=float)]
    geoms, n = validate_polygons([bowtie, rect(0, 0, 1, 1)])
    assert n == 1 and geoms[0].is_valid and geoms[0].area == pytest.approx(0.5)
    assert pairwise_polygon_iou([bowtie], [rect(0, 0, 1, 1)])[0, 0] == pytest.approx(0.5)


def test_degenerate_rings_are_dropped_and_counted():
    line = np.array([[0.1, 0.1], [0.5, 0.1], [0.9, 0.1]])  # collinear
    two = np.array([[0.1, 0.1], [0.5, 0.5]])  # fewer than three points
    closed_two = np.array([[0.1, 0.1], [0.5, 0.5], [0.1, 0.1]])  # closed, two distinct points
    geoms, n = validate_polygons([rect(0, 0, 0.5, 0.5) + [line], rect(0, 0, 0.5, 0.5) + [two, closed_two], rect(0, 0, 1, 1)])
    assert n == 2
    assert [g.area for g in geoms] == pytest.approx([0.25, 0.25, 1.0])


def test_explicit_closing_point_is_not_a_repair():
    ring = np.array([[0, 0], [1, 0], [1, 1], [0, 1], [0, 0]], dtype=float)
    geoms, n = validate_polygons([[ring]])
    assert n == 0 and geoms[0].area == pytest.approx(1.0)


@pytest.mark.parametrize(
    "rings",
    [
        [np.array([[0.1, 0.1], [0.5, 0.5]])],
        [np.array([[0.1, 0.1], [0.5, 0.1], [0.9, 0.1]])],
        [np.array([[0.1, 0.1], [0.5, 0.5], [0.1, 0.1], [0.5, 0.5]])],
    ],
    ids=["two-points", "collinear", "back-and-forth"],
)
def test_annotation_without_area_is_an_error_naming_it(rings):
    with pytest.raises(AnnotationError, match="sample 'a.jpg', rater 'r1', label 7.*no area"):
        validate_polygons([rect(0, 0, 1, 1), rings], where=["first", "sample 'a.jpg', rater 'r1', label 7"])
    with pytest.raises(AnnotationError, match="no area"):
        pairwise_polygon_iou([rings], [rect(0, 0, 1, 1)])


def test_non_finite_and_malformed_rings_are_errors():
    nan = [np.array([[0.1, 0.1], [np.nan, 0.5], [0.5, 0.1]])]
    with pytest.raises(AnnotationError, match="img 3, polygon 0: .*NaN"):
        validate_polygons([nan], where="img 3")
    with pytest.raises(AnnotationError, match="shape"):
        validate_polygons([[np.zeros((4, 3))]])


def test_missing_polygon_stays_none_but_pairwise_refuses_it():
    geoms, n = validate_polygons([None, [], rect(0, 0, 1, 1)])
    assert geoms[0] is None and geoms[1] is None and n == 0
    with pytest.raises(ValueError, match="no polygon"):
        pairwise_polygon_iou([None], [rect(0, 0, 1, 1)])


# -------------------------------------------------------------- properties


@st.composite
def polygon_sets(draw, max_size=5):
    seed = draw(st.integers(0, 2**32 - 1))
    n = draw(st.integers(1, max_size))
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        p = star(rng)
        if rng.random() < 0.2:
            p = p + star(rng)
        if rng.random() < 0.15:
            p = rect(*np.r_[rng.random(2) * 0.5, 0.05 + rng.random(2) * 0.4])
        out.append(p)
    # Shared and identical annotations make equal regions likely.
    if n > 1 and rng.random() < 0.5:
        out[-1] = [r.copy() for r in out[0]]
    return out


@settings(max_examples=60, deadline=None)
@given(polygon_sets(), polygon_sets())
def test_properties(a, b):
    iou, giou = pairwise_polygon_iou(a, b), pairwise_polygon_giou(a, b)
    assert iou.shape == giou.shape == (len(a), len(b))
    assert np.all((iou >= 0) & (iou <= 1))
    assert np.all((giou >= -1) & (giou <= 1))
    assert np.all(giou <= iou + 1e-12)
    np.testing.assert_allclose(pairwise_polygon_iou(b, a), iou.T, atol=1e-12)
    np.testing.assert_allclose(pairwise_polygon_giou(b, a), giou.T, atol=1e-12)
    np.testing.assert_allclose(np.diag(pairwise_polygon_iou(a, a)), 1.0, atol=1e-12)
    # GIoU's convex-hull enclosure counts concavities: GIoU(A, A) = |A| / |conv A|.
    geoms, _ = validate_polygons(a)
    expected = shapely.area(geoms) / shapely.area(shapely.convex_hull(geoms))
    np.testing.assert_allclose(np.diag(pairwise_polygon_giou(a, a)), expected, atol=1e-12)


@settings(max_examples=30, deadline=None)
@given(polygon_sets(), st.floats(0.2, 5.0), st.floats(0.2, 5.0), st.floats(-1, 1), st.floats(-1, 1))
def test_affine_invariance(a, sx, sy, tx, ty):
    moved = [[r * [sx, sy] + [tx, ty] for r in p] for p in a]
    np.testing.assert_allclose(pairwise_polygon_iou(moved, moved), pairwise_polygon_iou(a, a), atol=1e-9)
    np.testing.assert_allclose(pairwise_polygon_giou(moved, moved), pairwise_polygon_giou(a, a), atol=1e-9)
