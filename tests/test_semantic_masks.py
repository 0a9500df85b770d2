"""Tests of agreement.methods.semantic.pixels and .stats: pixel alpha, Dice, IoU, boundary F1.

Oracles: the ``krippendorff`` package (nominal alpha on the raters x pixels
reliability data, and on the binary presence data of each class), hand
computations on small masks, and a brute-force boundary F1 (explicit crack
segments between 4-adjacent pixels, point-to-segment Euclidean distances and
the trapezoid rule on each crack). Hypothesis checks ranges and symmetry.
These tests do not import FiftyOne.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from agreement.methods.semantic import pixels
from agreement.methods.semantic.pixels import check_masks, class_cracks, sample_seed, sample_statistics
from agreement.methods.semantic.stats import SemanticStats

krippendorff = pytest.importorskip("krippendorff")


def merged(results):
    out = results[0].stats
    for r in results[1:]:
        out = out.merge(r.stats)
    return out


def random_corpus(seed, n_samples=4, R=3, C=3, shape=(9, 11), p_keep=0.6, absent=True):
    rng = np.random.default_rng(seed)
    corpus = []
    for i in range(n_samples):
        base = rng.integers(0, C, shape)
        masks = [np.where(rng.random(shape) < p_keep, base, rng.integers(0, C, shape)) for _ in range(R)]
        if absent and i % 2 and R > 2:
            masks[i % R] = None
        corpus.append(masks)
    return corpus


def reliability(corpus):
    """raters x (all pixels of all samples), NaN for an absent rater."""
    cols = []
    for masks in corpus:
        size = next(m for m in masks if m is not None).size
        cols.append(np.stack([m.ravel().astype(float) if m is not None else np.full(size, np.nan) for m in masks]))
    return np.concatenate(cols, axis=1)


# ----------------------------------------------------------------------------- pixel alpha


@pytest.mark.parametrize("seed,R,C", [(0, 2, 2), (1, 3, 3), (2, 4, 3), (3, 3, 4), (4, 5, 2)])
def test_exact_pixel_alpha_equals_krippendorff(seed, R, C):
    corpus = random_corpus(seed, R=R, C=C)
    results = [sample_statistics(m, class_values=list(range(C)), sample_key=str(i)) for i, m in enumerate(corpus)]
    res = merged(results).finish()
    rel = reliability(corpus)
    expected = krippendorff.alpha(reliability_data=rel, level_of_measurement="nominal")
    assert res.alpha.alpha == pytest.approx(expected, abs=1e-12)
    for k, c in enumerate(range(C)):
        binary = np.where(np.isnan(rel), np.nan, (rel == c).astype(float))
        exp_c = krippendorff.alpha(reliability_data=binary, level_of_measurement="nominal")
        assert res.alpha.class_alpha[k] == pytest.approx(exp_c, abs=1e-12)
    # per-sample alpha: the same on the sample alone
    for masks, r in zip(corpus, results):
        one = krippendorff.alpha(reliability_data=reliability([masks]), level_of_measurement="nominal")
        assert r.alpha == pytest.approx(one, abs=1e-12)


def test_pixel_agreement_is_the_share_of_agreeing_pairs():
    a = np.array([[0, 1], [1, 1]])
    b = np.array([[0, 1], [0, 1]])
    c = np.array([[0, 0], [0, 1]])
    r = sample_statistics([a, b, c], class_values=[0, 1])
    # pixels: 3/3 pairs agree, 1/3, 1/3, 3/3 -> mean 2/3
    assert r.pixel_agreement == pytest.approx(2 / 3)


def test_sampled_mode_is_deterministic_and_order_independent():
    corpus = random_corpus(7, n_samples=6, shape=(40, 50))
    keys = [f"s{i}" for i in range(6)]

    def run(order, n_pixels=300, seed=1):
        rs = [sample_statistics(corpus[i], class_values=[0, 1, 2], n_pixels=n_pixels, seed=seed, sample_key=keys[i]) for i in order]
        return merged(rs).finish().alpha

    base = run(range(6))
    again = run(range(6))
    assert base.alpha == again.alpha
    shuffled = run([3, 5, 0, 2, 1, 4])
    assert shuffled.alpha == pytest.approx(base.alpha, abs=1e-12, rel=0)
    np.testing.assert_allclose(shuffled.class_alpha, base.class_alpha, atol=1e-12, rtol=0)
    # shards of any size merge to the same numbers
    shard_a = merged([sample_statistics(corpus[i], class_values=[0, 1, 2], n_pixels=300, seed=1, sample_key=keys[i])
                      for i in (0, 1, 2, 3)])
    shard_b = merged([sample_statistics(corpus[i], class_values=[0, 1, 2], n_pixels=300, seed=1, sample_key=keys[i])
                      for i in (4, 5)])
    assert shard_b.merge(shard_a).finish().alpha.alpha == pytest.approx(base.alpha, abs=1e-12)
    # another seed draws other pixels; enough pixels make it exact
    assert run(range(6), seed=2).alpha != base.alpha
    assert run(range(6), n_pixels=2000).alpha == pytest.approx(run(range(6), n_pixels=None).alpha, abs=1e-12)


def test_sampled_alpha_estimates_the_exact_alpha():
    rng = np.random.default_rng(0)
    base = rng.integers(0, 3, (200, 200))
    masks = [np.where(rng.random(base.shape) < 0.7, base, rng.integers(0, 3, base.shape)) for _ in range(3)]
    exact = sample_statistics(masks, class_values=[0, 1, 2]).stats.finish().alpha.alpha
    sampled = sample_statistics(masks, class_values=[0, 1, 2], n_pixels=10_000, sample_key="x").stats.finish().alpha.alpha
    assert sampled == pytest.approx(exact, abs=0.02)


def test_sample_seed_is_stable():
    assert sample_seed(0, "abc").integers(0, 2**31, 3).tolist() == [1227479945, 2023694155, 1762546337]
    assert sample_seed(7, "64f0c0ffee").integers(0, 2**31, 3).tolist() == [1582864967, 1491073706, 910414070]


def test_undefined_alpha_has_a_reason():
    same = np.zeros((4, 4), int)
    r = sample_statistics([same, same], class_values=[0, 1])
    assert np.isnan(r.alpha) and "no variation" in r.reason
    fin = r.stats.finish().alpha
    assert np.isnan(fin.alpha) and "no variation" in fin.reason
    assert "class 1 is absent" in fin.class_reasons[1]
    alone = sample_statistics([same, None], class_values=[0, 1], sample_key="k")
    assert np.isnan(alone.dice) and "fewer than two raters" in alone.reason
    assert np.isnan(alone.stats.finish().alpha.alpha)


# ----------------------------------------------------------------------------- Dice and IoU


def test_dice_and_iou_by_hand():
    a = np.array([[1, 1, 0, 0], [1, 1, 0, 0], [2, 2, 2, 0], [0, 0, 0, 0]])
    b = np.array([[1, 1, 1, 0], [0, 1, 0, 0], [2, 2, 0, 0], [0, 0, 0, 0]])
    r = sample_statistics([a, b], class_values=[0, 1, 2, 3])
    # class 1: |A| = 4, |B| = 4, I = 3; class 2: |A| = 3, |B| = 2, I = 2; class 0: |A| = 9, |B| = 10, I = 8
    np.testing.assert_allclose(r.pair_dice[0, :3], [16 / 19, 6 / 8, 4 / 5])
    np.testing.assert_allclose(r.pair_iou[0, :3], [8 / 11, 3 / 5, 2 / 3])
    assert np.isnan(r.pair_dice[0, 3]) and np.isnan(r.pair_iou[0, 3])  # class 3 in neither: undefined, not 1
    assert r.dice == pytest.approx(np.mean([16 / 19, 6 / 8, 4 / 5]))
    assert sample_statistics([a, b], class_values=[0, 1, 2, 3], exclude=[0]).dice == pytest.approx(np.mean([6 / 8, 4 / 5]))
    # corpus Dice sums over samples: 2 sum I / (sum |A| + sum |B|)
    r2 = sample_statistics([b, b], class_values=[0, 1, 2, 3])
    fin = r.stats.merge(r2.stats).finish()
    assert fin.overlap.pair_dice[0, 1] == pytest.approx(2 * (3 + 4) / (4 + 4 + 4 + 4))
    assert fin.overlap.class_iou[2] == pytest.approx((2 + 2) / (3 + 2 - 2 + 2 + 2 - 2))


def test_pairs_and_absent_raters():
    rng = np.random.default_rng(4)
    m = [rng.integers(0, 2, (6, 6)) for _ in range(3)]
    r = sample_statistics([m[0], None, m[1], m[2]], class_values=[0, 1])
    assert r.pairs == ((0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3))
    assert np.all(np.isnan(r.pair_dice[[0, 3, 4]]))
    assert r.stats.overlap.n_samples.tolist() == [0, 1, 1, 0, 0, 1]
    full = sample_statistics(m, class_values=[0, 1])
    np.testing.assert_allclose(r.pair_dice[[1, 2, 5]], full.pair_dice)
    assert r.dice == pytest.approx(full.dice)


def test_merge_aligns_class_values():
    a = np.array([[0, 0, 1], [0, 1, 1]])
    b = np.array([[0, 2, 2], [0, 2, 0]])
    s1 = sample_statistics([a, a.T.reshape(2, 3)], sample_key="1")
    s2 = sample_statistics([b, b[::-1]], sample_key="2")
    assert s1.class_values == (0, 1) and s2.class_values == (0, 2)
    full = [sample_statistics([a, a.T.reshape(2, 3)], class_values=[0, 1, 2]), sample_statistics([b, b[::-1]], class_values=[0, 1, 2])]
    got, want = s1.stats.merge(s2.stats).finish(), merged(full).finish()
    assert got.alpha.alpha == pytest.approx(want.alpha.alpha, abs=1e-12)
    np.testing.assert_allclose(got.overlap.class_dice, want.overlap.class_dice)
    with pytest.raises(ValueError, match="n_pixels"):
        s1.stats.merge(sample_statistics([b, b], n_pixels=4).stats)


# ----------------------------------------------------------------------------- boundary F1


def brute_cracks(m, c):
    """Class ``c``'s boundary as unit segments ``(n, 2, 2)`` between pixel corners (row, column)."""
    H, W = m.shape
    segs = [((y, x + 1), (y + 1, x + 1)) for y in range(H) for x in range(W - 1)
            if m[y, x] != m[y, x + 1] and c in (m[y, x], m[y, x + 1])]
    segs += [((y + 1, x), (y + 1, x + 1)) for y in range(H - 1) for x in range(W)
             if m[y, x] != m[y + 1, x] and c in (m[y, x], m[y + 1, x])]
    return np.array(segs, float).reshape(-1, 2, 2)


