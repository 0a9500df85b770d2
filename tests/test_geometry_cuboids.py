"""Tests of agreement.geometry.cuboids: exact 3D IoU, rotations, points, polylines, segments.

Oracles: closed-form volumes (the octagonal prism of a cube turned 45
degrees), a seeded Monte-Carlo volume estimate under random rotations (within
five standard errors), shapely's polygon areas times the height overlap for
yaw-only cuboids (exact for prisms), scipy's Euler and rotation-vector
conversions. Properties (Hypothesis): symmetry, identity, invariance to a
common rigid motion, the closed form against the general polyhedral path.
These tests do not import FiftyOne.
"""

from __future__ import annotations

import doctest
import math

import numpy as np
import pytest
import shapely
from hypothesis import example, given, settings, strategies as st
from scipy.spatial import ConvexHull
from scipy.spatial.transform import Rotation

import agreement.geometry.cuboids as cuboids_module
from agreement.core.validation import AnnotationError
from agreement.geometry.cuboids import (
    cuboid_corners,
    cuboid_rotation_matrices,
    pairwise_cuboid_intersection_volume,
    pairwise_cuboid_iou,
    pairwise_point_distance,
    pairwise_point_similarity,
    pairwise_polyline_boundary_f1,
    pairwise_segment_jaccard,
    polyline_boundary_f1,
    rotation_matrix_xyz,
    rotation_vector_matrix,
    segment_jaccard,
    stack_cuboids,
    validate_cuboids,
)

OCTAGON_PRISM = 2.0 * (math.sqrt(2.0) - 1.0)  # |unit cube ∩ cube turned 45° about an axis|

angles = st.floats(-math.pi, math.pi, allow_nan=False)
sizes = st.floats(0.2, 3.0, allow_nan=False)
offsets = st.floats(-1.5, 1.5, allow_nan=False)


@st.composite
def cuboid(draw, near: bool = True) -> np.ndarray:
    loc = [draw(offsets) for _ in range(3)] if near else [draw(st.floats(-50, 50)) for _ in range(3)]
    return np.array(loc + [draw(sizes) for _ in range(3)] + [draw(angles) for _ in range(3)])


def one(a, b, **kwargs) -> float:
    r = pairwise_cuboid_iou(np.array([a], dtype=float), np.array([b], dtype=float), **kwargs)
    assert r.shape == (1, 1)
    return float(r[0, 0])


def inter(a, b, **kwargs) -> float:
    return float(pairwise_cuboid_intersection_volume(np.array([a], float), np.array([b], float), **kwargs)[0, 0])


def test_doctests():
    failures, _ = doctest.testmod(cuboids_module)
    assert failures == 0


# --------------------------------------------------------------------------
# Closed-form cases
# --------------------------------------------------------------------------


@pytest.mark.parametrize("axis", [0, 1, 2])
@pytest.mark.parametrize("method", ["auto", "polyhedron"])
def test_cube_turned_45_degrees_gives_the_octagonal_prism(axis, method):
    # Cross-section: the unit square minus four corner triangles with legs
    # 1 - sqrt(2)/2, i.e. 1 - 2 (1 - sqrt(2)/2)^2 = 2 (sqrt(2) - 1); height 1.
    cube = [0, 0, 0, 1, 1, 1, 0, 0, 0]
    turned = list(cube)
    turned[6 + axis] = math.pi / 4
    assert inter(cube, turned, method=method) == pytest.approx(OCTAGON_PRISM, abs=1e-12)
    # IoU = V / (2 - V) = 1 / sqrt(2).
    assert one(cube, turned, method=method) == pytest.approx(1 / math.sqrt(2), abs=1e-12)


def test_octagonal_prism_scales_with_the_cube_and_ignores_position():
    s, c = 2.5, [100.0, -40.0, 7.0]
    a = c + [s, s, s, 0, 0, 0]
    b = c + [s, s, s, 0, 0, -3 * math.pi / 4]  # 45° modulo a quarter turn
    assert inter(a, b) == pytest.approx(OCTAGON_PRISM * s**3, rel=1e-12)


