"""Which items need one more class label (:mod:`agreement.methods.planning.relabel`): the expected error reduction
against hand-computed two-class cases, its properties (ranges, class relabelling, item order), the shrunk
posterior, the simple baselines on the same code path, and bad input."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from agreement.methods.consensus.class_labels import class_consensus
from agreement.methods.planning.relabel import (
    RELABEL_RULES,
    class_relabel_priority,
    expected_errors,
    fit_class_prior,
    rater_posterior,
    typical_confusion,
)

SYM = np.array([[0.8, 0.2], [0.2, 0.8]])  # a rater right 80 % of the time, two classes
PRIOR = np.array([0.6, 0.4])


def _rule(post, n, *, conf=SYM[None], prior=PRIOR, **kw):
    return class_relabel_priority(np.asarray(post, dtype=float), conf, np.asarray(n), class_prior=prior, **kw)


# ------------------------------------------------------------------------------------- formulas, by hand (K = 2)
def test_one_step_expected_errors_by_hand():
    """e0 = 1 − max p; e1 = 1 − Σ_c max_y p(y) π[y, c]."""
    p = np.array([[0.5, 0.5], [0.7, 0.3], [0.9, 0.1]])
    assert np.allclose(expected_errors(p, SYM, 0), [0.5, 0.3, 0.1])
    # (0.5, 0.5): 1 − (0.4 + 0.4); (0.7, 0.3): 1 − (0.56 + 0.24); (0.9, 0.1): 1 − (0.72 + 0.18)
    assert np.allclose(expected_errors(p, SYM, 1), [0.2, 0.2, 0.1])


def test_two_and_three_labels_by_hand():
    """(0.9, 0.1): e2 = 1 − (.576 + .288 + .064) = .072; e3 = 1 − (.4608 + .3456 + .0864 + .0512) = .056."""
    p = np.array([[0.9, 0.1], [0.5, 0.5]])
    assert np.allclose(expected_errors(p, SYM, 2), [0.072, 0.2])  # a 1-1 tie after two labels resolves nothing
    assert np.allclose(expected_errors(p, SYM, 3), [0.056, 0.104])


def test_priority_is_the_best_reduction_per_label():
    r = _rule([[0.5, 0.5], [0.7, 0.3], [0.9, 0.1]], [2, 3, 3])
    assert np.allclose(r.priority, [0.3, 0.1, 0.044 / 3])  # (0.9, 0.1): one label is useless, three are not
    assert np.allclose(r.error_now, [0.5, 0.3, 0.1]) and np.allclose(r.error_after, [0.2, 0.2, 0.1])
    assert r.order.tolist() == [0, 1, 2] and r.rule == "expected_error_reduction"


def test_plain_one_step_rule_gives_zero_where_one_label_cannot_flip():
    r = _rule([[0.9, 0.1], [0.7, 0.3]], [3, 3], lookahead=1)
    assert r.priority.tolist()[0] == 0.0 and r.priority[1] == pytest.approx(0.1)


def test_an_unlabelled_item_uses_the_prior_and_competes_with_rated_ones():
    """Prior (0.6, 0.4): e0 = 0.4, e1 = 1 − (0.48 + 0.32) = 0.2: worth more than a 0.7/0.3 item (0.1)."""
    r = _rule([[np.nan, np.nan], [0.7, 0.3], [0.5, 0.5]], [0, 3, 2])
    assert np.allclose(r.priority, [0.2, 0.1, 0.3]) and r.order.tolist() == [2, 0, 1]
    assert r.error_now[0] == pytest.approx(0.4)
    assert any("prior stood in" in n for n in r.notes)


def test_typical_rater_is_the_weighted_mean_confusion():
    conf = np.array([[[1.0, 0.0], [0.0, 1.0]], [[0.5, 0.5], [0.5, 0.5]], [[np.nan, np.nan], [0.1, 0.9]]])
    bar, notes = typical_confusion(conf, rater_weights=np.array([3.0, 1.0, 4.0]))
    # row 0: raters 0, 1 (rater 2 never met class 0): (3 [1, 0] + 1 [.5, .5]) / 4; row 1: all three
    assert np.allclose(bar, [[0.875, 0.125], [(0 + 0.5 + 0.4) / 8, (3 + 0.5 + 3.6) / 8]]) and notes == ()
    bar, notes = typical_confusion(np.full((2, 2, 2), np.nan))
    assert np.allclose(bar, 0.5) and "uninformative" in notes[0]


def test_an_uninformative_crowd_gives_nothing_to_gain():
    r = _rule([[0.5, 0.5], [0.8, 0.2], [np.nan, np.nan]], [1, 2, 0], conf=np.full((1, 2, 2), 0.5))
    assert (r.priority == 0).all()


def test_a_perfect_rater_repairs_every_error():
    r = _rule([[0.5, 0.5], [0.8, 0.2]], [1, 2], conf=np.eye(2)[None])
    assert np.allclose(r.error_after, 0) and np.allclose(r.priority, r.error_now)


# ------------------------------------------------------------------------------------------ the shrunk posterior
def test_rater_posterior_without_shrinkage_is_the_bayes_posterior():
    conf = np.array([[[0.9, 0.1], [0.2, 0.8]], [[0.6, 0.4], [0.4, 0.6]]])
    codes = np.array([[0, 1], [1, -1], [-1, -1]])
    p = rater_posterior(codes, conf, PRIOR, shrinkage=0.0)
    a = np.array([0.6 * 0.9 * 0.4, 0.4 * 0.2 * 0.6])
    b = np.array([0.6 * 0.1, 0.4 * 0.8])
    assert np.allclose(p, [a / a.sum(), b / b.sum(), PRIOR])


def test_rater_posterior_with_infinite_shrinkage_treats_everyone_as_typical():
    conf = np.array([[[0.9, 0.1], [0.2, 0.8]], [[0.6, 0.4], [0.4, 0.6]]])
    codes = np.array([[0, 1], [1, 1], [0, -1]])
    bar, _ = typical_confusion(conf, rater_weights=np.array([3.0, 2.0]))
    p = rater_posterior(codes, conf, PRIOR, shrinkage=1e12)
    for s in range(3):
        q = PRIOR * np.prod([bar[:, c] for c in codes[s] if c >= 0], axis=0)
        assert np.allclose(p[s], q / q.sum())


def test_codes_replace_the_posterior_of_rated_items_only():
    conf = np.array([[[0.9, 0.1], [0.1, 0.9]]] * 3)
    codes = np.array([[0, 0, 1], [-1, -1, -1]])
    over = np.array([[1.0, 0.0], [np.nan, np.nan]])  # an over-confident consensus
    plain = _rule(over, [3, 0], conf=conf)
    shrunk = _rule(over, [3, 0], conf=conf, codes=codes)
    # prior (0.6, 0.4), votes 0, 0, 1 of 90 % raters: p(1) = .4 · .1 · .1 · .9 / (.6 · .9 · .9 · .1 + .0036)
    assert plain.error_now[0] == 0 and shrunk.error_now[0] == pytest.approx(0.0036 / 0.0522)
    assert shrunk.error_now[1] == plain.error_now[1] == pytest.approx(0.4)
    assert any("shrunk toward the typical rater" in n for n in shrunk.notes)


def test_the_error_now_is_that_of_the_consensus_label_written():
    """labels=: e0 = 1 − p(label) (0.7 for a consensus that chose the 0.3 class), -1 keeps the posterior's."""
    r = _rule([[0.7, 0.3], [0.7, 0.3], [np.nan, np.nan]], [3, 3, 0], labels=np.array([1, 0, -1]))
    assert np.allclose(r.error_now, [0.7, 0.3, 0.4]) and np.allclose(r.error_after, [0.2, 0.2, 0.2])
    assert np.allclose(r.priority, [0.5, 0.1, 0.2]) and r.order.tolist() == [0, 2, 1]