def brute_distance(p, segs):
    """Euclidean distance of point ``p`` to the nearest point of the segments."""
    s0, d = segs[:, 0], segs[:, 1] - segs[:, 0]
    t = np.clip(((p - s0) * d).sum(1) / (d * d).sum(1), 0, 1)
    return np.sqrt(((p - (s0 + t[:, None] * d)) ** 2).sum(1)).min()


def brute_boundary_f1(a, b, c, tol):
    """Boundary F1 of class ``c`` (module docstring of pixels.py): the share of each rater's boundary
    length within ``tol`` of the other's boundary lines, by the trapezoid rule on each crack."""
    sa, sb = brute_cracks(a, c), brute_cracks(b, c)
    if not len(sa) and not len(sb):
        return np.nan
    if not len(sa) or not len(sb):
        return 0.0

    def share(x, y):
        near = [[brute_distance(p, y) <= tol + 1e-9 for p in (s[0], s.mean(0), s[1])] for s in x]
        return float(np.sum(np.array(near) * [0.25, 0.5, 0.25])) / len(x)

    p, r = share(sa, sb), share(sb, sa)
    return 0.0 if p + r == 0 else 2 * p * r / (p + r)


def test_boundary_f1_of_a_shifted_square_by_hand():
    a = np.zeros((10, 10), int)
    a[2:6, 2:6] = 1
    b = np.roll(a, 1, axis=1)
    # 16 cracks each. Tolerance 0: A's top and bottom lines (x 2..6) lie on B's (x 3..7) for 3 whole
    # cracks and one end each (3.25 twice), its right side (x = 6) touches B's top and bottom lines at two
    # ends (0.5): P = R = 7 / 16, for class 1 and for the background (the same cracks, other side).
    r0 = sample_statistics([a, b], class_values=[0, 1], tolerance=0)
    np.testing.assert_allclose(r0.pair_boundary_f1[0], [7 / 16, 7 / 16])
    assert r0.pair_boundary_f1[0, 1] == pytest.approx(brute_boundary_f1(a, b, 1, 0))
    r1 = sample_statistics([a, b], class_values=[0, 1], tolerance=1)  # every line within 1 px of the other's
    np.testing.assert_allclose(r1.pair_boundary_f1[0], [1.0, 1.0])
    assert sample_statistics([a, a], class_values=[0, 1], tolerance=0).boundary_f1 == 1.0


