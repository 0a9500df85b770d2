"""``plan_raters`` on a real FiftyOne dataset: through the operator and its Python call, the curve equal to the pure
rater curve on the same matrix, the plan stored with the run (following a rename, gone with the run), every
refusal; and the plan's figure."""

from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.fiftyone

RATERS = ("r1", "r2", "r3", "r4")
CLASSES = ("a", "b", "c")
REPEATS = 8


MASK_RATERS = ("m1", "m2", "m3", "m4")


def _mask_dataset(fo, make_dataset, n: int = 8, targets: bool = True):
    """Four raters' masks of classes {0, 1, 2} (a shifted square, a few flipped pixels); rater m4 skips sample 0.
    ``targets=False``: no mask_targets, and from sample 3 on the classes are {0, 4, 5}."""
    rng = np.random.default_rng(2)
    samples = []
    for s in range(n):
        sample = fo.Sample(filepath=f"/nonexistent/pm{s}")
        for r in MASK_RATERS[: 3 if s == 0 else 4]:
            m = np.zeros((16, 18), np.uint8)
            y, x = rng.integers(2, 5, 2)
            m[y: y + 8, x: x + 9] = 1 + (s % 2)
            m[rng.random(m.shape) < 0.08] = rng.integers(0, 3)
            if not targets and s >= 3:
                m[m > 0] += 3
            sample[r] = fo.Segmentation(mask=m)
        samples.append(sample)
    ds = make_dataset(samples)
    if targets:
        ds.mask_targets = {r: {0: "background", 1: "road", 2: "car"} for r in MASK_RATERS}
        ds.save()
    return ds