def test_axis_aligned_closed_form_values():
    a = [0, 0, 0, 2, 2, 2, 0, 0, 0]
    assert one(a, [1, 0, 0, 2, 2, 2, 0, 0, 0]) == pytest.approx(4 / 12)  # half overlap: 4 / (8 + 8 - 4)
    assert one(a, [0, 0, 0, 1, 1, 1, 0, 0, 0]) == pytest.approx(1 / 8)  # nested
    # A quarter turn about z swaps dx and dy: the same box as [0, 0, 0, 2, 4, 1].
    assert one([0, 0, 0, 4, 2, 1, 0, 0, math.pi / 2], [0, 0, 0, 2, 4, 1, 0, 0, 0]) == pytest.approx(1.0)


@pytest.mark.parametrize("gap", [0.0, 1e-9, 0.5, 10.0])
def test_vertically_separated_boxes_score_zero(gap):
    # Identical footprints (bird's-eye view IoU 1), one above the other.
    low = [3, 4, 1.0, 2, 1, 2, 0, 0, 0.7]
    high = [3, 4, 1.0 + 2 + gap, 2, 1, 2, 0, 0, 0.7]
    assert one(low, high) == 0.0
    assert one(low, high, method="polyhedron") == 0.0


def test_tilted_boxes_are_measured_in_3d_not_bird_eye_view():
    # A flat slab and the same slab tilted 90° about x (standing up): their
    # bird's-eye footprints overlap, their volumes meet in a 1 x 0.2 x 0.2 bar.
    slab = [0, 0, 0, 1, 1, 0.2, 0, 0, 0]
    standing = [0, 0, 0, 1, 1, 0.2, math.pi / 2, 0, 0]
    v = 1 * 0.2 * 0.2
    assert inter(slab, standing) == pytest.approx(v, abs=1e-12)
    assert inter(slab, standing, method="polyhedron") == pytest.approx(v, abs=1e-12)
    # Tilted by 30° instead: exact value by the slab-cut formula (a parallelogram
    # cross-section in the y-z plane, extruded along x).
    tilted = [0, 0, 0, 1, 1, 0.2, math.pi / 6, 0, 0]
    poly_a = shapely.box(-0.5, -0.1, 0.5, 0.1)
    rect = np.array([[-0.5, -0.1], [0.5, -0.1], [0.5, 0.1], [-0.5, 0.1]])
    c, s = math.cos(math.pi / 6), math.sin(math.pi / 6)
    poly_b = shapely.Polygon(rect @ np.array([[c, s], [-s, c]]))
    assert inter(slab, tilted) == pytest.approx(poly_a.intersection(poly_b).area * 1.0, abs=1e-12)


def test_empty_inputs_give_empty_matrices():
    assert pairwise_cuboid_iou(np.empty((0, 9)), np.zeros((3, 9))).shape == (0, 3)
    assert pairwise_cuboid_iou([], [[0, 0, 0, 1, 1, 1, 0, 0, 0]]).shape == (0, 1)


def test_wrong_shapes_and_options_raise():
    with pytest.raises(ValueError, match=r"\(n, 9\)"):
        pairwise_cuboid_iou(np.zeros((2, 7)), np.zeros((2, 9)))
    with pytest.raises(ValueError, match="convention"):
        pairwise_cuboid_iou(np.zeros((1, 9)), np.zeros((1, 9)), convention="zyx")
    with pytest.raises(ValueError, match="method"):
        pairwise_cuboid_iou(np.zeros((1, 9)), np.zeros((1, 9)), method="bev")


# --------------------------------------------------------------------------
# Oracles
# --------------------------------------------------------------------------


def monte_carlo_intersection(a: np.ndarray, b: np.ndarray, n: int, seed: int) -> tuple[float, float]:
    """|A ∩ B| estimated from n uniform points in A; returns (estimate, |A|)."""
    rng = np.random.default_rng(seed)
    Ra, Rb = rotation_matrix_xyz(a[6:9]), rotation_matrix_xyz(b[6:9])
    u = (rng.random((n, 3)) - 0.5) * a[3:6]
    world = u @ Ra.T + a[0:3]
    in_b = (world - b[0:3]) @ Rb  # coordinates in B's frame
    inside = np.all(np.abs(in_b) <= b[3:6] / 2, axis=1)
    vol_a = float(np.prod(a[3:6]))
    return float(inside.mean()) * vol_a, vol_a


