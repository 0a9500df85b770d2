"""Oracle tests of the consensus core against independent implementations.

* ``method="wbf"`` / :func:`weighted_boxes_fusion` against ``ensemble-boxes``
  (test-only dependency): to 1e-9 with that package's float32 fusion run in
  float64, and to float32 precision as it ships;
* the class EM against a textbook Dawid-Skene written here (loops, dicts)
  and against crowd-kit's ``DawidSkene`` (test-only dependency);
* the corpus-level pattern STAPLE against :func:`agreement.methods.consensus.staple.staple`
  on the expanded raters × pixels matrix.
"""

from __future__ import annotations

import numpy as np
import pytest

from agreement.core.data import AnnotationSet, MultiRaterAnnotations
from agreement.methods.consensus import consensus, dawid_skene, weighted_boxes_fusion
from agreement.methods.consensus.pixels import pattern_staple
from agreement.methods.consensus.staple import staple

# --------------------------------------------------------------------------
# WBF against ensemble-boxes
# --------------------------------------------------------------------------


class _Float64Numpy:
    """numpy, except that ``float32`` is ``float64`` (ensemble-boxes fuses in float32)."""

    def __getattr__(self, name):
        return np.float64 if name == "float32" else getattr(np, name)


def _random_images(rng, n_images, n_models, n_labels, max_boxes):
    """Per image, a few objects that most models draw (jittered, some with another label, some boxes
    past the border) plus random boxes; a model is absent from an image with probability 0.2."""
    images = []
    for _ in range(n_images):
        present = rng.random(n_models) < 0.8
        present[rng.integers(n_models)] = True
        k_obj = int(rng.integers(1, max_boxes + 1))
        obj_c, obj_s = rng.uniform(0.1, 0.9, (k_obj, 2)), rng.uniform(0.05, 0.4, (k_obj, 2))
        obj_l = rng.integers(0, n_labels, k_obj)
        per_model = []
        for m in range(n_models):
            if not present[m]:
                per_model.append(None)
                continue
            drawn = rng.random(k_obj) < 0.75
            n_fp = int(rng.integers(0, 3))
            centre = np.r_[obj_c[drawn] + rng.normal(0, 0.02, (drawn.sum(), 2)), rng.random((n_fp, 2))]
            size = np.r_[obj_s[drawn] * np.exp(rng.normal(0, 0.15, (drawn.sum(), 2))),
                         rng.uniform(0.05, 0.4, (n_fp, 2))]
            labels = np.r_[np.where(rng.random(drawn.sum()) < 0.85, obj_l[drawn],
                                    rng.integers(0, n_labels, drawn.sum())), rng.integers(0, n_labels, n_fp)]
            boxes = np.concatenate([centre - size / 2, centre + size / 2], axis=1)
            per_model.append((boxes, rng.random(len(boxes)), labels))
        images.append(per_model)
    return images


def _ours(images, weights, iou_thr, skip):
    rows = [(g, m, b, s, lab) for g, pm in enumerate(images) for m, v in enumerate(pm) if v is not None
            for b, s, lab in zip(*v)]
    present = np.array([[v is not None for v in pm] for pm in images])
    if not rows:
        return {}
    g, m, b, s, lab = (np.array(x) for x in zip(*rows))
    res = weighted_boxes_fusion(b.reshape(-1, 4), s, lab, m, groups=g, weights=weights, group_models=present,
                                iou_thr=iou_thr, skip_box_thr=skip)
    out = {}
    for k in range(len(res.scores)):
        out.setdefault(int(res.group[k]), []).append([res.labels[k], res.scores[k], *res.boxes[k]])
    return {k: np.array(sorted(v)) for k, v in out.items()}


def _reference(images, weights, iou_thr, skip):
    from ensemble_boxes import weighted_boxes_fusion as ref

    out = {}
    for g, pm in enumerate(images):
        models = [m for m, v in enumerate(pm) if v is not None]
        bl = [pm[m][0].tolist() for m in models]
        sl = [pm[m][1].tolist() for m in models]
        ll = [pm[m][2].tolist() for m in models]
        with _quiet():
            b, s, lab = ref(bl, sl, ll, weights=[weights[m] for m in models], iou_thr=iou_thr, skip_box_thr=skip)
        if len(s):
            out[g] = np.array(sorted(np.column_stack([lab, s, b]).tolist()))
    return out


class _quiet:
    def __enter__(self):
        import warnings

        self._w = warnings.catch_warnings()
        self._w.__enter__()
        warnings.simplefilter("ignore")

    def __exit__(self, *exc):
        self._w.__exit__(*exc)


