"""``fiftyone.yml`` lists the operator of every declared method (FiftyOne registers only listed operators).

``python -m agreement.fo.runs.manifest`` adds the missing ones to the plugin's
manifest (after the operators already listed); ``--check`` exits 1 naming
them instead. The registry of methods (:func:`agreement.fo.methods.declarations`)
is the source; nothing else needs editing when a method is added.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from agreement.fo.methods import declarations

__all__ = ["MANIFEST", "listed_operators", "missing_operators", "add_operators"]

MANIFEST = Path(__file__).resolve().parents[3] / "fiftyone.yml"


def listed_operators(text: str) -> list[str]:
    """The operator names of a manifest's ``operators:`` list."""
    block = re.search(r"^operators:\n((?:[ \t]+- .*\n?)*)", text, flags=re.M)
    return re.findall(r"^[ \t]+- (\S+)", block.group(1), flags=re.M) if block else []


def missing_operators(text: str) -> list[str]:
    """The declared methods' operators the manifest does not list."""
    listed = set(listed_operators(text))
    return [d.operator for d in declarations() if d.operator not in listed]


def add_operators(text: str, names: list[str]) -> str:
    """The manifest with ``names`` appended to its ``operators:`` list."""
    if not names:
        return text
    block = re.search(r"^operators:\n((?:[ \t]+- .*\n?)*)", text, flags=re.M)
    if block is None:
        raise ValueError("the manifest has no 'operators:' list")
    first = re.match(r"[ \t]+", block.group(1))  # the list's items are indented: a match unless it is empty
    indent = first.group(0) if first else "  "
    body = block.group(1) if block.group(1).endswith("\n") or not block.group(1) else block.group(1) + "\n"
    added = "".join(f"{indent}- {n}\n" for n in names)
    return text[:block.start(1)] + body + added + text[block.end(1):]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if an operator is missing; change nothing")
    parser.add_argument("--manifest", type=Path, default=MANIFEST)
    args = parser.parse_args(argv)
    text = args.manifest.read_text()
    missing = missing_operators(text)
    if args.check:
        if missing:
            print(f"{args.manifest} does not list the operators {missing}: run python -m agreement.fo.runs.manifest")
        return 1 if missing else 0
    args.manifest.write_text(add_operators(text, missing))
    print(f"added {missing} to {args.manifest}" if missing else f"{args.manifest} lists every declared operator")
    return 0


if __name__ == "__main__":
    sys.exit(main())
