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
    # built so that first, last and mode all differ (a policy acting as another fails):
    # (i1, w1): A, B, B, C          -> first A, mode B, last C
    # (i2, w2): C, A, B, A, B        -> first C, mode tie A/B -> the latest of the tied (B), last B
    # (i2, w1): B, C, C, A           -> first B, mode C, last A
    p = _write(tmp_path, "w1\ti1\tA\nw1\ti1\tB\nw2\ti2\tC\nw1\ti1\tB\nw2\ti1\tB\n\nw2\ti2\tA\n"
                         "w1\ti2\tB\nw2\ti2\tB\nw1\ti2\tC\nw1\ti1\tC\nw2\ti2\tA\nw1\ti2\tC\nw2\ti2\tB\n"
                         "w1\ti2\tA\n")
    got = {}
    for policy in ("mode", "first", "last"):
        r, rep = read_judgements(p, repeated=policy)
        assert r.classes == ("A", "B", "C") and r.raters == ("w1", "w2") and list(r.sample_ids) == ["i1", "i2"]
        got[policy] = r.codes.tolist()
        assert rep.n_repeated_pairs == 3 and rep.n_repeated_judgements == 10 and rep.n_conflicting_pairs == 3
        assert rep.n_judgements == 14 and rep.repeated == policy and rep.repeated_examples[0].startswith("line 1:")
    # rows i1, i2; columns w1, w2 (codes A=0, B=1, C=2); (i1, w2) was judged once: B
    assert got["mode"] == [[1, 1], [2, 1]]
    assert got["first"] == [[0, 1], [1, 2]]
    assert got["last"] == [[2, 1], [0, 1]]
    assert len({str(v) for v in got.values()}) == 3  # the three policies disagree on this file
    with pytest.raises(ValueError, match=r"3 \(worker, item\) pairs are judged more than once.*repeated='mode'"):
        read_judgements(p, repeated="error")
    single = _write(tmp_path, "w1\ti1\tA\nw2\ti1\tB\n", "single.tsv")  # no repeats: every policy reads it alike
    for policy in ("mode", "first", "last", "error"):
        assert read_judgements(single, repeated=policy)[0].codes.tolist() == [[0, 1]]


def test_mode_keeps_the_most_frequent_label(tmp_path):
    # w on i: B, A, B, A, A, C: mode A (3 votes), first B, last C
    p = _write(tmp_path, "w\ti\tB\nw\ti\tA\nw\ti\tB\nw\ti\tA\nw\ti\tA\nw\ti\tC\nv\ti\tB\n")
    assert read_judgements(p)[0].codes.tolist() == [[1, 0]]  # raters sorted: v, w; the default is "mode"
    assert read_judgements(p, repeated="mode")[0].codes.tolist() == [[1, 0]]
    assert read_judgements(p, repeated="first")[0].codes.tolist() == [[1, 1]]
    assert read_judgements(p, repeated="last")[0].codes.tolist() == [[1, 2]]


def test_last_judgement_without_a_final_newline_is_read(tmp_path):
    body = "w1\ti1\tA\nw2\ti1\tB\nw1\ti2\tB\nw2\ti2\tA"
    for text in (body, body + "\n", body.replace("\n", "\r\n"), body.replace("\n", "\r\n") + "\r\n"):
        r, rep = read_judgements(_write(tmp_path, text))
        assert rep.n_judgements == 4 and r.codes.tolist() == [[0, 1], [1, 0]], repr(text[-6:])
    # the last line repeats a pair: its judgement decides "last" and the mode's tie
    r, rep = read_judgements(_write(tmp_path, body + "\nw2\ti2\tB"), repeated="last")
    assert rep.n_judgements == 5 and r.codes.tolist() == [[0, 1], [1, 1]]
    assert read_judgements(_write(tmp_path, "w\ti\tA"))[0].codes.tolist() == [[0]]


def test_unknown_label_policies(tmp_path):
    p = _write(tmp_path, "w1\ti1\tA\nw2\ti1\tZ\nw2\ti2\tB\nw1\ti2\tZ\nw1\ti2\tB\n")
    with pytest.raises(ValueError, match=r"2 judgements carry labels.*\{'Z': 2\}.*line 2:.*unknown_labels='drop'"):
        read_judgements(p, categories=["A", "B"])
    r, rep = read_judgements(p, categories=["A", "B"], unknown_labels="drop")
    assert r.codes.tolist() == [[0, -1], [1, 1]]
    assert r.assigned.all()  # w2 judged i1 (with an unknown label): assigned, value missing
    assert rep.n_unknown == 2 and rep.n_dropped == 2 and rep.unknown_counts == {"Z": 2}
    assert rep.n_repeated_pairs == 0  # dropped before repeats are resolved
    r, rep = read_judgements(p, categories=["A", "B"], unknown_labels="keep")
    assert r.classes == ("A", "B", "Z") and r.codes.tolist() == [[0, 2], [1, 1]] and rep.n_dropped == 0
    assert rep.n_repeated_pairs == 1 and "unknown_labels='keep'" in rep.summary()