def test_cracks_and_the_image_edge():
    m = np.zeros((6, 6), int)
    m[:, 3:] = 1
    mid, ends, cls = class_cracks(m)
    # six vertical cracks between columns 2 and 3, once per side; the image edge is no boundary
    assert len(mid) == 12 and sorted(cls.tolist()) == [0] * 6 + [1] * 6
    assert set(map(tuple, mid)) == {(2 * y + 1, 6) for y in range(6)}
    assert set(map(tuple, ends.reshape(-1, 2))) == {(2 * y, 6) for y in range(7)}
    r = sample_statistics([np.ones((5, 5), int), np.ones((5, 5), int)], class_values=[0, 1])
    assert np.isnan(r.boundary_f1) and "boundary" in r.reason


@pytest.fixture(params=["summed-area table", "KD-tree"])
def lookup(request, monkeypatch):
    """Both ways of finding boundary points within the tolerance (they must agree exactly)."""
    monkeypatch.setattr(pixels, "_TABLE_MAX_CELLS", 10**12 if request.param == "summed-area table" else 0)
    return request.param


@pytest.mark.parametrize("tol", [0, 0.5, 1, 1.5, 2, 3, 2 ** 0.5 / 2])
def test_boundary_f1_matches_brute_force(tol, lookup):
    rng = np.random.default_rng(int(tol * 10))
    for _ in range(3):
        a = rng.integers(0, 3, (12, 13))
        a[rng.random(a.shape) < 0.5] = 0
        b = np.where(rng.random(a.shape) < 0.8, a, rng.integers(0, 3, a.shape))
        r = sample_statistics([a, b], class_values=[0, 1, 2], tolerance=tol)
        want = [brute_boundary_f1(a, b, c, tol) for c in range(3)]
        np.testing.assert_allclose(r.pair_boundary_f1[0], want, atol=1e-12)


