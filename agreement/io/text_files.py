r"""Plain-text input files as people export them: one set of rules for every text file the importers read.

The judgement files (:mod:`agreement.io.judgements`: ``worker<TAB>item<TAB>label``) and the categories
files (one class per line) are read by these rules; each repair is counted in a :class:`TextRepairs`
that the caller reports, and everything else is a :class:`TextFileError` naming the file, the line and
what to do.

* **Encoding**: UTF-8. A UTF-8 byte order mark (Windows editors, Excel's "CSV UTF-8") is accepted and
  reported. Bytes that are not UTF-8 (a Latin-1 or Windows-1252 export) are refused, naming the line and
  the byte offset, with the repair (``iconv -f latin1 -t utf-8 in.tsv > out.tsv``); a UTF-16 file (its
  byte order mark) is refused as UTF-16; a file with a NUL byte as "not a text file".
* **Lines**: ``\n``, ``\r\n`` and ``\r`` end lines (a last line without one counts); blank lines (only
  whitespace) are skipped; a line whose first non-blank character is ``#`` is a comment, skipped and
  counted.
* **Header line**: a first line whose fields are all column names (:data:`HEADER_NAMES`, compared
  case-insensitively, ignoring ``_``, ``-``, ``.`` and spaces and a trailing ``id``: ``Worker_ID`` is
  ``worker``) is skipped and reported, and so is the same line further down (files concatenated with
  their headers). A first line where only some fields are such names is refused (remove the line or
  name every column, or say ``header=True`` / ``header=False``) unless those values occur again in their
  columns (then they are data: a worker called ``user``).
* **Whitespace around fields** is stripped and counted (the first lines concerned reported); spaces
  inside a field are kept (``very good`` stays one label).

This module does not import FiftyOne.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import AbstractSet, Mapping, Sequence

from agreement.core.validation import AnnotationError

__all__ = ["HEADER_NAMES", "TextFileError", "TextRepairs", "TextLines", "header_role", "read_text", "read_text_lines",
           "find_header", "no_content", "strip_fields"]

#: The column names a header line may use, per column role (case-insensitive; ``_``, ``-``, ``.`` and
#: spaces ignored; a plural and a trailing ``id`` accepted: ``worker_id``, ``Task ID``, ``categories``).
HEADER_NAMES: Mapping[str, tuple[str, ...]] = {
    "worker": ("worker", "annotator", "rater", "user", "labeler", "labeller"),
    "item": ("item", "task", "image", "sample", "object"),
    "label": ("label", "class", "category", "answer"),
}
#: How many example lines a report and an error message show.
N_EXAMPLES = 5
_LINE_END = re.compile(r"\r\n|\r|\n")


def _forms(name: str) -> set[str]:
    plural = name[:-1] + "ies" if name.endswith("y") else name + ("es" if name.endswith("s") else "s")
    return {name, plural, name + "id", name + "ids"}


_ROLE_OF = {form: role for role, names in HEADER_NAMES.items() for name in names for form in _forms(name)}


class TextFileError(AnnotationError):
    """A text input that cannot be read as asked (not UTF-8, not text, empty, an unclear header, a bad line);
    the message names the file and the line."""


@dataclass(frozen=True)
class TextRepairs:
    """What reading a text file repaired (every count 0: a clean file).

    Attributes:
        path: the file.
        bom: a UTF-8 byte order mark at the start was ignored.
        header: the header line skipped, as ``"line N: a | b | c"`` (empty: none).
        n_header_lines: header lines skipped (the header repeated further down counts too).
        n_comments: comment lines (``#``) skipped.
        n_stripped: fields with surrounding whitespace, stripped.
        stripped_examples: up to five ``"line N: 'a '"`` of such fields.
    """

    path: str
    bom: bool = False
    header: str = ""
    n_header_lines: int = 0
    n_comments: int = 0
    n_stripped: int = 0
    stripped_examples: tuple[str, ...] = field(default=())

    def notes(self) -> list[str]:
        """One sentence per repair, for a report's summary."""
        out = []
        if self.header:
            more = self.n_header_lines - 1
            out.append(f"header {self.header} skipped" + (f" (and {more} repeat(s) of it further down)" if more else ""))
        if self.n_stripped:
            out.append(f"{self.n_stripped:,} field{'s' if self.n_stripped != 1 else ''} had surrounding whitespace, stripped "
                       f"(first: {'; '.join(self.stripped_examples)})")
        if self.n_comments:
            out.append(f"{self.n_comments:,} comment lines (#) skipped")
        if self.bom:
            out.append("a UTF-8 byte order mark at the start ignored")
        return out

    def to_dict(self) -> dict:
        """The repairs as a JSON-able dict (an import's record)."""
        return {"header": self.header or None, "header_lines": self.n_header_lines, "comments": self.n_comments,
                "whitespace_stripped": self.n_stripped, "whitespace_examples": list(self.stripped_examples),
                "bom": self.bom}


@dataclass(frozen=True)
class TextLines:
    """The content lines of a text file: ``(line number, text)``, blank and comment lines left out."""

    path: str
    lines: tuple[tuple[int, str], ...]
    n_lines: int
    bom: bool
    n_comments: int


def _line_of(data: bytes, offset: int) -> int:
    return len(_LINE_END.findall(data[:offset].decode("latin-1"))) + 1


def _decode(data: bytes, path: str, what: str) -> tuple[str, bool]:
    """The text of ``data``, UTF-8 with or without a byte order mark; anything else is refused."""
    name = Path(path).name
    for mark, enc in ((codecs.BOM_UTF32_LE, "UTF-32"), (codecs.BOM_UTF32_BE, "UTF-32"),
                      (codecs.BOM_UTF16_LE, "UTF-16"), (codecs.BOM_UTF16_BE, "UTF-16")):
        if data.startswith(mark):
            raise TextFileError(f"{path}: {what} is {enc} text (its byte order mark); re-save it as UTF-8, e.g. "
                                f"`iconv -f {enc.lower()} -t utf-8 {name} > utf8-{name}`")
    bom = data.startswith(codecs.BOM_UTF8)
    start = len(codecs.BOM_UTF8) if bom else 0
    nul = data.find(b"\x00", start)
    if nul >= 0:
        raise TextFileError(f"{path}, line {_line_of(data, nul)} (byte offset {nul}): not a text file (a NUL byte); "
                            f"{what} must be UTF-8 text, one entry per line")
    try:
        return data[start:].decode("utf-8"), bom
    except UnicodeDecodeError as e:
        off = start + e.start
        raise TextFileError(
            f"{path}, line {_line_of(data, off)} (byte offset {off}): not UTF-8 text (byte 0x{data[off]:02x}; "
            f"a Latin-1 or Windows-1252 export?); re-save {what} as UTF-8, e.g. "
            f"`iconv -f latin1 -t utf-8 {name} > utf8-{name}`") from e


def read_text(path: str | Path, *, what: str) -> tuple[str, bool]:
    """The text of a UTF-8 file and whether it began with a byte order mark (left out of the text).

    Raises:
        TextFileError: not UTF-8 text (naming line and byte offset), UTF-16, or binary (a NUL byte).
        FileNotFoundError: no such file.
    """
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"{path}: no such file ({what})")
    return _decode(p.read_bytes(), str(path), what)


