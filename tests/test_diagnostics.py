"""KαLOS diagnostics: vitality, class difficulty and collaboration consistent with
recomputing α on the filtered matrix (and with the reference tool's matrix-level
functions), and intra-annotator consistency across sessions."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from agreement.core.data import AnnotationSet, MultiRaterAnnotations
from agreement.core.krippendorff import nominal_alpha
from agreement.io.coco import read_multi_rater_coco
from agreement.methods.kalos import kalos_alpha
from agreement.methods.kalos.diagnostics import (
    class_difficulty,
    collaboration_clusters,
    intra_annotator_consistency,
    pair_reliability,
    rater_vitality,
    session_consistency,
    sessions_as_raters,
)


def aset(boxes, labels, ids=None):
    boxes = np.asarray(boxes, dtype=float).reshape(-1, 4)
    return AnnotationSet(boxes, list(labels), ids if ids is not None else [None] * len(boxes))


def random_corpus(seed, S=40, R=4, p_unassigned=0.05, noise=None):
    """Objects on a grid; rater r confuses classes with probability noise[r]."""
    rng = np.random.default_rng(seed)
    raters = [f"r{k}" for k in range(R)]
    noise = noise or [0.2] * R
    sets = []
    for _s in range(S):
        k = int(rng.integers(0, 5))
        cells = rng.choice(16, k, replace=False)
        boxes = np.c_[(cells % 4) * 0.25, (cells // 4) * 0.25, np.full(k, 0.2), np.full(k, 0.2)]
        cls = rng.integers(0, 4, k)
        m = {}
        for q, r in enumerate(raters):
            if rng.random() < p_unassigned:
                continue
            keep = rng.random(k) > 0.1
            c = np.where(rng.random(k) < noise[q], rng.integers(0, 4, k), cls)[keep]
            m[r] = aset(boxes[keep] + rng.normal(0, 0.005, (keep.sum(), 4)) * [1, 1, 0, 0], [f"c{v}" for v in c])
        sets.append(m)
    return MultiRaterAnnotations.from_sets([f"s{s}" for s in range(S)], raters, sets, box_policy="clip")


def as_reference_matrix(res):
    """Our pooled matrix in the reference tool's encoding: no_object -1.0, missing NaN."""
    m = res.reliability.astype(float)
    m[res.reliability == res.no_object_code] = -1.0
    m[res.reliability < 0] = np.nan
    return m


# --------------------------------------------------------------------------
# Vitality
# --------------------------------------------------------------------------


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**32 - 1), st.integers(3, 5))
def test_vitality_is_alpha_minus_alpha_of_the_matrix_without_the_rater(seed, R):
    res = kalos_alpha(random_corpus(seed, S=15, R=R))
    v = rater_vitality(res)
    for r in range(R):
        without = nominal_alpha(np.delete(res.reliability, r, axis=0))
        if without.defined and not np.isnan(res.global_alpha):
            assert v.alpha_without[r] == pytest.approx(without.alpha, abs=1e-12)
            assert v.vitality[r] == pytest.approx(res.global_alpha - without.alpha, abs=1e-12)
            assert v.reason[r] == ""
        else:
            assert np.isnan(v.vitality[r]) and v.reason[r]
        # Per sample: the sample's columns without the rater.
        for s in range(3):
            cols = res.sample_columns(s)
            sub = np.delete(res.reliability[:, cols], r, axis=0)
            expected = res.alpha[s] - nominal_alpha(sub).alpha if nominal_alpha(sub).defined else np.nan
            assigned = (res.reliability[r, cols] >= 0).any()
            if assigned and not np.isnan(expected):
                assert v.sample_vitality[s, r] == pytest.approx(expected, abs=1e-12)
            else:
                assert np.isnan(v.sample_vitality[s, r])
    assert v.as_dict().keys() == set(res.raters)


def test_vitality_needs_three_raters():
    res = kalos_alpha(random_corpus(0, R=2))
    v = rater_vitality(res)
    assert np.isnan(v.vitality).all() and np.isnan(v.mean_vitality).all()
    assert all("at least three raters" in r for r in v.reason)


def test_a_noisy_rater_has_negative_vitality():
    res = kalos_alpha(random_corpus(3, S=200, R=4, noise=[0.05, 0.05, 0.05, 0.9]))
    v = rater_vitality(res)
    assert v.vitality[3] < 0 < v.vitality[:3].min()
    assert v.mean_vitality[3] < 0


def test_global_vitality_equals_the_reference_on_the_same_matrix():
    core = pytest.importorskip("kalos.iaa.core")
    res = kalos_alpha(random_corpus(5, S=60, R=4))
    v = rater_vitality(res)
    ref_matrix = as_reference_matrix(res)
    ref_alpha = core.vision_alpha(ref_matrix)
    assert ref_alpha == pytest.approx(res.global_alpha, abs=1e-12)
    ref_v, _ = core.calculate_global_rater_vitality(ref_matrix, ref_alpha, {r: k for k, r in enumerate(res.raters)},
                                                    False)
    for k, r in enumerate(res.raters):
        assert v.vitality[k] == pytest.approx(ref_v[r], abs=1e-12)