def _codes(S: int = 40, seed: int = 5) -> tuple[np.ndarray, np.ndarray]:
    """A noisy crowd of 4 raters (right with probability .75), a few not assigned; and the truth."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 3, S)
    codes = np.where(rng.random((S, 4)) < 0.75, truth[:, None], rng.integers(0, 3, (S, 4)))
    codes[rng.random((S, 4)) < 0.15] = -1
    codes[:3, 2:] = -1
    return codes, truth


@pytest.fixture
def plan_ds(fo, make_dataset):
    codes, truth = _codes()
    samples = []
    for s, row in enumerate(codes):
        sample = fo.Sample(filepath=f"/nonexistent/plan{s:03d}", gold=fo.Classification(label=CLASSES[truth[s]]),
                           note="x")
        labels = []
        for r, c in zip(RATERS, row, strict=True):
            if c >= 0:
                sample[r] = fo.Classification(label=CLASSES[c])
                labels.append(fo.Classification(label=CLASSES[c], annotator=r))
        sample["crowd"] = fo.Classifications(classifications=labels)
        sample["assigned"] = [r for r, c in zip(RATERS, row, strict=True) if c >= 0]
        samples.append(sample)
    return make_dataset(samples), codes, truth


def _plan(ds, **params):
    import fiftyone.operators as foo

    return foo.execute_operator("@iaa/agreement/plan_raters", ctx=dict(view=ds.view(), params=params)).result


def _values(codes: np.ndarray) -> np.ndarray:
    return np.where(codes >= 0, codes, np.nan).astype(float)


def _same_curve(result: dict, curve) -> None:
    got = result["curve"]
    assert got["k"] == list(curve.ks)
    for name in ("mean", "low", "high"):
        assert np.allclose(np.asarray(got[name], dtype=float), getattr(curve, name), atol=1e-12, equal_nan=True)


def test_class_alpha_curve_equals_the_pure_curve_in_both_layouts(plan_ds):
    from agreement.fo.methods.class_agreement import compute_class_agreement
    from agreement.methods.planning.raters import alpha_statistic, rater_curve, raters_needed

    ds, codes, _ = plan_ds
    compute_class_agreement(ds, "byf", fields=list(RATERS), bootstrap=0)
    compute_class_agreement(ds, "bya", field="crowd", raters_field="assigned", bootstrap=0)
    pure = rater_curve(_values(codes), statistic=alpha_statistic(), repeats=REPEATS, seed=3)
    want = raters_needed(pure, target=0.7)
    for key in ("byf", "bya"):
        out = _plan(ds, key=key, repeats=REPEATS, seed=3, target=0.7)
        _same_curve(out, pure)
        assert out["statistic"] == "alpha" and out["projection"] == "spearman_brown"
        assert out["k_needed"] == want.k and out["measured"] == want.measured
        assert out["labels_needed"] == want.k * len(codes) and out["n_items"] == len(codes) and out["max_k"] == 4
        tc = out["target_curve"]
        assert tc["k"][-1] == 20 and tc["projected"][:3] == [False] * 3 and all(tc["projected"][3:])


def test_class_consensus_accuracy_against_the_crowd_and_against_gold(plan_ds):
    import fiftyone.operators as foo

    from agreement.fo.methods.consensus import compute_consensus
    from agreement.methods.planning.consensus_accuracy import consensus_accuracy_statistic, crowd_reference
    from agreement.methods.planning.raters import rater_curve

    ds, codes, truth = plan_ds
    compute_consensus(ds, "cons", fields=list(RATERS), method="majority")
    out = foo.get_operator("@iaa/agreement/plan_raters")(ds, key="cons", repeats=REPEATS, target=0.9)
    ref = crowd_reference(_values(codes), method="majority", n_classes=3)
    stored = dict(zip(ds.values("id"), ds.values("cons_consensus.label"), strict=True))
    assert [CLASSES[int(c)] for c in ref] == [stored[i] for i in ds.values("id")]  # the run's own consensus
    pure = rater_curve(_values(codes), statistic=consensus_accuracy_statistic(ref, n_classes=3), repeats=REPEATS)
    _same_curve(out, pure)
    assert out["statistic"] == "consensus_accuracy" and out["curve"]["k"][0] == 1 and out["projection"] == "none"
    assert "consensus of all 4 raters" in out["note"]
    assert out["statistics"] == ["consensus_accuracy", "alpha", "consensus_confidence"]
    conf = _plan(ds, key="cons", repeats=REPEATS, statistic="consensus_confidence")
    assert conf["curve"]["mean"][0] == 1.0 and conf["projection"] == "none"  # one rater's vote: confidence 1
    gold = _plan(ds, key="cons", repeats=REPEATS, gold_field="gold", target=0.95)
    pure = rater_curve(_values(codes), statistic=consensus_accuracy_statistic(truth, n_classes=3), repeats=REPEATS)
    _same_curve(gold, pure)
    assert "gold field 'gold'" in gold["note"]
    if gold["k_needed"] is None:
        assert "no projection" in gold["reason"]


def test_the_plan_is_stored_with_the_run_follows_a_rename_and_goes_with_it(plan_ds):
    import fiftyone.operators as foo

    from agreement.fo.methods.class_agreement import compute_class_agreement
    from agreement.fo.planning.raters import stored_plan
    from agreement.fo.runs.store import RunError

    ds, _, _ = plan_ds
    compute_class_agreement(ds, "st", fields=list(RATERS), bootstrap=0)
    assert stored_plan(ds, "st") is None
    out = _plan(ds, key="st", repeats=REPEATS)
    assert stored_plan(ds, "st") == out
    assert ds.load_run_results("st").alpha is not None  # the run's own results are kept beside the plan
    _plan(ds, key="st", repeats=REPEATS, target=0.6)
    assert stored_plan(ds, "st")["target"] == 0.6  # the latest plan replaces the earlier
    foo.execute_operator("@iaa/agreement/rename_agreement_run",
                         ctx=dict(view=ds.view(), params={"key": "st", "new_key": "st2"}))
    assert stored_plan(ds, "st2")["key"] == "st2" and stored_plan(ds, "st2")["target"] == 0.6
    foo.execute_operator("@iaa/agreement/delete_agreement_run", ctx=dict(view=ds.view(), params={"key": "st2"}))
    with pytest.raises(RunError, match="no agreement run 'st2'"):
        stored_plan(ds, "st2")
    compute_class_agreement(ds, "st2", fields=list(RATERS), bootstrap=0)
    assert stored_plan(ds, "st2") is None


def test_refusals_name_the_run_and_what_to_do(plan_ds, fo, make_dataset):
    import fiftyone.operators as foo

    from agreement.fo.methods.class_agreement import compute_class_agreement
    from agreement.fo.planning.raters import plan_raters
    from agreement.fo.runs.store import RunError

    ds, _, _ = plan_ds
    compute_class_agreement(ds, "ref", fields=list(RATERS), bootstrap=0)
    compute_class_agreement(ds, "tags", field="crowd", raters_field="assigned", labels="tags", bootstrap=0)
    with pytest.raises(RunError, match="has no agreement run 'nope'"):
        plan_raters(ds, "nope")
    with pytest.raises(ValueError, match="'nope'"):  # the Python call lists the runs the form offers
        foo.get_operator("@iaa/agreement/plan_raters")(ds, key="nope")
    with pytest.raises(RunError, match="'tags' compares tag sets"):
        plan_raters(ds, "tags")
    with pytest.raises(ValueError, match=r"offers the statistics \['alpha'\], not 'kappa'"):
        foo.get_operator("@iaa/agreement/plan_raters")(ds, key="ref", statistic="kappa")
    with pytest.raises(ValueError, match="consensus_accuracy needs a gold_field"):
        plan_raters(ds, "ref", statistic="consensus_accuracy")
    with pytest.raises(ValueError, match="gold_field 'golden' is not a field .* Classification fields are: .*'gold'"):
        plan_raters(ds, "ref", gold_field="golden")
    with pytest.raises(ValueError, match="gold_field 'crowd' holds Classifications, not Classification"):
        plan_raters(ds, "ref", gold_field="crowd")
    with pytest.raises(ValueError, match="target must be a number in"):
        plan_raters(ds, "ref", target=1.5)
    # one rater per sample: nothing to subsample
    alone = make_dataset([fo.Sample(filepath=f"/nonexistent/alone{s}", **{RATERS[s % 2]: fo.Classification(label="a")})
                          for s in range(6)])
    compute_class_agreement(alone, "one", fields=list(RATERS[:2]), bootstrap=0)
    with pytest.raises(ValueError, match="run 'one': no sample has labels from 2 or more of its 2 raters"):
        plan_raters(alone, "one")


def test_a_method_without_the_hook_is_refused_naming_those_with_it(fo, make_dataset):
    from agreement.fo.methods.mask_consensus import compute_mask_consensus
    from agreement.fo.planning.raters import plan_raters
    from agreement.fo.runs.store import RunError

    ds = _mask_dataset(fo, make_dataset, n=3)
    compute_mask_consensus(ds, "mc", fields=list(MASK_RATERS))
    with pytest.raises(RunError, match="'mc' is a compute_mask_consensus run .* it plans runs of: .*compute_class_agreement"
                                       ".*compute_consensus.*compute_geometry_agreement.*compute_kalos"
                                       ".*compute_mask_agreement"
                                       ".*compute_ot_agreement"):
        plan_raters(ds, "mc")


def test_the_plan_figure_draws_the_band_the_projection_the_target_and_k(plan_ds):
    from agreement.fo.methods.class_agreement import compute_class_agreement
    from agreement.reporting.figures.planning import plan_figure

    ds, _, _ = plan_ds
    compute_class_agreement(ds, "fig", fields=list(RATERS), bootstrap=0)
    out = _plan(ds, key="fig", repeats=REPEATS, target=0.7)
    fig = plan_figure(out)
    names = [t.get("name", "") for t in fig["traces"]]
    assert fig["name"] == "plan_raters" and any(n.startswith("target") for n in names)
    assert any(t.get("line", {}).get("dash") == "dash" for t in fig["traces"])  # the projected part
    assert any(t.get("fill") == "toself" for t in fig["traces"])                 # the interval band
    if out["k_needed"] is not None:
        marker = next(t for t in fig["traces"] if t.get("mode") == "markers")
        assert marker["x"] == [out["k_needed"]]


def test_kalos_alpha_with_every_rater_is_the_runs_global_alpha(fo, make_dataset):
    from agreement.fo.methods.kalos import compute_kalos
    from agreement.fo.planning.raters import plan_raters

    rng = np.random.default_rng(1)
    samples = []
    for s in range(24):
        objects = [(rng.uniform(0, 0.6), rng.uniform(0, 0.6), str(rng.choice(["a", "b"])))
                   for _ in range(int(rng.integers(0, 4)))]
        sample = fo.Sample(filepath=f"/nonexistent/kalos{s:02d}")
        for r in RATERS:
            dets = [fo.Detection(label=c if rng.random() < 0.8 else "c",
                                 bounding_box=[x + rng.normal(0, 0.01), y + rng.normal(0, 0.01), 0.2, 0.2])
                    for x, y, c in objects if rng.random() < 0.85]
            sample[r] = fo.Detections(detections=dets)
        samples.append(sample)
    ds = make_dataset(samples)
    run = compute_kalos(ds, "kal", fields=list(RATERS))
    out = _plan(ds, key="kal", repeats=REPEATS)
    assert out["curve"]["k"] == [2, 3, 4] and out["projection"] == "spearman_brown"
    assert out["curve"]["mean"][-1] == pytest.approx(run["global_alpha"], abs=1e-12)
    assert "units are kept from the run's clustering" in out["note"]
    with pytest.raises(ValueError, match="KαLOS run: it offers α of its units only"):
        plan_raters(ds, "kal", gold_field="x")


@pytest.mark.parametrize("level", ["ordinal", "interval"])
def test_alpha_at_every_rater_is_the_runs_alpha_at_its_level(fo, make_dataset, level):
    """Complete data with numeric classes: the curve at k = every rater is the run's α (its class order and, at
    the interval level, its class numbers)."""
    from agreement.fo.methods.class_agreement import compute_class_agreement

    codes, _ = _codes(S=30, seed=9)
    codes = np.where(codes < 0, 0, codes)
    names = ("1", "2", "7")
    ds = make_dataset([fo.Sample(filepath=f"/nonexistent/lv{s}", **{r: fo.Classification(label=names[c])
                                                                   for r, c in zip(RATERS, row, strict=True)})
                       for s, row in enumerate(codes)])
    run = compute_class_agreement(ds, "lv", fields=list(RATERS), level=level, bootstrap=0)
    out = _plan(ds, key="lv", repeats=2)
    assert out["curve"]["mean"][-1] == pytest.approx(run["alpha"], abs=1e-12)
    assert f"({level})" in out["note"]


def test_kalos_draws_leave_out_the_units_only_dropped_raters_drew():
    from agreement.fo.planning.plan_kalos import KalosUnits
    from agreement.methods.planning.raters import alpha_statistic

    X = 2.0  # no_object
    units = np.array([[0, 0, X], [X, X, 1], [1, 1, 1],      # sample 0: unit 1 drawn by rater 2 only
                      [0, 1, 0], [X, X, X]], dtype=float)   # sample 1: an empty sample's no_object unit
    drawn = units != X
    stat = KalosUnits(units, np.array([0, 3, 5]), drawn, np.array([False] * 4 + [True]))
    keep_01 = np.array([[1.0, 1.0, np.nan], [1.0, 1.0, np.nan]])
    want = alpha_statistic()(np.array([[0, 0], [1, 1], [0, 1], [X, X]], dtype=float))
    assert stat(keep_01, items=np.array([0, 1])) == pytest.approx(want, abs=1e-12)
    assert stat(np.ones((2, 3))) == pytest.approx(alpha_statistic()(units), abs=1e-12)
    # a resampled draw repeats a sample's units
    twice = alpha_statistic()(np.array([[0, 0], [1, 1], [0, 0], [1, 1]], dtype=float))
    assert stat(keep_01, items=np.array([0, 0])) == pytest.approx(twice, abs=1e-12)


def _statistic_of_every_rating(ds, key: str, name: str, raters: tuple[str, ...] | None = None) -> float:
    """The run's planning statistic on its whole data (every rater of every sample: what k = all raters keeps; the
    curve's last k keeps only the samples with that many raters), or on the ratings of ``raters`` only."""
    from agreement.fo.planning.raters import _planning_input
    from agreement.fo.runs.store import get_agreement_run_info

    data = _planning_input(ds, get_agreement_run_info(ds, key), None, 0)
    values = data.values.copy()
    if raters is not None:
        values[:, [r not in raters for r in data.raters]] = np.nan
    return float(data.statistics[name](values, items=np.arange(len(values))))