def _crowd(prior, acc, S, R, seed):
    rng = np.random.default_rng(seed)
    K = len(prior)
    truth = rng.choice(K, S, p=prior)
    wrong = (truth[:, None] + rng.integers(1, K, (S, R))) % K
    codes = np.where(rng.random((S, R)) < acc, truth[:, None], wrong)
    conf = np.full((K, K), (1 - acc) / (K - 1)) + (acc - (1 - acc) / (K - 1)) * np.eye(K)
    return codes, np.repeat(conf[None], R, axis=0)


def test_fit_class_prior_recovers_a_skewed_prior_and_is_a_fixed_point():
    codes, conf = _crowd([0.8, 0.15, 0.05], 0.85, 3000, 3, seed=1)
    q = fit_class_prior(codes, conf, shrinkage=0.0)
    assert np.allclose(q, [0.8, 0.15, 0.05], atol=0.03)
    post = rater_posterior(codes, conf, q, shrinkage=0.0)
    assert np.allclose((post.sum(axis=0) + 1) / (3000 + 3), q, atol=1e-6)  # the add-one EM's fixed point
    assert np.allclose(fit_class_prior(np.full((2, 3), -1), conf), 1 / 3)  # nothing rated: uniform
    assert fit_class_prior(np.array([[0, 0, 0]]), conf).min() >= 1 / 4  # an unseen class stays possible


