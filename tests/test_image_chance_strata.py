"""The chance baselines on images of very different sizes (issue 47, the image analogue of defect 1).

Objects sized in pixels are a large part of a small image and a speck on a large one; a chance pair between
a 64 px and a 4,096 px image compares boxes that never meet within one image, where both raters' boxes share
the image's relative-size distribution. The chance baselines therefore pair only images of comparable size
(:func:`agreement.core.strata.corpus_strata`: the rule of :func:`agreement.core.strata.scale_strata` on
``sqrt(W H)``), by default in the pure library (``strata="image_size"``) and in every run: here the rule, the
numbers at chance on mixed sizes, the identity with the former numbers on corpora of one stratum, and the
operators (streamed in several shards)."""

from __future__ import annotations

import numpy as np
import pytest

from agreement.core.data import MultiRaterAnnotations
from agreement.core.strata import (
    STRATUM_FACTOR,
    chance_strata_of,
    corpus_strata,
    image_scales,
    scale_strata,
    stratum_ranks,
)
from agreement.geometry.temporal import length_strata
from agreement.methods.geometry_agreement import geometry_agreement
from agreement.methods.kalos.calibration import calibrate, disagreement_samples
from agreement.methods.kalos.calibration.samples import plan_draws
from agreement.methods.ot.alpha_ot import alpha_ot


def _ks_null_999(m: int, n: int, two_sided: bool = True) -> float:
    """The 99.9 % point of the Kolmogorov null for samples of ``m`` and ``n`` (as the validation matrix)."""
    c = np.sqrt(-np.log(0.0005 if two_sided else 0.001) / 2.0)
    return float(c * np.sqrt((m + n) / (m * n)))


def _random_raters(seed: int, S: int = 240, sides: tuple[float, float] = (64, 4096),
                   object_px: tuple[float, float] | None = (8, 512), raters: int = 2) -> MultiRaterAnnotations:
    """Independent random raters on square images of log-uniform sides in ``sides``: each draws 1-6 boxes of
    log-uniform pixel sides in ``object_px`` (at most 0.9 of the image; ``None``: relative sides uniform in
    [0.05, 0.3]) at random places, classes among 3."""
    rng = np.random.default_rng(seed)
    side = np.round(np.exp(rng.uniform(np.log(sides[0]), np.log(sides[1]), S)))
    boxes, labels, si, ri = [], [], [], []
    for s in range(S):
        for r in range(raters):
            n = int(rng.integers(1, 7))
            if object_px is None:
                wh = rng.uniform(0.05, 0.3, (n, 2))
            else:
                wh = np.minimum(np.exp(rng.uniform(np.log(object_px[0]), np.log(object_px[1]), (n, 2))) / side[s],
                                0.9)
            xy = rng.uniform(0, 1, (n, 2)) * (1 - wh)
            boxes.append(np.concatenate([xy, wh], axis=1))
            labels += rng.choice(["a", "b", "c"], n).tolist()
            si += [s] * n
            ri += [r] * n
    return MultiRaterAnnotations(
        sample_ids=np.array([f"img{s:04d}" for s in range(S)], dtype=object),
        raters=tuple(f"r{r}" for r in range(raters)), assigned=np.ones((S, raters), bool),
        boxes=np.concatenate(boxes), labels=np.array(labels, dtype=object),
        label_ids=np.full(len(labels), None, dtype=object), sample_index=np.array(si, dtype=np.intp),
        rater_index=np.array(ri, dtype=np.intp), image_sizes=np.stack([side, side], axis=1))


def _with_sizes(data: MultiRaterAnnotations, sizes: np.ndarray) -> MultiRaterAnnotations:
    return MultiRaterAnnotations(sample_ids=data.sample_ids, raters=data.raters, assigned=data.assigned,
                                 boxes=data.boxes, labels=data.labels, label_ids=data.label_ids,
                                 sample_index=data.sample_index, rater_index=data.rater_index, image_sizes=sizes)


# --------------------------------------------------------------------------
# The rule
# --------------------------------------------------------------------------


def test_scale_strata_is_the_temporal_rule_and_image_scale_is_the_geometric_mean():
    rng = np.random.default_rng(0)
    n = np.round(np.exp(rng.uniform(np.log(60), np.log(6000), 200)))
    assert np.array_equal(length_strata(n), scale_strata(n))
    assert np.array_equal(length_strata(n, factor=1.5, min_size=3), scale_strata(n, factor=1.5, min_size=3))
    assert STRATUM_FACTOR == 1.25
    np.testing.assert_allclose(image_scales([[640, 480], [480, 640], [100, 400], [np.nan, 5], [0, 10]]),
                               [np.sqrt(640 * 480), np.sqrt(640 * 480), 200.0, np.nan, np.nan])
    assert image_scales(None, n=3).shape == (3,) and np.isnan(image_scales(None, n=3)).all()