def _box_dataset(fo, make_dataset):
    """20 samples of 1 to 3 objects, four raters' noisy boxes (each missed 15 % of the time); two raters only on
    the first three samples."""
    rng = np.random.default_rng(4)
    samples = []
    for s in range(20):
        objects = [(rng.uniform(0, 0.6), rng.uniform(0, 0.6)) for _ in range(int(rng.integers(1, 4)))]
        sample = fo.Sample(filepath=f"/nonexistent/ot{s:02d}")
        for r in RATERS[: 2 if s < 3 else 4]:
            sample[r] = fo.Detections(detections=[
                fo.Detection(label="a", bounding_box=[x + rng.normal(0, 0.03), y + rng.normal(0, 0.03), 0.2, 0.2])
                for x, y in objects if rng.random() < 0.85])
        samples.append(sample)
    return make_dataset(samples)


def test_ot_alpha_with_every_rater_is_the_runs_alpha_ot(fo, make_dataset):
    from agreement.fo.methods.ot_agreement import compute_ot_agreement
    from agreement.fo.planning.raters import plan_raters

    ds = _box_dataset(fo, make_dataset)
    run = compute_ot_agreement(ds, "ot", fields=list(RATERS))
    out = _plan(ds, key="ot", repeats=REPEATS)
    assert out["statistic"] == "alpha_ot" and out["statistics"] == ["alpha_ot"] and out["projection"] == "spearman_brown"
    assert out["curve"]["k"] == [2, 3, 4] and out["n_items"] == 20 and out["curve"]["n_items"] == [20, 17, 17]
    assert _statistic_of_every_rating(ds, "ot", "alpha_ot") == pytest.approx(run["alpha_ot"], abs=1e-9)
    assert all(lo <= m <= hi <= 1.0 for lo, m, hi in zip(out["curve"]["low"], out["curve"]["mean"],
                                                          out["curve"]["high"], strict=True))
    assert "chance cost D_e" in out["note"] and "fixed, not recomputed per draw" in out["note"]
    # raters r1 and r3 only: the mean cost of their pairs (a run of those two), over the first run's chance cost
    two = compute_ot_agreement(ds, "ot13", fields=["r1", "r3"])
    kept = _statistic_of_every_rating(ds, "ot", "alpha_ot", ("r1", "r3"))
    assert (1 - kept) * run["expected_cost"] == pytest.approx(two["observed_cost"], abs=1e-9)
    with pytest.raises(ValueError, match="OT agreement run: it offers αOT only"):
        plan_raters(ds, "ot", gold_field="x")


