"""The statistic shown beside a pairwise KαLOS α (observed agreement with a Wilson interval), the closed
form that explains why a pair's α reads worse than the pooled α, and the pair counts behind them."""

import math
import re

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from agreement.reporting.pair_statistics import (
    Z95,
    contrast_note,
    observed_agreement,
    one_class_pair_alpha,
    pair_unit_agreement,
    pairwise_contrast,
    wilson_interval,
)


# ---------------------------------------------------------------------------- Wilson interval
@pytest.mark.parametrize("k, n, lo, hi", [
    (0, 10, 0.0, 0.277533),  # Wilson's upper bound for 0 of 10 (not the Wald interval's 0)
    (5, 10, 0.236593, 0.763407),
    (10, 10, 0.722467, 1.0),
    (1, 2, 0.094531, 0.905469),
    (81, 263, 0.255289, 0.366210),  # Newcombe (1998), Stat. Med. 17:857, example: score interval 0.2553-0.3662
])
def test_wilson_interval_known_values(k, n, lo, hi):
    got = wilson_interval(k, n)
    assert got == pytest.approx((lo, hi), abs=1e-6)


def test_wilson_interval_is_the_closed_form_and_handles_no_data():
    k, n, z = 7, 9, Z95
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    assert wilson_interval(k, n) == pytest.approx((centre - half, centre + half))
    assert wilson_interval(0, 0) == (0.0, 1.0)
    for bad in ((-1, 3), (4, 3), (1, -1)):
        with pytest.raises(ValueError):
            wilson_interval(*bad)
    with pytest.raises(ValueError):
        wilson_interval(1, 2, z=0)


@settings(max_examples=300, deadline=None)
@given(n=st.integers(0, 10**6), frac=st.floats(0, 1), z=st.floats(0.1, 4))
def test_wilson_interval_range_and_symmetry(n, frac, z):
    k = round(frac * n)
    lo, hi = wilson_interval(k, n, z=z)
    assert 0.0 <= lo <= hi <= 1.0
    if n:
        assert lo <= k / n <= hi
        lo2, hi2 = wilson_interval(n - k, n, z=z)
        assert lo == pytest.approx(1 - hi2, abs=1e-12) and hi == pytest.approx(1 - lo2, abs=1e-12)


def test_wilson_interval_covers_about_95_percent():
    rng = np.random.default_rng(0)
    for p, n in ((0.3, 20), (0.8, 12), (0.5, 6)):
        ks = rng.binomial(n, p, size=4000)
        covered = np.mean([lo <= p <= hi for lo, hi in (wilson_interval(int(k), n) for k in ks)])
        assert 0.90 <= covered <= 0.995, (p, n, covered)


def test_observed_agreement_value_interval_and_support():
    out = observed_agreement(3, 4)
    assert out["value"] == 0.75 and out["n"] == 4
    assert (out["lo"], out["hi"]) == wilson_interval(3, 4)
    assert observed_agreement(0, 0) == {"value": None, "lo": None, "hi": None, "n": 0}


# ---------------------------------------------------------------------------- why a pair's alpha reads low
def _pair_matrix(u: int, m: int, e: int) -> np.ndarray:
    """Two raters, one class (code 0) and no_object (code 1): u units both drew, m only rater 0 drew,
    e unanimous no_object units."""
    a = [0] * u + [0] * m + [1] * e
    b = [0] * u + [1] * m + [1] * e
    return np.array([a, b])


@settings(max_examples=200, deadline=None)
@given(u=st.integers(0, 40), m=st.integers(0, 40), e=st.integers(0, 10))
def test_one_class_pair_alpha_is_nominal_alpha_of_the_pair_matrix(u, m, e):
    from agreement.core.krippendorff import nominal_alpha

    got = one_class_pair_alpha(u, m, e=e)
    ref = nominal_alpha(_pair_matrix(u, m, e)).alpha if u + m + e else float("nan")
    if math.isnan(ref):
        assert math.isnan(got)
    else:
        assert got == pytest.approx(ref, abs=1e-12)
        assert got <= 1.0


@given(u=st.integers(0, 1000), m=st.integers(1, 50))
def test_a_one_class_pair_without_empty_samples_is_never_above_chance_after_a_miss(u, m):
    alpha = one_class_pair_alpha(u, m)
    assert alpha == pytest.approx((1 - m) / (2 * u + m))
    assert alpha <= 0.0  # zero after one miss, negative after two, however many objects they agreed on
    assert (alpha == 0.0) == (m == 1)


def test_one_class_pair_alpha_refuses_negative_counts():
    with pytest.raises(ValueError):
        one_class_pair_alpha(1, -1)


# ---------------------------------------------------------------------------- the pair counts
def test_pair_unit_agreement_by_hand():
    # sample 0: raters 0, 1, 2 assigned; units: u0 = {r0: c0, r1: c0}, u1 = {r0: c0, r2: c1}, u2 = {r1: c0}
    # sample 1: raters 0, 1 assigned, nobody drew anything (one agreed empty unit)
    labels = [(0, 0, 0, 0), (0, 1, 0, 0), (0, 0, 1, 0), (0, 2, 1, 1), (0, 1, 2, 0)]
    s, r, u, c = (np.array(x) for x in zip(*labels))
    out = pair_unit_agreement(np.array([0, 0, 0, 1, 1]), np.array([0, 1, 2, 0, 1]), s, r, u, c, 2, 3)
    got = {(int(a), int(b)): (int(n), int(t), int(g)) for a, b, n, t, g in
           zip(out["a"], out["b"], out["n_shared"], out["n_units"], out["n_agree"])}
    # (0, 1): sample 0 units u0 (agree), u1 (r0 only), u2 (r1 only); sample 1 empty (agree)
    # (0, 2): u0 (r0 only), u1 (both, classes differ); (1, 2): u0 (r1 only), u1 (r2 only), u2 (r1 only)
    assert got == {(0, 1): (2, 4, 2), (0, 2): (1, 2, 0), (1, 2): (1, 3, 0)}