def test_image_strata_rule():
    # sizes within the factor (COCO-like 640 x 480, 480 x 640, 640 x 427): one stratum, i.e. no strata at all
    assert corpus_strata(image_sizes=[[640, 480], [480, 640], [640, 427], [600, 500]]) is None
    assert corpus_strata(image_sizes=np.full((3, 2), np.nan)) is None and corpus_strata(image_sizes=None) is None
    # small and large images: two strata, in increasing size; an image alone joins its nearer neighbour
    st = corpus_strata(image_sizes=[[64, 64], [4096, 4096], [70, 60], [4000, 4096]])
    assert st.tolist() == [0, 1, 0, 1]
    assert corpus_strata(image_sizes=[[64, 64], [64, 64], [4096, 4096]]) is None  # one large image: merged
    # unknown sizes join the largest stratum
    st = corpus_strata(image_sizes=[[64, 64], [64, 64], [np.nan, np.nan], [4096, 4096], [4096, 4096],
                                    [4096, 4000]])
    assert st.tolist() == [0, 0, 1, 1, 1, 1]
    # frame counts, when given, are the scales (temporal segments)
    assert corpus_strata(image_sizes=[[64, 64]] * 4, frame_counts=[60, 6000, 60, 6000]).tolist() == [0, 1, 0, 1]


def test_image_strata_invariances():
    rng = np.random.default_rng(5)
    wh = np.round(np.exp(rng.uniform(np.log(64), np.log(4096), (300, 2))))
    st = corpus_strata(image_sizes=wh)
    assert st.max() >= 10 and np.all(np.bincount(st) >= 2)
    perm = rng.permutation(300)
    assert np.array_equal(corpus_strata(image_sizes=wh[perm]), st[perm])  # the order of the images
    assert np.array_equal(corpus_strata(image_sizes=wh[:, ::-1]), st)  # portrait / landscape
    assert np.array_equal(corpus_strata(image_sizes=2 * wh), st)  # the resolution of every image
    assert np.array_equal(corpus_strata(image_sizes=wh / 8), st)
    assert np.array_equal(stratum_ranks(st * 7 + 3, 300), st)


def test_strata_argument_is_checked():
    data = _random_raters(0, S=6)
    with pytest.raises(ValueError, match="image_size"):
        alpha_ot(data, strata="imagesize")
    with pytest.raises(ValueError, match="image_size"):
        geometry_agreement(data, bootstrap=None, strata="size")
    with pytest.raises(ValueError, match="one integer per sample"):
        calibrate(data, strata=np.zeros(2, np.int64))
    assert chance_strata_of(data, strata=None) is None
    assert chance_strata_of(data).tolist() == corpus_strata(image_sizes=data.image_sizes).tolist()


# --------------------------------------------------------------------------
# At chance on mixed image sizes
# --------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1])
def test_random_raters_on_mixed_image_sizes_are_at_chance(seed):
    """Random raters drawing 8-512 px objects on 64-4,096 px images: σ, distance α and KS at chance by
    default (and, without strata, the defect: chance pairs of a small and a large image reward chance)."""
    data = _random_raters(seed)
    g = geometry_agreement(data, bootstrap=None)
    assert abs(g.sigma.value - g.sigma_p) <= 0.05
    assert abs(g.distance_alpha.value) <= 0.05
    assert g.ks.value <= _ks_null_999(int(g.n_within), int(g.n_between))
    assert abs(alpha_ot(data).alpha) <= 0.05
    g0 = geometry_agreement(data, bootstrap=None, strata=None)
    assert g0.sigma.value - g0.sigma_p > 0.05 and g0.distance_alpha.value > 0.05  # outside the chance bars
    assert g0.ks.value > 2 * _ks_null_999(int(g0.n_within), int(g0.n_between))


def test_calibration_on_mixed_image_sizes_is_at_chance():
    data = _random_raters(3)
    c = calibrate(data, distances=("iou", "giou"))
    best = c.per_distance[c.best_distance]
    assert c.best_ks <= _ks_null_999(len(best.d_observed), len(best.d_expected), two_sided=False)
    c0 = calibrate(data, distances=("iou", "giou"), strata=None)
    assert c0.best_ks > 1.5 * _ks_null_999(len(best.d_observed), len(best.d_expected), two_sided=False)
    # the draws pair images of one stratum
    st = chance_strata_of(data)
    plan = plan_draws(data, 0, st)
    assert np.array_equal(st[plan.draw_sample], st[plan.ref_sample]) and np.all(plan.draw_sample != plan.ref_sample)
    d_o, d_e = disagreement_samples(data, "giou")
    assert np.array_equal(d_e, c.per_distance["giou"].d_expected)


