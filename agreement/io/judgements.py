r"""Crowd judgements as a reliability matrix: ``worker<TAB>item<TAB>label`` files, with reported repairs.

The format is the one of the Get-Another-Label project (Ipeirotis, Provost &
Wang, HCOMP 2010): a tab-separated file, one judgement per line
(``delimiter=","`` reads a CSV file). Files as people export them (a header
line, whitespace around fields, a byte order mark, comment lines) are read by
the rules of :mod:`agreement.io.text_files` and what they repaired is
reported; an empty file, a file that is not UTF-8 text and a first line that
is only partly a header are refused, naming the file and the line; one
worker is a warning in the report (alpha needs two raters). Items become samples, workers raters, labels classes
(:class:`agreement.core.ratings.ClassRatings`, workers and items sorted by
name, so the result does not depend on the order of the lines).

Real files are not clean. Two repairs, each a parameter and each reported in
:class:`JudgementReport` (counts and the first lines concerned):

* **Repeated judgements** (one worker judged one item more than once; the
  shared ``adultcontent3`` file has 8,039 such (worker, item) pairs carrying
  9,050 judgements beyond the first, 2,648 of the pairs with different labels):
  ``repeated="mode"`` (default) keeps the worker's most frequent label for
  the item, ties going to the tied label judged last (the worker's latest
  opinion); ``"last"`` / ``"first"`` keep the last / first judgement in file
  order; ``"error"`` refuses. The default keeps every worker's vote on every
  item they saw (one per rater and unit, as alpha requires) and, among
  several, the one the worker stood by most often: dropping the pair would
  lose data, and counting it several times would weight that worker above
  the others on the item.
* **Labels outside the categories** (737 judgements carry ``B``; the shared
  README says the categories file does not list it, but the file's last line,
  without a final newline, is ``B``: :func:`read_categories` reads it, so with
  that file ``B`` is a fifth class, and with ``categories=("G", "P", "R", "X")``
  it is unknown): ``unknown_labels="error"`` (default)
  refuses, naming the labels, their counts and the first lines, and saying
  how to proceed; ``"drop"`` leaves those judgements out (the worker stays
  assigned to the item: a missing value, not an absent rater); ``"keep"``
  adds the labels as classes after the categories. An unlisted label is a
  question only the user can answer (a typo, a "broken link" answer, a
  category the list forgot), so there is no silent default. Dropping happens
  before repeated judgements are resolved.

Parsing uses the standard library and numpy (pandas is not a dependency of
the pure library). This module does not import FiftyOne.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Sequence

import numpy as np

from agreement.core.ratings import MISSING, ClassRatings
from agreement.io.text_files import TextFileError, TextRepairs, find_header, no_content, read_text_lines, strip_fields

__all__ = ["JudgementReport", "TextFileError", "read_categories", "read_categories_file", "read_judgements",
           "REPEATED_POLICIES", "UNKNOWN_POLICIES"]

REPEATED_POLICIES = ("mode", "last", "first", "error")
UNKNOWN_POLICIES = ("error", "drop", "keep")
#: The columns of a judgement file without a header, in order.
COLUMNS = ("worker", "item", "label")
#: How many example lines a report and an error message show.
N_EXAMPLES = 5


@dataclass(frozen=True)
class JudgementReport:
    """What :func:`read_judgements` read and repaired.

    Attributes:
        path: the file read.
        n_judgements: judgements (non-blank lines) in the file.
        n_workers, n_items: distinct workers and items (raters and samples).
        classes: the classes of the ratings, in code order.
        repeated: the policy applied to repeated judgements.
        n_repeated_pairs: (worker, item) pairs judged more than once (after dropping unknown labels).
        n_repeated_judgements: judgements beyond the first of such pairs (the judgements set aside).
        n_conflicting_pairs: repeated pairs whose judgements disagree.
        repeated_examples: up to five ``"line N: worker item label"`` of repeated pairs.
        unknown_labels: the policy applied to labels outside the categories.
        unknown_counts: label → number of judgements, for labels outside the categories.
        n_unknown: judgements with such labels.
        n_dropped: judgements left out because of their label.
        unknown_examples: up to five lines with such labels.
        delimiter: the field separator read.
        columns: the column roles in file order (a header may order them: ``("item", "worker", "label")``).
        text: what reading the file repaired (:class:`agreement.io.text_files.TextRepairs`: a header line
            skipped, whitespace stripped, comment lines, a byte order mark).
        categories_text: the same for the categories file, when one was read.
        warnings: what the ratings cannot support (one worker, no item judged by two workers: α undefined).
    """

    path: str
    n_judgements: int
    n_workers: int
    n_items: int
    classes: tuple
    repeated: str
    n_repeated_pairs: int
    n_repeated_judgements: int
    n_conflicting_pairs: int
    repeated_examples: tuple
    unknown_labels: str
    unknown_counts: dict
    n_unknown: int
    n_dropped: int
    unknown_examples: tuple
    delimiter: str = "\t"
    columns: tuple[str, ...] = COLUMNS
    text: TextRepairs = TextRepairs("")
    categories_text: TextRepairs | None = None
    warnings: tuple[str, ...] = field(default=())

    def summary(self) -> str:
        """One paragraph saying what was read and repaired."""
        parts = [f"{self.n_judgements:,} judgements by {self.n_workers:,} workers on {self.n_items:,} items, "
                 f"classes {list(self.classes)}"]
        if self.n_repeated_pairs:
            parts.append(f"{self.n_repeated_pairs:,} (worker, item) pairs judged more than once "
                         f"({self.n_repeated_judgements:,} extra judgements, {self.n_conflicting_pairs:,} pairs "
                         f"with different labels): kept one per pair by repeated={self.repeated!r}")
        if self.n_unknown:
            parts.append(f"{self.n_unknown:,} judgements with labels outside the categories {self.unknown_counts}: "
                         f"unknown_labels={self.unknown_labels!r}" + (f", {self.n_dropped:,} dropped"
                                                                      if self.n_dropped else ""))
        if self.columns != COLUMNS:
            parts.append(f"columns taken in the header's order {list(self.columns)}")
        parts += self.text.notes()
        parts += [f"categories file: {n}" for n in (self.categories_text.notes() if self.categories_text else [])]
        parts += [f"WARNING: {w}" for w in self.warnings]
        return "; ".join(parts) + "."



def read_categories_file(path: str | Path, *, header: bool | None = None) -> tuple[tuple[str, ...], TextRepairs]:
    """The categories of a categories file and what reading it repaired.

    One category per line, in file order (an ordinal scale's order); only a line's first tab-separated
    field counts (the rest may describe it); a last line without a newline counts. The rules of
    :mod:`agreement.io.text_files` apply: UTF-8 (a byte order mark accepted), blank and ``#`` lines
    skipped, a header line (``category``, ``label``, ``class``, ``answer`` and their plurals, see
    :data:`agreement.io.text_files.HEADER_NAMES`) skipped and reported, whitespace around a name stripped
    and counted.

    Args:
        path: the file.
        header: ``None`` detect a header line; ``True`` the first line is one; ``False`` it is a category.

    Raises:
        TextFileError: not UTF-8 text, no category, an empty name, or a category listed twice (naming lines).
    """
    text = read_text_lines(path, what="the categories file")
    rows, n_stripped, examples = strip_fields([(no, [line.split("\t")[0]]) for no, line in text.lines])
    if not rows:
        raise TextFileError(f"{path}: no categories: {no_content(text)}; expected one category per line")
    no0, first = rows[0]
    later = [{f[0] for _, f in rows[1:]}]
    shown, n_header = "", 0
    if find_header(first, no0, later, path=str(path), expected=("label",), header=header) is not None:
        shown = f"line {no0}: {first[0]}"
        kept = [r for r in rows[1:] if r[1][0].lower() != first[0].lower()]
        n_header, rows = len(rows) - len(kept), kept
        if not rows:
            raise TextFileError(f"{path}: no categories: only the header line {no0} ({first[0]!r})")
    seen: dict[str, int] = {}
    for no, (cat,) in rows:
        if not cat:
            raise TextFileError(f"{path}, line {no}: an empty category name (the line starts with a tab)")
        if cat in seen:
            raise TextFileError(f"{path}, line {no}: category {cat!r} is listed twice (first on line {seen[cat]}): "
                                f"{[f[0] for _, f in rows]}")
        seen[cat] = no
    repairs = TextRepairs(str(path), bom=text.bom, header=shown, n_header_lines=n_header, n_comments=text.n_comments,
                          n_stripped=n_stripped, stripped_examples=examples)
    return tuple(seen), repairs


def read_categories(path: str | Path, *, header: bool | None = None) -> tuple[str, ...]:
    """The categories of a categories file, in file order (:func:`read_categories_file` without its report)."""
    return read_categories_file(path, header=header)[0]


def _split(line: str, delimiter: str) -> list[str]:
    if delimiter == "\t":
        return line.split("\t")
    return next(csv.reader([line], delimiter=delimiter))


def _bad_line(path: Path, no: int, line: str, delimiter: str) -> TextFileError:
    sep = "<TAB>" if delimiter == "\t" else delimiter
    hint = ""
    for d, name in (("\t", "tab"), (",", "comma"), (";", "semicolon")):
        if d != delimiter and len(_split(line, d)) == 3:
            hint = f"; the line is {name}-separated: pass delimiter={d!r}"
            break
    return TextFileError(f"{path}, line {no}: expected worker{sep}item{sep}label with three non-empty fields, "
                         f"got {line!r}{hint}")


def _parse(path: Path, delimiter: str, header: bool | None
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, TextRepairs, tuple[str, ...]]:
    """The judgements of a file as (workers, items, labels, line numbers), its repairs and its column roles."""
    text = read_text_lines(path, what="the judgement file")
    rows, n_stripped, examples = strip_fields([(no, _split(line, delimiter)) for no, line in text.lines])
    if not rows:
        raise TextFileError(f"{path}: no judgements: {no_content(text)}; expected one worker<TAB>item<TAB>label "
                            "per line")
    no0, first = rows[0]
    later = [{f[k] for _, f in rows[1:] if len(f) == 3} for k in range(3)]
    roles = find_header(first, no0, later, path=str(path), expected=COLUMNS, header=header)
    shown, n_header = "", 0
    if roles is not None:
        shown = f"line {no0}: {' | '.join(first)}"
        key = [f.lower() for f in first]
        kept = [r for r in rows[1:] if [f.lower() for f in r[1]] != key]
        n_header, rows = len(rows) - len(kept), kept
        if not rows:
            raise TextFileError(f"{path}: no judgements: only the header line {no0} ({' | '.join(first)!r})")
    order = [roles.index(c) for c in COLUMNS] if roles is not None and len(roles) == 3 else [0, 1, 2]
    cols: tuple[list[str], list[str], list[str]] = ([], [], [])
    lines = []
    for no, fields in rows:
        if len(fields) != 3 or not all(fields):
            raise _bad_line(path, no, dict(text.lines)[no], delimiter)
        for k, c in enumerate(order):
            cols[k].append(fields[c])
        lines.append(no)
    repairs = TextRepairs(str(path), bom=text.bom, header=shown, n_header_lines=n_header, n_comments=text.n_comments,
                          n_stripped=n_stripped, stripped_examples=examples)
    arrays = [np.array(c, dtype=object) for c in cols]
    return (arrays[0], arrays[1], arrays[2], np.array(lines, dtype=np.int64), repairs,
            tuple(COLUMNS[order.index(k)] for k in range(3)))


def _examples(idx: np.ndarray, w: np.ndarray, i: np.ndarray, lab: np.ndarray, ln: np.ndarray) -> tuple:
    return tuple(f"line {ln[k]}: {w[k]} {i[k]} {lab[k]}" for k in idx[:N_EXAMPLES])


def _resolve_repeats(key: np.ndarray, code: np.ndarray, n_codes: int, policy: str) -> np.ndarray:
    """Indices (file order) of the one judgement kept per key."""
    n = len(key)
    if policy == "first":
        return np.sort(np.unique(key, return_index=True)[1])
    if policy == "last":
        return np.sort(n - 1 - np.unique(key[::-1], return_index=True)[1])
    kl = key * n_codes + code  # (pair, label) combinations
    uniq, first_rev, counts = np.unique(kl[::-1], return_index=True, return_counts=True)
    last_pos = n - 1 - first_rev  # the latest judgement of each (pair, label)
    order = np.lexsort((last_pos, counts, uniq // n_codes))  # by pair, then count, then recency
    pair_sorted = (uniq // n_codes)[order]
    is_last = np.r_[pair_sorted[1:] != pair_sorted[:-1], True]
    return np.sort(last_pos[order][is_last])


def read_judgements(path: str | Path, *, categories: Sequence[str] | str | Path | None = None,
                    repeated: Literal["mode", "last", "first", "error"] = "mode",
                    unknown_labels: Literal["error", "drop", "keep"] = "error", delimiter: str = "\t",
                    header: bool | None = None) -> tuple[ClassRatings, JudgementReport]:
    """Reads a ``worker<TAB>item<TAB>label`` judgement file into one class per worker and item.

    The file is read by the rules of :mod:`agreement.io.text_files`: UTF-8 (a byte order mark accepted
    and reported; anything else refused naming the line and byte offset), blank and ``#`` comment lines
    skipped, a header line of column names recognised, skipped and reported (its names may order the
    columns: ``task<TAB>worker<TAB>label``), whitespace around fields stripped and counted.

    Args:
        path: the file (one judgement per line).
        categories: the classes in order (an ordinal scale's order), or the path of a categories file
            (:func:`read_categories_file`); default: every label found, sorted.
        repeated: one judgement per (worker, item) from several: ``"mode"`` (the most frequent label,
            ties to the one judged last), ``"last"``, ``"first"``, or ``"error"``.
        unknown_labels: labels outside ``categories``: ``"error"``, ``"drop"`` (the judgements; the
            worker stays assigned to the item) or ``"keep"`` (as further classes, sorted, after the categories).
        delimiter: the field separator: a tab (default) or one character such as ``","`` (read as CSV:
            double quotes may enclose a field holding the separator).
        header: ``None`` (default) detect a header line; ``True`` the first line is a header; ``False``
            it is a judgement.

    Returns:
        ``(ratings, report)``: :class:`agreement.core.ratings.ClassRatings` with items as samples and
        workers as raters (both sorted by name; ``assigned`` marks every (item, worker) with a judgement,
        also a dropped one), and the :class:`JudgementReport` of what was repaired.

    Raises:
        TextFileError: (a ``ValueError``) a file that is empty, not UTF-8 text or binary, whose first line
            is partly a header, or a malformed line (naming the file and the line; a line separated by
            another delimiter says which ``delimiter=`` reads it).
        ValueError: unknown labels with ``unknown_labels="error"`` or
            repeated judgements with ``repeated="error"`` (naming counts and first lines, and how to proceed).
    """
    if repeated not in REPEATED_POLICIES:
        raise ValueError(f"repeated must be one of {REPEATED_POLICIES}, got {repeated!r}")
    if unknown_labels not in UNKNOWN_POLICIES:
        raise ValueError(f"unknown_labels must be one of {UNKNOWN_POLICIES}, got {unknown_labels!r}")
    if not isinstance(delimiter, str) or len(delimiter) != 1 or delimiter in "\r\n\"":
        raise ValueError(f"delimiter must be one character such as '\\t' or ',', got {delimiter!r}")
    path = Path(path)
    w, it, lab, ln, text, columns = _parse(path, delimiter, header)
    cat_text = None
    if isinstance(categories, (str, Path)):
        categories, cat_text = read_categories_file(categories)
    found = sorted(set(lab.tolist()))
    cats = tuple(found) if categories is None else tuple(categories)
    unknown_mask = ~np.isin(lab, np.array(cats, dtype=object))
    unknown_values, unknown_n = np.unique(lab[unknown_mask].astype(str), return_counts=True)
    unknown_counts = {str(k): int(v) for k, v in zip(unknown_values, unknown_n, strict=True)}
    unknown_ex = _examples(np.flatnonzero(unknown_mask), w, it, lab, ln)
    if unknown_mask.any() and unknown_labels == "error":
        raise ValueError(
            f"{path}: {int(unknown_mask.sum()):,} judgements carry labels that are not among the categories "
            f"{list(cats)}: {unknown_counts}; first: {'; '.join(unknown_ex)}. Pass unknown_labels='drop' to leave "
            "them out (the workers stay assigned: missing values), unknown_labels='keep' to add them as classes, "
            "or list them in the categories.")
    classes = cats + (tuple(unknown_counts) if unknown_labels == "keep" else ())
    workers, wi = np.unique(w.astype(str), return_inverse=True)
    items, ii = np.unique(it.astype(str), return_inverse=True)
    S, R = len(items), len(workers)
    assigned = np.zeros((S, R), dtype=bool)
    assigned[ii, wi] = True
    keep = ~unknown_mask if unknown_labels == "drop" else np.ones(len(lab), dtype=bool)
    index = {c: k for k, c in enumerate(classes)}
    code = np.array([index[x] for x in lab[keep].tolist()], dtype=np.int64)
    key = ii[keep].astype(np.int64) * R + wi[keep]
    kept_idx = np.flatnonzero(keep)
    uniq_keys, inv, n_per = np.unique(key, return_inverse=True, return_counts=True)
    rep = n_per[inv] > 1
    L = max(len(classes), 1)
    pair_of_label = np.unique(key * L + code) // L  # one entry per distinct (pair, label)
    n_labels = np.bincount(np.searchsorted(uniq_keys, pair_of_label), minlength=len(uniq_keys))
    n_conflicting = int((n_labels > 1).sum())
    rep_ex = _examples(kept_idx[rep], w, it, lab, ln)
    if rep.any() and repeated == "error":
        raise ValueError(
            f"{path}: {int((n_per > 1).sum()):,} (worker, item) pairs are judged more than once "
            f"({int((n_per - 1).sum()):,} extra judgements, {n_conflicting:,} pairs with different labels); "
            f"first: {'; '.join(rep_ex)}. Pass repeated='mode' (the worker's most frequent label, ties to the "
            "latest), 'last' or 'first' to keep one judgement per pair.")
    chosen = _resolve_repeats(key, code, L, repeated)
    codes = np.full((S, R), MISSING, dtype=np.int64)
    codes[ii[kept_idx[chosen]], wi[kept_idx[chosen]]] = code[chosen]
    ratings = ClassRatings(items.astype(object), tuple(workers.tolist()), classes, codes, assigned)
    report = JudgementReport(path=str(path), n_judgements=len(lab), n_workers=R, n_items=S, classes=classes,
                             repeated=repeated, n_repeated_pairs=int((n_per > 1).sum()),
                             n_repeated_judgements=int((n_per - 1).sum()), n_conflicting_pairs=n_conflicting,
                             repeated_examples=rep_ex, unknown_labels=unknown_labels, unknown_counts=unknown_counts,
                             n_unknown=int(unknown_mask.sum()), n_dropped=int((~keep).sum()),
                             unknown_examples=unknown_ex, delimiter=delimiter, columns=columns, text=text,
                             categories_text=cat_text, warnings=_design_warnings(path, ratings))
    return ratings, report


def _design_warnings(path: Path, ratings: ClassRatings) -> tuple[str, ...]:
    """What the ratings cannot support: agreement needs two workers on one item."""
    if len(ratings.raters) == 1:
        return (f"{path.name}: one worker ({ratings.raters[0]!r}) made every judgement: agreement needs at least "
                "two raters on an item, so alpha is undefined; add the other workers' judgements to the file",)
    if len(ratings.raters) > 1 and not (ratings.assigned.sum(axis=1) >= 2).any():
        return (f"{path.name}: no item was judged by two workers: agreement needs at least two raters on an "
                "item, so alpha is undefined",)
    return ()