@pytest.mark.parametrize("seed", range(6))
def test_wbf_equals_ensemble_boxes_in_double_precision(seed, monkeypatch):
    pytest.importorskip("ensemble_boxes")
    import ensemble_boxes.ensemble_boxes_wbf as wbf_module

    monkeypatch.setattr(wbf_module, "np", _Float64Numpy())
    rng = np.random.default_rng(seed)
    n_models = int(rng.integers(2, 6))
    images = _random_images(rng, 25, n_models, 3, 6)
    weights = rng.uniform(0.5, 2.0, n_models)
    iou_thr = float(rng.choice([0.3, 0.5, 0.55, 0.7]))
    skip = float(rng.choice([0.0, 0.2]))
    ours, ref = _ours(images, weights, iou_thr, skip), _reference(images, weights, iou_thr, skip)
    assert ours.keys() == ref.keys()
    for g in ref:
        assert ours[g].shape == ref[g].shape, g
        np.testing.assert_allclose(ours[g], ref[g], rtol=0, atol=1e-9)


def test_wbf_matches_ensemble_boxes_as_shipped_to_float32_precision():
    pytest.importorskip("ensemble_boxes")
    rng = np.random.default_rng(42)
    images = _random_images(rng, 40, 4, 2, 5)
    weights = np.ones(4)
    ours, ref = _ours(images, weights, 0.55, 0.0), _reference(images, weights, 0.55, 0.0)
    assert ours.keys() == ref.keys()
    for g in ref:
        np.testing.assert_allclose(ours[g], ref[g], rtol=0, atol=2e-6)


def test_consensus_wbf_method_is_weighted_boxes_fusion_of_the_raters():
    pytest.importorskip("ensemble_boxes")
    from ensemble_boxes import weighted_boxes_fusion as ref

    rng = np.random.default_rng(3)
    sets = []
    for _ in range(10):
        mapping = {}
        for r in ("a", "b", "c"):
            k = int(rng.integers(0, 4))
            xy = rng.uniform(0, 0.6, (k, 2))
            wh = rng.uniform(0.1, 0.4, (k, 2))
            mapping[r] = AnnotationSet(np.c_[xy, wh], rng.choice(["cat", "dog"], k), [None] * k)
        sets.append(mapping)
    data = MultiRaterAnnotations.from_sets([f"s{i}" for i in range(10)], ["a", "b", "c"], sets)
    res = consensus(data, method="wbf", tau=0.5, min_confidence=0.1)
    classes = list(res.classes)
    for s in range(10):
        bl, sl, ll = [], [], []
        for r in range(3):
            sl_ = data.rows(s, r)
            b = data.boxes[sl_]
            bl.append(np.c_[b[:, :2], b[:, :2] + b[:, 2:]].tolist())
            sl.append([1.0] * len(b))
            ll.append([classes.index(x) for x in data.labels[sl_]])
        with _quiet():
            rb, rs, rl = ref(bl, sl, ll, iou_thr=0.5)
        u = np.flatnonzero(res.unit_sample == s)
        assert len(u) == len(rs)
        ours = sorted(zip(res.label_code[u], res.confidence[u],
                          *(res.boxes[u, :2] + 0 * res.boxes[u, 2:]).T,
                          *(res.boxes[u, :2] + res.boxes[u, 2:]).T))
        theirs = sorted(zip(rl, rs, *rb.T))
        np.testing.assert_allclose(np.array(ours, float).reshape(-1, 6), np.array(theirs, float).reshape(-1, 6),
                                   atol=2e-6)


# --------------------------------------------------------------------------
# Dawid-Skene against a textbook implementation and crowd-kit
# --------------------------------------------------------------------------


def _textbook_dawid_skene(labels, C, n_iter):
    """Dawid & Skene (1979), written out: vote-share start, then M-step / E-step ``n_iter`` times."""
    U, R = labels.shape
    T = np.zeros((U, C))
    for u in range(U):
        for r in range(R):
            if labels[u, r] >= 0:
                T[u, labels[u, r]] += 1
        T[u] /= T[u].sum()
    for _ in range(n_iter):
        prior = T.mean(axis=0)
        pi = np.zeros((R, C, C))
        for u in range(U):
            for r in range(R):
                if labels[u, r] >= 0:
                    pi[r, :, labels[u, r]] += T[u]
        with np.errstate(invalid="ignore"):
            pi /= pi.sum(axis=2, keepdims=True)
        pi = np.nan_to_num(pi, nan=1.0 / C)
        new = np.zeros((U, C))
        for u in range(U):
            for y in range(C):
                p = prior[y]
                for r in range(R):
                    if labels[u, r] >= 0:
                        p *= pi[r, y, labels[u, r]]
                new[u, y] = p
            new[u] /= new[u].sum()
        T = new
    return T, prior, pi