def read_text_lines(path: str | Path, *, what: str) -> TextLines:
    """The non-blank, non-comment lines of a UTF-8 text file (see the module docstring).

    Args:
        path: the file.
        what: what the file is, for messages (``"the judgement file"``).

    Raises:
        TextFileError: not UTF-8 text (naming line and byte offset), UTF-16, or binary (a NUL byte).
        FileNotFoundError: no such file.
    """
    text, bom = read_text(path, what=what)
    raw = _LINE_END.split(text)
    if raw[-1] == "":  # the end of the last line, not a line
        raw.pop()
    lines, n_comments = [], 0
    for no, line in enumerate(raw, 1):
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith("#"):
            n_comments += 1
            continue
        lines.append((no, line))
    return TextLines(str(path), tuple(lines), len(raw), bom, n_comments)


def no_content(text: TextLines) -> str:
    """Why a file has no content line, for an error message (``"the file is empty"``)."""
    if not text.n_lines:
        return "the file is empty" + (" (only a byte order mark)" if text.bom else "")
    return f"its {text.n_lines} line(s) are blank" + (" or comments (#)" if text.n_comments else "")


def header_role(name: str) -> str | None:
    """The column role (a key of :data:`HEADER_NAMES`) a header field names, or ``None``.

    >>> header_role("Worker_ID"), header_role("categories"), header_role("w1")
    ('worker', 'label', None)
    """
    return _ROLE_OF.get(re.sub(r"[\s_.\-]+", "", name.lower()))


