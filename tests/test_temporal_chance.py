"""The chance baselines of temporal segments on clips of very different lengths (issue 47, defect 1).

Segments are boxes in relative time; a chance pair between a 60-frame and a 6,000-frame clip nests a
30-frame segment (0.5 % of the long clip) in one covering half of the short clip, a pair that never occurs
within a clip. The chance baselines therefore pair only clips of the same length stratum
(:func:`agreement.geometry.temporal.length_strata`): here the rule, the numbers at chance on mixed corpora,
the identity with the former numbers on corpora of one stratum, the invariances, and the operators."""

from __future__ import annotations

import numpy as np
import pytest

from agreement.core.data import MultiRaterAnnotations
from agreement.geometry.temporal import STRATUM_FACTOR, length_strata, supports_to_boxes
from agreement.methods.geometry_agreement import geometry_agreement, geometry_shard, merge_geometry_shards
from agreement.methods.kalos.calibration import calibrate
from agreement.methods.kalos.calibration.samples import plan_draws
from agreement.methods.ot.alpha_ot import alpha_ot

#: Identical sets on every clip of a length (the raters carry no information about the clip): every
#: chance-corrected statistic is exactly at chance when chance pairs stay within a length.
SHORT = {"a": [(1, 30), (31, 60)], "b": [(16, 45)]}
LONG = {"a": [(1, 30), (2001, 2030)], "b": [(3001, 3030), (2011, 2040)]}


def _corpus(clips: list, order: np.ndarray | None = None) -> tuple[MultiRaterAnnotations, np.ndarray]:
    """``clips``: per clip ``(frames, {rater: [(first, last)], ...}[, labels])``; ``order``: the corpus order
    of the clips (their ids keep their index). Returns the corpus and the clips' frame counts (corpus order)."""
    order = np.arange(len(clips)) if order is None else np.asarray(order)
    names = tuple(clips[0][1])
    boxes, labels, si, ri = [], [], [], []
    for s, c in enumerate(order):
        n, raters = clips[c][0], clips[c][1]
        for r, name in enumerate(names):
            sup = np.asarray(raters[name], dtype=float).reshape(-1, 2)
            boxes.append(supports_to_boxes(sup, n))
            labels += list(clips[c][2][name]) if len(clips[c]) > 2 else ["x"] * len(sup)
            si += [s] * len(sup)
            ri += [r] * len(sup)
    m = len(labels)
    data = MultiRaterAnnotations(
        sample_ids=np.array([f"clip{c:04d}" for c in order], dtype=object), raters=names,
        assigned=np.ones((len(order), len(names)), bool), boxes=np.concatenate(boxes),
        labels=np.array(labels, dtype=object), label_ids=np.full(m, None, dtype=object),
        sample_index=np.array(si, dtype=np.intp), rater_index=np.array(ri, dtype=np.intp))
    return data, np.array([clips[c][0] for c in order], dtype=float)


def _random_mix(seed: int, S: int = 240) -> list:
    """Clips of 60 or 6,000 frames; two raters place 1-3 segments of 30 frames at random, random classes."""
    rng = np.random.default_rng(seed)
    clips = []
    for n in rng.choice([60, 6000], S):
        raters, labels = {}, {}
        for r in ("a", "b"):
            k = int(rng.integers(1, 4))
            first = rng.integers(1, n - 28, k)
            raters[r] = list(zip(first.tolist(), (first + 29).tolist()))
            labels[r] = rng.choice(["run", "jump"], k).tolist()
        clips.append((int(n), raters, labels))
    return clips


# --------------------------------------------------------------------------
# The strata rule
# --------------------------------------------------------------------------


def test_length_strata_rule():
    # a stratum starts at the shortest length not yet placed and takes every length <= factor * it
    assert length_strata([100, 125, 126, 150, 157, 158], factor=1.25, min_size=1).tolist() == [0, 0, 1, 1, 1, 2]
    assert length_strata([100, 125, 126, 150, 157, 158], factor=1.25).tolist() == [0, 0, 1, 1, 1, 1]
    assert length_strata([60, 6000, 60, 6000]).tolist() == [0, 1, 0, 1]
    # within the factor: one stratum (the numbers are those without strata)
    assert length_strata([100, 110, 125, 101]).tolist() == [0, 0, 0, 0]
    # a stratum of fewer than min_size samples joins the neighbour nearer in log length
    assert length_strata([60, 60, 200, 6000, 6000], min_size=2).tolist() == [0, 0, 0, 1, 1]
    assert length_strata([60, 60, 2000, 6000, 6000], min_size=2).tolist() == [0, 0, 1, 1, 1]
    assert length_strata([60, 6000, 61]).tolist() == [0, 0, 0]  # one 6,000-frame clip cannot be paired alone
    assert length_strata([60, 60, 60, 6000, 6000], min_size=3).tolist() == [0] * 5
    # unknown lengths join the largest stratum
    assert length_strata([60, 60, np.nan, 6000, 6000, 6000]).tolist() == [0, 0, 1, 1, 1, 1]
    assert length_strata([60, np.nan, 6000, 6000, 6000]).tolist() == [0] * 5  # 60 alone joins the 6,000s
    assert length_strata([np.nan, np.nan]).tolist() == [0, 0]
    assert length_strata([]).tolist() == []
    assert STRATUM_FACTOR == 1.25


