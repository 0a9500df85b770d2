r"""How images are matched across exports: the one rule every multi-rater importer calls.

Two exports of the same images rarely name them the same way. Label Studio
prefixes every uploaded file with an upload id, 8 hexadecimal digits and a
hyphen (``01b89637-pexels-photo.jpg``), while CVAT keeps the file's own name
(``pexels-photo.jpg``). An image's *key*, the name it is matched by, is its
file name (the last component of its path) after the first rule that applies:

1. ``name_map``: an explicit mapping ``{export name: image name}`` (a dict, or
   a CSV file of two columns ``export_name,image_name`` with or without that
   header, or a JSON object). The export name is looked up as written in the
   export and as its file name.
2. ``strip_prefix``: a regular expression; its match at the start of the file
   name is removed (``r"^task\d+_"``).
3. ``upload_ids`` (default on): Label Studio's upload id, exactly
   ``^[0-9a-f]{8}-``, is removed.
4. otherwise the file name itself.

A rule that would leave an empty name does not apply. Two files of one export
with the same key are refused (:func:`keys_of`), naming both files and the
rule. :func:`match_report` says per rater how many of its images met images of
the other raters, lists a few that did not, and counts which rule renamed
them. This module does not import FiftyOne.
"""

from __future__ import annotations

import csv
import json
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Mapping, Sequence

from agreement.core.validation import AnnotationError
from agreement.io.text_files import read_text

__all__ = ["UPLOAD_ID", "NameRule", "NameMatchError", "HOW_TO_MAP", "name_rule", "load_name_map", "keys_of", "match_report", "RULES"]

#: Label Studio's upload id: 8 lowercase hexadecimal digits and a hyphen at the start of the file name.
UPLOAD_ID = r"^[0-9a-f]{8}-"
#: The names of the rules, as the match report counts them.
RULES = ("name_map", "strip_prefix", "upload_id", "file name")
MAX_EXAMPLES = 5


class NameMatchError(AnnotationError):
    """Names that cannot be matched as asked (an ambiguous key, an unreadable mapping file, a bad pattern)."""


def _base(name: str) -> str:
    return os.path.basename(str(name).replace("\\", "/").rstrip("/"))


@dataclass(frozen=True)
class NameRule:
    """The matching rule of one import (see the module docstring for the order of the rules).

    Attributes:
        upload_ids: strip Label Studio's upload id (:data:`UPLOAD_ID`).
        strip_prefix: a regular expression whose match at the start of a file
            name is removed, or ``None``.
        name_map: ``{export name: image name}``, or ``None``.
        map_source: where ``name_map`` came from (a file path or ``"a mapping"``).
    """

    upload_ids: bool = True
    strip_prefix: str | None = None
    name_map: Mapping[str, str] | None = None
    map_source: str | None = None
    _prefix: re.Pattern | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.strip_prefix and self._prefix is None:
            object.__setattr__(self, "_prefix", re.compile(self.strip_prefix))

    def key(self, name: str) -> tuple[str, str]:
        """``(key, rule)``: the name an image is matched by and the rule (one of :data:`RULES`) that gave it."""
        base = _base(name)
        if self.name_map:
            for candidate in (str(name), base):
                if candidate in self.name_map:
                    return _base(self.name_map[candidate]), "name_map"
        if self._prefix is not None:
            m = self._prefix.match(base)
            if m and m.end() and base[m.end():]:
                return base[m.end():], "strip_prefix"
        if self.upload_ids:
            m = re.match(UPLOAD_ID, base)
            if m and base[m.end():]:
                return base[m.end():], "upload_id"
        return base, "file name"

    def stem_key(self, stem: str) -> tuple[str, str]:
        """:meth:`key` of a name without extension (a YOLO label file's stem), the map looked up by stem."""
        if self.name_map:
            stems = {os.path.splitext(_base(k))[0]: os.path.splitext(_base(v))[0] for k, v in self.name_map.items()}
            if stem in stems:
                return stems[stem], "name_map"
        return NameRule(self.upload_ids, self.strip_prefix, None, None, self._prefix).key(stem)

    def describe(self) -> str:
        """The rule in words, for reports and error messages."""
        parts = []
        if self.name_map:
            parts.append(f"the name map ({len(self.name_map)} names, from {self.map_source or 'a mapping'})")
        if self.strip_prefix:
            parts.append(f"the prefix pattern strip_prefix={self.strip_prefix!r} removed")
        if self.upload_ids:
            parts.append("Label Studio's upload id (8 hex digits and '-', as in '01b89637-photo.jpg') removed")
        if not parts:
            return "images are matched by their file names as they are (no name_map, no strip_prefix, upload_ids=False)"
        return "images are matched by file name: " + ", else ".join(parts + ["the file name as it is"])

    def to_dict(self) -> dict:
        """The rule as the import's report records it."""
        return {"upload_ids": self.upload_ids, "strip_prefix": self.strip_prefix,
                "name_map": self.map_source if self.name_map else None,
                "name_map_entries": len(self.name_map or {}), "described": self.describe()}