@settings(max_examples=60, deadline=None)
@given(cuboid(), cuboid(), st.integers(0, 2**32 - 1))
def test_intersection_matches_monte_carlo_under_random_rotations(a, b, seed):
    n = 100_000
    exact = inter(a, b)
    estimate, vol_a = monte_carlo_intersection(a, b, n, seed)
    p = exact / vol_a
    se = vol_a * math.sqrt(max(p * (1 - p), 0.0) / n)  # standard error if `exact` is right
    assert abs(estimate - exact) <= 5 * se + vol_a / n, (exact, estimate, se)


@settings(max_examples=80, deadline=None)
@given(
    st.tuples(offsets, offsets, offsets, sizes, sizes, sizes, angles),
    st.tuples(offsets, offsets, offsets, sizes, sizes, sizes, angles),
)
@example((0.5, 0.0, 0.0, 0.5, 0.5, 1.0, -0.9676126684036137), (0.5, 0.0, 0.0, 2.5, 0.5, 1.0, -0.9676126684036137))
@example((0.0, 0.0, 0.0, 1.0, 0.201171875, 1.0, 1.625), (0.201171875, 0.0, 0.0, 1.0, 0.201171875, 1.0, 1.625))
def test_yaw_only_matches_footprint_area_times_height_overlap(pa, pb):
    # Cuboids turned about z only are prisms: |A ∩ B| = |footprints ∩| x z-overlap.
    def footprint(x, y, dx, dy, yaw):
        rect = np.array([[-dx, -dy], [dx, -dy], [dx, dy], [-dx, dy]]) / 2
        c, s = math.cos(yaw), math.sin(yaw)
        return shapely.Polygon(rect @ np.array([[c, s], [-s, c]]) + [x, y])

    a = [pa[0], pa[1], pa[2], pa[3], pa[4], pa[5], 0.0, 0.0, pa[6]]
    b = [pb[0], pb[1], pb[2], pb[3], pb[4], pb[5], 0.0, 0.0, pb[6]]
    # snapped overlay (grid 1e-12): GEOS's floating overlay can lose a footprint whose edges lie on the
    # other's (a 0.5 x 0.5 square inside a 2.5 x 0.5 rectangle of the same yaw gave area 0, the other way 0.25)
    area = shapely.intersection(footprint(pa[0], pa[1], pa[3], pa[4], pa[6]),
                                footprint(pb[0], pb[1], pb[3], pb[4], pb[6]), grid_size=1e-12).area
    dz = max(0.0, min(pa[2] + pa[5] / 2, pb[2] + pb[5] / 2) - max(pa[2] - pa[5] / 2, pb[2] - pb[5] / 2))
    expected = area * dz
    # the oracle's own error: snapping to the 1e-12 grid moves the footprint overlap's area by up to about its
    # perimeter x 1e-12 (a sliver's relative error then exceeds 1e-9: IoU 7.3e-4 off by 1.2e-12 was seen)
    tol = 1e-10
    assert inter(a, b) == pytest.approx(expected, rel=1e-9, abs=tol)
    vol = pa[3] * pa[4] * pa[5] + pb[3] * pb[4] * pb[5]
    assert one(a, b) == pytest.approx(expected / (vol - expected), rel=1e-9, abs=tol)


# --------------------------------------------------------------------------
# Properties
# --------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(st.lists(cuboid(), min_size=1, max_size=4), st.lists(cuboid(), min_size=1, max_size=4))
def test_range_and_symmetry(a, b):
    a, b = np.array(a), np.array(b)
    ab, ba = pairwise_cuboid_iou(a, b), pairwise_cuboid_iou(b, a)
    assert ab.shape == (len(a), len(b))
    assert np.all((ab >= 0) & (ab <= 1))
    np.testing.assert_allclose(ab, ba.T, atol=1e-9)


@settings(max_examples=40, deadline=None)
@given(st.lists(cuboid(near=False), min_size=1, max_size=5))
def test_identity(a):
    a = np.array(a)
    assert np.all(np.diag(pairwise_cuboid_iou(a, a)) == 1.0)
    # Through the polyhedral path too (no shortcut for identical rows in the volume).
    vol = pairwise_cuboid_intersection_volume(a, a, method="polyhedron")
    np.testing.assert_allclose(np.diag(vol), np.prod(a[:, 3:6], axis=1), rtol=1e-9)