def test_length_strata_invariances():
    rng = np.random.default_rng(3)
    n = np.round(np.exp(rng.uniform(np.log(60), np.log(6000), 300)))
    st = length_strata(n)
    assert st.max() >= 10 and np.all(np.bincount(st) >= 2)
    unmerged = length_strata(n, min_size=1)
    for k in range(unmerged.max() + 1):  # before merging, every stratum within the factor
        assert n[unmerged == k].max() <= STRATUM_FACTOR * n[unmerged == k].min()
    assert st.max() <= unmerged.max()
    assert np.all(np.diff(st[np.argsort(n, kind="stable")]) >= 0)  # increasing with the length
    perm = rng.permutation(len(n))
    assert np.array_equal(length_strata(n[perm]), st[perm])  # the order of the samples does not matter
    assert np.array_equal(length_strata(2 * n), st)  # nor the unit (a frame rate changed for every clip)
    assert np.array_equal(length_strata(n / 30.0), st)


@pytest.mark.parametrize("bad, match", [(dict(frame_counts=[10, 0]), "positive"),
                                        (dict(frame_counts=[10], factor=0.5), "factor"),
                                        (dict(frame_counts=[10], min_size=0), "min_size")])
def test_length_strata_refuses_bad_input(bad, match):
    with pytest.raises(ValueError, match=match):
        length_strata(**bad)


def test_strata_must_be_one_integer_per_sample():
    data, n = _corpus([(60, SHORT)] * 3)
    with pytest.raises(ValueError, match="one integer per sample"):
        alpha_ot(data, strata=np.zeros(2, np.int64))
    with pytest.raises(ValueError, match="integers"):
        geometry_agreement(data, bootstrap=None, strata=n)


# --------------------------------------------------------------------------
# At chance on mixed corpora
# --------------------------------------------------------------------------


@pytest.mark.parametrize("n_short, n_long", [(6, 6), (4, 9)])
def test_no_information_is_exactly_chance_on_mixed_lengths(n_short, n_long):
    """The same sets on every clip of a length: within-clip pairs are distributed exactly like the chance
    pairs of their length, so every chance-corrected number is 0 (unequal strata: each weighs its share)."""
    data, n = _corpus([(60, SHORT)] * n_short + [(6000, LONG)] * n_long)
    st = length_strata(n)
    a = alpha_ot(data, strata=st)
    g = geometry_agreement(data, bootstrap=None, strata=st)
    for v in (a.alpha, g.distance_alpha.value, g.ks.value, g.detection_alpha.value, g.sigma.value):
        assert abs(v) < 1e-12
    # without strata (relative time across every pair of clips) the nested pairs reward chance
    g0 = geometry_agreement(data, bootstrap=None)
    assert g0.distance_alpha.value > 0.25 and g0.ks.value > 0.5 and g0.detection_alpha.value < -0.3


@pytest.mark.parametrize("seed", [0, 1])
def test_random_segments_on_mixed_lengths_are_at_chance(seed):
    """Issue 47's case, smaller: 30-frame segments at random on clips of 60 or 6,000 frames."""
    data, n = _corpus(_random_mix(seed))
    st = length_strata(n)
    a = alpha_ot(data, strata=st)
    g = geometry_agreement(data, bootstrap=200, strata=st)
    assert abs(a.alpha) <= 0.05
    assert abs(g.sigma.value - g.sigma_p) <= 0.05
    assert g.ks.value <= 1.358 * np.sqrt(1 / g.n_within + 1 / g.n_between)  # KS's 95 % point at chance
    for est in (g.distance_alpha, g.detection_alpha, g.classification_alpha):  # within 3 bootstrap SEs of 0
        assert est.ci_low < 0 < est.ci_high and abs(est.value) <= 3 * (est.ci_high - est.ci_low) / 3.92
    assert abs(g.detection_alpha.value) <= 0.05
    # the same corpus without strata: the defect
    g0 = geometry_agreement(data, bootstrap=None)
    assert g0.distance_alpha.value > 0.3 and g0.ks.value > 0.3


