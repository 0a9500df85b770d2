"""Semantic masks on disk (``Segmentation.mask_path``) are decoded once per run, in a thread pool
(:mod:`agreement.fo.storage.mask_reading`): as many decodes as mask files, none through FiftyOne's own
``get_mask``, the same numbers in one thread as in several, and a missing or broken file named with its
sample, field and path."""

from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.fiftyone

RATERS = ("m1", "m2", "m3")
OPERATORS = ("compute_mask_agreement", "compute_mask_consensus")


def _mask(rng: np.random.Generator, shape=(36, 44)) -> np.ndarray:
    m = np.zeros(shape, np.uint8)
    y, x = rng.integers(4, 14, 2)
    m[y:y + 16, x:x + 20] = 1
    m[20:32, int(rng.integers(20, 30)):40] = 2
    flip = rng.random(shape) < 0.02
    m[flip] = rng.integers(0, 3, int(flip.sum()))
    return m


@pytest.fixture
def disk_ds(fo, make_dataset, tmp_path):
    """Seven samples: every rater's mask in a PNG file, except one stored mask and one rater not assigned."""
    import cv2

    rng = np.random.default_rng(5)
    samples, n_files = [], 0
    for s in range(7):
        sample = fo.Sample(filepath=f"/nonexistent/disk{s}")
        for r in RATERS:
            if (s, r) == (2, "m3"):
                continue  # not assigned: no label, no file
            m = _mask(rng)
            if (s, r) == (4, "m1"):
                sample[r] = fo.Segmentation(mask=m)  # stored in the database: nothing to decode
                continue
            path = str(tmp_path / f"{r}_{s}.png")
            cv2.imwrite(path, m)
            sample[r] = fo.Segmentation(mask_path=path)
            n_files += 1
        samples.append(sample)
    ds = make_dataset(samples)
    ds.mask_targets = {r: {0: "background", 1: "a", 2: "b"} for r in RATERS}
    ds.save()
    return ds, n_files


def _run(ds, name: str, key: str) -> dict:
    import fiftyone.operators as foo

    return foo.execute_operator(f"@iaa/agreement/{name}",
                                ctx=dict(view=ds.view(), params=dict(fields=list(RATERS), key=key))).result


def _written(ds, key: str) -> dict:
    out = {}
    for f in sorted(ds.get_field_schema()):
        if f.startswith(f"{key}_"):
            vals = ds.values(f)
            out[f] = [v.mask.tobytes() if hasattr(v, "mask") and v.mask is not None else v for v in vals]
    return out


@pytest.mark.parametrize("name", OPERATORS)
def test_each_mask_file_is_decoded_once_per_run(disk_ds, monkeypatch, name):
    import fiftyone.core.labels as fol

    from agreement.fo.storage import mask_reading

    ds, n_files = disk_ds
    decoded: list[str] = []
    decode = mask_reading.decode_mask
    monkeypatch.setattr(mask_reading, "decode_mask", lambda path: decoded.append(path) or decode(path))

    def refuse(path):
        raise AssertionError(f"mask {path} decoded through FiftyOne's get_mask, besides the run's one decode")

    monkeypatch.setattr(fol, "_read_mask", refuse)
    _run(ds, name, "once")
    assert len(decoded) == n_files == len(set(decoded))


@pytest.mark.parametrize("name", OPERATORS)
def test_decoding_in_threads_gives_the_numbers_of_one_thread(disk_ds, monkeypatch, name):
    from agreement.fo.storage import mask_reading

    ds, _ = disk_ds
    monkeypatch.setattr(mask_reading, "DECODE_THREADS", 1)
    one = _run(ds, name, "one")
    monkeypatch.setattr(mask_reading, "DECODE_THREADS", 4)
    many = _run(ds, name, "many")
    assert one.keys() == many.keys()
    for k in one:
        if one[k] == "one" and many[k] == "many":
            continue  # the run key
        assert one[k] == many[k] or (one[k] != one[k] and many[k] != many[k]), k  # NaN == NaN here
    a, b = _written(ds, "one"), _written(ds, "many")
    assert [k.replace("one_", "", 1) for k in a] == [k.replace("many_", "", 1) for k in b]
    for (_, x), (_, y) in zip(sorted(a.items()), sorted(b.items()), strict=True):
        assert x == y or np.array_equal(np.array(x, dtype=object), np.array(y, dtype=object))


def test_decode_masks_keeps_order_and_skips_rows_without_a_file(tmp_path):
    import cv2

    from agreement.fo.storage.mask_reading import decode_masks

    masks = [np.full((5, 7), k, np.uint8) for k in range(6)]
    paths = []
    for k, m in enumerate(masks):
        paths.append(str(tmp_path / f"{k}.png"))
        cv2.imwrite(paths[-1], m)
    rows = [paths[0], None, paths[1], paths[2], None, paths[3], paths[4], paths[5]]
    for threads in (1, 3):
        got = decode_masks(rows, [f"row {i}" for i in range(len(rows))], threads=threads)
        assert got[1] is None and got[4] is None
        want = [0, None, 1, 2, None, 3, 4, 5]
        assert [None if g is None else int(g[0, 0]) for g in got] == want


def test_a_missing_or_broken_mask_file_is_named(tmp_path):
    from agreement.core.validation import AnnotationError
    from agreement.fo.storage.mask_reading import decode_masks

    broken = tmp_path / "broken.png"
    broken.write_bytes(b"not a png")
    where = ["sample 'a', field 'm1'", "sample 'b', field 'm2'"]
    with pytest.raises(AnnotationError, match=r"sample 'b', field 'm2': the mask file .*nowhere\.png' does not exist"):
        decode_masks([None, str(tmp_path / "nowhere.png")], where)
    with pytest.raises(AnnotationError, match=r"sample 'a', field 'm1': the mask file .*broken\.png' cannot be decoded"):
        decode_masks([str(broken), None], where, threads=2)


def test_a_missing_mask_file_stops_the_run_before_anything_is_written(disk_ds):
    from agreement.core.validation import AnnotationError

    ds, _ = disk_ds
    sample = ds.first()
    sample["m2"] = type(sample["m2"])(mask_path="/nonexistent/nowhere.png")
    sample.save()
    from agreement.fo.methods.mask_agreement import compute_mask_agreement

    with pytest.raises(AnnotationError, match=r"sample 'disk0' .*field 'm2'.*nowhere\.png' does not exist"):
        compute_mask_agreement(ds, "missing", fields=list(RATERS))
    assert not any(f.startswith("missing_") for f in ds.get_field_schema())