def test_objects_relative_to_the_image_stay_at_chance_with_or_without_strata():
    data = _random_raters(4, object_px=None)
    g, g0 = geometry_agreement(data, bootstrap=None), geometry_agreement(data, bootstrap=None, strata=None)
    for res in (g, g0):
        assert abs(res.distance_alpha.value) <= 0.05 and abs(res.sigma.value - res.sigma_p) <= 0.05


# --------------------------------------------------------------------------
# One stratum: exactly the former numbers
# --------------------------------------------------------------------------


@pytest.mark.parametrize("max_pairs", [100_000, 40])
def test_images_within_the_factor_give_exactly_the_former_numbers(max_pairs):
    data = _random_raters(2, S=30, sides=(500, 620))  # every side within 1.25 of the others
    assert chance_strata_of(data) is None
    assert alpha_ot(data, max_pairs=max_pairs) == alpha_ot(data, max_pairs=max_pairs, strata=None)
    g1 = geometry_agreement(data, bootstrap=30, max_pairs=max_pairs * 10)
    assert g1.headline() == geometry_agreement(data, bootstrap=30, max_pairs=max_pairs * 10, strata=None).headline()
    assert calibrate(data).summary() == calibrate(data, strata=None).summary()
    unknown = _with_sizes(data, np.full((30, 2), np.nan))
    assert alpha_ot(unknown, max_pairs=max_pairs) == alpha_ot(data, max_pairs=max_pairs)


def test_image_strata_do_not_depend_on_sample_order_or_resolution():
    data = _random_raters(6, S=80)
    perm = np.random.default_rng(1).permutation(80)
    pdata = data.select_samples(perm)
    for max_pairs in (100_000, 300):
        a, ap = alpha_ot(data, max_pairs=max_pairs), alpha_ot(pdata, max_pairs=max_pairs)
        assert (ap.expected, ap.n_expected, ap.n_cross_pairs) == (a.expected, a.n_expected, a.n_cross_pairs)
    g, gp = geometry_agreement(data, bootstrap=None), geometry_agreement(pdata, bootstrap=None)
    g2 = geometry_agreement(_with_sizes(data, data.image_sizes * 3), bootstrap=None)
    for k in ("sigma", "distance_alpha", "ks", "detection_alpha"):
        assert getattr(gp, k).value == pytest.approx(getattr(g, k).value, abs=1e-12)
        assert getattr(g2, k).value == getattr(g, k).value


# --------------------------------------------------------------------------
# Through the operators
# --------------------------------------------------------------------------


@pytest.mark.fiftyone
def test_operators_pair_images_of_comparable_size(fo, make_dataset):
    import fiftyone.operators as foo

    from agreement.fo.importers.build import samples_from_corpus

    data = _random_raters(7, S=24, raters=2)
    data = _with_sizes(data, np.where(np.arange(24)[:, None] % 2 == 0, 64.0, 4096.0) * np.ones((1, 2)))
    st = chance_strata_of(data)
    assert st is not None and st.max() == 1
    ds = make_dataset(samples_from_corpus(data, [f"/nonexistent/{s}.jpg" for s in data.sample_ids],
                                          field_names={"r0": "r0", "r1": "r1"}, raters_field=None))

    def run(name, **params):
        return foo.execute_operator(f"@iaa/agreement/{name}",
                                    ctx=dict(view=ds.view(), params=dict(fields=["r0", "r1"], **params))).result

    g_pure = geometry_agreement(data, bootstrap=None)
    g0 = geometry_agreement(data, bootstrap=None, strata=None)
    assert g_pure.distance_alpha.value != g0.distance_alpha.value
    for k, shard in (("geo1", 100), ("geo5", 5)):  # one shard, and streamed in five
        geo = run("compute_geometry_agreement", key=k, bootstrap=None, shard_size=shard)
        for name in ("sigma", "distance_alpha", "ks", "detection_alpha"):
            assert geo[name] == pytest.approx(getattr(g_pure, name).value, abs=1e-12)
    a_pure = alpha_ot(data)
    for k, shard in (("ot1", 100), ("ot3", 3)):
        ot = run("compute_ot_agreement", key=k, shard_size=shard)
        assert ot["alpha_ot"] == pytest.approx(a_pure.alpha, abs=1e-12)
        assert ot["n_cross_pairs"] == a_pure.n_cross_pairs == 2 * (12 * 12 - 12)  # within each size only
    cal = run("calibrate_agreement", key="cal", distances=["giou"])
    assert cal["ks"] == pytest.approx(calibrate(data, distances=("giou",)).summary()["ks"], abs=1e-12)