def test_calibration_draws_its_chance_pairs_within_strata():
    data, n = _corpus(_random_mix(0, S=40))
    st = length_strata(n)
    plan = plan_draws(data, 0, st)
    assert len(plan.ref_sample) == int((data.counts() > 0).sum())
    assert np.array_equal(st[plan.draw_sample], st[plan.ref_sample])
    assert np.all(plan.draw_sample != plan.ref_sample)
    unstratified = plan_draws(data, 0)
    assert np.any(st[unstratified.draw_sample] != st[unstratified.ref_sample])
    c = calibrate(data, distances=("giou",), strata=st)
    assert np.isfinite(c.summary()["ks"])


# --------------------------------------------------------------------------
# One stratum: exactly the numbers without strata; invariances
# --------------------------------------------------------------------------


@pytest.mark.parametrize("max_pairs", [100_000, 40])
def test_one_stratum_gives_exactly_the_numbers_without_strata(max_pairs):
    data, n = _corpus(_random_mix(2, S=30))
    one = np.full(len(n), 7, np.int64)
    assert alpha_ot(data, max_pairs=max_pairs, strata=one) == alpha_ot(data, max_pairs=max_pairs)
    g1 = geometry_agreement(data, bootstrap=30, max_pairs=max_pairs * 10, strata=one)
    g0 = geometry_agreement(data, bootstrap=30, max_pairs=max_pairs * 10)
    assert g1.headline() == g0.headline()
    assert calibrate(data, strata=one).summary() == calibrate(data).summary()


def test_strata_numbers_do_not_depend_on_sample_order_or_shards():
    clips = _random_mix(4, S=60)
    data, n = _corpus(clips)
    perm = np.random.default_rng(0).permutation(len(clips))
    pdata, pn = _corpus(clips, perm)
    st, pst = length_strata(n), length_strata(pn)
    for max_pairs in (100_000, 300):  # exact, and drawn
        a, ap = alpha_ot(data, max_pairs=max_pairs, strata=st), alpha_ot(pdata, max_pairs=max_pairs, strata=pst)
        assert (ap.expected, ap.n_expected, ap.n_cross_pairs) == (a.expected, a.n_expected, a.n_cross_pairs)
        assert ap.alpha == pytest.approx(a.alpha, abs=1e-12)  # D_o summed in another order
    g = geometry_agreement(data, bootstrap=None, strata=st)
    gp = geometry_agreement(pdata, bootstrap=None, strata=pst)
    for k in ("sigma", "distance_alpha", "ks", "detection_alpha", "classification_alpha"):
        assert getattr(gp, k).value == pytest.approx(getattr(g, k).value, abs=1e-12)
    # three shards of the corpus merged: the numbers of one shard
    cuts = [0, 17, 41, 60]
    shards = [geometry_shard(data.select_samples(np.arange(lo, hi))) for lo, hi in zip(cuts[:-1], cuts[1:])]
    gs = merge_geometry_shards(shards, lambda idx: (data, idx), bootstrap=None, strata=st)
    for k in ("sigma", "distance_alpha", "ks", "detection_alpha"):
        assert getattr(gs, k).value == pytest.approx(getattr(g, k).value, abs=1e-12)


# --------------------------------------------------------------------------
# Through the operators
# --------------------------------------------------------------------------


@pytest.mark.fiftyone
def test_operators_pair_clips_of_comparable_length(fo, make_dataset):
    import fiftyone.operators as foo

    clips = [(60, SHORT)] * 4 + [(6000, LONG)] * 6
    samples = []
    for i, (n, raters) in enumerate(clips):
        s = fo.Sample(filepath=f"/nonexistent/mix{i:02d}.mp4")
        s["metadata"] = fo.VideoMetadata(total_frame_count=n, frame_rate=30.0)
        for r, segs in raters.items():
            s[r] = fo.TemporalDetections(detections=[fo.TemporalDetection(label="x", support=list(x)) for x in segs])
        samples.append(s)
    ds = make_dataset(samples)

    def run(name, **params):
        return foo.execute_operator(f"@iaa/agreement/{name}",
                                    ctx=dict(view=ds.view(), params=dict(fields=["a", "b"], **params))).result

    geo = run("compute_geometry_agreement", key="geo", bootstrap=None)
    assert abs(geo["distance_alpha"]) < 1e-9 and abs(geo["ks"]) < 1e-9 and abs(geo["detection_alpha"]) < 1e-9
    ot = run("compute_ot_agreement", key="ot", shard_size=3)  # streamed in four shards
    assert abs(ot["alpha_ot"]) < 1e-9
    cal = run("calibrate_agreement", key="cal", distances=["giou"])
    assert cal["ks"] is not None