def test_categories_file_order_and_malformed_lines(tmp_path):
    cats = _write(tmp_path, "low\nmid\nhigh", "cats.txt")  # no final newline: the last category still counts
    assert read_categories(cats) == ("low", "mid", "high")
    p = _write(tmp_path, "w\ti\thigh\nv\ti\tlow\n")
    r, _ = read_judgements(p, categories=cats)
    assert r.classes == ("low", "mid", "high") and r.codes.tolist() == [[0, 2]]
    with pytest.raises(ValueError, match="line 2: expected worker<TAB>item<TAB>label"):
        read_judgements(_write(tmp_path, "w\ti\tA\nw\ti\n", "bad.tsv"))
    with pytest.raises(ValueError, match="repeated must be"):
        read_judgements(p, repeated="mean")
    with pytest.raises(ValueError, match="listed twice"):
        read_categories(_write(tmp_path, "a\nb\na\n", "dup.txt"))


def test_line_order_changes_nothing_with_mode(tmp_path):
    """Every (worker, item) pair judged three times with conflicting labels, two of them alike: the mode is
    the label given twice whatever the line order, while first and last follow the order (and swap when the
    file is reversed); each policy is checked against a plain-Python reference."""
    rng = np.random.default_rng(0)
    pairs = sorted({(f"w{rng.integers(8)}", f"i{rng.integers(10)}") for _ in range(60)})
    lines, mode = [], {}
    for w, i in pairs:
        major, minor = rng.choice(list("ABC"), size=2, replace=False)
        mode[(w, i)] = major
        lines += [(w, i, lab) for lab in rng.permutation([major, major, minor])]
    lines = [lines[k] for k in rng.permutation(len(lines))]
    first, last = {}, {}
    for w, i, lab in lines:
        first.setdefault((w, i), lab)
        last[(w, i)] = lab
    assert first != last and first != mode and last != mode  # the policies disagree on this file
    text = ["\t".join(t) for t in lines]
    fwd = _write(tmp_path, "\n".join(text) + "\n", "a.tsv")
    rev = _write(tmp_path, "\n".join(text[::-1]) + "\n", "b.tsv")

    def as_dict(r):
        return {(w, i): r.classes[r.codes[s, k]] for s, i in enumerate(r.sample_ids)
                for k, w in enumerate(r.raters) if r.codes[s, k] >= 0}

    for policy, ref in (("mode", mode), ("first", first), ("last", last)):
        assert as_dict(read_judgements(fwd, repeated=policy)[0]) == ref, policy
    np.testing.assert_array_equal(read_judgements(fwd)[0].codes, read_judgements(rev)[0].codes)
    np.testing.assert_array_equal(read_judgements(fwd, repeated="first")[0].codes,
                                  read_judgements(rev, repeated="last")[0].codes)


# ---------------------------------------------------------------------------------------------------- shared data
needs_data = pytest.mark.skipif(not LABELS.exists(), reason=f"shared data absent: {LABELS} (see ../shared/data)")


@needs_data
@pytest.mark.shared_data
def test_real_file_repairs_are_reported():
    with pytest.raises(ValueError, match=r"737 judgements carry labels.*\{'B': 737\}"):
        read_judgements(LABELS, categories=("G", "P", "R", "X"))
    with pytest.raises(ValueError, match=r"8,039 \(worker, item\) pairs.*9,050 extra judgements"):
        read_judgements(LABELS, categories=CATEGORIES, repeated="error")
    r, rep = read_judgements(LABELS, categories=("G", "P", "R", "X"), unknown_labels="keep")
    assert rep.n_judgements == 44373 and rep.n_workers == 338 and rep.n_items == 496
    assert rep.n_repeated_pairs == 8039 and rep.n_repeated_judgements == 9050 and rep.n_unknown == 737
    # the categories file lists B on its last line (without a final newline), unlike what the README says
    assert read_categories(CATEGORIES) == ("G", "P", "R", "X", "B")


@needs_data
@pytest.mark.shared_data
@pytest.mark.parametrize("categories, unknown", [(("G", "P", "R", "X"), "drop"), (CATEGORIES, "error")])
def test_real_alpha_equals_the_krippendorff_package(categories, unknown):
    krippendorff = pytest.importorskip("krippendorff")
    r, rep = read_judgements(LABELS, categories=categories, unknown_labels=unknown)
    assert r.codes.shape == (496, 338)
    rel = np.where(r.codes >= 0, r.codes, np.nan).T.astype(float)
    for level in LEVELS:
        t = time.perf_counter()
        res = class_alpha(r.codes, level=level, n_classes=len(r.classes))
        elapsed = time.perf_counter() - t
        ref = krippendorff.alpha(reliability_data=rel, level_of_measurement=level)
        assert res.alpha == pytest.approx(ref, abs=1e-12), level
        assert res.n_units == 496 and elapsed < 5  # generous: a guard against a quadratic blow-up only
    nominal = class_alpha(r.codes, n_classes=len(r.classes)).alpha
    assert 0.3 < nominal < 0.35
    lo, hi = bootstrap_alpha(r.codes, n_boot=300, seed=0, n_classes=len(r.classes))
    assert lo < nominal < hi