@pytest.mark.filterwarnings("ignore:Gimbal lock")
@settings(max_examples=50, deadline=None)
@given(cuboid(), cuboid(), st.tuples(*[st.floats(-1e3, 1e3)] * 3), st.tuples(angles, angles, angles))
def test_invariant_to_a_common_rigid_motion(a, b, shift, rot):
    before = one(a, b)
    Q = rotation_matrix_xyz(rot)

    def move(c):
        R = Q @ rotation_matrix_xyz(c[6:9])
        angles_xyz = Rotation.from_matrix(R).as_euler("XYZ")
        return np.r_[Q @ c[0:3] + shift, c[3:6], angles_xyz]

    assert one(move(a), move(b)) == pytest.approx(before, abs=1e-7)


quarter_turns = st.sampled_from([0.0, math.pi / 2, math.pi, -math.pi / 2])


@pytest.mark.filterwarnings("ignore:Gimbal lock")
@settings(max_examples=80, deadline=None)
@given(
    st.tuples(offsets, offsets, offsets, sizes, sizes, sizes),
    st.tuples(offsets, offsets, offsets, sizes, sizes, sizes),
    st.tuples(angles, angles, angles),
    st.tuples(quarter_turns, quarter_turns, quarter_turns),
)
def test_axis_aligned_closed_form_equals_general_path(pa, pb, common, turns):
    # Same orientation up to quarter turns: the closed form applies.
    Rb = rotation_matrix_xyz(common) @ rotation_matrix_xyz(turns)
    a = np.r_[pa, common]
    b = np.r_[pb, Rotation.from_matrix(Rb).as_euler("XYZ")]
    fast = inter(a, b, method="auto")
    slow = inter(a, b, method="polyhedron")
    assert fast == pytest.approx(slow, rel=1e-8, abs=1e-10)


def test_aligned_pairs_take_the_closed_form(monkeypatch):
    def fail(*args):
        raise AssertionError("general path used for an axis-permuted pair")

    monkeypatch.setattr(cuboids_module, "_general_volume", fail)
    a = [0, 0, 0, 4, 2, 1, 0.3, -0.2, 0.1]
    R = rotation_matrix_xyz(a[6:9]) @ rotation_matrix_xyz([math.pi / 2, 0, math.pi])
    b = [0.5, 0.2, 0.1, 1, 2, 3, *Rotation.from_matrix(R).as_euler("XYZ")]
    assert inter(a, b) > 0
    with pytest.raises(AssertionError, match="general path"):
        inter(a, b, method="polyhedron")


def test_matrix_of_pairs_equals_single_pairs():
    rng = np.random.default_rng(7)
    a = np.c_[rng.uniform(0, 3, (6, 3)), rng.uniform(0.5, 2, (6, 3)), rng.uniform(-3, 3, (6, 3))]
    b = np.c_[rng.uniform(0, 3, (5, 3)), rng.uniform(0.5, 2, (5, 3)), rng.uniform(-3, 3, (5, 3))]
    full = pairwise_cuboid_iou(a, b)
    assert (full > 0).sum() >= 5  # the test exercises overlaps
    for i in range(len(a)):
        for j in range(len(b)):
            assert full[i, j] == pytest.approx(one(a[i], b[j]), abs=1e-12)


# --------------------------------------------------------------------------
# Rotations and conventions
# --------------------------------------------------------------------------


@settings(max_examples=50, deadline=None)
@given(st.tuples(angles, angles, angles))
def test_rotation_matrix_is_intrinsic_xyz(rot):
    R = rotation_matrix_xyz(rot)
    np.testing.assert_allclose(R, Rotation.from_euler("XYZ", rot).as_matrix(), atol=1e-12)
    rx, ry, rz = (rotation_matrix_xyz(v) for v in ([rot[0], 0, 0], [0, rot[1], 0], [0, 0, rot[2]]))
    np.testing.assert_allclose(R, rx @ ry @ rz, atol=1e-12)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2), angles)