def find_header(first: Sequence[str], line_no: int, columns: Sequence[AbstractSet[str]], *, path: str,
                expected: Sequence[str], header: bool | None) -> tuple[str, ...] | None:
    """Whether the first content line is a header, and the column roles it gives.

    Args:
        first: the first line's fields (stripped).
        line_no: its line number.
        columns: every later line's values, per column (to tell a worker called ``user`` from a header).
        path: the file, for messages.
        expected: the roles of the columns without a header, in order (``("worker", "item", "label")``).
        header: ``None`` detect; ``True`` the first line is a header (its names, when recognised, give the
            column order); ``False`` it is data.

    Returns:
        The roles of the columns in file order when the line is a header, else ``None``.

    Raises:
        TextFileError: a line that only partly looks like a header, or names one role twice.
    """
    if header is False:
        return None
    roles = [header_role(f) for f in first]
    named_roles = [r for r in roles if r is not None]
    shown = " | ".join(first)
    if len(named_roles) == len(roles) == len(expected):
        if sorted(named_roles) != sorted(expected):
            raise TextFileError(f"{path}, line {line_no}: the header {shown!r} does not name each column once "
                                f"(columns: {', '.join(expected)}); rename its columns or remove the line")
        return tuple(named_roles)
    if header:
        return tuple(expected)
    if len(named_roles) == len(roles):
        raise TextFileError(f"{path}, line {line_no}: the header {shown!r} names {len(roles)} column(s); expected "
                            f"{len(expected)}: {' | '.join(expected)}")
    named = [k for k, r in enumerate(roles) if r]
    others = [repr(f) for k, f in enumerate(first) if k not in named]
    recurring = any(k < len(columns) and first[k] in columns[k] for k in named)
    if not named or recurring:
        return None
    raise TextFileError(
        f"{path}, line {line_no}: {shown!r} looks partly like a header ({', '.join(repr(first[k]) for k in named)} "
        f"name columns, {', '.join(others)} {'does' if len(others) == 1 else 'do'} not): remove the "
        f"line, or name its columns {' | '.join(expected)} (names recognised: {dict(HEADER_NAMES)}); or pass "
        "header=True (the line is a header) or header=False (it is data)")


def strip_fields(rows: Sequence[tuple[int, list[str]]]) -> tuple[list[tuple[int, list[str]]], int, tuple[str, ...]]:
    """The rows with every field stripped of surrounding whitespace, the number of fields stripped and the
    first few (``"line N: 'A '"``)."""
    out, n, examples = [], 0, list[str]()
    for no, fields in rows:
        clean = [f.strip() for f in fields]
        for raw, f in zip(fields, clean, strict=True):
            if raw != f:
                n += 1
                if len(examples) < N_EXAMPLES:
                    examples.append(f"line {no}: {raw!r}")
        out.append((no, clean))
    return out, n, tuple(examples)
