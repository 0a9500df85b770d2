"""Uncertainty checked for what it claims, on tiny corpora where the truth can be computed by brute force.

* αOT's Monte-Carlo chance estimate: over many seeds its mean is the exact expected cross-image cost (every
  cross pair evaluated by plain loops) and its spread across seeds is the standard error it reports.
* The geometry agreement's bootstrap intervals: their ends are the (1 - c)/2 and 1 - (1 - c)/2 quantiles of
  the bootstrap resamples.
* The consensus EM: for a fixed model its confidence (existence posterior) and class probability are the
  closed-form posteriors of the model, written out here term by term.

Pure library only (no FiftyOne).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from agreement.core.data import AnnotationSet, MultiRaterAnnotations


def _set(boxes, labels, prefix):
    boxes = np.asarray(boxes, dtype=float).reshape(-1, 4)
    return AnnotationSet(boxes, list(labels), [f"{prefix}{k}" for k in range(len(boxes))])


# ---------------------------------------------------------------------------------------------- αOT chance


def _chance_corpus():
    """5 samples, 3 raters with partial assignment; within a sample the raters agree closely (a same-sample
    pair costs far less than a cross-sample pair), across samples the scenes differ."""
    rng = np.random.default_rng(7)
    assigned = {0: "abc", 1: "ab", 2: "abc", 3: "bc", 4: "ac"}
    sets = []
    for s in range(5):
        k = 1 + s % 3
        truth = np.hstack([rng.uniform(0, 0.6, (k, 2)), rng.uniform(0.1, 0.35, (k, 2))])
        labels = rng.choice(["cat", "dog"], size=k)
        sets.append({r: _set(truth + rng.normal(0, 0.004, truth.shape) * [1, 1, 0, 0], labels, f"{s}{r}")
                     for r in assigned[s]})
    return MultiRaterAnnotations.from_sets([f"s{s}" for s in range(5)], ["a", "b", "c"], sets)


def _brute_force_chance(data, lam=0.5, beta=0.5):
    """D_e by plain loops: every rater pair that shares a sample, every ordered (i, j), i != j, with a on i
    and b on j; and the number of such cross pairs."""
    from agreement.methods.ot import ot_match

    costs = []
    R = data.num_raters
    for a, b in itertools.combinations(range(R), 2):
        if not (data.assigned[:, a] & data.assigned[:, b]).any():
            continue
        for i in range(data.num_samples):
            for j in range(data.num_samples):
                if i == j or not (data.assigned[i, a] and data.assigned[j, b]):
                    continue
                A, B = data.get(i, a), data.get(j, b)
                costs.append(ot_match(A.boxes, A.labels, B.boxes, B.labels, lam=lam, beta=beta).cost)
    return float(np.mean(costs)), len(costs)


def test_alpha_ot_exact_chance_equals_the_brute_force_cross_pairs():
    from agreement.methods.ot.alpha_ot import alpha_ot

    data = _chance_corpus()
    exact, n = _brute_force_chance(data)
    res = alpha_ot(data, max_pairs=10_000)
    assert res.exact and res.n_cross_pairs == n and res.expected_se == 0.0
    assert res.expected == pytest.approx(exact, rel=1e-12)


def test_alpha_ot_monte_carlo_mean_is_the_exact_value_and_its_spread_the_reported_se():
    """Over 200 seeds of a small draw budget (every stratum drawn, none exact): the mean of the estimates
    is the brute-force D_e within four standard errors of that mean, and the spread of the estimates is the
    reported standard error (ratio in [0.7, 1.4]); the same for αOT and its delta-method standard error."""
    from agreement.methods.ot.alpha_ot import alpha_ot

    data = _chance_corpus()
    exact, n = _brute_force_chance(data)
    observed = alpha_ot(data, max_pairs=10_000).observed
    seeds = range(200)
    runs = [alpha_ot(data, max_pairs=8, seed=seed) for seed in seeds]
    assert not any(r.exact for r in runs) and all(r.n_cross_pairs == n for r in runs)
    est = np.array([r.expected for r in runs])
    se = np.array([r.expected_se for r in runs])
    assert (se > 0).all()
    spread = est.std(ddof=1)
    assert abs(est.mean() - exact) <= 4 * spread / math.sqrt(len(est)), (est.mean(), exact)
    ratio = spread / math.sqrt(np.mean(se ** 2))
    assert 0.7 <= ratio <= 1.4, ratio
    alphas = np.array([r.alpha for r in runs])
    alpha_se = np.array([r.alpha_se for r in runs])
    assert abs(alphas.mean() - (1 - observed / exact)) <= 4 * alphas.std(ddof=1) / math.sqrt(len(alphas)) + 0.01
    ratio = alphas.std(ddof=1) / math.sqrt(np.mean(alpha_se ** 2))
    assert 0.7 <= ratio <= 1.4, ratio


# ------------------------------------------------------------------------------------ bootstrap intervals


def _geometry_corpus():
    rng = np.random.default_rng(3)
    sets = []
    for s in range(12):
        k = 2 + s % 3
        truth = np.hstack([rng.uniform(0, 0.6, (k, 2)), rng.uniform(0.1, 0.3, (k, 2))])
        labels = rng.choice(["cat", "dog", "cow"], size=k)
        sets.append({r: _set(truth + rng.normal(0, 0.02, truth.shape) * [1, 1, 0.5, 0.5],
                             [lab if rng.random() > 0.2 else "cow" for lab in labels], f"{s}{r}")
                     for r in ("a", "b", "c")})
    return MultiRaterAnnotations.from_sets([f"s{s:02d}" for s in range(12)], ["a", "b", "c"], sets, box_policy="clip")


@pytest.mark.parametrize("confidence", [0.9, 0.95])
def test_bootstrap_interval_ends_are_the_quantiles_of_the_resamples(monkeypatch, confidence):
    import agreement.methods.geometry_agreement as ga

    seen = []
    real = ga._bootstrap_values

    def spy(*args, **kwargs):
        out = real(*args, **kwargs)
        seen.append({k: np.array(v, copy=True) for k, v in out.items()})
        return out

    monkeypatch.setattr(ga, "_bootstrap_values", spy)
    B = 400
    res = ga.geometry_agreement(_geometry_corpus(), distance="giou", threshold=0.5, bootstrap=B, seed=4,
                                confidence=confidence)
    assert len(seen) == 1
    boot = seen[0]
    lo_q, hi_q = (1 - confidence) / 2, 1 - (1 - confidence) / 2
    checked = 0
    for name in ga.GeometryAgreementResult._STATS:
        est = getattr(res, name)
        x = boot[name][np.isfinite(boot[name])]
        if not np.isfinite(est.value) or len(x) < 2:
            continue
        checked += 1
        assert len(x) == est.n_resamples
        assert est.ci_low == pytest.approx(float(np.quantile(x, lo_q)), abs=1e-12), name
        assert est.ci_high == pytest.approx(float(np.quantile(x, hi_q)), abs=1e-12), name
        inside = np.mean((x >= est.ci_low) & (x <= est.ci_high))
        if np.ptp(x) > 0:  # a spread-out statistic: about c of its resamples lie in the interval
            assert abs(inside - confidence) <= 0.02 + 2 / len(x), (name, inside)
    assert checked >= 3


def test_bootstrap_resamples_are_reproduced_by_the_same_seed():
    """The same seed gives the same intervals; another seed other intervals (the resamples are drawn)."""
    from agreement.methods.geometry_agreement import geometry_agreement

    data = _geometry_corpus()
    a = geometry_agreement(data, bootstrap=200, seed=1)
    b = geometry_agreement(data, bootstrap=200, seed=1)
    c = geometry_agreement(data, bootstrap=200, seed=2)
    assert (a.distance_alpha.ci_low, a.distance_alpha.ci_high) == (b.distance_alpha.ci_low, b.distance_alpha.ci_high)
    assert (a.distance_alpha.ci_low, a.distance_alpha.ci_high) != (c.distance_alpha.ci_low, c.distance_alpha.ci_high)
    assert a.distance_alpha.ci_low < a.distance_alpha.value < a.distance_alpha.ci_high


# --------------------------------------------------------------------------------------- consensus EM


def _toy_consensus_corpus():
    """4 samples, raters a/b/c. Units of one, two and three members, classes that agree and that do not,
    a rater not assigned (c on s2) and one who looked and drew nothing (b on s3)."""
    A = [0.1, 0.1, 0.2, 0.2]
    B = [0.6, 0.5, 0.25, 0.3]
    C = [0.3, 0.7, 0.15, 0.15]
    sets = [
        {"a": _set([A, B], ["cat", "dog"], "0a"), "b": _set([A, B], ["cat", "cat"], "0b"),
         "c": _set([A], ["cat"], "0c")},
        {"a": _set([A, C], ["dog", "cat"], "1a"), "b": _set([A], ["dog"], "1b"),
         "c": _set([A, B], ["cow", "dog"], "1c")},
        {"a": _set([B], ["cow"], "2a"), "b": _set([B, C], ["cow", "dog"], "2b")},
        {"a": _set([C], ["cat"], "3a"), "b": _set([], [], "3b"), "c": _set([C], ["cat"], "3c")},
    ]
    return MultiRaterAnnotations.from_sets(["s0", "s1", "s2", "s3"], ["a", "b", "c"], sets)


def _fixed_model():
    from agreement.methods.consensus.em import ConsensusModel

    classes = ("cat", "cow", "dog")
    confusion = np.array([
        [[0.8, 0.05, 0.15], [0.1, 0.7, 0.2], [0.2, 0.1, 0.7]],
        [[0.6, 0.2, 0.2], [0.25, 0.5, 0.25], [0.3, 0.1, 0.6]],
        [[0.9, 0.05, 0.05], [0.05, 0.85, 0.1], [0.1, 0.1, 0.8]],
    ])
    return ConsensusModel(
        raters=("a", "b", "c"), classes=classes, sensitivity=np.array([0.9, 0.6, 0.75]),
        false_positive_rate=np.array([0.3, 0.8, 0.15]), object_rate=1.7, coincidence=0.12,
        class_prior=np.array([0.5, 0.2, 0.3]), confusion=confusion,
        localisation_noise=np.array([0.05, 0.1, 0.07]), geometry="boxes", smoothing=1.0, tail=float("inf"),
        tau=0.5)


def _closed_form(data, model, members, sample):
    """(existence posterior, top class probability) of a unit: ``members`` its corpus rows, ``sample`` its
    sample; the formulas of the module docstring of agreement.methods.consensus.em, term by term."""
    se, lam, mu, rho = model.sensitivity, model.false_positive_rate, model.object_rate, model.coincidence
    p, pi = model.class_prior, model.confusion
    code = {c: k for k, c in enumerate(model.classes)}
    raters = [int(data.rater_index[i]) for i in members]
    classes = [code[data.labels[i]] for i in members]
    like = np.array([p[y] * np.prod([pi[r, y, c] for r, c in zip(raters, classes)]) for y in range(len(p))])
    l1 = math.log(mu)
    l1 += sum(math.log(1 - se[r]) for r in np.flatnonzero(data.assigned[sample]))
    l1 += sum(math.log(se[r] / (1 - se[r])) for r in raters)
    l1 += math.log(like.sum())
    m = pi.transpose(0, 2, 1) @ p  # m_r[c] = sum_y p_y pi_r[y, c]
    l0 = sum(math.log(lam[r]) + math.log(m[r, c]) for r, c in zip(raters, classes))
    l0 += (len(members) - 1) * math.log(rho)
    return 1.0 / (1.0 + math.exp(-(l1 - l0))), float(like.max() / like.sum())


def test_em_confidence_for_a_fixed_model_is_the_closed_form_posterior():
    from agreement.methods.consensus import consensus

    data = _toy_consensus_corpus()
    model = _fixed_model()
    res = consensus(data, model=model, tau=0.5, min_confidence=0.5)
    sizes = np.diff(res.member_offsets)
    assert {1, 2, 3} <= set(sizes.tolist())  # units of every size
    assert res.n_iter == 0  # nothing fitted
    for u in range(len(res.confidence)):
        rows = res.member_rows[res.member_offsets[u]:res.member_offsets[u + 1]]
        existence, top = _closed_form(data, model, rows, int(res.unit_sample[u]))
        assert res.confidence[u] == pytest.approx(existence, rel=1e-9, abs=1e-12), u
        assert res.class_probability[u] == pytest.approx(top, rel=1e-9), u
    # the posteriors span the range: a test on them can tell a wrong term from a right one
    assert res.confidence.min() < 0.2 and res.confidence.max() > 0.9


def test_em_closed_form_moves_with_every_model_parameter():
    """Each parameter of the model enters the confidence: changing any one changes it as the closed form says."""
    from dataclasses import replace

    from agreement.methods.consensus import consensus

    data = _toy_consensus_corpus()
    base = _fixed_model()
    variants = {
        "object_rate": replace(base, object_rate=0.6),
        "coincidence": replace(base, coincidence=0.4),
        "sensitivity": replace(base, sensitivity=np.array([0.5, 0.9, 0.3])),
        "false_positive_rate": replace(base, false_positive_rate=np.array([0.9, 0.1, 0.5])),
        "class_prior": replace(base, class_prior=np.array([0.2, 0.6, 0.2])),
    }
    ref = consensus(data, model=base, tau=0.5).confidence
    for name, model in variants.items():
        res = consensus(data, model=model, tau=0.5)
        assert not np.allclose(res.confidence, ref), name
        for u in range(len(res.confidence)):
            rows = res.member_rows[res.member_offsets[u]:res.member_offsets[u + 1]]
            existence, _ = _closed_form(data, model, rows, int(res.unit_sample[u]))
            assert res.confidence[u] == pytest.approx(existence, rel=1e-9, abs=1e-12), (name, u)
