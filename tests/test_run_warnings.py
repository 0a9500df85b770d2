"""Run warnings: degenerate rater designs through every compute operator (issue 47).

One rater; raters who never share a sample; raters in two groups that never meet; a rater who labels
nothing; nothing labelled at all; a single class. Each run records its warnings (``results.warnings``,
``print_report()``) and returns them under ``warnings`` in the operator's result; a number that needs raters
to meet is ``None`` with its reason, never a silent perfect score.
"""

from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.fiftyone

OT, KALOS, GEOMETRY, CONSENSUS, CLASSES = ("compute_ot_agreement", "compute_kalos", "compute_geometry_agreement",
                                           "compute_consensus", "compute_class_agreement")


def _box(fo, i: int, k: int, label: str = "car", dx: float = 0.0):
    x = 0.05 + 0.3 * k + 0.01 * (i % 4) + dx
    return fo.Detection(label=label, bounding_box=[x, 0.1 + 0.05 * k, 0.2, 0.2])


def _boxes(fo, make_dataset, who, n: int = 12, classes=("car", "dog")):
    """``n`` samples; ``who(i)`` -> ``{rater: boxes drawn (int) or None (not assigned)}`` per sample; each rater
    draws the same objects (classes in turn), b shifted by 0.01."""
    samples = []
    for i in range(n):
        kw = {}
        for r, count in who(i).items():
            kw[r] = None if count is None else fo.Detections(detections=[
                _box(fo, i, k, classes[k % len(classes)], 0.01 * "abcdefgh".index(r)) for k in range(count)])
        samples.append(fo.Sample(filepath=f"/warn/{i}.jpg", **kw))
    return make_dataset(samples)


def _run(ds, name, **params):
    import fiftyone.operators as foo

    params.setdefault("key", name.split("_")[1])
    return foo.execute_operator(f"@iaa/agreement/{name}", ctx=dict(view=ds.view(), params=params)).result


def _has(warnings, *words):
    return any(all(w in x for w in words) for x in warnings)


# --------------------------------------------------------------------------
# Raters who never meet
# --------------------------------------------------------------------------


def _never_meet(fo, make_dataset):
    return _boxes(fo, make_dataset, lambda i: {"a": 2, "b": None} if i < 6 else {"a": None, "b": 2})


@pytest.mark.parametrize("op", [OT, KALOS, GEOMETRY, CONSENSUS])
def test_raters_who_never_meet_warn_on_every_operator(fo, make_dataset, op):
    ds = _never_meet(fo, make_dataset)
    out = _run(ds, op, fields=["a", "b"])
    assert _has(out["warnings"], "never share a sample", "'a'", "'b'")
    results = ds.load_run_results(out["key"])
    assert results.warnings == out["warnings"]
    assert "never share a sample" in results.report()


def test_consensus_of_raters_who_never_meet_claims_no_agreement(fo, make_dataset):
    """Defect 3: a labels samples 0-5, b 6-11. Before: agreement 1.00, mean confidence 1.00, sensitivity 0.5 each.
    Now the labels are kept as one rater's, and every number that needs raters to meet is None with a reason."""
    ds = _never_meet(fo, make_dataset)
    out = _run(ds, CONSENSUS, fields=["a", "b"])
    assert out["n_consensus"] == 24 and out["n_single_rater"] == 24
    assert out["agreement"] is None and "two raters" in out["agreement_reason"]
    assert out["mean_confidence"] is None and "never meet" in out["mean_confidence_reason"]
    assert _has(out["warnings"], "one rater's", "n_single_rater") and _has(out["warnings"], "agreement is undefined")
    report = ds.load_run_results("consensus").detail["rater_report"]
    assert all(report[r]["sensitivity"] is None and report[r]["agreement"] is None for r in "ab")
    agrees = ds.values("a.detections.consensus_agrees", unwind=True)
    assert agrees and not any(agrees)  # nothing says "agreed"


def _classes(fo, make_dataset, who, n: int = 12):
    """``who(i)`` -> ``{rater: class or None}`` per sample, as Classification fields."""
    return make_dataset([fo.Sample(filepath=f"/cls/{i}.jpg", **{r: None if c is None else fo.Classification(label=c)
                                                                  for r, c in who(i).items()}) for i in range(n)])


def test_class_runs_of_raters_who_never_meet(fo, make_dataset):
    ds = _classes(fo, make_dataset, lambda i: {"a": "cat" if i % 3 else "dog", "b": None} if i < 6
                  else {"a": None, "b": "cat" if i % 2 else "dog"})
    out = _run(ds, CONSENSUS, fields=["a", "b"], method="majority")
    assert out["agreement"] is None and out["mean_confidence"] is None and out["n_single_rater"] == 12
    assert _has(out["warnings"], "never share a sample")
    report = ds.load_run_results("consensus").detail["rater_report"]
    assert report["a"]["competence"] is None and report["a"]["agreement"] is None
    out = _run(ds, CLASSES, fields=["a", "b"])
    assert _has(out["warnings"], "never share a sample")


# --------------------------------------------------------------------------
# Groups that never meet; the answer does not depend on the shards
# --------------------------------------------------------------------------


def _two_groups(i):
    return {"a": 2, "b": 2, "c": None, "d": None} if i < 6 else {"a": None, "b": None, "c": 2, "d": 2}