def test_fit_prior_replaces_the_given_prior_for_rated_and_unrated_items():
    codes, conf = _crowd([0.9, 0.1], 0.8, 400, 3, seed=2)
    codes[0] = -1
    post = np.full((400, 2), 0.5)
    post[0] = np.nan
    q = fit_class_prior(codes, conf)
    r = _rule(post, (codes >= 0).sum(axis=1), conf=conf, prior=np.array([0.5, 0.5]), codes=codes, fit_prior=True)
    assert r.error_now[0] == pytest.approx(q.min()) and q[0] > 0.8
    assert any("class prior fitted" in n for n in r.notes)


def test_on_a_real_consensus_result():
    """A MACE fit (NaN rows for an unlabelled item, NaN confusion for a rater without labels) goes straight in."""
    rng = np.random.default_rng(3)
    truth = rng.integers(0, 3, 40)
    codes = np.where(rng.random((40, 5)) < 0.75, truth[:, None], rng.integers(0, 3, (40, 5)))
    codes[rng.random(codes.shape) < 0.5] = -1
    codes[0] = -1
    codes[:, 4] = -1
    cons = class_consensus(codes, 3, method="mace")
    r = class_relabel_priority(cons.posterior, cons.rater_confusion, (codes >= 0).sum(axis=1),
                               class_prior=cons.class_prior, rater_weights=(codes >= 0).sum(axis=0), codes=codes)
    assert np.isfinite(r.priority).all() and (r.priority >= 0).all() and r.priority[0] > 0
    assert sorted(r.order.tolist()) == list(range(40))


# ------------------------------------------------------------------------------------------------- properties
@st.composite
def _problems(draw):
    K = draw(st.integers(2, 4))
    S = draw(st.integers(1, 12))
    R = draw(st.integers(1, 4))
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    post = rng.dirichlet(np.full(K, draw(st.sampled_from([0.2, 1.0, 5.0]))), S)
    post[rng.random(S) < 0.2] = np.nan
    conf = rng.dirichlet(np.ones(K), (R, K)) * 0.5 + 0.5 * np.eye(K)[None]
    conf[rng.random((R, K)) < 0.2] = np.nan
    n = rng.integers(0, 6, S)
    prior = rng.dirichlet(np.ones(K))
    return post, conf, n, prior, rng.integers(0, 2**16)


@settings(max_examples=150, deadline=None)
@given(_problems(), st.integers(1, 4))
def test_priority_ranges(prob, lookahead):
    post, conf, n, prior, _ = prob
    K = prior.size
    r = class_relabel_priority(post, conf, n, class_prior=prior, lookahead=lookahead)
    assert np.isfinite(r.priority).all() and (r.priority >= 0).all()
    assert (r.priority <= r.error_now + 1e-12).all() and (r.error_now <= 1 - 1 / K + 1e-12).all()
    assert (r.error_after >= -1e-12).all() and (r.error_after <= r.error_now + 1e-12).all()
    assert sorted(r.order.tolist()) == list(range(n.size))


@settings(max_examples=80, deadline=None)
@given(_problems())
def test_expected_errors_never_rise_with_more_labels(prob):
    post, conf, _, prior, _ = prob
    p = np.where(np.isnan(post), prior, post)
    bar, _ = typical_confusion(conf)
    e = [expected_errors(p, bar, m) for m in range(5)]
    assert all((b <= a + 1e-12).all() for a, b in zip(e, e[1:]))


@settings(max_examples=80, deadline=None)
@given(_problems(), st.sampled_from(RELABEL_RULES))
def test_invariant_to_relabelling_the_classes(prob, rule):
    post, conf, n, prior, seed = prob
    perm = np.random.default_rng(seed).permutation(prior.size)
    agree = np.where(n >= 2, np.linspace(0, 1, n.size), np.nan)
    kw = dict(rule=rule, agreement=agree, seed=int(seed))
    a = class_relabel_priority(post, conf, n, class_prior=prior, **kw)
    b = class_relabel_priority(post[:, perm], conf[:, perm][:, :, perm], n, class_prior=prior[perm], **kw)
    assert np.allclose(a.priority, b.priority, atol=1e-12) and np.allclose(a.error_now, b.error_now)