def test_pair_unit_agreement_counts_the_units_of_kalos_pair_alpha_on_a_crowd():
    from agreement.core.rater_pairs import shared_pairs_of_cells
    from agreement.methods.kalos import kalos_alpha
    from agreement.methods.kalos.diagnostics import (
        _assigned_cells,
        _pair_units,
        collaboration_clusters,
    )
    from agreement.simulate.synthetic.crowd import crowd_corpus

    for classes in (1, 3):
        corpus, _ = crowd_corpus(60, 30, raters_per_sample=5, num_classes=classes, seed=5)
        res = kalos_alpha(corpus)
        pairs = collaboration_clusters(res).pairs
        sample, a, b, pid = shared_pairs_of_cells(*_assigned_cells(res), len(res.alpha), res.values.n_raters)
        t, ca, cb = _pair_units(res, sample, a, b)
        agree = np.bincount(pid[t], weights=(ca == cb).astype(float), minlength=len(pairs)).astype(int)
        _, codes = np.unique(corpus.labels.astype(str), return_inverse=True)
        ss, rr = np.nonzero(corpus.assigned)
        out = pair_unit_agreement(ss, rr, corpus.sample_index, corpus.rater_index, np.asarray(res.unit), codes,
                                  corpus.num_samples, corpus.num_raters)
        assert np.array_equal(out["a"], pairs.a) and np.array_equal(out["b"], pairs.b)
        assert np.array_equal(out["n_shared"], pairs.n_shared)
        assert np.array_equal(out["n_units"], pairs.values["n_units"].astype(int))
        assert np.array_equal(out["n_agree"], agree)
        if classes == 1:  # the closed form explains every defined pair α of a one-class crowd
            alpha = pairs.values["alpha"]
            drew = np.zeros((corpus.num_samples, corpus.num_raters), int)  # labels per (sample, rater)
            np.add.at(drew, (corpus.sample_index, corpus.rater_index), 1)
            empty = np.zeros(len(pairs), int)  # per pair: shared samples where neither drew (one agreed unit each)
            np.add.at(empty, pid, ((drew[sample, a] + drew[sample, b]) == 0).astype(int))
            u_both = out["n_agree"] - empty
            m = out["n_units"] - out["n_agree"]
            checked = np.flatnonzero(np.isfinite(alpha))
            assert len(checked) > 50
            for k in checked:
                assert alpha[k] == pytest.approx(one_class_pair_alpha(int(u_both[k]), int(m[k]), e=int(empty[k])))


# ---------------------------------------------------------------------------- the note beside the chart
def test_pairwise_contrast_and_its_note():
    values = [-0.3, -0.2, -0.1, 0.0, 0.5, None]
    c = pairwise_contrast(values, 0.41, n_shared=[1, 1, 2, 1, 3, 1])
    assert c["contradicts"] and c["n_defined"] == 5 and c["n_pairs"] == 6
    assert c["share_negative"] == pytest.approx(0.6) and c["median"] == pytest.approx(-0.1)
    note = contrast_note(c, "α", observed_median=0.75, observed_pooled=0.713)
    assert "60% of the 5 defined pairwise α are negative (median -0.100)" in note
    assert "pooled α is 0.410" in note and "no object" in note and "75%" in note and "71%" in note
    calm = pairwise_contrast([0.6, 0.7, 0.65], 0.68)
    assert not calm["contradicts"] and contrast_note(calm, "α") == ""
    assert not pairwise_contrast([-0.5], None)["contradicts"]


def _sentences(note: str) -> list[str]:
    return re.split(r"(?<=\.)\s+(?=\S)", note)


@pytest.mark.parametrize("median_shared", [None, 2.5])
@pytest.mark.parametrize("kalos", [True, False])
@pytest.mark.parametrize("observed", [(None, None), (0.75, None), (0.75, 0.713)])
@pytest.mark.parametrize("values", [[-0.3, -0.2, -0.1, 0.0, 0.5], [0.1, 0.2, 0.25, 0.3, 0.9]])
def test_every_variant_of_the_note_is_whole_sentences(median_shared, kalos, observed, values):
    """Whichever parts apply (small support, KαLOS's *no object*, observed agreement; many or few negative
    pairs), the note is whole sentences: each starts with a capital (or the bold heading) and ends with a full
    stop, and none is cut at a semicolon (issue 48: the OT note ended with "objects;")."""
    c = pairwise_contrast(values, 0.6, n_shared=None if median_shared is None else [1, 2, 3, 4])
    assert c["contradicts"]
    c["median_shared"] = median_shared
    name = "α" if kalos else "αOT"
    note = contrast_note(c, name, observed_median=observed[0], observed_pooled=observed[1], kalos=kalos)
    assert note.endswith(".") and ";" not in note, note
    for s in _sentences(note):
        assert s[0].isupper() or s.startswith("**"), (s, note)
        assert s.endswith("."), (s, note)
    assert f"pooled {name} is 0.600" in note or f"pooled {name} of 0.600" in note  # three significant figures
    assert ("a median of 2.5" in note) == (median_shared is not None)
    assert ("no object" in note) == kalos and ("observed agreement" in note) == (observed[0] is not None)
    assert ("71% pooled over all pairs" in note) == (observed[1] is not None)
    few_negative = c["share_negative"] <= 0.25
    assert ("the median of the 5 defined pairwise" in note) == few_negative
