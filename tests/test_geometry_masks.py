"""Tests of agreement.geometry.masks: placement, rasterisation, mask IoU.

Oracles: brute force on full-image canvases (each mask painted into an
image-sized array, IoU by numpy), and the exact shapely polygon IoU within a
rasterisation tolerance. Properties (Hypothesis): range, symmetry, identity.
"""

from __future__ import annotations

import doctest

import numpy as np
import pytest
import shapely
from hypothesis import given, settings, strategies as st

import agreement.geometry.masks as masks_module
from agreement.geometry.masks import (
    box_pixel_extent,
    pairwise_mask_iou,
    pairwise_polygon_mask_iou,
    place_masks,
    polygons_to_masks,
    rasterize_polygons,
)
from agreement.geometry.polygons import pairwise_polygon_iou, polygon_boxes


def star(rng: np.random.Generator, lo=0.05, hi=0.25) -> list[np.ndarray]:
    k = int(rng.integers(3, 13))
    c = rng.random(2) * 0.5 + 0.25
    r = lo + (hi - lo) * rng.random()
    t = np.sort(rng.random(k)) * 2 * np.pi
    rr = r * (0.4 + 0.6 * rng.random(k))
    return [np.c_[c[0] + rr * np.cos(t), c[1] + rr * np.sin(t)]]


def full_canvas(mask, box, W, H) -> np.ndarray:
    """The brute-force placement: an image-sized canvas with the mask painted in."""
    (p,) = place_masks([mask], [box], (W, H))
    canvas = np.zeros((H, W), dtype=bool)
    h, w = p.mask.shape
    canvas[p.y0: p.y0 + h, p.x0: p.x0 + w] = p.mask
    return canvas


def brute_iou(ca, cb) -> float:
    u = np.count_nonzero(ca | cb)
    return np.count_nonzero(ca & cb) / u if u else 0.0


def random_masks(rng, n, W, H):
    boxes = np.c_[rng.random((n, 2)) * 0.7, 0.02 + rng.random((n, 2)) * 0.4]
    masks = []
    for _b in boxes:
        # A mask of its own resolution (not the box's pixel extent), to exercise resizing.
        shape = (int(rng.integers(1, 30)), int(rng.integers(1, 30)))
        masks.append(rng.random(shape) < rng.uniform(0.3, 0.9))
    return masks, boxes


def test_doctests():
    assert doctest.testmod(masks_module).failed == 0


def test_box_pixel_extent_is_robust_to_float_noise():
    # FiftyOne derives boxes from masks as (xmin / W, (xmax - xmin + 1) / W).
    W, H = 641, 479
    box = [37 / W, 11 / H, (80 - 37 + 1) / W, (50 - 11 + 1) / H]
    assert box_pixel_extent([box], (W, H)).tolist() == [[37, 11, 81, 51]]


def test_place_mask_of_the_box_extent_is_kept_exactly():
    W, H = 100, 50
    rng = np.random.default_rng(0)
    mask = rng.random((20, 30)) < 0.5
    (p,) = place_masks([mask], [[0.1, 0.2, 0.3, 0.4]], (W, H))
    assert (p.x0, p.y0) == (10, 10) and p.mask.shape == (20, 30)
    np.testing.assert_array_equal(p.mask, mask)
    assert p.area == mask.sum()


def test_place_resizes_with_nearest_neighbour_and_crops_to_the_image():
    W, H = 10, 10
    mask = np.array([[1, 0], [0, 1]], dtype=np.uint8)  # 0/1 integers count as set/unset
    (p,) = place_masks([mask], [[0.0, 0.0, 0.4, 0.4]], (W, H))
    np.testing.assert_array_equal(p.mask, np.kron([[1, 0], [0, 1]], np.ones((2, 2))).astype(bool))
    # A box past the right and bottom border: resized to the whole box, then cropped.
    (p,) = place_masks([np.ones((4, 4), bool)], [[0.8, 0.8, 0.4, 0.4]], (W, H))
    assert (p.x0, p.y0, p.mask.shape, p.area) == (8, 8, (2, 2), 4)
    # A box narrower than a pixel has nothing.
    (p,) = place_masks([np.ones((3, 3), bool)], [[0.5, 0.5, 0.01, 0.3]], (W, H))
    assert p.area == 0


def test_hand_cases():
    full = np.ones((5, 5), bool)
    W = H = 10
    boxes = [[0.0, 0.0, 0.5, 0.5], [0.5, 0.5, 0.5, 0.5], [0.25, 0.25, 0.5, 0.5]]
    iou = pairwise_mask_iou([full] * 3, boxes, [full] * 3, boxes, (W, H))
    # Pixel extents [0, 5), [5, 10) and [3, 8) (⌊2.5 + ½⌋ = 3).
    e = box_pixel_extent(boxes, (W, H))
    assert e[2].tolist() == [3, 3, 8, 8]
    np.testing.assert_allclose(np.diag(iou), 1.0)
    assert iou[0, 1] == 0.0
    assert iou[0, 2] == pytest.approx(4 / 46)
    # Boxes overlap but masks do not.
    left = np.zeros((5, 5), bool)
    left[:, :2] = True
    right = np.zeros((5, 5), bool)
    right[:, 3:] = True
    assert pairwise_mask_iou([left], boxes[:1], [right], boxes[:1], (W, H))[0, 0] == 0.0


def test_empty_masks_are_zero_even_with_themselves():
    empty = np.zeros((4, 4), bool)
    iou = pairwise_mask_iou([empty], [[0.1, 0.1, 0.4, 0.4]], [empty], [[0.1, 0.1, 0.4, 0.4]], (10, 10))
    assert iou[0, 0] == 0.0
    assert pairwise_mask_iou([], np.zeros((0, 4)), [empty], [[0, 0, 0.4, 0.4]], (10, 10)).shape == (0, 1)