def test_boundary_f1_with_many_classes_matches_brute_force(lookup):
    rng = np.random.default_rng(1)
    values = list(range(0, 140, 2))  # 70 classes
    a = rng.choice(values, (20, 20))
    a[5:15, 5:15] = 130
    b = np.where(rng.random(a.shape) < 0.7, a, rng.choice(values, a.shape))
    r = sample_statistics([a, b], class_values=values, tolerance=1)
    for k in (0, 10, 64, 65, 69):
        assert r.pair_boundary_f1[0, k] == pytest.approx(brute_boundary_f1(a, b, values[k], 1), abs=1e-12,
                                                         nan_ok=True)


# ----------------------------------------------------------------------------- input checks


def test_bad_inputs_name_sample_rater_and_problem():
    a = np.zeros((4, 4), np.uint8)
    with pytest.raises(ValueError, match=r"sample 'x7'.*rater bob.*different shapes|sample 'x7'.*different shapes"):
        sample_statistics([a, np.zeros((4, 5), np.uint8)], class_values=[0, 1], sample_key="x7", raters=["ann", "bob"])
    with pytest.raises(ValueError, match=r"sample 'x7': rater bob's mask has shape \(4, 4, 3\).*RGB"):
        sample_statistics([a, np.zeros((4, 4, 3), np.uint8)], class_values=[0], sample_key="x7", raters=["ann", "bob"])
    bad = a.copy()
    bad[0, :3] = 7
    bad[1, 0] = 9
    with pytest.raises(ValueError, match=r"rater 1's mask has values not in class_values \[0, 1\]: 7 \(3 pixels\), "
                                         r"9 \(1 pixels\)"):
        sample_statistics([a, bad], class_values=[0, 1], sample_key="s")
    with pytest.raises(ValueError, match="dtype float32"):
        check_masks([a, a.astype(np.float32)], None, "sample 's'")
    with pytest.raises(ValueError, match="empty"):
        check_masks([np.zeros((0, 3), int)], None, "sample 's'")
    with pytest.raises(ValueError, match="tolerance"):
        sample_statistics([a, a], class_values=[0], tolerance=-1)
    with pytest.raises(ValueError, match="n_pixels"):
        sample_statistics([a, a], class_values=[0], n_pixels=1)
    # non-contiguous class values are checked value by value
    with pytest.raises(ValueError, match=r"3 \(16 pixels\)"):
        sample_statistics([a, a + 3], class_values=[0, 2, 4])