@pytest.mark.parametrize("op", [OT, KALOS])
def test_groups_that_never_meet_are_named_whatever_the_shards(fo, make_dataset, op):
    ds = _boxes(fo, make_dataset, _two_groups)
    whole = _run(ds, op, fields=list("abcd"), key="whole")["warnings"]
    shards = _run(ds, op, fields=list("abcd"), key="shards", shard_size=2)["warnings"]
    assert _has(whole, "2 groups that never share a sample", "{'a', 'b'}", "{'c', 'd'}")
    assert shards == whole
    assert ds.load_run_results("shards").detail["shards"]["n_shards"] == 6


def test_many_raters_are_named_a_few_then_counted():
    from agreement.core.design_warnings import DesignStats, design_warnings

    R = 9
    co = np.diag(np.full(R, 3))  # nine raters, each alone on their samples
    names = tuple(f"r{k}" for k in range(R))
    found = design_warnings(DesignStats(names, co, np.ones(R, np.int64), {"x": 9, "y": 1}, 27))
    assert _has(found, "never share a sample", "'r0'", "'r4'", "and 4 more")
    co[0, 1] = co[1, 0] = 1  # r0 and r1 meet: one group of two and seven alone
    found = design_warnings(DesignStats(names, co, np.ones(R, np.int64), {"x": 9, "y": 1}, 27))
    assert _has(found, "8 groups", "{'r0', 'r1'}", "and 3 more groups")


# --------------------------------------------------------------------------
# A rater who labels nothing; nothing labelled; one rater; one class
# --------------------------------------------------------------------------


def test_a_rater_who_labels_nothing_scores_exactly_chance(fo, make_dataset):
    """Defect 4, the documented values: b is assigned every sample and draws nothing. αOT and detection α
    are exactly 0 (chance), not below it (docs/method-ot.md, docs/method-geometry.md), and the run warns."""
    ds = _boxes(fo, make_dataset, lambda i: {"a": 2, "b": 0})
    ot = _run(ds, OT, fields=["a", "b"])
    assert ot["alpha_ot"] == pytest.approx(0.0, abs=1e-12)
    assert _has(ot["warnings"], "drew no label", "'b'")
    geo = _run(ds, GEOMETRY, fields=["a", "b"])
    assert geo["detection_alpha"] == pytest.approx(0.0, abs=1e-12) and geo["sigma"] is None
    assert _has(geo["warnings"], "drew no label", "'b'") and _has(geo["warnings"], "σ (Braylan) is undefined")


@pytest.mark.parametrize("op", [OT, KALOS, GEOMETRY])
def test_nothing_labelled_is_undefined_not_perfect(fo, make_dataset, op):
    """Defect 4: identical empty sets agree, but there is nothing to agree on: every headline number is None
    with its reason, never 1.0."""
    ds = _boxes(fo, make_dataset, lambda i: {"a": 0, "b": 0})
    out = _run(ds, op, fields=["a", "b"])
    headline = {OT: "alpha_ot", KALOS: "global_alpha", GEOMETRY: "detection_alpha"}[op]
    assert out[headline] is None
    assert _has(out["warnings"], "no rater drew any label") and _has(out["warnings"], "is undefined")


def test_one_rater_is_refused_with_what_to_do(fo, make_dataset):
    from fiftyone.operators.executor import ExecutionError

    ds = _boxes(fo, make_dataset, lambda i: {"a": 2})
    for op in (OT, KALOS, CONSENSUS):
        with pytest.raises(ExecutionError, match="at least 2 raters"):
            _run(ds, op, fields=["a"])


def test_design_of_one_rater_warns():
    from agreement.core.design_warnings import DesignStats, design_warnings

    found = design_warnings(DesignStats(("a",), np.array([[4]]), np.array([3]), {"x": 3}, 4))
    assert found and "only one rater" in found[0] and "fields=" in found[0]


def test_single_class_kalos_is_not_offered(fo, make_dataset):
    """Defect 2 through the operator: one class, no unit where both raters say "no object" (every sample has
    the object): α could never exceed 0, so global and mean α are None with the reason, and the run warns."""
    ds = _boxes(fo, make_dataset, lambda i: {"a": 1, "b": 1 if i else 0}, classes=("seg",))  # b misses one
    out = _run(ds, KALOS, fields=["a", "b"])
    assert out["global_alpha"] is None and "cannot exceed 0" in out["global_reason"]
    assert out["mean_alpha"] is None and "cannot exceed 0" in out["mean_reason"]
    assert _has(out["warnings"], "one class ('seg')") and _has(out["warnings"], "global α (pooled) is undefined",
                                                               "compute_geometry_agreement")
    text = ds.load_run_results("kalos").report()
    assert "Warnings:" in text and "cannot exceed 0" in text


def test_operator_output_shows_the_warnings(fo, make_dataset):
    """The App's output form lists the warnings, each a whole line (as the import operators show them)."""
    from agreement.fo.methods import declarations
    from operators.declared import _outputs
    from operators.outputs import result_property

    decl = next(d for d in declarations() if d.operator == OT)
    assert ("warnings", "Warnings", "lines") in _outputs(decl)
    shown = result_property(_outputs(decl), {"key": "k", "alpha_ot": None, "warnings": ["w"]}).type
    assert "warnings" in shown.properties
    # each warning a whole Markdown line (a chip cuts a sentence: tests/test_browser_warnings.py looks)
    view = shown.properties["warnings"].view.to_json()
    assert view["name"] == "ListView" and view["items"]["name"] == "MarkdownView", view