def test_against_full_canvas_brute_force():
    rng = np.random.default_rng(1)
    W, H = 64, 48
    ma, ba = random_masks(rng, 9, W, H)
    mb, bb = random_masks(rng, 7, W, H)
    mb[0], bb[0] = ma[0], ba[0]  # one identical pair
    iou = pairwise_mask_iou(ma, ba, mb, bb, (W, H))
    ca = [full_canvas(m, b, W, H) for m, b in zip(ma, ba)]
    cb = [full_canvas(m, b, W, H) for m, b in zip(mb, bb)]
    expected = np.array([[brute_iou(x, y) for y in cb] for x in ca])
    np.testing.assert_allclose(iou, expected, atol=1e-12)
    assert iou[0, 0] == 1.0


def test_rasterised_area_is_close_to_the_polygon_area():
    rng = np.random.default_rng(2)
    W, H = 400, 300
    polys = [star(rng) for _ in range(30)]
    placed = rasterize_polygons(polys, (W, H))
    for p, poly in zip(placed, polys):
        area = shapely.Polygon(poly[0] * [W, H]).area
        assert p.area == pytest.approx(area, rel=0.03)


def test_polygons_to_masks_span_their_boxes_and_place_back_unchanged():
    rng = np.random.default_rng(3)
    W, H = 200, 120
    polys = [star(rng) for _ in range(6)]
    boxes = polygon_boxes(polys)
    masks = polygons_to_masks(polys, boxes, (W, H))
    ext = box_pixel_extent(boxes, (W, H))
    for m, (c0, r0, c1, r1), p in zip(masks, ext, place_masks(masks, boxes, (W, H))):
        assert m.dtype == bool and m.shape == (r1 - r0, c1 - c0)
        np.testing.assert_array_equal(p.mask, m)
    # A pixel-aligned rectangle fills its box exactly.
    rect = [np.array([[0.1, 0.25], [0.6, 0.25], [0.6, 0.5], [0.1, 0.5]])]
    (m,) = polygons_to_masks([rect], [[0.1, 0.25, 0.5, 0.25]], (W, H))
    assert m.shape == (30, 100) and m.all()


def test_rings_unite_instead_of_cancelling():
    W = H = 100
    outer = np.array([[0.1, 0.1], [0.9, 0.1], [0.9, 0.9], [0.1, 0.9]])
    inner = np.array([[0.3, 0.3], [0.7, 0.3], [0.7, 0.7], [0.3, 0.7]])
    (p,) = rasterize_polygons([[outer, inner]], (W, H))
    assert p.area == 80 * 80


def test_mask_iou_of_rasterised_polygons_is_close_to_polygon_iou():
    rng = np.random.default_rng(4)
    a = [star(rng, 0.1, 0.3) for _ in range(10)]
    b = [star(rng, 0.1, 0.3) for _ in range(10)]
    exact = pairwise_polygon_iou(a, b)
    raster = pairwise_polygon_mask_iou(a, b, (1000, 800))
    assert np.abs(raster - exact).max() < 0.02
    # Through FiftyOne-style masks spanning the polygons' boxes: the same up to cut-off fringe.
    ba, bb = polygon_boxes(a), polygon_boxes(b)
    via_masks = pairwise_mask_iou(polygons_to_masks(a, ba, (1000, 800)), ba, polygons_to_masks(b, bb, (1000, 800)), bb, (1000, 800))
    assert np.abs(via_masks - exact).max() < 0.02


def test_bad_input():
    with pytest.raises(ValueError, match="2-D"):
        pairwise_mask_iou([np.ones((2, 2, 3))], [[0, 0, 0.5, 0.5]], [], np.zeros((0, 4)), (10, 10))
    with pytest.raises(ValueError, match="image_size"):
        pairwise_mask_iou([np.ones((2, 2))], [[0, 0, 0.5, 0.5]], [], np.zeros((0, 4)), (np.nan, 10))
    with pytest.raises(ValueError, match=r"\(1, 4\)"):
        pairwise_mask_iou([np.ones((2, 2))], [[0, 0, 0.5]], [], np.zeros((0, 4)), (10, 10))
    with pytest.raises(ValueError, match="no rings"):
        rasterize_polygons([None], (10, 10))
    with pytest.raises(ValueError, match="NaN"):
        rasterize_polygons([[np.array([[0, 0], [np.nan, 1], [1, 0]])]], (10, 10))


@st.composite
def mask_sets(draw):
    seed = draw(st.integers(0, 2**32 - 1))
    n = draw(st.integers(1, 6))
    rng = np.random.default_rng(seed)
    masks, boxes = random_masks(rng, n, 40, 30)
    masks = [m if m.any() else ~m for m in masks]  # non-empty
    return masks, boxes


@settings(max_examples=50, deadline=None)
@given(mask_sets(), mask_sets())
def test_properties(a, b):
    size = (40, 30)
    iou = pairwise_mask_iou(*a, *b, size)
    assert iou.shape == (len(a[0]), len(b[0]))
    assert np.all((iou >= 0) & (iou <= 1))
    np.testing.assert_array_equal(pairwise_mask_iou(*b, *a, size), iou.T)
    placed = place_masks(*a, size)
    diag = np.diag(pairwise_mask_iou(*a, *a, size))
    np.testing.assert_array_equal(diag, [1.0 if p.area else 0.0 for p in placed])