# --------------------------------------------------------------------------
# Class difficulty
# --------------------------------------------------------------------------


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**32 - 1))
def test_class_difficulty_is_alpha_over_the_units_containing_the_class(seed):
    res = kalos_alpha(random_corpus(seed, S=20, R=3))
    cd = class_difficulty(res)
    assert cd.classes == res.categories[:-1]
    for k, _name in enumerate(cd.classes):
        cols = (res.reliability == k).any(axis=0)
        assert cd.n_units[k] == cols.sum()
        assert cd.n_annotations[k] == (res.reliability == k).sum()
        ref = nominal_alpha(res.reliability[:, cols])
        if ref.defined:
            assert cd.alpha[k] == pytest.approx(ref.alpha, abs=1e-12)
        else:
            assert np.isnan(cd.alpha[k]) and cd.reason[k]
    ranked = cd.hardest()
    assert len(ranked) == len(cd.classes)
    vals = [a for _, a in ranked if not np.isnan(a)]
    assert vals == sorted(vals)


@pytest.mark.shared_data
def test_class_difficulty_on_lvis_equals_the_reference_where_defined(lvis_path):
    core = pytest.importorskip("kalos.iaa.core")
    res = kalos_alpha(read_multi_rater_coco(lvis_path).annotations)
    cd = class_difficulty(res)
    ref = core.calculate_class_difficulty(as_reference_matrix(res))
    assert set(ref) == set(float(k) for k in range(len(cd.classes)))
    n_nan = 0
    for k in range(len(cd.classes)):
        if np.isnan(cd.alpha[k]):
            n_nan += 1
            assert ref[float(k)] == 1.0  # the reference's convention
        else:
            assert cd.alpha[k] == pytest.approx(ref[float(k)], abs=1e-12)
    assert 0 < n_nan < len(cd.classes)


# --------------------------------------------------------------------------
# Collaboration clusters
# --------------------------------------------------------------------------


def test_pairwise_alpha_is_alpha_of_the_pair_matrix():
    res = kalos_alpha(random_corpus(7, S=50, R=4))
    cc = collaboration_clusters(res)
    R = len(res.raters)
    assert np.all(np.isnan(np.diag(cc.alpha)))
    assert np.array_equal(np.nan_to_num(cc.alpha, nan=9), np.nan_to_num(cc.alpha.T, nan=9))
    assert sorted(cc.order.tolist()) == list(range(R))
    for a in range(R):
        for b in range(a + 1, R):
            pm = pair_reliability(res, a, b)
            assert pm.shape[0] == 2
            # Units of the pair: one of the two drew an object, or both saw an empty sample.
            obj = (pm >= 0) & (pm != res.no_object_code)
            both_no = (pm == res.no_object_code).all(axis=0)
            assert np.all(obj.any(axis=0) | both_no)
            assert cc.alpha[a, b] == pytest.approx(nominal_alpha(pm).alpha, abs=1e-12)


