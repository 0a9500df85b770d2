"""Crowd judgement files: the repairs on small files, and the shared adultcontent3 crowd (alpha after the
repairs against the `krippendorff` package)."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from agreement.io.judgements import TextFileError, read_categories, read_categories_file, read_judgements
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


# ------------------------------------------------------------------------------- files as people export them
def _bytes(tmp_path, data: bytes, name="j.tsv"):
    p = tmp_path / name
    p.write_bytes(data)
    return p


@pytest.mark.parametrize("text", ["", "\n\n  \n", "# exported 2024-01-01\n\n# nothing yet\n", "\ufeff"])
def test_empty_file_is_refused_naming_it(tmp_path, text):
    p = _bytes(tmp_path, text.encode(), "empty.tsv")
    with pytest.raises(TextFileError, match=r"empty\.tsv: no judgements: (the file is empty|its \d line)"):
        read_judgements(p)
    with pytest.raises(ValueError, match=r"cats\.txt: no categories"):  # the categories file alike
        read_categories(_bytes(tmp_path, text.encode(), "cats.txt"))


@pytest.mark.parametrize("header", ["worker\titem\tlabel", "Annotator\tImage\tClass", "worker_id\ttask_id\tanswer",
                                    "RATER \t SAMPLE\tcategory"])
def test_header_line_is_skipped_and_reported(tmp_path, header):
    body = "w1\ti1\tA\nw2\ti1\tB\nw1\ti2\tB\n"
    r, rep = read_judgements(_write(tmp_path, header + "\n" + body))
    plain, _ = read_judgements(_write(tmp_path, body, "plain.tsv"))
    assert r.raters == ("w1", "w2") and r.classes == ("A", "B") and list(r.sample_ids) == ["i1", "i2"]
    np.testing.assert_array_equal(r.codes, plain.codes)  # nothing of the header became a worker, item or class
    assert rep.n_judgements == 3 and rep.text.n_header_lines == 1 and rep.text.header.startswith("line 1: ")
    assert "header line 1: " in rep.summary() and "skipped" in rep.summary()


def test_header_orders_the_columns_and_repeats_of_it_are_skipped(tmp_path):
    """crowd-kit's order (task, worker, label), and two files concatenated with their headers."""
    r, rep = read_judgements(_write(tmp_path, "task\tworker\tlabel\ni1\tw1\tA\ni1\tw2\tB\ntask\tworker\tlabel\n"
                                              "i2\tw1\tB\n"))
    assert r.raters == ("w1", "w2") and list(r.sample_ids) == ["i1", "i2"] and r.codes.tolist() == [[0, 1], [1, -1]]
    assert rep.columns == ("item", "worker", "label") and rep.text.n_header_lines == 2
    assert "columns taken in the header's order" in rep.summary() and "1 repeat(s)" in rep.summary()
    with pytest.raises(TextFileError, match=r"line 1: the header 'worker \| user \| label' does not name each"):
        read_judgements(_write(tmp_path, "worker\tuser\tlabel\nw1\ti1\tA\n", "twice.tsv"))
    with pytest.raises(TextFileError, match=r"two\.tsv, line 1: the header 'worker \| item' names 2 column\(s\)"):
        read_judgements(_write(tmp_path, "worker\titem\nw1\ti1\tA\n", "two.tsv"))


def test_partial_header_is_refused_unless_said(tmp_path):
    p = _write(tmp_path, "\n# crowd\nworker_id\turl\tlabel\nw1\ti1\tA\nw2\ti1\tB\n", "part.tsv")
    with pytest.raises(TextFileError, match=r"part\.tsv, line 3: 'worker_id \| url \| label' looks partly like a "
                                            r"header .*'url' does not.*remove the line.*header=True"):
        read_judgements(p)
    r, rep = read_judgements(p, header=True)
    assert r.raters == ("w1", "w2") and rep.text.header == "line 3: worker_id | url | label"
    r, rep = read_judgements(p, header=False)  # said to be data: a worker 'worker_id', as asked
    assert "worker_id" in r.raters and rep.text.header == ""
    # a worker called 'user' who judged again further down is data, not a header
    r, rep = read_judgements(_write(tmp_path, "user\ti1\tA\nuser\ti2\tB\nw2\ti1\tA\n", "user.tsv"))
    assert r.raters == ("user", "w2") and rep.n_judgements == 3 and rep.text.header == ""


def test_categories_header_is_skipped_and_reported(tmp_path):
    cats, rep = read_categories_file(_write(tmp_path, "Category\tmeaning\nlow\t1\nmid\nhigh\n", "cats.txt"))
    assert cats == ("low", "mid", "high") and rep.header == "line 1: Category" and rep.n_header_lines == 1
    assert read_categories(_write(tmp_path, "class\nlow\n", "c2.txt"), header=False) == ("class", "low")
    _, jrep = read_judgements(_write(tmp_path, "w\ti\thigh\nv\ti\tlow\n"), categories=tmp_path / "cats.txt")
    assert jrep.classes == ("low", "mid", "high") and "categories file: header line 1: Category skipped" in jrep.summary()
    with pytest.raises(TextFileError, match=r"only.txt: no categories: only the header line 1"):
        read_categories(_write(tmp_path, "labels\n", "only.txt"))