@settings(max_examples=80, deadline=None)
@given(_problems())
def test_invariant_to_the_order_of_items(prob):
    post, conf, n, prior, seed = prob
    perm = np.random.default_rng(seed).permutation(n.size)
    a = class_relabel_priority(post, conf, n, class_prior=prior)
    b = class_relabel_priority(post[perm], conf, n[perm], class_prior=prior)
    assert np.allclose(a.priority[perm], b.priority, atol=1e-12)
    assert np.allclose(a.priority[a.order], b.priority[b.order])  # the same priorities, in the same order


# -------------------------------------------------------------------------------------------------- baselines
def test_fewest_raters_first():
    r = _rule([[0.5, 0.5]] * 4, [3, 0, 1, 3], rule="fewest_raters")
    assert r.order.tolist() == [1, 2, 0, 3] and np.allclose(r.priority, [0.25, 1.0, 0.5, 0.25])
    assert np.allclose(r.error_now, 0.5)  # the model's estimates whatever the rule


def test_lowest_agreement_first_and_unknown_agreement_before_all():
    r = _rule([[0.5, 0.5]] * 4, [3, 1, 2, 3], rule="lowest_agreement", agreement=[0.9, np.nan, 0.2, 0.5])
    assert r.order.tolist() == [1, 2, 3, 0] and r.priority[0] == 0 and (r.priority >= 0).all()


def test_random_is_seeded():
    kw = dict(rule="random")
    a, b, c = (_rule([[0.5, 0.5]] * 30, [1] * 30, seed=s, **kw) for s in (4, 4, 5))
    assert a.order.tolist() == b.order.tolist() != c.order.tolist()


def test_every_rule_shares_the_result_type():
    for rule in RELABEL_RULES:
        r = _rule([[0.5, 0.5], [0.9, 0.1]], [2, 2], rule=rule, agreement=[0.0, 1.0])
        assert r.rule == rule and r.priority.shape == (2,) and len(r.notes) >= 2


# -------------------------------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("kwargs, match", [
    (dict(post=[[0.5, 0.5, 0.0]]), "posterior must be"),
    (dict(post=[[0.7, 0.7]]), "item 0 has"),
    (dict(post=[[0.5, np.nan]]), "item 0 has"),
    (dict(n=[1, 2]), "one count per item"),
    (dict(n=[-1]), "whole numbers >= 0; item 0"),
    (dict(n=[1.5]), "whole numbers >= 0; item 0"),
    (dict(conf=np.array([[[0.5, np.nan], [0.5, 0.5]]])), "rater 0, true class 0 .* partly NaN"),
    (dict(conf=np.array([[[0.5, 0.6], [0.5, 0.5]]])), "rater 0, true class 0 has row"),
    (dict(conf=np.ones((1, 2, 3))), "rater_confusion must be"),
    (dict(prior=np.array([0.5, 0.6])), "class_prior must be"),
    (dict(prior=np.array([1.0])), "class_prior must have one probability per class"),
    (dict(rule="most_confused"), "rule must be one of"),
    (dict(rule="lowest_agreement"), "needs agreement"),
    (dict(rule="lowest_agreement", agreement=[np.inf]), "item 0 is infinite"),
    (dict(lookahead=0), "lookahead must be"),
    (dict(rater_weights=[1.0, 2.0]), "one weight per rater"),
    (dict(rater_weights=[-1.0]), "rater 0 has"),
    (dict(codes=np.array([[0, 1]])), "raters of rater_confusion"),
    (dict(codes=np.array([[5]])), "item 0, rater 0 has 5"),
    (dict(codes=np.array([[0]]), shrinkage=-1.0), "shrinkage must be"),
    (dict(labels=np.array([0, 1])), "one consensus class per item"),
    (dict(labels=np.array([2])), "class codes in \\[-1, 1\\]; item 0 has 2"),
    (dict(fit_prior=True), "fit_prior=True needs codes"),
])
def test_bad_input_is_refused_saying_what(kwargs, match):
    kw = dict(kwargs)
    post = kw.pop("post", [[0.5, 0.5]])
    n = kw.pop("n", [1])
    with pytest.raises(ValueError, match=match):
        _rule(post, n, **kw)


def test_a_budget_larger_than_the_items_is_refused():
    r = _rule([[0.5, 0.5], [0.6, 0.4]], [1, 1])
    assert r.top(2).tolist() == [0, 1] and r.top(0).size == 0
    with pytest.raises(ValueError, match="budget of 3 items is outside 0 .. 2"):
        r.top(3)