def test_ot_statistic_keeps_the_pairs_of_kept_raters():
    from agreement.fo.planning.plan_ot import OTPairCosts

    # sample 0: pairs (0,1) cost .1, (0,2) .3, (1,2) .5; sample 1: pair (0,1) cost .2; chance cost .8
    stat = OTPairCosts(np.array([0, 3, 4]), np.array([0, 0, 1, 0]), np.array([1, 2, 2, 1]),
                       np.array([0.1, 0.3, 0.5, 0.2]), 0.8)
    assert stat(np.ones((2, 3))) == pytest.approx(1 - np.mean([0.1, 0.3, 0.5, 0.2]) / 0.8, abs=1e-12)
    keep = np.array([[1.0, np.nan, 1.0], [1.0, 1.0, np.nan]])
    assert stat(keep, items=np.array([0, 1])) == pytest.approx(1 - 0.25 / 0.8, abs=1e-12)
    assert stat(keep[1:], items=np.array([1])) == pytest.approx(1 - 0.2 / 0.8, abs=1e-12)  # row 0 of the draw: sample 1
    assert np.isnan(stat(keep[:1], items=np.array([1])))  # raters 0 and 2 kept: sample 1 has no pair of them
    assert np.isnan(stat(np.array([[1.0, np.nan, np.nan]]), items=np.array([0])))