def test_collaboration_clusters_separate_two_schools():
    # Raters 0, 1 label class c as c; raters 2, 3 always as the next class.
    rng = np.random.default_rng(0)
    raters = ["r0", "r1", "r2", "r3"]
    sets = []
    for _s in range(80):
        k = int(rng.integers(1, 5))
        cells = rng.choice(16, k, replace=False)
        boxes = np.c_[(cells % 4) * 0.25, (cells // 4) * 0.25, np.full(k, 0.2), np.full(k, 0.2)]
        cls = rng.integers(0, 4, k)
        m = {}
        for q, r in enumerate(raters):
            c = cls if q < 2 else (cls + 1) % 4
            c = np.where(rng.random(k) < 0.1, rng.integers(0, 4, k), c)
            m[r] = aset(boxes, [f"c{v}" for v in c])
        sets.append(m)
    res = kalos_alpha(MultiRaterAnnotations.from_sets([f"s{s}" for s in range(80)], raters, sets))
    cc = collaboration_clusters(res)
    assert cc.alpha[0, 1] > 0.5 and cc.alpha[2, 3] > 0.5 and cc.alpha[0, 2] < 0.2
    labels = cc.clusters(max_distance=0.6)
    assert labels[0] == labels[1] != labels[2] == labels[3]
    pos = {int(r): k for k, r in enumerate(cc.order)}
    assert abs(pos[0] - pos[1]) == 1 and abs(pos[2] - pos[3]) == 1
    with pytest.raises(ValueError, match="linkage"):
        collaboration_clusters(res, method="ward")


def test_collaboration_with_two_raters():
    res = kalos_alpha(random_corpus(1, R=2))
    cc = collaboration_clusters(res)
    assert cc.alpha[0, 1] == pytest.approx(nominal_alpha(pair_reliability(res, 0, 1)).alpha, abs=1e-12)
    assert cc.order.tolist() in ([0, 1], [1, 0])


# --------------------------------------------------------------------------
# Intra-annotator consistency
# --------------------------------------------------------------------------


def session_corpus(seed=0, S=30, drift=0.0):
    """Rater 'alice' annotates every sample twice (sessions 1 and 2); 'bob' once."""
    rng = np.random.default_rng(seed)
    sets, sessions = [], []
    for _s in range(S):
        k = int(rng.integers(0, 4))
        cells = rng.choice(16, k, replace=False)
        boxes = np.c_[(cells % 4) * 0.25, (cells // 4) * 0.25, np.full(k, 0.2), np.full(k, 0.2)]
        cls = rng.integers(0, 3, k)
        second = np.where(rng.random(k) < drift, (cls + 1) % 3, cls)
        alice = aset(np.vstack([boxes, boxes]), [f"c{v}" for v in np.r_[cls, second]])
        bob = aset(boxes, [f"c{v}" for v in cls])
        sets.append({"alice": alice, "bob": bob})
        sessions.append([1] * k + [2] * k + [1] * k)  # alice's rows (session 1 then 2), then bob's
    data = MultiRaterAnnotations.from_sets([f"s{s}" for s in range(S)], ["alice", "bob"], sets)
    return data, np.concatenate([np.asarray(x, dtype=object) for x in sessions])


def test_sessions_as_raters_builds_the_session_corpus():
    data, sessions = session_corpus()
    sd = sessions_as_raters(data, sessions, "alice")
    assert sd.raters == ("1", "2")
    assert sd.num_samples == data.num_samples and sd.assigned.all()
    assert len(sd) == (data.rater_index == 0).sum()
    c = sd.counts()
    assert np.array_equal(c[:, 0], c[:, 1])


def test_a_consistent_rater_agrees_with_themself_and_drift_lowers_it():
    data, sessions = session_corpus(drift=0.0)
    out = intra_annotator_consistency(data, sessions)
    assert set(out) == {"alice"}  # bob has one session only
    ic = out["alice"]
    assert ic.sessions == ("1", "2") and ic.rater == "alice"
    assert ic.global_alpha == pytest.approx(1.0)
    drifted, sessions = session_corpus(drift=0.5)
    assert intra_annotator_consistency(drifted, sessions)["alice"].global_alpha < 0.8
    # The same as KαLOS on the session corpus.
    sd = sessions_as_raters(drifted, sessions, "alice")
    direct = session_consistency(sd, rater="alice")
    assert direct.global_alpha == pytest.approx(kalos_alpha(sd).global_alpha, abs=1e-15)
    assert direct.mean_alpha == kalos_alpha(sd).mean_alpha and direct.n_undefined == kalos_alpha(sd).n_undefined


def test_session_assignment_explicit_and_validated():
    data, sessions = session_corpus(S=5)
    S = data.num_samples
    only_first = {1: np.ones(S, bool), 2: np.r_[True, np.zeros(S - 1, bool)]}
    with pytest.raises(ValueError, match="did not cover"):
        sessions_as_raters(data, sessions, "alice", only_first)
    sd = sessions_as_raters(data, sessions, "alice", {1: np.ones(S, bool), 2: np.ones(S, bool), 3: np.zeros(S, bool)})
    assert sd.raters == ("1", "2", "3") and not sd.assigned[:, 2].any()
    with pytest.raises(ValueError, match="missing from session_assigned"):
        sessions_as_raters(data, sessions, "alice", {1: np.ones(S, bool)})
    with pytest.raises(ValueError, match="unknown rater"):
        sessions_as_raters(data, sessions, "carol")
    with pytest.raises(ValueError, match="entries"):
        sessions_as_raters(data, sessions[:-1], "alice")
    with pytest.raises(ValueError, match="only one session"):
        intra_annotator_consistency(data, sessions, raters=["bob"])


def test_vitality_without_the_per_sample_part_has_the_same_global_numbers():
    """``per_sample=False`` (what a KαLOS run records) skips the per-sample jackknife: the global numbers
    are the same bits, the per-sample fields empty."""
    from agreement.simulate.synthetic.crowd import crowd_corpus

    corpus, _ = crowd_corpus(40, 6, raters_per_sample=4, min_objects=0, max_objects=5, num_classes=3, seed=5)
    result = kalos_alpha(corpus)
    full, lean = rater_vitality(result), rater_vitality(result, per_sample=False)
    assert np.isfinite(full.vitality).any()
    np.testing.assert_array_equal(lean.alpha_without, full.alpha_without)
    np.testing.assert_array_equal(lean.vitality, full.vitality)
    assert lean.alpha == full.alpha and list(lean.reason) == list(full.reason)
    assert len(lean.sample_vitality.value) == 0 and np.isnan(np.asarray(lean.sample_vitality)).all()
    assert np.isnan(lean.mean_vitality).all() and not lean.n_samples.any()


@pytest.mark.parametrize("chunk", [1, 7, 60])
def test_diagnostics_walked_in_runs_of_samples_equal_the_whole_corpus(monkeypatch, chunk):
    """Vitality, class difficulty and pairwise α add the exact statistics of runs of whole samples
    (bounded memory on a large corpus); the result equals one pass over every value: per-sample vitality
    bit for bit (each sample lies in one run), the corpus numbers to rounding."""
    import agreement.methods.kalos.diagnostics as diag
    from agreement.simulate.synthetic.crowd import crowd_corpus

    corpus, _ = crowd_corpus(40, 6, raters_per_sample=4, min_objects=0, max_objects=5, num_classes=3, seed=5)
    result = kalos_alpha(corpus)
    assert len(result.values) > 60  # several runs for every chunk size below
    whole = (diag.rater_vitality(result), diag.class_difficulty(result), diag.collaboration_clusters(result))
    monkeypatch.setattr(diag, "CHUNK_VALUES", chunk)
    runs = len(list(diag._sample_chunks(result)))
    assert runs > 1
    vit, cls, col = diag.rater_vitality(result), diag.class_difficulty(result), diag.collaboration_clusters(result)
    np.testing.assert_allclose(vit.alpha_without, whole[0].alpha_without, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(vit.vitality, whole[0].vitality, rtol=1e-12, atol=1e-12)
    assert list(vit.reason) == list(whole[0].reason)
    np.testing.assert_array_equal(np.asarray(vit.sample_vitality), np.asarray(whole[0].sample_vitality))
    np.testing.assert_array_equal(vit.mean_vitality, whole[0].mean_vitality)
    np.testing.assert_array_equal(vit.n_samples, whole[0].n_samples)
    np.testing.assert_allclose(cls.alpha, whole[1].alpha, rtol=1e-12, atol=1e-12)
    assert list(cls.reason) == list(whole[1].reason)
    np.testing.assert_array_equal(cls.n_units, whole[1].n_units)
    np.testing.assert_array_equal(cls.n_annotations, whole[1].n_annotations)
    np.testing.assert_allclose(col.pairs.values["alpha"], whole[2].pairs.values["alpha"], rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(col.pairs.values["n_units"], whole[2].pairs.values["n_units"])


def test_sample_runs_cover_every_sample_once_and_never_cut_one():
    import agreement.methods.kalos.diagnostics as diag
    from agreement.simulate.synthetic.crowd import crowd_corpus

    corpus, _ = crowd_corpus(25, 5, raters_per_sample=3, min_objects=0, max_objects=6, seed=2)
    result = kalos_alpha(corpus)
    starts, n_values, n_columns = [], 0, 0
    for s0, part in diag._sample_chunks(result, max_values=5):
        starts.append((s0, len(part.alpha)))
        n_values += len(part.values)
        n_columns += part.values.n_columns
        assert len(part.unit_sample) == part.values.n_columns
        assert not len(part.unit_sample) or (part.unit_sample.min() >= 0 and part.unit_sample.max() < len(part.alpha))
    assert [s for s, _ in starts] == list(np.cumsum([0] + [n for _, n in starts])[:-1])
    assert sum(n for _, n in starts) == len(result.alpha)
    assert n_values == len(result.values) and n_columns == result.values.n_columns


@pytest.mark.parametrize("chunk", [7, 1_000_000])
def test_assigned_cells_are_the_raters_with_values_in_each_sample(monkeypatch, chunk):
    """The assignment the pairwise diagnostics use is read from the values as sparse cells, a run of values
    at a time: the cells of every (sample, rater) with a value, each once, sorted, whatever the run size."""
    import agreement.methods.kalos.diagnostics as diag
    from agreement.simulate.synthetic.crowd import crowd_corpus

    corpus, _ = crowd_corpus(30, 40, raters_per_sample=4, min_objects=0, max_objects=4, seed=9)
    result = kalos_alpha(corpus)
    monkeypatch.setattr(diag, "CHUNK_VALUES", chunk)
    s, r = diag._assigned_cells(result)
    dense = np.zeros((len(result.alpha), result.values.n_raters), dtype=bool)
    dense[result.unit_sample[result.values.column], result.values.rater] = True
    ds, dr = np.nonzero(dense)
    np.testing.assert_array_equal(s, ds)
    np.testing.assert_array_equal(r, dr)