def test_euler_and_rotvec_agree_with_one_nonzero_angle(axis, angle):
    rot = [0.0, 0.0, 0.0]
    rot[axis] = angle
    np.testing.assert_allclose(rotation_matrix_xyz(rot), rotation_vector_matrix(rot), atol=1e-12)


def test_euler_and_rotvec_readings_differ_for_two_nonzero_angles():
    rot = [math.pi / 2, math.pi / 2, 0.0]
    euler, rotvec = rotation_matrix_xyz(rot), rotation_vector_matrix(rot)
    # Euler: Rx(90°) Ry(90°) permutes the axes (local x -> world y, y -> z,
    # z -> x); the rotation vector turns by pi/sqrt(2) about (1, 1, 0).
    np.testing.assert_allclose(euler, [[0, 0, 1], [1, 0, 0], [0, 1, 0]], atol=1e-12)
    assert np.abs(euler - rotvec).max() > 0.5
    # The same FiftyOne detection therefore describes two different cuboids:
    # read both ways, a 1 x 2 x 4 box overlaps its other reading only partly.
    det = [0, 0, 0, 1, 2, 4, *rot]
    as_rotvec = [0, 0, 0, 1, 2, 4, *Rotation.from_rotvec(rot).as_euler("XYZ")]
    iou = one(det, as_rotvec)
    assert iou < 0.5, iou  # about 0.26
    # And the IoU between two detections depends on the reading.
    other = [0.3, 0.2, 0.1, 1, 2, 4, 0.0, 0.0, 0.0]
    assert one(det, other, convention="euler_xyz") != pytest.approx(one(det, other, convention="rotvec"), abs=1e-3)


def test_cuboid_corners_span_the_volume():
    c = cuboid_corners([1, 2, 3], [1, 2, 4], [0.3, -0.4, 1.1])
    assert c.shape == (8, 3)
    assert ConvexHull(c).volume == pytest.approx(8.0)
    np.testing.assert_allclose(c.mean(axis=0), [1, 2, 3])
    batch = cuboid_corners([[1, 2, 3]] * 2, [[1, 2, 4]] * 2, [[0.3, -0.4, 1.1]] * 2)
    np.testing.assert_allclose(batch[1], c)
    rv = cuboid_corners([0, 0, 0], [1, 2, 4], [0.3, -0.4, 1.1], convention="rotvec")
    assert not np.allclose(rv, cuboid_corners([0, 0, 0], [1, 2, 4], [0.3, -0.4, 1.1]))


def test_stack_cuboids_and_rotation_matrices():
    c = stack_cuboids([[0, 0, 1]], [[2, 1, 1]], [[0, 0, 0.5]])
    assert c.shape == (1, 9)
    assert cuboid_rotation_matrices(c).shape == (1, 3, 3)
    assert cuboid_rotation_matrices(np.empty((0, 9)), "rotvec").shape == (0, 3, 3)
    with pytest.raises(ValueError, match="same number of rows"):
        stack_cuboids([[0, 0, 0]], [[1, 1, 1], [1, 1, 1]], [[0, 0, 0]])


# --------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "row, message",
    [
        ([0, 0, 0, 0, 1, 1, 0, 0, 0], "zero or negative dimension"),
        ([0, 0, 0, 1, -1, 1, 0, 0, 0], "zero or negative dimension"),
        ([0, 0, 0, 1, 1, 1, 0, np.nan, 0], "non-finite rotation"),
        ([np.inf, 0, 0, 1, 1, 1, 0, 0, 0], "non-finite location"),
        ([0, 0, 0, 1, np.nan, 1, 0, 0, 0], "non-finite dimensions"),
    ],
)
def test_validate_cuboids_names_where_and_what(row, message):
    good = [0, 0, 0, 1, 1, 1, 0, 0, 0]
    with pytest.raises(AnnotationError, match=message) as err:
        validate_cuboids([good, row], where="sample 'scene7.fo3d', field 'rater_b'")
    assert "scene7.fo3d" in str(err.value) and "rater_b" in str(err.value) and "cuboid 1" in str(err.value)
    with pytest.raises(AnnotationError, match="label 1"):
        validate_cuboids([good, row], where=["label 0", "label 1"])