@pytest.mark.parametrize("n_pixels, targets, chunk", [(0, True, 200), (60, True, 3), (60, False, 3)])
def test_mask_pixel_alpha_with_every_rater_is_the_runs_pixel_alpha(fo, make_dataset, monkeypatch, n_pixels, targets,
                                                                    chunk):
    """Every pixel or the run's sampled pixels; read in one part or in parts of 3 samples (without mask_targets,
    the parts find different classes: {0, 1, 2}, then {0, 4, 5}; aligned when joined)."""
    from agreement.fo.methods.mask_agreement import compute_mask_agreement
    from agreement.fo.planning import plan_mask
    from agreement.fo.planning.raters import plan_raters

    monkeypatch.setattr(plan_mask, "CHUNK", chunk)
    ds = _mask_dataset(fo, make_dataset, targets=targets)
    run = compute_mask_agreement(ds, "mk", fields=list(MASK_RATERS), n_pixels=n_pixels)
    out = _plan(ds, key="mk", repeats=REPEATS)
    assert out["statistic"] == "alpha" and out["curve"]["k"] == [2, 3, 4] and out["curve"]["n_items"] == [8, 8, 7]
    assert _statistic_of_every_rating(ds, "mk", "alpha") == pytest.approx(run["alpha"], abs=1e-9)
    assert all(lo <= m <= hi <= 1.0 for lo, m, hi in zip(out["curve"]["low"], out["curve"]["mean"],
                                                          out["curve"]["high"], strict=True))
    assert ("every pixel" if not n_pixels else f"{n_pixels} sampled pixels") in out["note"]
    with pytest.raises(ValueError, match="mask agreement run: it offers pixel α only"):
        plan_raters(ds, "mk", gold_field="x")