def test_whitespace_around_fields_is_stripped_and_counted(tmp_path):
    p = _write(tmp_path, "w1\ti1\tA\nw2\ti1\tA \n w3 \ti1\tvery good\nw1\t i2\tA\nw2\ti2\t A\n")
    r, rep = read_judgements(p)
    assert r.classes == ("A", "very good") and r.raters == ("w1", "w2", "w3") and list(r.sample_ids) == ["i1", "i2"]
    assert rep.text.n_stripped == 4 and rep.text.stripped_examples[0] == "line 2: 'A '"
    assert "4 fields had surrounding whitespace, stripped (first: line 2: 'A '" in rep.summary()
    with pytest.raises(TextFileError, match="line 2: expected worker<TAB>item<TAB>label"):  # a blank field stays bad
        read_judgements(_write(tmp_path, "w1\ti1\tA\nw2\t  \tA\n", "blank.tsv"))
    cats, crep = read_categories_file(_write(tmp_path, "low \n mid\nhigh\n", "cats.txt"))
    assert cats == ("low", "mid", "high") and crep.n_stripped == 2 and crep.stripped_examples == ("line 1: 'low '",
                                                                                                 "line 2: ' mid'")


def test_text_that_is_not_utf8_is_refused_naming_line_and_byte(tmp_path):
    latin = "w1\ti1\tcafe\nw2\ti1\tcaf\xe9\n".encode("latin-1")
    with pytest.raises(TextFileError, match=r"latin\.tsv, line 2 \(byte offset 20\): not UTF-8 text \(byte 0xe9.*"
                                            r"iconv -f latin1 -t utf-8") as e:
        read_judgements(_bytes(tmp_path, latin, "latin.tsv"))
    assert isinstance(e.value, ValueError) and isinstance(e.value.__cause__, UnicodeDecodeError)
    with pytest.raises(TextFileError, match=r"bin\.tsv, line 2 \(byte offset 12\): not a text file"):
        read_judgements(_bytes(tmp_path, b"w1\ti1\tA\n\x89PNG\x00\x00\x01", "bin.tsv"))
    with pytest.raises(TextFileError, match=r"u16\.tsv: the judgement file is UTF-16 text.*iconv -f utf-16"):
        read_judgements(_bytes(tmp_path, "w1\ti1\tA\n".encode("utf-16"), "u16.tsv"))
    with pytest.raises(TextFileError, match=r"cats\.txt, line 1 \(byte offset 3\): not UTF-8"):
        read_judgements(_write(tmp_path, "w\ti\tA\n"), categories=_bytes(tmp_path, b"caf\xe9\n", "cats.txt"))


def test_utf8_byte_order_mark_is_accepted_and_reported(tmp_path):
    r, rep = read_judgements(_bytes(tmp_path, "\ufeffworker\titem\tlabel\nw1\ti1\tA\nw2\ti1\tB\n".encode()))
    assert r.raters == ("w1", "w2") and rep.text.bom and rep.text.header  # the header is found behind the mark
    assert "byte order mark" in rep.summary()
    assert read_categories(_bytes(tmp_path, "\ufeffG\nP\n".encode(), "c.txt")) == ("G", "P")


def test_one_worker_is_a_warning(tmp_path):
    r, rep = read_judgements(_write(tmp_path, "w1\ti1\tA\nw1\ti2\tB\n", "solo.tsv"))
    assert r.raters == ("w1",) and len(rep.warnings) == 1
    assert "solo.tsv: one worker ('w1')" in rep.warnings[0] and "alpha is undefined" in rep.warnings[0]
    assert "WARNING: solo.tsv: one worker" in rep.summary()
    _, rep = read_judgements(_write(tmp_path, "w1\ti1\tA\nw2\ti2\tB\n", "apart.tsv"))
    assert "no item was judged by two workers" in rep.warnings[0]
    assert read_judgements(_write(tmp_path, "w1\ti1\tA\nw2\ti1\tB\n", "ok.tsv"))[1].warnings == ()


def test_comma_separated_file_needs_delimiter(tmp_path):
    text = "worker,item,label\nw1,i1,A\nw2,i1,B\nw2,\"i2, left\",A\n"
    with pytest.raises(TextFileError, match=r"c\.csv, line 1: expected worker<TAB>item<TAB>label .*"
                                            r"comma-separated: pass delimiter=','"):
        read_judgements(_write(tmp_path, text.replace("worker,item,label\n", ""), "c.csv"))
    r, rep = read_judgements(_write(tmp_path, text, "h.csv"), delimiter=",")
    assert list(r.sample_ids) == ["i1", "i2, left"] and rep.delimiter == "," and rep.text.n_header_lines == 1
    with pytest.raises(TextFileError, match=r"t\.csv, line 1: expected worker,item,label.*tab-separated: pass "
                                            r"delimiter='\\t'"):
        read_judgements(_write(tmp_path, "w1\ti1\tA\n", "t.csv"), delimiter=",")
    with pytest.raises(ValueError, match="delimiter must be one character"):
        read_judgements(_write(tmp_path, text, "h.csv"), delimiter=", ")


def test_name_map_file_follows_the_same_text_rules(tmp_path):
    """The other plain-text list the importers read (name_map, agreement.io.image_names): UTF-8 with a byte
    order mark is read (the header is still found), Latin-1 is refused naming the line and byte offset."""
    from agreement.io.image_names import load_name_map

    bom = _bytes(tmp_path, "\ufeffexport_name,image_name\nframe_1.jpg, a.jpg\n".encode(), "names.csv")
    assert load_name_map(bom)[0] == {"frame_1.jpg": "a.jpg"}
    with pytest.raises(TextFileError, match=r"latin\.csv, line 2 \(byte offset 30\): not UTF-8 text.*iconv"):
        load_name_map(_bytes(tmp_path, "frame_1.jpg,a.jpg\nframe_2.jpg,\xe9.jpg\n".encode("latin-1"), "latin.csv"))


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