def test_validate_cuboids_accepts_valid_input():
    out = validate_cuboids([[0, 0, 0, 1, 1, 1, 10.0, -20.0, 3.0]], "x")
    assert out.dtype == np.float64 and out.shape == (1, 9)
    assert validate_cuboids([], "x").shape == (0, 9)
    with pytest.raises(ValueError, match="one string per cuboid"):
        validate_cuboids([[0, 0, 0, 1, 1, 1, 0, 0, 0]], ["a", "b"])


# --------------------------------------------------------------------------
# Points
# --------------------------------------------------------------------------


def test_point_similarity_values_and_range():
    p = [[0, 0, 0]]
    q = [[0, 0, 0], [2, 0, 0], [0, 0, 4], [300, 0, 0]]
    s = pairwise_point_similarity(p, q)
    np.testing.assert_allclose(s, [[1.0, math.exp(-0.5), math.exp(-2.0), 0.0]], atol=1e-15)
    assert np.all((s >= 0) & (s <= 1))
    assert pairwise_point_similarity(p, [[1, 0, 0]], scale=1.0)[0, 0] == pytest.approx(math.exp(-0.5))
    assert pairwise_point_distance(p, [[1, 2, 2]])[0, 0] == pytest.approx(3.0)
    assert pairwise_point_similarity(np.empty((0, 3)), q).shape == (0, 4)
    for bad in (0.0, -1.0, np.nan):
        with pytest.raises(ValueError, match="scale"):
            pairwise_point_similarity(p, q, scale=bad)
    with pytest.raises(ValueError, match=r"\(n, 3\)"):
        pairwise_point_similarity([[0, 0]], q)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(*[st.floats(-20, 20)] * 3), min_size=1, max_size=5), st.tuples(*[st.floats(-1e3, 1e3)] * 3))
def test_point_similarity_symmetric_and_translation_invariant(pts, shift):
    p = np.array(pts)
    q = p[::-1] + 0.5
    s = pairwise_point_similarity(p, q)
    np.testing.assert_allclose(s, pairwise_point_similarity(q, p).T)
    np.testing.assert_allclose(s, pairwise_point_similarity(p + shift, q + shift), atol=1e-9)


# --------------------------------------------------------------------------
# Polylines
# --------------------------------------------------------------------------


def test_polyline_f1_defined_cases():
    a = [[0, 0, 0], [10, 0, 0]]
    assert polyline_boundary_f1(a, a, tolerance=0.1) == 1.0
    assert polyline_boundary_f1(a, [[0, 0, 0.4], [10, 0, 0.4]], tolerance=0.5) == 1.0
    # The same offset along z, beyond the tolerance: nothing matches (3D, not bird's-eye).
    assert polyline_boundary_f1(a, [[0, 0, 0.6], [10, 0, 0.6]], tolerance=0.5) == 0.0
    # b covers half of a: P = 5.5 / 10 (within 0.5 of b), R = 1.
    expected = 2 * 0.55 / 1.55
    assert polyline_boundary_f1(a, [[0, 0, 0], [5, 0, 0]], tolerance=0.5) == pytest.approx(expected, abs=1e-12)
    assert polyline_boundary_f1([[0, 0, 0], [5, 0, 0]], a, tolerance=0.5) == pytest.approx(expected, abs=1e-12)
    # More vertices on the same line change nothing.
    dense = np.c_[np.linspace(0, 10, 37), np.zeros(37), np.zeros(37)]
    assert polyline_boundary_f1(a, dense, tolerance=0.01) == 1.0


def test_polyline_f1_shapes_closed_and_points():
    square = [[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]]
    open_square = polyline_boundary_f1(square, square + [[0, 0, 0]], tolerance=0.05)
    assert open_square < 1.0  # the closing side is missing from the open one
    assert polyline_boundary_f1(square, square + [[0, 0, 0]], tolerance=0.05, closed_a=True) == 1.0
    # Several shapes form one polyline (FiftyOne's points3d).
    two = [[[0, 0, 0], [1, 0, 0]], [[0, 5, 0], [1, 5, 0]]]
    assert polyline_boundary_f1(two, two, tolerance=0.1) == 1.0
    assert polyline_boundary_f1(two, [[0, 0, 0], [1, 0, 0]], tolerance=0.1) == pytest.approx(2 * 0.5 / 1.5)
    # Single points (zero length).
    assert polyline_boundary_f1([[0, 0, 0]], [[0, 0, 0.1]], tolerance=0.2) == 1.0
    assert polyline_boundary_f1([[0, 0, 0]], [[0, 0, 0.3]], tolerance=0.2) == 0.0


