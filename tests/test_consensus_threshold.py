"""tau="auto" (agreement.methods.consensus.threshold): the correspondence threshold chosen from the corpus."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from agreement.core.data import AnnotationSet, MultiRaterAnnotations
from agreement.geometry.boxes import pairwise_iou
from agreement.methods.consensus import consensus
from agreement.methods.consensus.fusion import box_iou_paired
from agreement.methods.consensus.threshold import AUTO_TAU_RANGE, select_tau

RATERS = ("a", "b", "c")


def _corpus(per_sample, raters=RATERS) -> MultiRaterAnnotations:
    """``per_sample``: one ``{rater: [[x, y, w, h], ...]}`` per sample."""
    sets = [{r: AnnotationSet(np.asarray(boxes, float).reshape(-1, 4), ["obj"] * len(boxes), [None] * len(boxes))
             for r, boxes in sample.items()} for sample in per_sample]
    return MultiRaterAnnotations.from_sets([f"s{i}" for i in range(len(sets))], raters, sets, box_policy="clip")


def _shifted(box, dx):
    x, y, w, h = box
    return [x + dx * w, y, w, h]


def _iou_of_shift(dx):
    return float(pairwise_iou(np.array([[0, 0, 1, 1.0]]), np.array([[dx, 0, 1, 1.0]]))[0, 0])


def test_loose_raters_on_separate_objects_get_the_lowest_tau():
    # each object drawn by three raters, shifted so that their IoUs are 0.33-0.54; objects far apart
    objects = [[0.0, 0.0, 0.1, 0.1], [0.5, 0.5, 0.1, 0.1]]
    samples = [{"a": objects, "b": [_shifted(o, 0.3) for o in objects], "c": [_shifted(o, 0.5) for o in objects]}
               for _ in range(5)]
    assert _iou_of_shift(0.5) < 0.4 < _iou_of_shift(0.3) < 0.6
    choice = select_tau(_corpus(samples))
    assert choice.tau == AUTO_TAU_RANGE[0] == 0.3
    assert choice.expected_splits == 0 and choice.expected_merges == 0
    assert choice.n_cross_pairs == 5 * 2 * 3 and choice.n_within_pairs == 0


def test_crowded_scenes_of_careful_raters_keep_tau_above_their_neighbours_overlap():
    # every rater draws the same boxes; neighbouring objects overlap at IoU ~0.45
    dx = 0.38
    neighbours_iou = _iou_of_shift(dx)
    assert 0.44 < neighbours_iou < 0.46
    row = [[0.0, 0.0, 0.1, 0.1], [dx * 0.1, 0.0, 0.1, 0.1]]
    samples = [{r: row for r in RATERS} for _ in range(5)]
    choice = select_tau(_corpus(samples))
    assert neighbours_iou < choice.tau <= 0.5
    assert choice.expected_merges == 0 and choice.expected_splits == 0


def test_no_overlap_between_raters_gives_the_highest_tau_with_a_reason():
    samples = [{"a": [[0.0, 0.0, 0.1, 0.1]], "b": [[0.5, 0.5, 0.1, 0.1]], "c": []}]
    choice = select_tau(_corpus(samples))
    assert choice.tau == AUTO_TAU_RANGE[1] and "overlap" in choice.reason


def _brute_force_tau(data, lo, hi):
    """The same criterion by direct enumeration of pairs (an independent implementation of the counting and
    weighting; the same IoU function, so that a pair exactly on a bin edge falls in the same bin)."""
    cross, within = [], []  # (similarity, weight)
    for s in range(data.num_samples):
        rows = np.flatnonzero(data.sample_index == s)
        counts = {}
        for r in data.rater_index[rows].tolist():
            counts[r] = counts.get(r, 0) + 1
        n = list(counts.values())
        C = sum(n[i] * n[j] for i in range(len(n)) for j in range(i + 1, len(n)))
        W = sum(k * (k - 1) // 2 for k in n)
        M = sum(min(n[i], n[j]) for i in range(len(n)) for j in range(i + 1, len(n)))
        for x in range(len(rows)):
            for y in range(x + 1, len(rows)):
                a, b = rows[x], rows[y]
                iou = float(box_iou_paired(data.boxes[[a]], data.boxes[[b]])[0])
                if iou <= 0:
                    continue
                if data.rater_index[a] == data.rater_index[b]:
                    within.append((iou, max(C - M, 0) / W))
                else:
                    cross.append((iou, 1.0))
    if not cross:
        return hi, 0.0, 0.0
    bin_of = lambda x: min(int(np.floor(x * 100 + 1e-9)), 99)  # noqa: E731  (np.histogram's bins of 0.01)
    h, d = np.zeros(100), np.zeros(100)
    for x, w in cross:
        h[bin_of(x)] += w
    for x, w in within:
        d[bin_of(x)] += w
    same = np.maximum(h - d, 0)
    best = None
    for k in range(int(round(lo * 100)), int(round(hi * 100)) + 1):
        err = same[:k].sum() + d[k:].sum()
        if best is None or err < best[0] - 1e-12:
            best = (err, k / 100, same[:k].sum(), d[k:].sum())
    return best[1:]


_box = st.tuples(st.floats(0, 0.8), st.floats(0, 0.8), st.floats(0.05, 0.3), st.floats(0.05, 0.3))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.fixed_dictionaries({r: st.lists(_box, max_size=4) for r in RATERS}), min_size=1, max_size=5),
       st.permutations(list(range(3))))
def test_tau_is_in_range_matches_brute_force_and_ignores_rater_order(samples, perm):
    data = _corpus(samples)
    choice = select_tau(data)
    assert AUTO_TAU_RANGE[0] <= choice.tau <= AUTO_TAU_RANGE[1]
    tau, splits, merges = _brute_force_tau(data, *AUTO_TAU_RANGE)
    assert choice.tau == pytest.approx(tau, abs=1e-12)
    assert (choice.expected_splits, choice.expected_merges) == pytest.approx((splits, merges), abs=1e-9)
    renamed = [{RATERS[perm[k]]: boxes for k, (_, boxes) in enumerate(sorted(s.items()))} for s in samples]
    assert select_tau(_corpus(renamed)).tau == choice.tau


def test_only_max_samples_are_compared_and_the_choice_is_seeded():
    rng = np.random.default_rng(0)
    samples = [{r: [list(rng.uniform(0, 0.5, 2)) + [0.2, 0.2]] for r in RATERS} for _ in range(50)]
    data = _corpus(samples)
    a, b = select_tau(data, max_samples=10), select_tau(data, max_samples=10)
    assert a == b and a.n_samples == 10
    assert select_tau(data).n_samples == 50
    # three pairs a sample: a budget of 30 pairs compares ten samples, of fewer than three pairs one
    assert select_tau(data, max_pairs=30).n_samples == 10 and select_tau(data, max_pairs=2).n_samples == 1
    with pytest.raises(ValueError, match="max_samples"):
        select_tau(data, max_samples=0)
    with pytest.raises(ValueError, match="max_pairs"):
        select_tau(data, max_pairs=0)
    with pytest.raises(ValueError, match="range of tau"):
        select_tau(data, lo=0.6, hi=0.5)


def _loose_corpus():
    objects = [[0.0, 0.0, 0.1, 0.1], [0.5, 0.5, 0.1, 0.1]]
    return _corpus([{"a": objects, "b": [_shifted(o, 0.4) for o in objects],
                     "c": [_shifted(o, 0.8) for o in objects]} for _ in range(6)])


@pytest.mark.parametrize("method", ["em", "majority", "wbf"])
def test_consensus_defaults_to_the_chosen_tau_and_equals_a_run_given_it(method):
    data = _loose_corpus()
    auto = consensus(data, method=method)
    assert auto.params["tau_selection"] == "auto" and auto.params["tau"] == auto.params["tau_auto"]["tau"] == 0.3
    given_ = consensus(data, method=method, tau=auto.params["tau"])
    assert given_.params["tau_selection"] == "given" and "tau_auto" not in given_.params
    np.testing.assert_array_equal(auto.confidence, given_.confidence)
    np.testing.assert_array_equal(auto.boxes, given_.boxes)
    # the loose raters' boxes of one object (IoU 0.43 with the next rater's) are one unit at the chosen
    # tau, three at 0.5
    assert 0.42 < _iou_of_shift(0.4) < 0.44
    assert auto.is_consensus.sum() == 2 * 6
    assert consensus(data, method=method, tau=0.5).n_units > auto.n_units


def test_a_fitted_model_brings_its_tau_to_other_samples():
    data = _loose_corpus()
    full = consensus(data)
    assert full.model.tau == full.params["tau"]
    part = consensus(data.select_samples(np.arange(3)), model=full.model)
    assert part.params["tau"] == full.params["tau"] and part.params["tau_selection"] == "model"


@pytest.mark.parametrize("tau", ["bogus", "AUTO", 0.0, 1.5])
def test_a_bad_tau_is_refused_naming_auto(tau):
    with pytest.raises(ValueError, match=r"tau must be .*\(0, 1\].*'auto'"):
        consensus(_loose_corpus(), tau=tau)