def test_pixel_alpha_of_kept_raters_is_alpha_of_the_pixels_as_units():
    """The pair coincidences of a draw give Krippendorff's α of the kept raters' pixels, every pixel a unit."""
    from agreement.fo.planning.plan_mask import PixelPairCoincidences, pair_coincidences
    from agreement.methods.planning.raters import alpha_statistic

    rng = np.random.default_rng(0)
    codes = [rng.integers(0, 3, (3, 30)), rng.integers(0, 3, (3, 25))]
    codes[1][2] = -1  # rater 2 drew no mask on sample 1
    first, second = np.triu_indices(3, 1)
    stat = PixelPairCoincidences(np.stack([pair_coincidences(c, 3) for c in codes]), first, second)
    keep = np.array([[1.0, np.nan, 1.0], [1.0, 1.0, np.nan]])
    units = np.concatenate([np.where(keep[0][:, None] == 1, codes[0], np.nan).T,
                            np.where(keep[1][:, None] == 1, codes[1], np.nan).T]).astype(float)
    assert stat(keep, items=np.array([0, 1])) == pytest.approx(alpha_statistic()(units), abs=1e-12)
    every = np.concatenate([codes[0].T, np.where(codes[1] >= 0, codes[1], np.nan).T]).astype(float)
    assert stat(np.array([[1.0] * 3, [1.0, 1.0, np.nan]])) == pytest.approx(alpha_statistic()(every), abs=1e-12)


def test_geometry_sigma_and_distance_alpha_with_every_rater_are_the_runs(fo, make_dataset):
    from agreement.fo.methods.geometry_agreement import compute_geometry_agreement
    from agreement.fo.planning.raters import plan_raters
    from agreement.fo.runs.store import RunError

    ds = _box_dataset(fo, make_dataset)
    run = compute_geometry_agreement(ds, "geo", fields=list(RATERS), bootstrap=None)
    out = _plan(ds, key="geo", repeats=REPEATS, target=0.5)
    assert out["statistic"] == "sigma" and out["statistics"] == ["sigma", "distance_alpha"]
    assert out["projection"] == "none" and out["curve"]["k"] == [2, 3, 4] and out["n_items"] == 20
    assert all(0.0 <= lo <= m <= hi <= 1.0 for lo, m, hi in zip(out["curve"]["low"], out["curve"]["mean"],
                                                                 out["curve"]["high"], strict=True))
    assert _statistic_of_every_rating(ds, "geo", "sigma") == pytest.approx(run["sigma"], abs=1e-12)
    assert _statistic_of_every_rating(ds, "geo", "distance_alpha") == pytest.approx(run["distance_alpha"], abs=1e-9)
    # raters r2 and r4 only: their matched distances (a run of those two), against the first run's chance mean
    two = compute_geometry_agreement(ds, "geo24", fields=["r2", "r4"], bootstrap=None)
    kept = _statistic_of_every_rating(ds, "geo", "distance_alpha", ("r2", "r4"))
    assert (1 - kept) * run["mean_between"] == pytest.approx(two["mean_within"], abs=1e-9)
    alpha = plan_raters(ds, "geo", statistic="distance_alpha", repeats=REPEATS)
    assert alpha.projection == "spearman_brown" and "chance mean" in alpha.note
    with pytest.raises(ValueError, match="geometry agreement run: it offers σ and distance α"):
        plan_raters(ds, "geo", gold_field="x")
    ds.delete_samples(ds.first())  # the run's samples changed: refused, not planned on the rest
    with pytest.raises(RunError, match="computed on 20 samples; its view now has 19"):
        plan_raters(ds, "geo")
