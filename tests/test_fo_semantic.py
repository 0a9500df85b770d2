"""Semantic masks (Segmentation rater fields) on a real FiftyOne dataset: multi-class STAPLE consensus through
compute_mask_consensus equal to SimpleITK's MultiLabelSTAPLE, bad masks refused before anything is written."""

from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.fiftyone

sitk = pytest.importorskip("SimpleITK")

RATERS = ("s1", "s2", "s3")


def _masks(n: int = 6, seed: int = 1, shape=(40, 48)) -> list[list[np.ndarray]]:
    """Per sample three raters' masks of classes {0, 1, 2}: a truth of two rectangles, each rater's edges moved
    and a few pixels flipped."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        truth = np.zeros(shape, np.uint8)
        truth[5:25, 8:30] = 1
        truth[20:35, 25:45] = 2
        per = []
        for _ in RATERS:
            m = np.roll(truth, tuple(rng.integers(-2, 3, 2)), axis=(0, 1)).copy()
            flip = rng.random(shape) < 0.03
            m[flip] = rng.integers(0, 3, int(flip.sum()))
            per.append(m)
        out.append(per)
    return out


@pytest.fixture
def seg_ds(fo, make_dataset):
    masks = _masks()
    samples = []
    for s, per in enumerate(masks):
        sample = fo.Sample(filepath=f"/nonexistent/seg{s}")
        for r, m in zip(RATERS, per):
            sample[r] = fo.Segmentation(mask=m)
        samples.append(sample)
    ds = make_dataset(samples)
    ds.mask_targets = {r: {0: "background", 1: "road", 2: "car"} for r in RATERS}
    ds.save()
    return ds, masks


def _op(ds, name: str, **params):
    import fiftyone.operators as foo

    return foo.execute_operator(f"@iaa/agreement/{name}", ctx=dict(view=ds.view(), params=params)).result


def test_mask_consensus_of_segmentations_equals_simpleitk(seg_ds):
    ds, masks = seg_ds
    res = _op(ds, "compute_mask_consensus", key="st", fields=list(RATERS))
    assert res["n_consensus"] == len(masks) and res["n_skipped"] == 0
    got = dict(zip(ds.values("filepath"), ds.values("st_consensus")))
    for s, per in enumerate(masks):
        ref = sitk.GetArrayFromImage(sitk.MultiLabelSTAPLE([sitk.GetImageFromArray(m) for m in per]))
        mine = got[f"/nonexistent/seg{s}"].get_mask()
        decided = ref != 3  # ITK's undecided label (max + 1); ours gives those pixels the raters' vote
        assert (mine[decided] == ref[decided]).all()
    info = ds.load_run_results("st")
    sens = info.detail["class_sensitivity"]
    assert set(sens) == set(RATERS) and all(0.8 < v <= 1 for r in RATERS for v in sens[r].values())
    assert info.summary["mean_sensitivity"] > 0.8
    ds.delete_run("st")
    assert "st_consensus" not in ds.get_field_schema()


def test_same_numbers_in_any_shard_size(seg_ds):
    from agreement.fo.methods.mask_consensus import compute_mask_consensus

    ds, _ = seg_ds
    a = compute_mask_consensus(ds, "a", fields=list(RATERS))
    b = compute_mask_consensus(ds, "b", fields=list(RATERS), shard_size=2)
    assert a["mean_sensitivity"] == pytest.approx(b["mean_sensitivity"], abs=1e-12)


def test_bad_masks_are_refused_naming_sample_and_rater(fo, seg_ds):
    from agreement.fo.methods.mask_consensus import compute_mask_consensus

    ds, _ = seg_ds
    before = set(ds.get_field_schema())
    sample = ds.first()
    sample["s2"] = fo.Segmentation(mask=np.zeros((10, 10), np.uint8))
    sample.save()
    with pytest.raises(Exception, match=r"seg0.*differ in shape.*s2: 10x10"):
        compute_mask_consensus(ds, "bad", fields=list(RATERS))
    sample["s2"] = fo.Segmentation(mask=np.full((40, 48), 7, np.uint8))
    sample.save()
    with pytest.raises(Exception, match=r"seg0.*rater 's2'.*not in the dataset's mask_targets.*7 \(1920 pixels\)"):
        compute_mask_consensus(ds, "bad", fields=list(RATERS))
    assert set(ds.get_field_schema()) == before and "bad" not in ds.list_runs()


def test_mask_agreement_pixel_alpha_equals_krippendorff_and_dice_by_hand(seg_ds):
    krippendorff = pytest.importorskip("krippendorff")
    ds, masks = seg_ds
    res = _op(ds, "compute_mask_agreement", key="ma", fields=list(RATERS), n_pixels=0)
    data = np.concatenate([np.stack([m.reshape(-1) for m in per]) for per in masks], axis=1).astype(float)
    assert res["alpha"] == pytest.approx(krippendorff.alpha(reliability_data=data, level_of_measurement="nominal"),
                                         abs=1e-9)
    first = dict(zip(ds.values("filepath"), ds.values("ma_dice")))["/nonexistent/seg0"]
    a, b, c = masks[0]
    want = []
    for x, y in ((a, b), (a, c), (b, c)):
        per = [2 * ((x == k) & (y == k)).sum() / ((x == k).sum() + (y == k).sum()) for k in (0, 1, 2)
               if (x == k).any() or (y == k).any()]
        want.append(np.mean(per))
    assert first == pytest.approx(np.mean(want))
    detail = ds.load_run_results("ma").detail
    assert detail["class_alpha"]["classes"] == [0, 1, 2]
    assert len(detail["pair_class_dice"]["dice"]) == len(masks) * 3 * 3
    ds.delete_run("ma")
    assert not any(f.startswith("ma_") for f in ds.get_field_schema())


def test_mask_agreement_sampled_alpha_is_the_same_in_any_shard_size_and_order(seg_ds):
    from agreement.fo.methods.mask_agreement import compute_mask_agreement

    ds, _ = seg_ds
    a = compute_mask_agreement(ds, "x1", fields=list(RATERS), n_pixels=500)
    b = compute_mask_agreement(ds.sort_by("filepath", reverse=True), "x2", fields=list(RATERS), n_pixels=500,
                               shard_size=2)
    assert a["alpha"] == pytest.approx(b["alpha"], abs=1e-12) and a["dice"] == pytest.approx(b["dice"], abs=1e-12)


def test_operators_that_do_not_read_masks_say_which_do(seg_ds):
    from agreement.fo.methods.kalos import compute_kalos

    ds, _ = seg_ds
    with pytest.raises(ValueError, match="Segmentation fields.*compute_mask_agreement or compute_mask_consensus"):
        compute_kalos(ds, "k", fields=list(RATERS))


def test_a_rater_field_without_any_mask_is_refused(fo, seg_ds):
    from agreement.fo.methods.mask_agreement import compute_mask_agreement

    ds, _ = seg_ds
    ds.add_sample_field("s4", fo.EmbeddedDocumentField, embedded_doc_type=fo.Segmentation)
    with pytest.raises(ValueError, match=r"\['s4'\] hold no mask"):
        compute_mask_agreement(ds, "bad", fields=[*RATERS, "s4"])
    assert "bad" not in ds.list_runs()
