"""Crowd judgement files: the repairs on small files, and the shared adultcontent3 crowd (alpha after the
repairs against the `krippendorff` package)."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from agreement.io.judgements import read_categories, read_judgements
from agreement.methods.classes import LEVELS, bootstrap_alpha, class_alpha

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
LABELS = DATA / "adultcontent3_hcomp2010_labels.tsv"
CATEGORIES = DATA / "adultcontent3_hcomp2010_categories.txt"


def _write(tmp_path, text, name="j.tsv"):
    p = tmp_path / name
    p.write_text(text)
    return p


# ---------------------------------------------------------------------------------------------------- small files
def test_repeated_policies(tmp_path):
    p = _write(tmp_path, "w1\ti1\tA\nw1\ti1\tB\nw1\ti1\tB\nw1\ti1\tA\nw2\ti1\tB\n\nw2\ti2\tA\nw2\ti2\tB\n"
                         "w1\ti2\tA\n")
    got = {}
    for policy in ("mode", "first", "last"):
        r, rep = read_judgements(p, repeated=policy)
        assert r.classes == ("A", "B") and r.raters == ("w1", "w2") and list(r.sample_ids) == ["i1", "i2"]
        got[policy] = r.codes.tolist()
        assert rep.n_repeated_pairs == 2 and rep.n_repeated_judgements == 4 and rep.n_conflicting_pairs == 2
        assert rep.n_judgements == 8 and rep.repeated == policy and rep.repeated_examples[0].startswith("line 1:")
    # (i1, w1): A, B, B, A: a tie, the latest is A; (i2, w2): A, B: a tie, the latest is B
    assert got["mode"] == [[0, 1], [0, 1]]
    assert got["first"] == [[0, 1], [0, 0]]
    assert got["last"] == [[0, 1], [0, 1]]
    with pytest.raises(ValueError, match=r"2 \(worker, item\) pairs are judged more than once.*repeated='mode'"):
        read_judgements(p, repeated="error")


def test_mode_keeps_the_most_frequent_label(tmp_path):
    p = _write(tmp_path, "w\ti\tB\nw\ti\tA\nw\ti\tB\nw\ti\tA\nw\ti\tA\nv\ti\tB\n")
    r, _ = read_judgements(p)
    assert r.codes.tolist() == [[1, 0]]  # raters sorted: v, w


def test_unknown_label_policies(tmp_path):
    p = _write(tmp_path, "w1\ti1\tA\nw2\ti1\tZ\nw2\ti2\tB\nw1\ti2\tZ\nw1\ti2\tB\n")
    with pytest.raises(ValueError, match=r"2 judgements carry labels.*\{'Z': 2\}.*line 2:.*unknown_labels='drop'"):
        read_judgements(p, ["A", "B"])
    r, rep = read_judgements(p, ["A", "B"], unknown_labels="drop")
    assert r.codes.tolist() == [[0, -1], [1, 1]]
    assert r.assigned.all()  # w2 judged i1 (with an unknown label): assigned, value missing
    assert rep.n_unknown == 2 and rep.n_dropped == 2 and rep.unknown_counts == {"Z": 2}
    assert rep.n_repeated_pairs == 0  # dropped before repeats are resolved
    r, rep = read_judgements(p, ["A", "B"], unknown_labels="keep")
    assert r.classes == ("A", "B", "Z") and r.codes.tolist() == [[0, 2], [1, 1]] and rep.n_dropped == 0
    assert rep.n_repeated_pairs == 1 and "unknown_labels='keep'" in rep.summary()


def test_categories_file_order_and_malformed_lines(tmp_path):
    cats = _write(tmp_path, "low\nmid\nhigh", "cats.txt")  # no final newline: the last category still counts
    assert read_categories(cats) == ("low", "mid", "high")
    p = _write(tmp_path, "w\ti\thigh\nv\ti\tlow\n")
    r, _ = read_judgements(p, cats)
    assert r.classes == ("low", "mid", "high") and r.codes.tolist() == [[0, 2]]
    with pytest.raises(ValueError, match="line 2: expected worker<TAB>item<TAB>label"):
        read_judgements(_write(tmp_path, "w\ti\tA\nw\ti\n", "bad.tsv"))
    with pytest.raises(ValueError, match="repeated must be"):
        read_judgements(p, repeated="mean")
    with pytest.raises(ValueError, match="listed twice"):
        read_categories(_write(tmp_path, "a\nb\na\n", "dup.txt"))


def test_line_order_changes_nothing_with_mode(tmp_path):
    rng = np.random.default_rng(0)
    lines = [f"w{rng.integers(8)}\ti{rng.integers(10)}\t{'ABC'[rng.integers(3)]}" for _ in range(120)]
    uniq = list(dict.fromkeys((ln.rsplit("\t", 1)[0], ln) for ln in lines))  # keep repeated pairs conflict-free
    first = {}
    for key, ln in uniq:
        first.setdefault(key, ln)
    body = list(first.values()) * 2
    a, _ = read_judgements(_write(tmp_path, "\n".join(body) + "\n", "a.tsv"))
    b, _ = read_judgements(_write(tmp_path, "\n".join(body[::-1]) + "\n", "b.tsv"))
    np.testing.assert_array_equal(a.codes, b.codes)


# ---------------------------------------------------------------------------------------------------- shared data
needs_data = pytest.mark.skipif(not LABELS.exists(), reason=f"shared data absent: {LABELS} (see ../shared/data)")


@needs_data
@pytest.mark.shared_data
def test_real_file_repairs_are_reported():
    with pytest.raises(ValueError, match=r"737 judgements carry labels.*\{'B': 737\}"):
        read_judgements(LABELS, ("G", "P", "R", "X"))
    with pytest.raises(ValueError, match=r"8,039 \(worker, item\) pairs.*9,050 extra judgements"):
        read_judgements(LABELS, CATEGORIES, repeated="error")
    r, rep = read_judgements(LABELS, ("G", "P", "R", "X"), unknown_labels="keep")
    assert rep.n_judgements == 44373 and rep.n_workers == 338 and rep.n_items == 496
    assert rep.n_repeated_pairs == 8039 and rep.n_repeated_judgements == 9050 and rep.n_unknown == 737
    # the categories file lists B on its last line (without a final newline), unlike what the README says
    assert read_categories(CATEGORIES) == ("G", "P", "R", "X", "B")


@needs_data
@pytest.mark.shared_data
@pytest.mark.parametrize("categories, unknown", [(("G", "P", "R", "X"), "drop"), (CATEGORIES, "error")])
def test_real_alpha_equals_the_krippendorff_package(categories, unknown):
    krippendorff = pytest.importorskip("krippendorff")
    r, rep = read_judgements(LABELS, categories, unknown_labels=unknown)
    assert r.codes.shape == (496, 338)
    rel = np.where(r.codes >= 0, r.codes, np.nan).T.astype(float)
    for level in LEVELS:
        t = time.perf_counter()
        res = class_alpha(r.codes, level, n_classes=len(r.classes))
        elapsed = time.perf_counter() - t
        ref = krippendorff.alpha(reliability_data=rel, level_of_measurement=level)
        assert res.alpha == pytest.approx(ref, abs=1e-12), level
        assert res.n_units == 496 and elapsed < 5  # generous: a guard against a quadratic blow-up only
    nominal = class_alpha(r.codes, n_classes=len(r.classes)).alpha
    assert 0.3 < nominal < 0.35
    lo, hi = bootstrap_alpha(r.codes, n_boot=300, seed=0, n_classes=len(r.classes))
    assert lo < nominal < hi