def _toy_labels(seed, U=60, R=5, C=3, missing=0.3):
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, C, U)
    acc = rng.uniform(0.55, 0.95, R)
    labels = np.where(rng.random((U, R)) < acc, truth[:, None], rng.integers(0, C, (U, R)))
    labels[rng.random((U, R)) < missing] = -1
    empty = (labels < 0).all(axis=1)
    labels[empty, 0] = truth[empty]
    return labels


@pytest.mark.parametrize("seed", range(4))
def test_dawid_skene_equals_the_textbook_algorithm(seed):
    labels = _toy_labels(seed)
    ours = dawid_skene(labels, n_classes=3, smoothing=0.0, max_iter=25, tol=0.0)
    T, prior, pi = _textbook_dawid_skene(labels, 3, 25)
    assert ours.n_iter == 25
    np.testing.assert_allclose(ours.posterior, T, atol=1e-12)
    np.testing.assert_allclose(ours.prior, prior, atol=1e-12)
    np.testing.assert_allclose(ours.confusion, pi, atol=1e-12)


def test_dawid_skene_agrees_with_crowd_kit():
    pytest.importorskip("crowdkit")
    import pandas as pd
    from crowdkit.aggregation import DawidSkene

    labels = _toy_labels(7, U=80, R=6, C=4)
    ours = dawid_skene(labels, n_classes=4, smoothing=0.0, max_iter=30, tol=0.0)
    u, r = np.nonzero(labels >= 0)
    df = pd.DataFrame({"task": u, "worker": r, "label": labels[u, r]})
    ck = DawidSkene(n_iter=30, tol=-np.inf).fit(df)
    theirs = ck.probas_.reindex(index=range(80), columns=range(4)).to_numpy()
    np.testing.assert_allclose(ours.posterior, theirs, atol=1e-6)


def test_consensus_class_posterior_is_dawid_skene_when_every_object_is_certain():
    """Units every rater drew (existence ~1): the consensus's classes are Dawid-Skene's on the same labels."""
    labels = _toy_labels(11, U=40, R=4, C=3, missing=0.0)
    sets = []
    for u in range(40):
        box = [[0.1, 0.1, 0.3, 0.3]]
        sets.append({f"r{r}": AnnotationSet(box, [f"c{labels[u, r]}"], [None]) for r in range(4)})
    data = MultiRaterAnnotations.from_sets([f"s{u}" for u in range(40)], [f"r{r}" for r in range(4)], sets)
    res = consensus(data, smoothing=0.0, tol=0.0, max_iter=30)
    ds = dawid_skene(labels, n_classes=3, smoothing=0.0, max_iter=30, tol=0.0)
    assert res.confidence.min() > 1 - 1e-6
    top = ds.posterior.argmax(axis=1)
    assert np.array_equal(res.label_code, top)
    np.testing.assert_allclose(res.class_probability, ds.posterior.max(axis=1), atol=1e-4)


# --------------------------------------------------------------------------
# Pattern STAPLE against agreement.methods.consensus.staple
# --------------------------------------------------------------------------


def test_pattern_staple_equals_staple_on_the_expanded_matrix():
    rng = np.random.default_rng(5)
    R, units = 4, []
    for _ in range(12):
        members = np.sort(rng.choice(R, size=int(rng.integers(2, R + 1)), replace=False))
        truth = rng.random(50) < 0.5
        quality = rng.uniform(0.6, 0.95, R)
        dec = np.where(rng.random((len(members), 50)) < quality[members, None], truth, ~truth)
        units.append((members, dec))
    P = 50 * len(units)
    D = np.zeros((R, P), bool)
    obs = np.zeros((R, P), bool)
    entry_count, pair_entry, pair_rater, pair_bit = [], [], [], []
    for k, (members, dec) in enumerate(units):
        D[members, k * 50:(k + 1) * 50] = dec
        obs[members, k * 50:(k + 1) * 50] = True
        for x in range(50):  # one entry per pixel: the grouping is staple's business
            e = len(entry_count)
            entry_count.append(1.0)
            pair_entry += [e] * len(members)
            pair_rater += members.tolist()
            pair_bit += dec[:, x].tolist()
    W, p, q, n_iter, conv = pattern_staple(np.array(entry_count), np.array(pair_entry), np.array(pair_rater),
                                           np.array(pair_bit), R)
    ref = staple(D, observed=obs)
    np.testing.assert_allclose(p, ref.sensitivity, atol=1e-12)
    np.testing.assert_allclose(q, ref.specificity, atol=1e-12)
    np.testing.assert_allclose(W, ref.probability, atol=1e-12)
    assert n_iter == ref.n_iter and conv == ref.converged
