"""The parameter reference of every method, made from the declarations: ``docs/parameters.md``.

``python -m agreement.fo.runs.reference`` writes it; ``--check`` exits 1 when the
file differs from what the declarations say (a test runs the check, so the
reference cannot drift from the code).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import fields
from pathlib import Path

from agreement.fo.methods import declarations
from agreement.fo.runs.declaration import Execution, MethodDeclaration, RaterLayout, parameter_table

__all__ = ["REFERENCE", "reference_text"]

REFERENCE = Path(__file__).resolve().parents[3] / "docs" / "parameters.md"

_SHARED_HELP = {
    "fields": "one label field per rater",
    "field": "one label field whose labels name their rater in `rater_attr`",
    "rater_attr": "the label attribute naming the rater (with `field`)",
    "raters_field": "sample-level list field of the raters assigned to each sample (default: the one the dataset records)",
    "assume_crossed": "without a recorded assignment, accept that every rater saw every sample",
    "box_policy": "boxes past the image border: `'clip'`, `'drop'` or `'error'`",
    "shard_size": "samples read, computed and written at a time (default: chosen for the view)",
    "backend": "`'serial'` (here) or `'dask'`",
    "dask_address": "an existing Dask scheduler (with `backend='dask'`)",
    "workers": "processes of a local Dask cluster (with `backend='dask'`)",
}


def _shared_table(cls) -> str:
    rows = ["| parameter | default | what it does |", "|---|---|---|"]
    rows += [f"| `{f.name}` | `{f.default!r}` | {_SHARED_HELP[f.name]} |" for f in fields(cls)]
    return "\n".join(rows)


def _method_section(decl: MethodDeclaration) -> str:
    outputs = ", ".join(f"`{name}`" for name, _, _ in decl.outputs)
    return (f"## `{decl.operator}`\n\n{decl.description}.\n\n"
            f"Python: `foo.get_operator(\"@iaa/agreement/{decl.operator}\")(dataset_or_view, key=..., ...)`; "
            f"runs record the method marker `{decl.method}`; the form offers the key `{decl.key_prefix}`.\n\n"
            f"{parameter_table(decl)}\n\n"
            + (f"Headline numbers shown by the operator: {outputs}.\n\n" if outputs else "")
            + ("It streams: it takes the execution options.\n" if decl.streams else
               "It needs the whole view at once: no execution options.\n"))


def reference_text() -> str:
    """The whole reference, as ``docs/parameters.md`` holds it."""
    parts = ["# Parameters of every method\n",
             "Made from the methods' declarations by `python -m agreement.fo.runs.reference`; do not edit by hand.\n",
             "Every compute operator also takes `key` (the run's name: its fields are `<key>_...`), "
             "`overwrite` (replace an agreement run of that key) and the shared objects below.\n",
             "## The rater layout (every method)\n", _shared_table(RaterLayout) + "\n",
             "## The execution (methods that stream)\n", _shared_table(Execution) + "\n"]
    parts += [_method_section(d) for d in declarations()]
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the file is out of date; change nothing")
    args = parser.parse_args(argv)
    text = reference_text()
    if args.check:
        current = REFERENCE.read_text() if REFERENCE.exists() else ""
        if current != text:
            print(f"{REFERENCE} is out of date: run python -m agreement.fo.runs.reference")
            return 1
        return 0
    REFERENCE.write_text(text)
    print(f"wrote {REFERENCE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