def test_polyline_f1_bad_input():
    a = [[0, 0, 0], [1, 0, 0]]
    with pytest.raises(ValueError, match="tolerance"):
        polyline_boundary_f1(a, a, tolerance=0)
    with pytest.raises(ValueError, match="no vertices"):
        polyline_boundary_f1(np.empty((0, 3)), a, tolerance=1)
    with pytest.raises(ValueError, match="NaN"):
        polyline_boundary_f1([[0, 0, np.nan], [1, 0, 0]], a, tolerance=1)
    with pytest.raises(ValueError, match=r"\(k, 3\)"):
        polyline_boundary_f1([[0, 0], [1, 0]], a, tolerance=1)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.tuples(*[st.floats(-5, 5)] * 3), min_size=2, max_size=6),
    st.lists(st.tuples(*[st.floats(-5, 5)] * 3), min_size=2, max_size=6),
    st.tuples(angles, angles, angles),
    st.tuples(*[st.floats(-100, 100)] * 3),
)
def test_polyline_f1_range_symmetry_and_rigid_invariance(a, b, rot, shift):
    a, b = np.array(a), np.array(b)
    f = polyline_boundary_f1(a, b, tolerance=1.0)
    assert 0.0 <= f <= 1.0
    assert polyline_boundary_f1(b, a, tolerance=1.0) == pytest.approx(f, abs=1e-12)
    Q = rotation_matrix_xyz(rot)
    moved = polyline_boundary_f1(a @ Q.T + shift, b @ Q.T + shift, tolerance=1.0)
    # Rigid motion keeps every sample and its distance; only points within
    # rounding of the tolerance can flip, which moves F1 by a sample's weight.
    assert moved == pytest.approx(f, abs=0.05)


def test_pairwise_polyline_f1():
    lines = [[[0, 0, 0], [10, 0, 0]], [[0, 0, 0], [5, 0, 0]], [[0, 0, 9], [10, 0, 9]]]
    m = pairwise_polyline_boundary_f1(lines, lines, tolerance=0.5)
    assert m.shape == (3, 3)
    np.testing.assert_allclose(np.diag(m), 1.0)
    assert m[0, 2] == 0.0 and m[0, 1] == pytest.approx(2 * 0.55 / 1.55)


# --------------------------------------------------------------------------
# Point-index segments
# --------------------------------------------------------------------------


def test_segment_jaccard_values():
    assert segment_jaccard([0, 1, 2, 3], [2, 3, 4], 10) == pytest.approx(0.4)
    assert segment_jaccard([1, 1, 2], [2, 1], 3) == 1.0  # duplicates ignored
    assert segment_jaccard([0], [1], 2) == 0.0
    assert segment_jaccard([], [], 5) == 1.0
    assert segment_jaccard([], [1], 5) == 0.0
    assert segment_jaccard(np.array([2.0, 3.0]), [3], 4) == 0.5


@pytest.mark.parametrize("bad, message", [([0, 10], "out of range"), ([-1], "out of range"), ([0.5], "not an integer")])
def test_segment_index_errors_are_clear(bad, message):
    with pytest.raises(AnnotationError, match=message) as err:
        segment_jaccard([0, 1], bad, num_points=10)
    if message == "out of range":
        assert "10 points" in str(err.value)


def test_pairwise_segment_jaccard_matches_single_pairs():
    rng = np.random.default_rng(3)
    segs = [rng.choice(50, size=rng.integers(0, 20), replace=False) for _ in range(6)]
    m = pairwise_segment_jaccard(segs, segs[:4], 50)
    assert m.shape == (6, 4)
    for i in range(6):
        for j in range(4):
            assert m[i, j] == pytest.approx(segment_jaccard(segs[i], segs[j], 50))
    with pytest.raises(AnnotationError, match=r"segment b\[1\].*out of range"):
        pairwise_segment_jaccard(segs, [[0], [50]], 50)