def test_single_channel_axis_and_bool_are_accepted():
    a = np.zeros((4, 4, 1), np.uint8)
    a[1:3, 1:3, 0] = 1
    checked = check_masks([a, a[..., 0] > 0, None], [0, 1], "sample 's'")
    assert checked[0].shape == (4, 4) and checked[1].dtype == np.uint8 and checked[2] is None
    assert sample_statistics([a, a[..., 0] > 0], class_values=[0, 1]).dice == 1.0


# ----------------------------------------------------------------------------- properties


@st.composite
def mask_sets(draw):
    R = draw(st.integers(2, 4))
    C = draw(st.integers(1, 4))
    H, W = draw(st.integers(1, 8)), draw(st.integers(1, 8))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    base = rng.integers(0, C, (H, W))
    keep = draw(st.floats(0, 1))
    return [np.where(rng.random((H, W)) < keep, base, rng.integers(0, C, (H, W))) for _ in range(R)], C


@settings(max_examples=60, deadline=None)
@given(mask_sets(), st.sampled_from([0, 1, 2.5]))
def test_ranges_and_symmetry(data, tol):
    masks, C = data
    r = sample_statistics(masks, class_values=list(range(C)), tolerance=tol)
    for x in (r.pair_dice, r.pair_iou, r.pair_boundary_f1):
        x = x[~np.isnan(x)]
        assert np.all((x >= 0) & (x <= 1 + 1e-12))
    assert np.all(np.nan_to_num(r.pair_iou) <= np.nan_to_num(r.pair_dice) + 1e-12)
    assert np.isnan(r.alpha) or r.alpha <= 1 + 1e-12
    assert 0 <= r.pixel_agreement <= 1
    rev = sample_statistics(masks[::-1], class_values=list(range(C)), tolerance=tol)
    for name in ("alpha", "pixel_agreement", "dice", "iou", "boundary_f1"):
        assert getattr(rev, name) == pytest.approx(getattr(r, name), abs=1e-12, nan_ok=True)
    swapped = sample_statistics([masks[1], masks[0]], class_values=list(range(C)), tolerance=tol)
    first = sample_statistics(masks[:2], class_values=list(range(C)), tolerance=tol)
    for name in ("pair_dice", "pair_iou", "pair_boundary_f1"):
        np.testing.assert_allclose(getattr(swapped, name), getattr(first, name), atol=1e-12)
    fin = r.stats.finish()
    assert isinstance(r.stats, SemanticStats)
    assert np.isnan(fin.alpha.alpha) or fin.alpha.alpha == pytest.approx(r.alpha, abs=1e-12)
