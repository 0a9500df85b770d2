"""The validation matrix (issue 47): computes every cell of :mod:`tests.validation_matrix`, fails on any
applicable cell whose property does not hold, and writes ``docs/validation.md``.

The cells are computed once, in a module-scoped fixture (not at collection: every pytest-xdist worker
collects every module)."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from validation_matrix import PROPERTIES, Cell, render

PAGE = Path(__file__).resolve().parents[1] / "docs" / "validation.md"
PARTS = ("images", "video_classes")

HEADER = """# The validation matrix

Every compute method, on every label type it accepts, against the properties a chance-corrected score must
have, measured on the simulator's raters. **This page is written by the test suite**
(`tests/test_validation_matrix.py`, from `tests/validation_matrix/`): a cell whose property does not hold fails
the suite; "n/a" says why a property does not apply. Numbers are seeded and deterministic.

| property | what is checked |
|:---|:---|
""" + "\n".join(f"| {title} | {what} |" for title, what in PROPERTIES.values()) + "\n"


@pytest.fixture(scope="module")
def cells() -> dict[str, list[Cell]]:
    out = {part: importlib.import_module(f"validation_matrix.{part}").cells() for part in PARTS}
    every = [c for part in PARTS for c in out[part]]
    assert len({c.id for c in every}) == len(every), "two cells with one id"
    PAGE.write_text(render(every, HEADER))
    return out


@pytest.mark.parametrize("part", PARTS)
def test_every_applicable_cell_holds(cells, part):
    failed = [f"{c.id}: {c.value} ({c.note or PROPERTIES[c.prop][1]})" for c in cells[part] if c.ok is False]
    assert not failed, f"{len(failed)} cells of the matrix fail:\n" + "\n".join(failed)


def test_the_page_lists_every_cell(cells):
    text = PAGE.read_text()
    for part in PARTS:
        for c in cells[part]:
            assert f"## {c.method}" in text and f"| {c.kind} |" in text
