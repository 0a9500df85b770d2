"""Per-label write-back checked label by label against the pure library, on awkward lists.

One label field ``gt`` holds the labels of raters a, b and c (attribute ``annotator``), interleaved in
each list, not grouped by rater; the assigned raters are in ``raters`` (one sample has only two, one only
one, and on one rater b looked and drew nothing). Each list also holds a box past the left border placed
before labels that are kept, and a decoy class ``"z"`` that a view filters out.

For every method's per-label attributes (OT, KαLOS, geometry agreement, consensus), every value written is
looked up by its label's id and compared with what the pure library computes for that label on the same
corpus, built here from the dataset's raw values (not through the bridge's reader):

* on the dataset with ``box_policy="drop"`` (the box past the border is left out and gets no value),
  streamed in shards of three samples where the method streams;
* on a view that filters the decoys out (``filter_labels``), with ``box_policy="clip"`` (the box is
  clipped): the decoys get no value, every other label its own.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

pytestmark = pytest.mark.fiftyone

RATERS = ("a", "b", "c")
OUTSIDE = [-0.25, 0.4, 0.375, 0.25]  # past the left border: clipped to [0, 0.4, 0.125, 0.25]


@pytest.fixture
def awkward(fo, make_dataset):
    rng = np.random.default_rng(37)
    samples = []
    for s in range(8):
        k = 2 + s % 3
        truth = np.hstack([rng.uniform(0.05, 0.6, (k, 2)), rng.uniform(0.1, 0.3, (k, 2))])
        classes = rng.choice(["cat", "dog"], size=k)
        assigned = {2: ["a", "b"], 5: ["c"]}.get(s, list(RATERS))
        drawn = []  # (object, rater, label)
        for r in assigned:
            if s == 4 and r == "b":
                continue  # looked and drew nothing: explicit absence
            for o in range(k):
                if rng.random() < 0.2:
                    continue  # missed
                box = truth[o] + rng.normal(0, 0.02, 4) * [1, 1, 0.5, 0.5]
                label = str(classes[o]) if rng.random() > 0.2 else ("dog" if classes[o] == "cat" else "cat")
                drawn.append(fo.Detection(label=label, bounding_box=box.tolist(), annotator=r))
        rng.shuffle(drawn)  # raters interleaved
        first = assigned[s % len(assigned)]
        extra = [fo.Detection(label="cat", bounding_box=list(OUTSIDE), annotator=first),
                 fo.Detection(label="z", bounding_box=(truth[0] + [0.01, 0, 0, 0]).tolist(),
                              annotator=assigned[-1])]
        dets = extra + drawn if s % 2 == 0 else drawn[:1] + extra + drawn[1:]
        samples.append(fo.Sample(filepath=f"/awk/{s}.jpg", gt=fo.Detections(detections=dets), raters=assigned))
    ds = make_dataset(samples)
    # the lists really are interleaved: some sample has a rater's labels on both sides of another's
    orders = ["".join(d.annotator for d in v.detections) for v in ds.values("gt")]
    runs = [[r for i, r in enumerate(o) if i == 0 or o[i - 1] != r] for o in orders]
    assert sum(len(x) != len(set(x)) for x in runs) >= 4
    return ds


def _corpus(ds, exclude, clip: bool):
    """The corpus the run should see, from the raw values: samples in id order, each assigned rater's
    labels in stored order, ``exclude(label)`` left out, boxes clipped to the image when ``clip``."""
    from agreement.core.data import AnnotationSet, MultiRaterAnnotations

    sids, assigned, lists = ds.values("id"), ds.values("raters"), ds.values("gt")
    order = sorted(range(len(sids)), key=lambda i: sids[i])
    sets = []
    for i in order:
        per = {r: ([], [], []) for r in assigned[i]}
        for d in lists[i].detections:
            if exclude(d):
                continue
            box = np.asarray(d.bounding_box, dtype=float)
            if clip:
                x0, y0 = np.clip(box[:2], 0, 1)
                x1, y1 = np.clip(box[:2] + box[2:], 0, 1)
                box = np.array([x0, y0, x1 - x0, y1 - y0])
            per[d.annotator][0].append(box)
            per[d.annotator][1].append(d.label)
            per[d.annotator][2].append(d.id)
        sets.append({r: AnnotationSet(np.reshape(b, (-1, 4)), l, ids) for r, (b, l, ids) in per.items()})
    return MultiRaterAnnotations.from_sets([sids[i] for i in order], list(RATERS), sets)


def _past_border(d) -> bool:
    x, y, w, h = d.bounding_box
    return x < 0 or y < 0 or x + w > 1 or y + h > 1


SCENARIOS = {
    # name: (view of the dataset, labels the run does not see, box_policy, whether the reference clips)
    "dataset, drop": (lambda ds: ds, _past_border, "drop", False),
    "view without decoys, clip": (lambda ds: ds.filter_labels("gt", _not_decoy(), only_matches=False),
                                  lambda d: d.label == "z", "clip", True),
}


def _not_decoy():
    from fiftyone import ViewField as F

    return F("label") != "z"


def _written(ds, key, attrs):
    """label id -> {attr: stored value} over every label of ``gt``."""
    out = {}
    cols = [ds.values("gt.detections.id", unwind=True)] + [
        ds.values(f"gt.detections.{key}_{a}", unwind=True) for a in attrs]
    for lid, *vals in zip(*cols):
        out[lid] = dict(zip(attrs, vals))
    return out


def _none(v):
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else v


def _assert_same(got: dict, expected: dict, every_id, what):
    """Every label: its stored values equal the expected ones (floats to 1e-12); labels without an
    expectation have nothing stored."""
    wrong = []
    for lid in every_id:
        exp = expected.get(lid)
        for attr, value in got[lid].items():
            want = None if exp is None else _none(exp[attr])
            if isinstance(want, float) and isinstance(value, float):
                ok = abs(want - value) <= 1e-12
            else:
                ok = want == value
            if not ok:
                wrong.append((lid, attr, value, want))
    assert not wrong, f"{what}: {len(wrong)} wrong values, e.g. {wrong[:4]}"


# ------------------------------------------------------------------------------- expected, per method


def _expected_ot(data):
    from agreement.methods.ot import sample_ot_scores

    sc = sample_ot_scores(data, lam=0.5, beta=0.5)
    ids, names = data.label_ids, data.raters
    out = {}
    for i, lid in enumerate(ids):
        matched = sc.row_reason[i] == "matched"
        m, mr = int(sc.row_matched_row[i]), int(sc.row_matched_rater[i])
        n, nr = int(sc.row_nearest_row[i]), int(sc.row_nearest_rater[i])
        out[lid] = {
            "cost": float(sc.row_paid[i]),
            "match": ids[m] if m >= 0 else None,
            "match_rater": names[mr] if mr >= 0 else None,
            "nearest_id": None if matched or n < 0 else ids[n],
            "nearest_rater": None if matched or nr < 0 else names[nr],
            "nearest_cost": None if matched else float(sc.row_nearest_cost[i]),
            "reason": None if matched else str(sc.row_reason[i]),
        }
    return out


def _expected_kalos(data):
    from agreement.methods.kalos import kalos_alpha

    res = kalos_alpha(data, similarity="iou", tau=0.5)
    return {lid: {"unit": int(u) if u >= 0 else None} for lid, u in zip(data.label_ids, res.unit)}


def _expected_geometry(data):
    from agreement.methods.geometry_agreement import geometry_agreement

    res = geometry_agreement(data, distance="giou", threshold=0.5, bootstrap=None)
    return {lid: {"distance": float(d)} for lid, d in zip(data.label_ids, res.row_distance)}


METHODS = {
    # name: (bridge, its parameters, the label attributes, expected values, streams in shards)
    "ot": ("agreement.fo.methods.ot_agreement:compute_ot_agreement", {"lam": 0.5, "beta": 0.5},
           ("cost", "match", "match_rater", "nearest_id", "nearest_rater", "nearest_cost", "reason"),
           _expected_ot, True),
    "kalos": ("agreement.fo.methods.kalos:compute_kalos", {"similarity": "iou", "tau": 0.5}, ("unit",),
              _expected_kalos, True),
    "geometry": ("agreement.fo.methods.geometry_agreement:compute_geometry_agreement",
                 {"distance": "giou", "threshold": 0.5, "bootstrap": None}, ("distance",), _expected_geometry, True),
}


def _bridge(path):
    import importlib

    module, name = path.split(":")
    return getattr(importlib.import_module(module), name)


@pytest.mark.parametrize("method", list(METHODS))
def test_per_label_values_are_the_pure_librarys_label_by_label(awkward, method):
    path, params, attrs, expected_of, streams = METHODS[method]
    ds = awkward
    every_id = ds.values("gt.detections.id", unwind=True)
    for n, (name, (view_of, exclude, policy, clip)) in enumerate(SCENARIOS.items()):
        key = f"w{n}"
        extra = {"shard_size": 3} if streams and n == 0 else {}
        _bridge(path)(view_of(ds), key, field="gt", rater_attr="annotator", raters_field="raters",
                      box_policy=policy, **params, **extra)
        data = _corpus(ds, exclude, clip)
        expected = expected_of(data)
        assert len(expected) == len(every_id) - 8  # one label per sample not seen by the run
        got = _written(ds, key, attrs)
        _assert_same(got, expected, every_id, f"{method}, {name}")
        # the values differ within a list: a value written at another label's place would show
        varied = [len({str(got[lid]) for lid in ids}) > 1 for ids in ds.values("gt.detections.id")]
        assert sum(varied) >= 6, f"{method}, {name}"


def test_consensus_links_are_the_pure_librarys_label_by_label(awkward):
    """Consensus: a rater label's ``consensus_id`` is the consensus label of its pure unit (two labels
    share one exactly when the pure consensus puts them in one kept unit; that label lists them as its
    members and has the unit's confidence), and ``agrees`` is the pure ``row_agrees``."""
    from agreement.fo.methods.consensus import compute_consensus
    from agreement.methods.consensus import consensus

    ds = awkward
    every_id = ds.values("gt.detections.id", unwind=True)
    for n, (name, (view_of, exclude, policy, clip)) in enumerate(SCENARIOS.items()):
        key = f"c{n}"
        compute_consensus(view_of(ds), key, field="gt", rater_attr="annotator", raters_field="raters",
                          box_policy=policy, tau=0.5)
        data = _corpus(ds, exclude, clip)
        pure = consensus(data, tau=0.5)
        got = _written(ds, key, ("consensus_id", "agrees"))
        seen = set(data.label_ids.tolist())
        for lid in every_id:
            if lid not in seen:
                assert got[lid] == {"consensus_id": None, "agrees": None}, (name, lid)
        cons = {d.id: d for v in ds.values(f"{key}_consensus") if v for d in v.detections}
        assert len(cons) == int(pure.is_consensus.sum()) > 3
        unit_label = {}
        for i, lid in enumerate(data.label_ids):
            assert got[lid]["agrees"] == bool(pure.row_agrees[i]), (name, lid)
            c = int(pure.row_consensus[i])
            if c < 0:
                assert got[lid]["consensus_id"] is None, (name, lid)
                continue
            cid = got[lid]["consensus_id"]
            u = int(pure.row_unit[i])
            assert unit_label.setdefault(u, cid) == cid, (name, lid)
            members = data.label_ids[pure.member_rows[pure.member_offsets[u]:pure.member_offsets[u + 1]]]
            assert sorted(cons[cid][f"{key}_members"]) == sorted(members.tolist()), (name, lid)
            assert cons[cid].confidence == pytest.approx(pure.confidence[u] * pure.class_probability[u], abs=1e-9)
            assert cons[cid].label == pure.classes[pure.label_code[u]]
        assert len(set(unit_label.values())) == len(unit_label) == len(cons)  # one consensus label per unit