HOW_TO_MAP = ("say how names correspond with name_map= (a CSV or JSON file: export name -> image name) or "
              "strip_prefix= (a regular expression removed from the start of the names)")


def load_name_map(value: str | os.PathLike | Mapping[str, str]) -> tuple[dict[str, str], str]:
    """``(mapping, source)`` from a dict, a JSON object file or a two-column CSV file (export name, image name).

    Raises:
        NameMatchError: a missing or unreadable file, a file without entries, an entry that is not two
            non-empty names, or one export name mapped to two image names.
    """
    if isinstance(value, Mapping):
        pairs, source = [(k, v) for k, v in value.items()], "a mapping"
    else:
        source = os.fspath(value)
        if not os.path.isfile(source):
            raise NameMatchError(f"name_map: {source!r} is not a file (expected a CSV or JSON file: export name -> "
                                 "image name)")
        text, _ = read_text(source, what="the name map")  # UTF-8 (a byte order mark dropped), else a clear error
        if source.lower().endswith(".json") or text.lstrip().startswith("{"):
            try:
                data = json.loads(text)
            except ValueError as e:
                raise NameMatchError(f"name_map: {source!r} is not valid JSON ({e})") from e
            if not isinstance(data, dict):
                raise NameMatchError(f"name_map: {source!r} must hold a JSON object {{export name: image name}}")
            pairs = list(data.items())
        else:
            rows = [r for r in csv.reader(text.splitlines()) if any(c.strip() for c in r)]
            if rows and [c.strip().lower() for c in rows[0]] == ["export_name", "image_name"]:
                rows = rows[1:]
            pairs = []
            for i, row in enumerate(rows):
                if len(row) != 2:
                    raise NameMatchError(f"name_map: {source!r} line {i + 1}: expected two columns (export name, "
                                         f"image name), got {row!r}")
                pairs.append((row[0].strip(), row[1].strip()))
        if not pairs:
            raise NameMatchError(f"name_map: {source!r} holds no entries (expected export name -> image name pairs)")
    out: dict[str, str] = {}
    for k, v in pairs:
        if not isinstance(k, str) or not isinstance(v, str) or not k or not v:
            raise NameMatchError(f"name_map ({source}): entry {k!r} -> {v!r} is not two non-empty names")
        if k in out and out[k] != v:
            raise NameMatchError(f"name_map ({source}): {k!r} is mapped twice ({out[k]!r} and {v!r})")
        out[k] = v
    return out, source


def name_rule(*, name_map: str | os.PathLike | Mapping[str, str] | None = None, strip_prefix: str | None = None,
              upload_ids: bool = True) -> NameRule:
    """The :class:`NameRule` of an import's options, checked (a bad pattern or mapping is an error)."""
    prefix = None
    if strip_prefix:
        try:
            prefix = re.compile(strip_prefix)
        except re.error as e:
            raise NameMatchError(f"strip_prefix={strip_prefix!r} is not a regular expression ({e})") from e
    mapping, source = load_name_map(name_map) if name_map else (None, None)
    return NameRule(bool(upload_ids), strip_prefix or None, mapping, source, prefix)


def keys_of(names: Sequence[str], rule: NameRule, who: str) -> tuple[list[str], Counter]:
    """The key of each name and how many each rule renamed; two names with one key are refused.

    Raises:
        NameMatchError: two names of ``who`` (one export) with the same key,
            naming both and the rule that gave it.
    """
    keys: list[str] = []
    rules: Counter[str] = Counter()
    seen: dict[str, str] = {}
    for name in names:
        key, how = rule.key(name)
        if key in seen:
            other = seen[key]
            both = f"two images named {name!r}" if other == name else f"two images, {other!r} and {name!r},"
            raise NameMatchError(
                f"{who}: {both} both match the name {key!r} ({rule.describe()}); "
                "each image of an export must have its own name: "
                + ("pass upload_ids=False if these ids are part of the names, or "
                   if "upload_id" in (how, rule.key(other)[1]) else "")
                + "give a name_map that tells them apart"
            )
        seen[key] = name
        keys.append(key)
        rules[how] += 1
    return keys, rules


def match_report(per_rater: Mapping[str, Mapping[str, str]], rules: Mapping[str, Counter],
                 rule: NameRule) -> dict:
    """Per rater: its images, how many met an image of another rater, a few that did not, the rules applied.

    Args:
        per_rater: ``{rater: {key: name as in its export}}``.
        rules: ``{rater: Counter(rule -> images)}`` from :func:`keys_of`.
        rule: the import's rule (recorded in words).
    """
    out = {}
    for r, keys in per_rater.items():
        others = set().union(*(set(v) for o, v in per_rater.items() if o != r)) if len(per_rater) > 1 else set()
        alone = [k for k in keys if k not in others]
        out[r] = {"images": len(keys), "matched": len(keys) - len(alone), "unmatched": len(alone),
                  "unmatched_examples": [keys[k] for k in sorted(alone)[:MAX_EXAMPLES]],
                  "renamed_by": {k: int(v) for k, v in rules.get(r, Counter()).items()}}
    return {"rule": rule.to_dict(), "per_rater": out}
